"""`python -m emulator` is the `pulsar-lb-emulator` command (`console`, its entry point too)."""

import signal
import sys


def console() -> int:
    """The command. SIGTERM ends with 143 from its first line on, as the run's own handler does later
    (not -15): installed before the CLI is imported (~0.2 s), with only the interpreter's start and
    the package's lazy `__init__` before it."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    from emulator.cli import main

    return main()


if __name__ == "__main__":
    sys.exit(console())
