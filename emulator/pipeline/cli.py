"""The `rollup`, `sweep`, `report` and `compare` sub-commands, for `emulator/cli.py` to mount.

    add_rollup_parser(subparsers); add_sweep_parser(subparsers); add_report_parser(subparsers)
    add_compare_parser(subparsers)

`rollup` reads recording folders, or with `--prometheus URL --from T [--to T]` a real (or emulated)
cluster's series from Prometheus (`prometheus.py`).

Each sets `func=` to a handler `(args) -> exit code`. Bad input raises `emulator.model.errors.UsageError`
with one line naming the flag and the value; the main CLI turns that into exit code 2. Parsing helpers
(`parse_seeds`, `parse_grid`, and `options.py`'s) are plain functions so tests and notebooks can use them too.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import msgspec

from emulator.model.errors import UsageError
from emulator.pipeline.options import (GRID_EXTRA_KEYS, add_rollup_options, add_sweep_arguments,
                                       conf_from_args, options_from_args, parse_grid, parse_seeds,
                                       validate_grid)

__all__ = ["GRID_EXTRA_KEYS", "add_compare_parser", "add_report_parser", "add_rollup_parser", "add_sweep_parser",
           "cmd_compare", "cmd_report", "cmd_rollup", "cmd_sweep", "parse_grid", "parse_seeds",
           "prometheus_source", "validate_grid"]


# ====================================================================== sub-parsers


def add_rollup_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser("rollup", help="roll recorded runs, or a cluster's Prometheus series, up into "
                                             "KPI tables (PySpark)")
    p.add_argument("run_dirs", nargs="*", metavar="RUN_DIR", help="recording folders (or --prometheus)")
    p.add_argument("--out", default="rollup", help="output folder (default ./rollup)")
    p.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    g = p.add_argument_group("a cluster's series from Prometheus (instead of RUN_DIR...)")
    g.add_argument("--prometheus", metavar="URL", help="the Prometheus server that scrapes the brokers, "
                   "e.g. http://127.0.0.1:9090 (its HTTP API /api/v1/query_range)")
    g.add_argument("--from", dest="time_from", metavar="T",
                   help="start: RFC 3339 (2024-05-01T09:00:00Z), unix seconds, or now-<duration> (now-6h)")
    g.add_argument("--to", dest="time_to", metavar="T", default=None, help="end, as --from (default now)")
    g.add_argument("--step", default=None, help="query resolution (default 15s; at most the scrape interval "
                   "to see every scrape)")
    g.add_argument("--broker-conf", metavar="FILE", help="the cluster's broker.conf: overload threshold, "
                   "shedding grace period and resource weights (Pulsar's defaults otherwise)")
    g.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="a broker.conf key over --broker-conf, e.g. "
                        "loadBalancerBrokerOverloadedThresholdPercentage=80; repeatable")
    add_rollup_options(p)
    p.set_defaults(func=cmd_rollup)
    return p


def add_compare_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser("compare", help="roll-up folders side by side: one row per KPI, one column "
                                              "per configuration (mean ± 95 %% CI over its seeds)")
    p.add_argument("folders", nargs="+", metavar="DIR", help="--out folders of rollup (or sweep)")
    p.add_argument("--out", default="compare", help="where compare.csv and compare.json go (default ./compare)")
    p.add_argument("--baseline", default=None, metavar="LABEL",
                   help="the column the others are tested against (Welch's t-test, * = p < 0.05): a column's "
                        "label or a configuration, e.g. 'shedder=ThresholdShedder' (default: the first column)")
    p.set_defaults(func=cmd_compare)
    return p


def add_sweep_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser("sweep", help="run a scenario over a config grid and seeds on Spark")
    add_sweep_arguments(p)
    p.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    p.set_defaults(func=cmd_sweep)
    return p


def add_report_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser("report", help="PNG plots and an HTML page from a roll-up or sweep folder")
    p.add_argument("rollup_dir", metavar="DIR", help="the --out folder of rollup, sweep or compare")
    p.add_argument("--out", default=None, help="report folder (default DIR/report)")
    p.set_defaults(func=cmd_report)
    return p


# ====================================================================== handlers

QUIET_HELP = ("no progress on stderr (Spark tasks done of those planned over the command's jobs, rate and "
              "ETA: a bar on a terminal, a line every 10 s otherwise)")


def _progress(what: str, args: argparse.Namespace) -> Any:
    """A progress bar of Spark's tasks on stderr, unless --quiet."""
    import contextlib

    from emulator.observe.progress import ProgressBar
    from emulator.pipeline.progress import SparkTasks

    if getattr(args, "quiet", False):
        return contextlib.nullcontext()
    return ProgressBar(what, poll=SparkTasks(), unit="tasks", stream=sys.stderr)


