"""The `rollup`, `sweep` and `report` sub-commands, for `emulator/cli.py` to mount.

    add_rollup_parser(subparsers); add_sweep_parser(subparsers); add_report_parser(subparsers)

Each sets `func=` to a handler `(args) -> exit code`. Bad input raises `emulator.model.errors.UsageError`
with one line naming the flag and the value; the main CLI turns that into exit code 2. Parsing helpers
(`parse_seeds`, `parse_grid`, and `options.py`'s) are plain functions so tests and notebooks can use them too.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from emulator.model.errors import UsageError
from emulator.pipeline.options import (GRID_EXTRA_KEYS, add_rollup_options, add_sweep_arguments,
                                       conf_from_args, options_from_args, parse_grid, parse_seeds,
                                       validate_grid)

__all__ = ["GRID_EXTRA_KEYS", "add_report_parser", "add_rollup_parser", "add_sweep_parser", "cmd_report",
           "cmd_rollup", "cmd_sweep", "parse_grid", "parse_seeds", "validate_grid"]


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
    add_sweep_arguments(p)
    p.add_argument("--quiet", action="store_true", help=QUIET_HELP)
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
    conf = conf_from_args(args)
    try:
        with _progress("rollup", args):
            result = rollup(args.run_dirs, args.out, master=args.master, options=options, conf=conf)
    except ValueError as e:
        raise UsageError(str(e)) from None
    return 0 if result.runs else 1


def cmd_sweep(args: argparse.Namespace) -> int:
    from emulator.pipeline.sweep import sweep_from_args

    with _progress(f"sweep {args.scenario}", args):
        return sweep_from_args(args)


def cmd_report(args: argparse.Namespace) -> int:
    from emulator.pipeline.report import report

    try:
        written = report(args.rollup_dir, args.out)
    except (ValueError, FileNotFoundError) as e:
        raise UsageError(str(e)) from None
    print(f"report: {written.html}")
    return 0
