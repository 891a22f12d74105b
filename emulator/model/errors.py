"""The errors that bad input raises, for every layer: the bottom of the import graph, so the CLI, the
workload, the pipeline and the runner all raise and catch the same classes.

Each message is one line naming the flag or key, the value and what to do; the command prints it and
exits with code 2, never with a traceback.
"""

from __future__ import annotations

__all__ = ["ConfigError", "UsageError"]


class UsageError(Exception):
    """Bad input on the command line (a flag, a value, a folder): one line, exit code 2."""


class ConfigError(ValueError):
    """A broker.conf value (or override) that Pulsar would reject or break on."""
