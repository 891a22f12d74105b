"""`python -m emulator` is the `pulsar-lb-emulator` command."""

import signal
import sys

# SIGTERM ends with 143 from the first line on, as the run's own handler does later (not -15)
signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))

from emulator.cli import main  # noqa: E402 - after the handler: importing takes ~0.2 s

sys.exit(main())
