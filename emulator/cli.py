"""The `pulsar-lb-emulator` command.

    pulsar-lb-emulator --version
    pulsar-lb-emulator run [NAME|FILE] [--set key=value ...] [--duration 2h] [--seed 7] ...
    pulsar-lb-emulator scenarios [show NAME]
    pulsar-lb-emulator monitor --url http://127.0.0.1:PORT
    pulsar-lb-emulator snapshot export --url URL DIR | snapshot to-scenario DIR [-o FILE]
    pulsar-lb-emulator rollup RUN_DIR... | sweep SCENARIO --grid k=v1,v2 --seeds 1-5 | report ROLLUP_DIR
    pulsar-lb-emulator rollup --prometheus URL --from T [--to T] | compare ROLLUP_DIR ROLLUP_DIR...

Bad input (flags, scenario files, broker.conf) gets one line on stderr naming the file or flag, the key
and the value, and exit code 2; never a traceback. A run stopped with Ctrl-C (or SIGTERM) prints the
summary so far and exits 130 (143). A run ends with 0, or 1 when an invariant was violated or one of the
scenario's [[expect]] tables failed (each printed as a line of the summary), or 3 when an actor crashed
(an emulator bug: logged with its traceback, listed at the top of the summary; 3 wins over 1).

A name that is not known (a built-in scenario, a scenario file's key, a flag's choice, a strategy, shedder
or load manager class) is answered with the closest known one, "(did you mean default?)", from the one
helper `emulator.model.suggest.did_you_mean`. `run --help` lists the load managers, strategies and
shedders from their registries, so a new one shows up there without editing this file.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import signal
import sys
import threading
from typing import Any, NoReturn, Sequence

import shedders
import strategies
from emulator.model.config import LOAD_MANAGER_CLASSES, ServiceConfig
from emulator.model.durations import parse_flag_duration
from emulator.model.errors import UsageError
from emulator.model.suggest import did_you_mean

EXIT_USAGE = 2
EXIT_EMULATOR_BUG = 3  # an actor crashed during the run


DISTRIBUTION = "pulsar-lb-emulator"


def version() -> str:
    """The installed distribution's version; from a source tree that is not installed, the package's
    own `emulator.__version__`, marked so."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        from emulator import __version__

        return f"{__version__} (not installed; the source tree's version)"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2 (argparse would print usage too)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_USAGE)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """argparse's "invalid choice" (a choice flag or a sub-command), with the closest choice."""
        if action.choices is not None and value not in action.choices:
            choices = [str(c) for c in action.choices]
            raise argparse.ArgumentError(action, f"invalid choice: {value!r}{did_you_mean(str(value), choices)}; "
                                                 f"choose from {', '.join(map(repr, choices))}")


def _int(flag: str, minimum: int | None = None):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} = {text!r}: expected an integer") from None
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"{flag} = {text!r}: must be >= {minimum}")
        return value

    return parse


def _host(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError(f"--metrics-host = {text!r}: expected an address to bind, e.g. "
                                         "127.0.0.1 (0.0.0.0: every interface)")
    return text


def _token(text: str) -> str:
    if not text or text != text.strip() or not text.isprintable():
        raise argparse.ArgumentTypeError("--admin-token: expected a non-empty token of printable characters "
                                         "without surrounding spaces")
    return text


def _float(flag: str):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} = {text!r}: expected a number") from None
        if not value > 0 or value == float("inf"):
            raise argparse.ArgumentTypeError(f"{flag} = {text!r}: must be a positive number")
        return value

    return parse


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"--set = {text!r}: expected key=value with a Pulsar key name")
    return key.strip(), value.strip()


def _short(class_name: str) -> str:
    return class_name.rsplit(".", 1)[-1]


def _listing(names: list[str], default: str) -> str:
    """`A, B (default), C`: the names as a flag takes them, the configured default marked."""
    return ", ".join(n + (" (default)" if _short(n) == _short(default) else "") for n in names)


def load_manager_names() -> list[str]:
    """The short names `--load-manager` takes (Pulsar's full class names work too)."""
    return [_short(c) for c in LOAD_MANAGER_CLASSES]


