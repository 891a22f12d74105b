"""The roll-up's options and the flags that set them, shared by `rollup`, `sweep` and `spark-submit
rollup.py`: below both the command (`pipeline/cli.py`) and the job (`rollup.py`), so neither imports the
other.

    p = argparse.ArgumentParser(); add_rollup_options(p); options = options_from_args(p.parse_args())

Bad input raises `emulator.model.errors.UsageError` with one line naming the flag and the value.
"""

from __future__ import annotations

import argparse
import math
import random
from typing import Sequence

import msgspec

from emulator.model.durations import parse_flag_duration
from emulator.model.errors import UsageError
from emulator.pipeline.session import DEFAULT_MASTER

__all__ = ["GRID_EXTRA_KEYS", "RollupOptions", "add_rollup_options", "add_sweep_arguments", "conf_from_args",
           "options_from_args", "parse_conf", "parse_grid", "parse_positive_float", "parse_seeds",
           "parse_window", "validate_grid"]

GRID_EXTRA_KEYS = ("placement", "shedder")


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


def parse_conf(items: list[str] | None, flag: str = "--conf") -> dict[str, str]:
    """['spark.executor.memory=4g', ...] -> {key: value}, as spark-submit's --conf."""
    conf: dict[str, str] = {}
    for item in items or []:
        key, sep, value = str(item).partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{flag} = {item!r}: expected key=value, e.g. {flag} spark.executor.memory=4g")
        conf[key.strip()] = value
    return conf


def add_rollup_options(p: argparse.ArgumentParser, master_default: str | None = DEFAULT_MASTER) -> None:
    """--master, --conf, --window, --balance-bound, --balance-minutes (rollup and sweep share them)."""
    p.add_argument("--master", default=master_default,
                   help=f"Spark master (default {master_default or 'spark-submit decides'})")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting, as spark-submit's --conf; repeatable")
    p.add_argument("--python", default=None, metavar="PATH",
                   help="the Python Spark's workers run (default: this interpreter in local and standalone "
                        "mode; on YARN/Kubernetes ./ALIAS/bin/python of the one packed environment in "
                        "--conf spark.archives=env.tar.gz#ALIAS, else python3); same as --conf "
                        "spark.pyspark.python=PATH")
    p.add_argument("--window", default="10m", help="time window of the per-window table (default 10m)")
    p.add_argument("--balance-bound", default="10",
                   help="usage range (percentage points) under which the cluster counts as balanced "
                        "(default 10)")
    p.add_argument("--balance-minutes", default="5",
                   help="minutes the range must stay under the bound (default 5)")


def conf_from_args(args: argparse.Namespace) -> dict[str, str]:
    """--conf, with --python as `spark.pyspark.python` (the session's shipping reads it from there)."""
    conf = parse_conf(getattr(args, "conf", None))
    python = getattr(args, "python", None)
    if python is not None:
        if not str(python).strip():
            raise UsageError(f"--python = {python!r}: expected the path of a Python interpreter")
        conf["spark.pyspark.python"] = python
    return conf


def options_from_args(args: argparse.Namespace) -> RollupOptions:
    return RollupOptions(window=parse_window(args.window),
                         balance_bound=parse_positive_float(args.balance_bound, "--balance-bound"),
                         balance_minutes=parse_positive_float(args.balance_minutes, "--balance-minutes"))


# ====================================================================== sweep flags


def parse_seeds(text: str, flag: str = "--seeds") -> list[int]:
    """'1-10', '1,2,5' or a mix ('1-3,7') -> the seeds in the order given, without repeats."""
    seeds: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        try:
            if "-" in part[1:]:
                cut = part.index("-", 1)
                lo, hi = int(part[:cut]), int(part[cut + 1:])
                if hi < lo:
                    raise UsageError(f"{flag} = {text!r}: range {part!r} runs backwards")
                values = list(range(lo, hi + 1))
            else:
                values = [int(part)]
        except ValueError:
            raise UsageError(f"{flag} = {text!r}: expected seeds like 1-10 or 1,2,5") from None
        seeds += [s for s in values if s not in seeds]
    if len(seeds) > 100_000:
        raise UsageError(f"{flag} = {text!r}: {len(seeds)} seeds is more than 100000")
    return seeds


def parse_grid(items: Sequence[str], flag: str = "--grid") -> dict[str, list[str]]:
    """['placement=A,B', 'loadBalancerSheddingIntervalMinutes=1,5'] -> {key: [values]}, validated."""
    grid: dict[str, list[str]] = {}
    for item in items:
        key, sep, values = str(item).partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"{flag} = {item!r}: expected key=v1,v2")
        if key in grid:
            raise UsageError(f"{flag} = {item!r}: {key} is given twice; list all its values once")
        vals = [v.strip() for v in values.split(",")]
        if not vals or any(v == "" for v in vals):
            raise UsageError(f"{flag} = {item!r}: empty value; expected key=v1,v2")
        grid[key] = list(dict.fromkeys(vals))
    validate_grid(grid, flag=flag)
    return grid


def validate_grid(grid: dict[str, list[str]], flag: str = "grid") -> None:
    """Every key is a Pulsar config key, `placement`, `shedder` or `load_manager` (a load manager's class
    name, short or full); every value parses."""
    import shedders
    import strategies
    from emulator.model.config import ConfigError, ServiceConfig

    base = ServiceConfig()
    for key, values in grid.items():
        for v in values:
            try:
                if key == "placement":
                    strategies.create(v, rng=random.Random(0))
                elif key == "shedder":
                    try:
                        shedders.create(v, rng=random.Random(0))
                    except ValueError:   # an Extensible NamespaceUnloadStrategy (TransferShedder)
                        shedders.create_extensible(v, rng=random.Random(0))
                elif key == "load_manager":
                    from emulator.cluster.load_manager import LOAD_MANAGERS, resolve_class_name

                    if resolve_class_name(v) not in LOAD_MANAGERS:
                        raise ValueError(f"unknown load manager; expected one of "
                                         f"{', '.join(n.rsplit('.', 1)[1] for n in LOAD_MANAGERS)}")
                else:
                    base.with_overrides({key: v}, source=flag)
            except ConfigError as e:
                raise UsageError(str(e)) from None
            except ValueError as e:
                raise UsageError(f"{flag} {key} = {v!r}: {e}") from None


def add_sweep_arguments(p: argparse.ArgumentParser, master_default: str | None = DEFAULT_MASTER) -> None:
    """The sweep's arguments (`pulsar-lb-emulator sweep` and `spark-submit sweep.py`)."""
    p.add_argument("scenario", metavar="SCENARIO", help="built-in scenario name or scenario TOML path")
    p.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                   help="a Pulsar config key, placement, shedder or load_manager (e.g. load_manager="
                        "ModularLoadManagerImpl,ExtensibleLoadManagerImpl), with its values; repeatable; "
                        "none: the scenario's own configuration over --seeds")
    p.add_argument("--seeds", default="1", help="seeds, e.g. 1-10 or 1,2,5 (default 1)")
    p.add_argument("--duration", default=None, help="emulated time per run (default: the scenario's)")
    p.add_argument("--run-timeout", default=None, metavar="DURATION",
                   help="wall time after which a run is killed and recorded as status timeout, e.g. 10m "
                        "(default: none)")
    p.add_argument("--out", default="sweep",
                   help="output folder: runs/, results/ (a row per run, written as it ends: a rerun skips "
                        "the runs done), results.csv and rollup/ (default ./sweep); on a cluster, on storage "
                        "every worker can read and write")
    add_rollup_options(p, master_default=master_default)