DEFAULT_STEP = "15s"
"""Prometheus' default scrape interval."""


class PrometheusSource(msgspec.Struct, frozen=True, kw_only=True):
    """`rollup --prometheus`'s flags, checked: the server, the range (unix s), the step, the conf."""

    url: str
    start: float
    end: float
    step: float
    service_config: Any


def prometheus_source(args: argparse.Namespace, now: float | None = None) -> PrometheusSource | None:
    """None for a roll-up of recordings; the checked source for --prometheus; UsageError (one line)
    for a mix, a missing --from, a bad URL, time, step, broker.conf or --set."""
    import time

    from emulator.model.durations import parse_flag_duration
    from emulator.pipeline.prometheus_api import parse_time, parse_url

    extra = [f for f, v in (("--from", args.time_from), ("--to", args.time_to), ("--step", args.step),
                            ("--broker-conf", args.broker_conf), ("--set", args.sets)) if v]
    if args.prometheus is None:
        if not args.run_dirs:
            raise UsageError("rollup: give recording folders (RUN_DIR...) or --prometheus URL --from T")
        if extra:
            raise UsageError(f"rollup: {extra[0]} goes with --prometheus URL, not with recording folders")
        return None
    if args.run_dirs:
        raise UsageError(f"rollup: give recording folders or --prometheus, not both (got {args.run_dirs[0]!r} "
                         f"and --prometheus {args.prometheus!r})")
    url = parse_url(args.prometheus)
    if not args.time_from:
        raise UsageError("rollup --prometheus: --from is required, e.g. --from now-1h or "
                         "--from 2024-05-01T09:00:00Z")
    now = time.time() if now is None else now
    start = parse_time(args.time_from, now, "--from")
    end = parse_time(args.time_to or "now", now, "--to")
    if not end > start:
        raise UsageError(f"--from = {args.time_from!r} is not before --to = {args.time_to or 'now'!r}")
    step = parse_flag_duration(args.step or DEFAULT_STEP, flag="--step")
    return PrometheusSource(url=url, start=start, end=end, step=step,
                            service_config=_service_config(args.broker_conf, args.sets))


def _service_config(path: str | None, sets: list[str]) -> Any:
    """Pulsar's defaults, under the broker.conf, under --set (the run's precedence)."""
    from emulator.model.config import ConfigError, ServiceConfig

    conf = ServiceConfig()
    try:
        if path:
            try:
                text = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                reason = getattr(e, "strerror", None) or str(e)
                raise UsageError(f"--broker-conf = {path!r}: {reason}") from None
            conf, _ = ServiceConfig.from_properties_with_unknown(text, source=path)
        overrides = {}
        for item in sets:
            key, sep, value = str(item).partition("=")
            if not sep or not key.strip():
                raise UsageError(f"--set = {item!r}: expected KEY=VALUE, e.g. "
                                 "--set loadBalancerBrokerOverloadedThresholdPercentage=80")
            overrides[key.strip()] = value
        return conf.with_overrides(overrides, source="--set")
    except ConfigError as e:
        raise UsageError(str(e)) from None


def cmd_rollup(args: argparse.Namespace) -> int:
    from emulator.pipeline.rollup import rollup

    source = prometheus_source(args)
    options = options_from_args(args)
    conf = conf_from_args(args)
    if source is not None:
        from emulator.pipeline.prometheus import rollup_prometheus

        with _progress("rollup --prometheus", args):
            result = rollup_prometheus(source.url, source.start, source.end, source.step, args.out,
                                       master=args.master, options=options, conf=conf,
                                       service_config=source.service_config)
        return 0 if result.runs else 1
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


def cmd_compare(args: argparse.Namespace) -> int:
    from emulator.pipeline.side_by_side import compare_folders

    compare_folders(args.folders, args.out, baseline=args.baseline)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from emulator.pipeline.report import report

    try:
        written = report(args.rollup_dir, args.out)
    except (ValueError, FileNotFoundError) as e:
        raise UsageError(str(e)) from None
    print(f"report: {written.html}")
    return 0
