"""`python -m emulator` is the `pulsar-lb-emulator` command."""

import sys

from emulator.cli import main

sys.exit(main())