def _strategy_help() -> dict[str, str]:
    """The help of --placement, --shedder and --load-manager, from the registries."""
    conf = ServiceConfig()
    extensible_shedders = ", ".join(shedders.extensible_names())
    return {
        "placement": "placement strategy (loadBalancerLoadPlacementStrategy): "
                     + _listing(strategies.names(), conf.load_balancer_load_placement_strategy)
                     + "; or a Pulsar class name, or your own as pkg.module:Class",
        "shedder": "shedding strategy (loadBalancerLoadSheddingStrategy): "
                   + _listing(shedders.names(), conf.load_balancer_load_shedding_strategy)
                   + f"; with --load-manager ExtensibleLoadManagerImpl: {extensible_shedders}; "
                     "or a Pulsar class name, or your own as pkg.module:Class",
        "load_manager": "loadManagerClassName, by Pulsar's class name or its short name: "
                        + _listing(load_manager_names(), conf.load_manager_class_name)
                        + "; an unknown class falls back to SimpleLoadManagerImpl, as in Pulsar "
                          "(with a warning naming the closest known one)",
    }


RUN_EPILOG = """\
settings precedence (lowest to highest):
  built-in defaults < --broker-conf < scenario [settings] < --set / --placement / --shedder / --load-manager

examples:
  pulsar-lb-emulator run                                  # the default scenario, virtual clock
  pulsar-lb-emulator run overloading --set loadBalancerBrokerOverloadedThresholdPercentage=70
  pulsar-lb-emulator run my.toml --broker-conf broker.conf --shedder UniformLoadShedder --duration 2h
  pulsar-lb-emulator run --clock wall --speed 60 --metrics-port 8080   # scrape it with Prometheus
"""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pulsar-lb-emulator",
                     description="Emulate Apache Pulsar's Modular Load Manager, faster than real time.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    flag_help = _strategy_help()
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run an emulated cluster on a scenario", epilog=RUN_EPILOG,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("scenario", nargs="?", default="default", metavar="NAME|FILE",
                     help="built-in scenario name (see `scenarios`) or a scenario TOML file; default: default")
    run.add_argument("--broker-conf", metavar="FILE", help="a real Pulsar broker.conf (unknown keys warned once)")
    run.add_argument("--set", dest="sets", action="append", default=[], type=_key_value, metavar="KEY=VALUE",
                     help="a Pulsar config key (e.g. loadBalancerSheddingIntervalMinutes=5); repeatable")
    run.add_argument("--placement", metavar="CLASS", help=flag_help["placement"])
    run.add_argument("--shedder", metavar="CLASS", help=flag_help["shedder"])
    run.add_argument("--load-manager", metavar="CLASS", help=flag_help["load_manager"])
    run.add_argument("--seed", type=_int("--seed"), help="run seed (default: the scenario's)")
    run.add_argument("--duration", help="emulated time to run, e.g. 90m, 2h (default: the scenario's)")
    run.add_argument("--clock", choices=("virtual", "wall"), default="virtual",
                     help="virtual (as fast as possible, default) or wall (the same run, paced so "
                          "emulated time never runs ahead of real time x --speed; same decisions)")
    run.add_argument("--speed", type=_float("--speed"), default=1.0,
                     help="wall clock: emulated seconds per real second (default 1)")
    run.add_argument("--record", metavar="DIR", help="record the run into a new folder under DIR")
    run.add_argument("--record-interval", default="10s", help="emulated time between samples (default 10s)")
    run.add_argument("--record-decisions", choices=("full", "decisions", "off"), default="decisions",
                     help="what decisions.jsonl.gz holds: full (every candidate list and score of each "
                          "selection), decisions (one line per decision, the trace cut to the choice, its "
                          "score and any fallback taken; default) or off (no file)")
    run.add_argument("--record-plain", action="store_true",
                     help="write plain .jsonl files instead of gzip-compressed .jsonl.gz")
    run.add_argument("--summary-json", metavar="FILE",
                     help="write the summary and every KPI of the run as one JSON object to FILE (also "
                          "`summary` in the recording's run.json)")
    run.add_argument("--metrics-port", type=_int("--metrics-port", 0),
                     help="serve /metrics and the admin views on this port (0: any free port)")
    run.add_argument("--metrics-host", type=_host, default="127.0.0.1",
                     help="bind address (default 127.0.0.1; 0.0.0.0 for every interface)")
    run.add_argument("--pulsar-port", metavar="BASE", type=_int("--pulsar-port", 1),
                     help="wall clock: broker k serves Pulsar's binary protocol on BASE + k - 1 (on --metrics-host) "
                          "for real clients, e.g. 6650 (also [serve] pulsar_port in a scenario)")
    run.add_argument("--admin-token", metavar="TOKEN", type=_token,
                     help="writes through the HTTP server's admin paths need `Authorization: Bearer TOKEN`")
    run.add_argument("--monitor-interval", metavar="DURATION",
                     help="print the monitor-brokers table every DURATION of emulated time")
    run.add_argument("--log-format", choices=("console", "json"), default="console")
    run.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="warning",
                     help="log level on stderr (info shows the decision log); default warning")
    run.add_argument("--check-interval", default="10s", metavar="DURATION",
                     help="emulated time between invariant checks (default 10s; one more at the end)")
    run.add_argument("--no-memory-check", action="store_true",
                     help="run even when the scenario's estimated memory exceeds what the machine has available")
    run.add_argument("--quiet", action="store_true",
                     help="no progress (a bar with rate and ETA on a terminal, else a line every 10 s of "
                          "wall time on stderr), only the summary")
    run.set_defaults(func=cmd_run)

    scenarios = sub.add_parser("scenarios", help="list the built-in scenarios, or show one")
    scenarios.add_argument("action", nargs="?", choices=("list", "show"), default="list")
    scenarios.add_argument("name", nargs="?", help="scenario to show")
    scenarios.set_defaults(func=cmd_scenarios)

    monitor = sub.add_parser("monitor", help="print the monitor-brokers table of a running emulator")
    monitor.add_argument("--url", required=True, help="http://127.0.0.1:PORT of `run --metrics-port PORT`")
    monitor.add_argument("--watch", metavar="INTERVAL",
                         help="print the tables again every INTERVAL of real time (e.g. 5s) until interrupted")
    monitor.add_argument("--extensions", action="store_true",
                         help="the Extensible load manager's tables (monitor-brokers --extensions): "
                              "each broker's BrokerLoadData from the broker-load-data table view")
    monitor.set_defaults(func=cmd_monitor)

    from emulator.snapshot.cli import add_snapshot_parser

    add_snapshot_parser(sub)

    try:
        from emulator.pipeline.cli import add_compare_parser, add_report_parser, add_rollup_parser, add_sweep_parser
    except ImportError:  # pragma: no cover - the pipeline is optional at import time
        pass
    else:
        add_rollup_parser(sub)
        add_sweep_parser(sub)
        add_report_parser(sub)
        add_compare_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    main_thread = threading.current_thread() is threading.main_thread()
    # SIGTERM ends with 143, not -15, at any moment (`run` installs its own handler for the run)
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum)) if main_thread else None
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        return int(args.func(args) or 0)
    except UsageError as e:
        sys.stderr.write(f"pulsar-lb-emulator: error: {e}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


# --------------------------------------------------------------------------- run


def cmd_run(args: argparse.Namespace) -> int:
    from emulator.observe.logs import configure_logging
    from emulator.runner import RunError, RunOptions, run

    overrides = dict(args.sets)
    if args.placement:
        overrides["placement"] = args.placement
    if args.shedder:
        overrides["shedder"] = args.shedder
    if args.load_manager:
        from emulator.cluster.load_manager import resolve_class_name

        overrides["loadManagerClassName"] = resolve_class_name(args.load_manager)
        if overrides["loadManagerClassName"] not in LOAD_MANAGER_CLASSES:
            # Pulsar's fallback is kept (each broker logs it); the command says once what was meant
            sys.stderr.write(f"pulsar-lb-emulator: warning: --load-manager = {args.load_manager!r}: not a load "
                             f"manager the emulator knows{did_you_mean(args.load_manager, load_manager_names())}; "
                             "the brokers fall back to SimpleLoadManagerImpl, as Pulsar does\n")
    opts = RunOptions(
        scenario=args.scenario, broker_conf=args.broker_conf, overrides=overrides, seed=args.seed,
        duration=parse_flag_duration(args.duration) if args.duration is not None else None,
        clock=args.clock, speed=args.speed, record_dir=args.record,
        record_interval=parse_flag_duration(args.record_interval, flag="--record-interval"),
        metrics_port=args.metrics_port, metrics_host=args.metrics_host, admin_token=args.admin_token,
        monitor_interval=(parse_flag_duration(args.monitor_interval, flag="--monitor-interval")
                          if args.monitor_interval is not None else None),
        progress=not args.quiet,
        record_decisions=args.record_decisions, record_compress=not args.record_plain,
        summary_json=args.summary_json, log_decisions=args.log_level in ("debug", "info"),
        check_interval=parse_flag_duration(args.check_interval, flag="--check-interval"),
        memory_check=not args.no_memory_check, pulsar_port=args.pulsar_port,
    )
    from emulator.runtime import VirtualClock

    configure_logging(VirtualClock(), level=args.log_level, fmt=args.log_format, stream=sys.stderr)
    try:
        result = run(opts)
    except RunError as e:
        raise UsageError(str(e)) from None
    if result.summary_text:   # none when the run was stopped before the cluster was ready
        sys.stdout.write(result.summary_text.rstrip("\n") + "\n")
    if result.violations:
        sys.stdout.write(f"invariant violations: {len(result.violations)}\n")
        for v in result.violations[:10]:
            sys.stdout.write(f"  {v}\n")
    sys.stdout.flush()
    if not args.quiet:
        rate = result.emulated_seconds / result.wall_seconds if result.wall_seconds > 0 else 0.0
        sys.stderr.write(f"emulated {result.emulated_seconds:,.0f} s in {result.wall_seconds:.2f} s wall "
                         f"({rate:,.0f}x real time)"
                         + (f"; recorded in {result.record_path}" if result.record_path else "")
                         + (f"; interrupted by {result.interrupted}" if result.interrupted else "") + "\n")
    if result.interrupted == "SIGINT":
        return 130
    if result.interrupted == "SIGTERM":
        return 143
    if result.actor_failures:
        sys.stderr.write(f"pulsar-lb-emulator: {len(result.actor_failures)} actor failure(s): an emulator "
                         "bug, please report it with the log\n")
        return EXIT_EMULATOR_BUG
    if result.expectations_failed:
        sys.stderr.write(f"pulsar-lb-emulator: {result.expectations_failed} of {len(result.expectations)} "
                         "scenario expectation(s) failed\n")
    return 1 if result.violations or result.expectations_failed else 0


# --------------------------------------------------------------------------- scenarios, monitor


def cmd_scenarios(args: argparse.Namespace) -> int:
    from emulator.workload import library

    if args.action == "list":
        if args.name:
            raise UsageError(f"scenarios list takes no name (got {args.name!r}); use `scenarios show NAME`")
        rows = library.describe()
        width = max(len(n) for n, _ in rows)
        for name, description in rows:
            sys.stdout.write(f"{name:<{width}}  {description}\n")
        return 0
    if not args.name:
        raise UsageError("scenarios show: NAME is missing; `pulsar-lb-emulator scenarios` lists them")
    if args.name not in library.names():
        raise UsageError(f"scenarios show {args.name!r}: no such scenario"
                         f"{did_you_mean(args.name, library.names())}; known: {', '.join(library.names())}")
    sys.stdout.write(library.source(args.name))
    return 0


def cmd_monitor(args: argparse.Namespace) -> int:
    from emulator.observe.monitor import MonitorError, NoExtensibleBrokers, monitor, watch

    interval = (parse_flag_duration(args.watch, flag="--watch") if args.watch is not None else None)
    try:
        if interval is None:
            sys.stdout.write(monitor(args.url, extensions=args.extensions) + "\n")
        else:
            watch(args.url, interval, extensions=args.extensions)
    except KeyboardInterrupt:
        return 0
    except ValueError as e:
        raise UsageError(f"--url = {args.url!r}: {e}") from None
    except NoExtensibleBrokers as e:
        sys.stderr.write(f"pulsar-lb-emulator: monitor --extensions: {e}\n")
        return EXIT_USAGE
    except MonitorError as e:
        sys.stderr.write(f"pulsar-lb-emulator: {e}\n")
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
