"""The roll-up's options and the flags that set them, shared by `rollup`, `sweep` and `spark-submit
rollup.py`: below both the command (`pipeline/cli.py`) and the job (`rollup.py`), so neither imports the
other.

    p = argparse.ArgumentParser(); add_rollup_options(p); options = options_from_args(p.parse_args())

Bad input raises `emulator.model.errors.UsageError` with one line naming the flag and the value.
"""

from __future__ import annotations

import argparse
import math

import msgspec

from emulator.model.durations import parse_flag_duration
from emulator.model.errors import UsageError
from emulator.pipeline.session import DEFAULT_MASTER

__all__ = ["RollupOptions", "add_rollup_options", "options_from_args", "parse_positive_float", "parse_window"]


class RollupOptions(msgspec.Struct, frozen=True, kw_only=True):
    """Window length (s), and the time-to-balance bound (percentage points of range) and hold (min)."""

    window: float = 600.0
    balance_bound: float = 10.0
    balance_minutes: float = 5.0

    def __post_init__(self) -> None:
        for name in ("window", "balance_bound", "balance_minutes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value <= 0:
                raise ValueError(f"{name} = {value!r}: must be a finite number > 0")


def parse_window(text: str, flag: str = "--window") -> float:
    """'10m', '1h', '90s' or seconds -> seconds (> 0)."""
    return parse_flag_duration(text, flag=flag)


def parse_positive_float(text: str, flag: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise UsageError(f"{flag} = {text!r}: expected a number") from None
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"{flag} = {text!r}: must be a number > 0")
    return value


def add_rollup_options(p: argparse.ArgumentParser, master_default: str | None = DEFAULT_MASTER) -> None:
    """--master, --window, --balance-bound, --balance-minutes (rollup and sweep share them)."""
    p.add_argument("--master", default=master_default,
                   help=f"Spark master (default {master_default or 'spark-submit decides'})")
    p.add_argument("--window", default="10m", help="time window of the per-window table (default 10m)")
    p.add_argument("--balance-bound", default="10",
                   help="usage range (percentage points) under which the cluster counts as balanced "
                        "(default 10)")
    p.add_argument("--balance-minutes", default="5",
                   help="minutes the range must stay under the bound (default 5)")


def options_from_args(args: argparse.Namespace) -> RollupOptions:
    return RollupOptions(window=parse_window(args.window),
                         balance_bound=parse_positive_float(args.balance_bound, "--balance-bound"),
                         balance_minutes=parse_positive_float(args.balance_minutes, "--balance-minutes"))
