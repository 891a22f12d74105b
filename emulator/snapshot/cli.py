"""`pulsar-lb-emulator snapshot export|to-scenario`: the subcommands (export.py, to_scenario.py).

    pulsar-lb-emulator snapshot export --url http://broker-1:8080 DIR [--cluster C] [--broker-url T]
    pulsar-lb-emulator snapshot to-scenario DIR [-o FILE] [--name N] [--duration 30m] [--seed 1]

Bad input or a failed call: one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_snapshot_parser"]

EXIT_USAGE = 2

EPILOG = """\
examples:
  pulsar-lb-emulator run my.toml --metrics-port 8080 &          # an emulated cluster to read
  pulsar-lb-emulator snapshot export --url http://127.0.0.1:8080 snap/
  pulsar-lb-emulator snapshot export --url https://pulsar.example:8443 snap/ --broker-url 'https://{broker}'
  pulsar-lb-emulator snapshot to-scenario snap/ -o replay.toml
  pulsar-lb-emulator run replay.toml --shedder AvgShedder
"""


def add_snapshot_parser(sub: Any) -> None:
    snapshot = sub.add_parser("snapshot", help="read a cluster through the admin API; turn that into a scenario",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = snapshot.add_subparsers(dest="snapshot_command", required=True, parser_class=type(snapshot))

    export = actions.add_parser("export", help="GET the admin paths pulsar-admin uses; one file per call")
    export.add_argument("--url", required=True, help="web service URL of a Pulsar broker, or of the emulator")
    export.add_argument("dir", metavar="DIR", help="new (or empty) folder for the snapshot")
    export.add_argument("--cluster", help="the cluster to read when the URL knows several")
    export.add_argument("--broker-url", metavar="TEMPLATE",
                        help="each broker's web service, {broker} = its id (default http://{broker}; "
                             "{url}/emulator/brokers/{broker} for the emulator)")
    export.add_argument("--token-file", metavar="FILE", help="a file holding a token (Authorization: Bearer)")
    export.add_argument("--timeout", type=float, default=30.0, help="seconds per call (default 30)")
    export.set_defaults(func=cmd_export)

    to_scenario = actions.add_parser("to-scenario", help="a snapshot folder -> a scenario TOML")
    to_scenario.add_argument("dir", metavar="DIR", help="a folder written by `snapshot export`")
    to_scenario.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")
    to_scenario.add_argument("--name", help="scenario name (default snapshot-<cluster>)")
    to_scenario.add_argument("--duration", default="30m", help="the scenario's duration (default 30m)")
    to_scenario.add_argument("--seed", type=int, default=1, help="the scenario's seed (default 1)")
    to_scenario.set_defaults(func=cmd_to_scenario)


def _fail(message: str) -> int:
    sys.stderr.write(f"pulsar-lb-emulator: error: {message}\n")
    return EXIT_USAGE


def cmd_export(args: argparse.Namespace) -> int:
    from .export import ExportError, export

    token = None
    if args.token_file:
        try:
            token = Path(args.token_file).read_text(encoding="utf-8").strip()
        except OSError as e:
            return _fail(f"--token-file = {args.token_file!r}: cannot read it ({e.strerror})")
    if not args.timeout > 0:
        return _fail(f"--timeout = {args.timeout!r}: must be a positive number of seconds")
    try:
        index = export(args.url, args.dir, cluster=args.cluster, broker_url=args.broker_url,
                       timeout=args.timeout, token=token)
    except (ValueError, ExportError) as e:
        return _fail(str(e))
    written = sum(1 for c in index.calls if c.file)
    sys.stderr.write(f"snapshot of cluster {index.cluster}: {len(index.calls)} calls, {written} files "
                     f"in {args.dir}\n")
    return 0


def cmd_to_scenario(args: argparse.Namespace) -> int:
    from emulator.model.durations import parse_flag_duration

    from .to_scenario import SnapshotError, read_snapshot, scenario_dict, to_toml

    parse_flag_duration(args.duration)  # UsageError: one line, exit 2
    try:
        snap = read_snapshot(args.dir)
    except SnapshotError as e:
        return _fail(str(e))
    scenario, skipped = scenario_dict(snap, name=args.name, duration=args.duration, seed=args.seed)
    text = to_toml(scenario)
    for line in skipped:
        sys.stderr.write(f"left out: {line}\n")
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as e:
            return _fail(f"-o = {os.fspath(args.output)!r}: cannot write it ({e.strerror})")
    else:
        sys.stdout.write(text)
    return 0
