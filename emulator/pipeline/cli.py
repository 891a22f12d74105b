"""The `rollup`, `sweep` and `report` sub-commands, for `emulator/cli.py` to mount.

    add_rollup_parser(subparsers); add_sweep_parser(subparsers); add_report_parser(subparsers)

Each sets `func=` to a handler `(args) -> exit code`. Bad input raises `emulator.model.errors.UsageError`
with one line naming the flag and the value; the main CLI turns that into exit code 2. Parsing helpers
(`parse_seeds`, `parse_grid`, and `options.py`'s) are plain functions so tests and notebooks can use them too.
"""

from __future__ import annotations

import argparse
import random
import sys
from typing import Any, Sequence

from emulator.model.errors import UsageError
from emulator.pipeline.options import add_rollup_options, options_from_args, parse_window

GRID_EXTRA_KEYS = ("placement", "shedder")


# ====================================================================== parsing helpers


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
    """Every key is a Pulsar config key, `placement` or `shedder`; every value parses."""
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
                    shedders.create(v, rng=random.Random(0))
                else:
                    base.with_overrides({key: v}, source=flag)
            except ConfigError as e:
                raise UsageError(str(e)) from None
            except ValueError as e:
                raise UsageError(f"{flag} {key} = {v!r}: {e}") from None


# ====================================================================== sub-parsers


def add_rollup_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser("rollup", help="roll recorded runs up into KPI tables (PySpark)")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="recording folders")
    p.add_argument("--out", default="rollup", help="output folder (default ./rollup)")
    p.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    add_rollup_options(p)
    p.set_defaults(func=cmd_rollup)
    return p


def add_sweep_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser("sweep", help="run a scenario over a config grid and seeds on Spark")
    p.add_argument("scenario", metavar="SCENARIO", help="built-in scenario name or scenario TOML path")
    p.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                   help="a Pulsar config key, placement or shedder, with its values; repeatable")
    p.add_argument("--seeds", default="1", help="seeds, e.g. 1-10 or 1,2,5 (default 1)")
    p.add_argument("--duration", default=None, help="emulated time per run (default: the scenario's)")
    p.add_argument("--out", default="sweep", help="output folder: runs/ and rollup/ (default ./sweep)")
    p.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    add_rollup_options(p)
    p.set_defaults(func=cmd_sweep)
    return p


def add_report_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser("report", help="PNG plots and an HTML page from a roll-up or sweep folder")
    p.add_argument("rollup_dir", metavar="DIR", help="the --out folder of rollup or of sweep")
    p.add_argument("--out", default=None, help="report folder (default DIR/report)")
    p.set_defaults(func=cmd_report)
    return p


# ====================================================================== handlers

QUIET_HELP = ("no progress on stderr (Spark tasks done of those planned, rate and ETA: a bar on a "
              "terminal, a line every 10 s otherwise)")


def _progress(what: str, args: argparse.Namespace) -> Any:
    """A progress bar of Spark's tasks on stderr, unless --quiet."""
    import contextlib

    from emulator.observe.progress import ProgressBar
    from emulator.pipeline.progress import SparkTasks

    if getattr(args, "quiet", False):
        return contextlib.nullcontext()
    return ProgressBar(what, poll=SparkTasks(), unit="tasks", stream=sys.stderr)


def cmd_rollup(args: argparse.Namespace) -> int:
    from emulator.pipeline.rollup import rollup

    options = options_from_args(args)
    try:
        with _progress("rollup", args):
            result = rollup(args.run_dirs, args.out, master=args.master, options=options)
    except ValueError as e:
        raise UsageError(str(e)) from None
    return 0 if result.runs else 1


def cmd_sweep(args: argparse.Namespace) -> int:
    from emulator.pipeline.sweep import sweep

    if not args.grid:
        raise UsageError("--grid: give at least one, e.g. --grid placement=LeastLongTermMessageRate,"
                           "AvgShedder")
    grid = parse_grid(args.grid)
    seeds = parse_seeds(args.seeds)
    duration = None if args.duration is None else parse_window(args.duration, flag="--duration")
    with _progress(f"sweep {args.scenario}", args):
        result = sweep(args.scenario, grid, seeds, args.out, args.master, duration,
                       options=options_from_args(args))
    return 1 if result.failures else 0


def cmd_report(args: argparse.Namespace) -> int:
    from emulator.pipeline.report import report

    try:
        written = report(args.rollup_dir, args.out)
    except (ValueError, FileNotFoundError) as e:
        raise UsageError(str(e)) from None
    print(f"report: {written.html}")
    return 0
