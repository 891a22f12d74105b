"""The `pulsar-lb-emulator` command.

`run` boots an emulated cluster (brokers, a namespace with its bundles, topics, clients) on the virtual
clock for `--duration` of emulated time, then prints bundle ownership per broker and the lookup counts.
Bad input gets one line naming the flag and the value, and exit code 2; never a traceback.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from typing import Sequence

EXIT_USAGE = 2

_DURATION = re.compile(r"^\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s)?\s*$")


class UsageError(Exception):
    """Bad input: reported as one line with exit code 2."""


def parse_duration(text: str, *, flag: str = "--duration") -> float:
    """'90m', '2h', '1h30m', '45s' or a plain number of seconds -> seconds."""
    text = text.strip()
    try:
        value = float(text)
    except ValueError:
        m = _DURATION.match(text)
        if not text or m is None or not any(m.groups()):
            raise UsageError(f"{flag} = {text!r}: expected a duration like 90m, 2h, 1h30m, 45s") from None
        h, mi, s = (float(g) if g else 0.0 for g in m.groups())
        value = h * 3600 + mi * 60 + s
    if value <= 0:
        raise UsageError(f"{flag} = {text!r}: must be > 0")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def _positive_int(flag: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} = {text!r}: expected an integer") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"{flag} = {text!r}: must be >= 1")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pulsar-lb-emulator",
                     description="Emulate Apache Pulsar's Modular Load Manager, faster than real time.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="run an emulated cluster")
    run.add_argument("--duration", default="10m", help="emulated time to run (e.g. 90m, 2h); default 10m")
    run.add_argument("--brokers", type=_positive_int("--brokers"), default=5)
    run.add_argument("--namespace", default="public/default")
    run.add_argument("--bundles", type=_positive_int("--bundles"), default=16,
                     help="initial bundles of the namespace")
    run.add_argument("--topics", type=_positive_int("--topics"), default=1000)
    run.add_argument("--clients", type=_positive_int("--clients"), default=10)
    run.add_argument("--seed", type=int, default=1)
    run.add_argument("--placement", default=None, help="placement strategy (name, Pulsar class or pkg.module:Class)")
    run.add_argument("--quiet", action="store_true", help="print only the summary")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            return _cmd_run(args)
    except UsageError as e:
        sys.stderr.write(f"pulsar-lb-emulator: error: {e}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    import anyio

    import strategies
    from emulator.cluster.cluster import Cluster, ClusterSettings
    from emulator.cluster.messages import HandleKind
    from emulator.model.config import ServiceConfig
    from emulator.observe.invariants import InvariantChecker
    from emulator.observe.logs import configure_logging
    from emulator.runtime import VirtualClock, run

    duration = parse_duration(args.duration)
    if args.placement is not None:
        try:
            strategies.create(args.placement, rng=__import__("random").Random(0))
        except ValueError as e:
            raise UsageError(f"--placement = {args.placement!r}: {e}") from None
    if args.namespace.count("/") != 1:
        raise UsageError(f"--namespace = {args.namespace!r}: expected tenant/namespace")
    clock = VirtualClock()
    configure_logging(clock, level="warning")

    async def scenario() -> tuple[str, float]:
        conf = ServiceConfig()
        settings = ClusterSettings(placement=args.placement)
        async with Cluster.start(args.brokers, conf=conf, seed=args.seed, clock=clock,
                                 namespaces={args.namespace: args.bundles}, settings=settings) as cluster:
            checker = InvariantChecker(cluster, 1.0)
            async with anyio.create_task_group() as tg:
                tg.start_soon(checker.run)
                await cluster.wait_for_leader()
                clients = [cluster.add_client() for _ in range(args.clients)]
                topics = [f"persistent://{args.namespace}/topic-{i}" for i in range(args.topics)]
                for i, client in enumerate(clients):
                    client.create_handles(topics[i::len(clients)], HandleKind.PRODUCER)
                await anyio.sleep(max(0.0, duration - clock.now()))
                checker.check_now()
                tg.cancel_scope.cancel()
            return _summary(cluster, checker), clock.now()

    started = time.perf_counter()
    text, emulated = run(scenario, clock=clock)
    wall = time.perf_counter() - started
    print(text)
    print(f"emulated {emulated:.0f} s in {wall:.2f} s wall ({emulated / wall:,.0f}x real time)")
    return 0


def _summary(cluster, checker) -> str:
    ownership = cluster.ownership()
    per_broker: dict[str, list[str]] = {b: [] for b in sorted(cluster.brokers)}
    for bundle, broker in sorted(ownership.items()):
        per_broker.setdefault(broker, []).append(bundle)
    leader = cluster.leader()
    lines = ["bundle ownership per broker:"]
    for broker, bundles in per_broker.items():
        mark = " (leader)" if broker == leader else ""
        state = "" if cluster.brokers.get(broker) and cluster.brokers[broker].alive else " (dead)"
        topics = sum(len(o.actor.topics) for o in cluster.brokers[broker].owned.values()
                     if o.actor is not None) if broker in cluster.brokers else 0
        lines.append(f"  {broker}{mark}{state}: {len(bundles)} bundles, {topics} topics")
        for bundle in bundles:
            lines.append(f"    {bundle}")
    counts = cluster.lookup_counts()
    connected = sum(c.connected_count() for c in cluster.clients.values())
    handles = sum(len(c.handles) for c in cluster.clients.values())
    lines.append("lookups (brokers): " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    client_lookups = sum(c.stats.lookups for c in cluster.clients.values())
    client_failed = sum(c.stats.lookups_failed for c in cluster.clients.values())
    lines.append(f"client lookups: {client_lookups} ({client_failed} failed); "
                 f"producers connected: {connected}/{handles}")
    lines.append(f"invariant checks: {checker.checks}, violations: {len(checker.violations)}")
    for v in checker.violations[:5]:
        lines.append(f"  {v}")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
