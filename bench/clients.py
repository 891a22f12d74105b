"""`python -m bench.clients [--quick] [--out FILE]`: the emulated clients held against the real one.

The same small scenario runs on the wall clock with the emulator's own clients (emulator/cluster/
client.py; `MODES`: as scenarios run them, and with the C++ client's differences on) and with real
`pulsar.Client` producers and consumers (the C++ client's Python wheel) talking Pulsar's binary protocol
to the same emulated brokers (emulator/wire/):
4 brokers, a namespace of `bundles` bundles, `topics` topics each with one producer publishing `rate`
msg/s and one consumer. Scenarios, each on a fresh cluster: `unload` (an admin unload of every bundle at
once), `kill` (the broker owning most bundles crashes; its session expires after `session_s`),
`restart` (every broker stopped gracefully and started again, one after another).

Figures, measured on the broker side for both kinds of client:

* reconnect time: for each producer or consumer, from the broker's close of it (CloseHandle, or its
  connection dropped) to its next attach. Emulated: the handle events (HandleDisconnected ->
  HandleReconnected, which the client emits as the broker's close and accept reach it, with no network
  latency in between). Real: a tap on the wire connections (`_TappedConnection`), keyed by topic and kind;
* lookups and redirects per reconnect: the brokers' lookup counters (every hop a broker answered),
  from the disruption to the end of the scenario, over the reconnects;
* publish latency: real: from `send_async` to its callback; emulated: emulator/observe/publish.py's
  model (its base latency, plus the wait of what was sent during an outage);
* failed sends: callbacks with an error (real), the accounting's timed-out, refused and closed (emulated).

Not part of `python -m bench` (it measures the emulated client's faithfulness, not the emulator's
speed, and needs `pulsar-client`). The rows go to `--out` as the other benches' do: one row per
scenario and figure, `figure` the emulated client's, `baseline` the real client's, `ratio`
emulated / real.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import anyio
import msgspec

from emulator.cluster.events import Event, HandleDisconnected, HandleReconnected
from emulator.cluster.messages import CloseHandle, HandleKind
from emulator.wire.options import free_base_port

from .harness import Options, Row, quiet_logs, report

SCENARIOS = ("unload", "kill", "restart")
MODES = ("emulated", "emulated_cpp", "real")
"""`emulated`: the emulated client as scenarios run it (the Java client's steps); `emulated_cpp`: the same
with the C++ client's two differences on (`ClientSettings(lookup_retry=True, lockstep_jitter=True)`);
`real`: pulsar-client."""
NS = "public/bench"
DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "clients.json")


class Size(msgspec.Struct, frozen=True, kw_only=True):
    brokers: int = 4
    bundles: int = 8
    topics: int = 24
    rate: float = 4.0            # msg/s per topic
    session_s: float = 5.0       # metadataStoreSessionTimeoutMillis / 1000 (the kill waits for it)
    warmup_s: float = 2.0        # publishing before the disruption
    settle_s: float = 2.0        # publishing after every handle is back
    back_timeout_s: float = 90.0


def size(quick: bool) -> Size:
    return Size(topics=6, rate=2.0, warmup_s=1.0, settle_s=0.5) if quick else Size()


class Outcome(msgspec.Struct, kw_only=True):
    """One scenario with one kind of client."""

    reconnects: list[float]      # seconds, one per producer/consumer reconnect
    lookups: int
    redirects: int
    latencies: list[float] = []  # real client: seconds per acknowledged send
    publish: dict[str, float] = {}   # p50, p99, p999 (s), messages, failed
    wall_s: float = 0.0
    details: dict[str, Any] = {}


def _quantile(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(q * len(s) + 0.5) - 1))] if q < 1 else s[-1]


# --------------------------------------------------------------------------- the real clients' tap


class _Tap:
    """Broker-side timeline of the real clients' producers and consumers, keyed (topic, kind): one
    producer and one consumer per topic, so the key names a handle across its connections.

    Times are real (time.monotonic()): the wall clock's loop is virtual time paced by real time, and
    its time moves only to its next timer, not while it waits on the real client's sockets."""

    def __init__(self) -> None:
        self.attached: dict[tuple[str, str], str] = {}
        self.down: dict[tuple[str, str], float] = {}
        self.samples: list[float] = []

    def closed(self, key: tuple[str, str], t: float) -> None:
        if self.attached.pop(key, None) is not None:
            self.down.setdefault(key, t)

    def opened(self, key: tuple[str, str], broker: str, t: float) -> None:
        self.attached[key] = broker
        since = self.down.pop(key, None)
        if since is not None:
            self.samples.append(t - since)


def _tapped_server(cluster: Any, base_port: int, meter: Any, tap: _Tap) -> Any:
    """A WireServer whose connections (`connection_class`) report attaches and closes to `tap`."""
    from emulator.wire.connection import WireConnection
    from emulator.wire.server import WireServer

    class TappedConnection(WireConnection):
        def _broker_closed(self, msg: CloseHandle) -> None:
            handles: dict[int, Any] = self.producers if msg.kind is HandleKind.PRODUCER else self.consumers
            h = handles.get(msg.handle_id)
            if h is not None and h.topic == msg.topic:
                tap.closed((msg.topic, msg.kind.value), time.monotonic())
            super()._broker_closed(msg)

        def close(self, why: str) -> None:
            if not self.closed:
                for p in self.producers.values():
                    tap.closed((p.topic, HandleKind.PRODUCER.value), time.monotonic())
                for c in self.consumers.values():
                    tap.closed((c.topic, HandleKind.CONSUMER.value), time.monotonic())
            super().close(why)

        async def _producer(self, p: Any) -> None:
            await super()._producer(p)
            h = self.producers.get(p.producer_id)
            if h is not None and not self.closed:
                tap.opened((h.topic, HandleKind.PRODUCER.value), self.broker_id, time.monotonic())

        async def _subscribe(self, s: Any) -> None:
            await super()._subscribe(s)
            h = self.consumers.get(s.consumer_id)
            if h is not None and not self.closed:
                tap.opened((h.topic, HandleKind.CONSUMER.value), self.broker_id, time.monotonic())

    class TappedServer(WireServer):
        connection_class = TappedConnection

    return TappedServer(cluster, base_port, meter=meter,
                        keep_alive=float(cluster.conf.keep_alive_interval_seconds))


class _RealWork:
    """Real producers and consumers (one of each per topic) and a publishing thread at `rate` msg/s
    per topic, spread evenly; latency from send_async to its callback."""

    def __init__(self, pulsar: Any, url: str, topics: list[str], rate: float) -> None:
        level = getattr(pulsar.LoggerLevel, os.environ.get("BENCH_CLIENT_LOG", "Error"))   # Info: its steps
        self.client = pulsar.Client(url, logger=pulsar.ConsoleLogger(level))
        self.ok = pulsar.Result.Ok
        self.consumers = [self.client.subscribe(t, "bench", message_listener=self._ack) for t in topics]
        self.producers = [self.client.create_producer(t) for t in topics]
        self.period = 1.0 / (rate * len(topics))
        self.latencies: list[float] = []
        self.failed: dict[str, int] = {}
        self.sent = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._publish, daemon=True)

    @staticmethod
    def _ack(consumer: Any, msg: Any) -> None:
        consumer.acknowledge(msg)

    def _publish(self) -> None:
        i = 0
        t_next = time.perf_counter()
        n = len(self.producers)
        while not self.stop.is_set():
            t0 = time.perf_counter()
            self.producers[i % n].send_async(b"x" * 100, functools.partial(self._done, t0))
            self.sent += 1
            i += 1
            t_next += self.period
            delay = t_next - time.perf_counter()
            if delay > 0:
                self.stop.wait(delay)

    def _done(self, t0: float, result: Any, msg_id: Any) -> None:
        if result == self.ok:
            self.latencies.append(time.perf_counter() - t0)
        else:
            self.failed[str(result)] = self.failed.get(str(result), 0) + 1

    def finish(self, wait_s: float = 5.0) -> int:
        """Stop publishing, wait for the outstanding callbacks; returns those still unanswered."""
        self.stop.set()
        self.thread.join(10)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and self._pending():
            time.sleep(0.05)
        pending = self._pending()
        self.client.close()
        return pending

    def _pending(self) -> int:
        return self.sent - len(self.latencies) - sum(self.failed.values())


# --------------------------------------------------------------------------- one scenario


class _Lookups:
    """The brokers' lookup counters summed over every broker object seen: a restarted broker is a new
    `Broker` whose counters start at 0, so `Cluster.lookup_counts()` alone would go back."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.seen: dict[int, Any] = {}
        self.base = self.totals()

    def see(self) -> None:
        for b in self.cluster.brokers.values():
            self.seen.setdefault(id(b), b)

    def totals(self) -> tuple[int, int]:
        self.see()
        return (sum(b.stats.lookups for b in self.seen.values()),
                sum(b.stats.redirects for b in self.seen.values()))

    def since(self) -> tuple[int, int]:
        lookups, redirects = self.totals()
        return lookups - self.base[0], redirects - self.base[1]


async def _disrupt(scenario: str, cluster: Any, back: Callable[[], bool], sz: Size,
                   counted: _Lookups) -> dict[str, Any]:
    """The disruption; returns what it did."""
    bundles = (await cluster.namespace_bundles(NS)).names
    owned = cluster.ownership()
    if scenario == "unload":
        async with anyio.create_task_group() as tg:
            for b in bundles:
                if b in owned:
                    tg.start_soon(cluster.unload_bundle, b)
        return {"unloaded": sum(b in owned for b in bundles)}
    if scenario == "kill":
        leader = cluster.leader()
        counts: dict[str, int] = {}
        for b in bundles:
            if owned.get(b) and owned[b] != leader:
                counts[owned[b]] = counts.get(owned[b], 0) + 1
        victim = max(sorted(counts), key=lambda k: counts[k])
        cluster.kill_broker(victim)
        return {"killed": victim, "bundles": counts[victim]}
    assert scenario == "restart"
    done = []
    for broker_id in list(cluster.live_brokers()):
        host = cluster.brokers[broker_id].host
        counted.see()
        graceful = await cluster.stop_broker(broker_id, "graceful")
        await cluster.add_broker(host)
        await _wait(back, sz.back_timeout_s, f"every handle back after restarting {broker_id}")
        done.append((broker_id, graceful))
    return {"restarted": done}


async def _wait(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    with anyio.fail_after(timeout):
        while not predicate():  # noqa: ASYNC110 - the real client's state is in other threads
            await anyio.sleep(0.02)


def cluster_settings() -> Any:
    """The cost-free cluster of the wire tests, but the emulated client's own steps (TCP connect, lookup,
    producer create, subscribe) take their calibrated times (latency.py's defaults, as scenarios run
    them): the real client pays its real ones. Only emulated clients draw these, so the brokers are
    the same for both kinds of client. Without them every emulated handle of an unload retries at
    exactly +100.0 ms, all lookups of a bundle arrive at once and each takes the leader's redirect."""
    from emulator.cluster.cluster import ClusterSettings
    from emulator.cluster.latency import Latencies

    d = Latencies()
    return ClusterSettings(latency=msgspec.structs.replace(
        Latencies.zero(bundle_close=0.02, topic_close=0.002), tcp_connect=d.tcp_connect, lookup=d.lookup,
        producer_create=d.producer_create, subscribe=d.subscribe))


async def _scenario(scenario: str, mode: str, sz: Size, seed: int) -> Outcome:
    from emulator.cluster.cluster import Cluster
    from emulator.cluster.load_source import FlatLoad
    from emulator.model.config import ServiceConfig
    from emulator.runtime import WallClock

    wall0 = time.perf_counter()
    conf = ServiceConfig(metadata_store_session_timeout_millis=int(sz.session_s * 1000))
    meter = None
    if mode == "real":
        from emulator.wire.meter import MeteredLoadSource, RateMeter

        meter = RateMeter()
        load: Any = MeteredLoadSource(FlatLoad(rate=0.0), meter)
    else:
        load = FlatLoad(rate=sz.rate, msg_size=100)
    async with Cluster.start(sz.brokers, conf=conf, seed=seed, clock=WallClock(), load_source=load,
                             namespaces={NS: sz.bundles}, settings=cluster_settings()) as cluster:
        await cluster.wait_for_leader()
        if meter is None:
            out = await _emulated(cluster, scenario, sz, cpp=mode == "emulated_cpp")
        else:
            out = await _real(cluster, scenario, sz, meter)
    out.wall_s = time.perf_counter() - wall0
    return out


async def _emulated(cluster: Any, scenario: str, sz: Size, *, cpp: bool) -> Outcome:
    from emulator.cluster.client import ClientSettings
    from emulator.observe.publish import publish_accounting

    topics = [f"persistent://{NS}/t-{i}" for i in range(sz.topics)]
    acc = publish_accounting(cluster)
    samples: list[float] = []
    wall: list[float] = []
    down: dict[tuple[str, int], float] = {}
    t_disrupt = [float("inf")]

    def on_event(e: Event) -> None:
        if isinstance(e, HandleDisconnected):
            down[(e.client, e.handle)] = time.monotonic()
        elif isinstance(e, HandleReconnected) and e.t >= t_disrupt[0]:
            samples.append(e.unavailable)
            since = down.pop((e.client, e.handle), None)
            if since is not None:
                wall.append(time.monotonic() - since)

    cluster.events.subscribe(on_event)
    client = cluster.add_client("bench", settings=ClientSettings(lookup_retry=cpp, lockstep_jitter=cpp))
    client.create_handles(topics, HandleKind.CONSUMER)
    client.create_handles(topics, HandleKind.PRODUCER)

    def back() -> bool:
        return bool(client.connected_count() == 2 * sz.topics)

    await _wait(back, sz.back_timeout_s, "every handle attached")
    await anyio.sleep(sz.warmup_s)
    counted = _Lookups(cluster)
    t_disrupt[0] = cluster.system.now()
    did = await _disrupt(scenario, cluster, back, sz, counted)
    await anyio.sleep(0.2)
    await _wait(back, sz.back_timeout_s, "every handle back")
    await anyio.sleep(sz.settle_s)
    lookups, redirects = counted.since()
    line = acc.stats(cluster.system.now(), exact=True).cluster
    s = client.stats
    return Outcome(reconnects=samples, lookups=lookups, redirects=redirects,
                   publish={"p50": line.p50, "p99": line.p99, "p999": line.p999,
                            "messages": line.messages, "failed": line.failed},
                   details={**did, "reconnect_wall_s": wall, "client_lookups": s.lookups,
                            "client_lookups_failed": s.lookups_failed, "attach_failures": s.attach_failures,
                            "reconnects": s.reconnects})


async def _real(cluster: Any, scenario: str, sz: Size, meter: Any) -> Outcome:
    import pulsar

    topics = [f"persistent://{NS}/t-{i}" for i in range(sz.topics)]
    tap = _Tap()
    server = _tapped_server(cluster, free_base_port(sz.brokers + 2), meter, tap)
    await server.start()
    try:
        hosts = ",".join(f"127.0.0.1:{server.port_of(b)}" for b in cluster.live_brokers())
        work = await anyio.to_thread.run_sync(_RealWork, pulsar, f"pulsar://{hosts}", topics, sz.rate)
        try:
            def back() -> bool:
                return len(tap.attached) == 2 * sz.topics and not tap.down

            await _wait(back, sz.back_timeout_s, "every handle attached")
            work.thread.start()
            await anyio.sleep(sz.warmup_s)
            counted = _Lookups(cluster)
            tap.samples.clear()
            did = await _disrupt(scenario, cluster, back, sz, counted)
            await anyio.sleep(0.2)
            await _wait(back, sz.back_timeout_s, "every handle back")
            await anyio.sleep(sz.settle_s)
            lookups, redirects = counted.since()
        finally:
            pending = await anyio.to_thread.run_sync(work.finish)
    finally:
        await server.close()
    lat = work.latencies
    failed = sum(work.failed.values())
    return Outcome(reconnects=list(tap.samples), lookups=lookups, redirects=redirects, latencies=lat,
                   publish={"p50": _quantile(lat, 0.5) or 0.0, "p99": _quantile(lat, 0.99) or 0.0,
                            "p999": _quantile(lat, 0.999) or 0.0, "messages": float(len(lat)),
                            "failed": float(failed + pending)},
                   details={**did, "failed_by_result": work.failed, "unanswered_at_end": pending,
                            "sent": work.sent})


def measure(scenario: str, mode: str, sz: Size, seed: int) -> Outcome:
    from emulator.runtime import WallClock, run

    return run(_scenario, scenario, mode, sz, seed, clock=WallClock())


# --------------------------------------------------------------------------- figures, rows, table

FIGURES: tuple[tuple[str, str, str], ...] = (
    # (key, unit, what)
    ("reconnects", "", "producer and consumer reconnects"),
    ("reconnect_p50", "s", "reconnect time P50, broker side"),
    ("reconnect_p99", "s", "reconnect time P99, broker side"),
    ("lookups_per_reconnect", "", "lookup hops the brokers answered, per reconnect"),
    ("redirects_per_reconnect", "", "Redirect answers, per reconnect"),
    ("publish_p50", "s", "publish latency P50"),
    ("publish_p99", "s", "publish latency P99"),
    ("publish_p999", "s", "publish latency P99.9"),
    ("failed_sends", "", "failed sends (real: also unanswered at the end)"),
)


def figures(o: Outcome) -> dict[str, float | None]:
    n = len(o.reconnects)
    return {
        "reconnects": float(n),
        "reconnect_p50": _quantile(o.reconnects, 0.5),
        "reconnect_p99": _quantile(o.reconnects, 0.99),
        "lookups_per_reconnect": o.lookups / n if n else None,
        "redirects_per_reconnect": o.redirects / n if n else None,
        "publish_p50": o.publish.get("p50"),
        "publish_p99": o.publish.get("p99"),
        "publish_p999": o.publish.get("p999"),
        "failed_sends": o.publish.get("failed"),
    }


def rows_of(results: dict[str, dict[str, Outcome]]) -> list[Row]:
    """One row per scenario and figure: figure = emulated, baseline = real, ratio = emulated / real."""
    rows: list[Row] = []
    for scenario, by_mode in results.items():
        emu, real = figures(by_mode["emulated"]), figures(by_mode["real"])
        cpp = figures(by_mode["emulated_cpp"]) if "emulated_cpp" in by_mode else {}
        for key, unit, what in FIGURES:
            e, r = emu[key], real[key]
            ratio = e / r if e is not None and r else None
            note = f"{what}; figure: emulated client, baseline: real pulsar-client" if key == "reconnects" else ""
            rows.append(Row(name=f"clients.{scenario}.{key}", figure=e, unit=unit, baseline=r,
                            baseline_unit="real" if r is not None else "", ratio=ratio, note=note,
                            details={"what": what, "emulated_cpp": cpp.get(key)}))
        for mode, o in by_mode.items():
            rows[-len(FIGURES)].details[mode] = {"wall_s": o.wall_s, "lookups": o.lookups,
                                                 "redirects": o.redirects, "reconnects_s": o.reconnects,
                                                 **o.details}
    return rows


def _cell(x: float | None, unit: str) -> str:
    if x is None:
        return "n/a"
    if unit == "s":
        return f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s"
    return f"{x:.2f}" if x != int(x) else f"{int(x)}"


def side_by_side(results: dict[str, dict[str, Outcome]]) -> str:
    """The table bench/README.md shows: a line per scenario and figure, a column per kind of client."""
    scenarios = list(results)
    modes = [m for m in MODES if all(m in results[s] for s in scenarios)]
    head = ["scenario", "figure", *modes]
    body = []
    for s in scenarios:
        figs = {m: figures(results[s][m]) for m in modes}
        for key, unit, _what in FIGURES:
            body.append([s, key, *(_cell(figs[m][key], unit) for m in modes)])
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(head, widths)) + " |",
             "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    lines += ["| " + " | ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in
                                enumerate(zip(r, widths))) + " |" for r in body]
    return "\n".join(lines)


def run_all(sz: Size, seed: int, scenarios: tuple[str, ...] = SCENARIOS,
            progress: Any = None) -> dict[str, dict[str, Outcome]]:
    results: dict[str, dict[str, Outcome]] = {}
    for scenario in scenarios:
        results[scenario] = {}
        for mode in MODES:
            if progress is not None:
                print(f"[bench.clients] {scenario} {mode} ...", file=progress, flush=True)
            results[scenario][mode] = measure(scenario, mode, sz, seed)
    return results


def run_bench(opts: Options) -> list[Row]:
    """The rows, for `python -m bench --only clients`-style callers."""
    quiet_logs()
    return rows_of(run_all(size(opts.quick), opts.seed))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(prog="python -m bench.clients", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="6 topics at 2 msg/s, short settles (< 60 s)")
    p.add_argument("--scenarios", default=",".join(SCENARIOS),
                   help="comma-separated, of: " + ", ".join(SCENARIOS))
    p.add_argument("--topics", type=int, default=None, help="topics (one producer, one consumer each)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default=DEFAULT_OUT, metavar="FILE",
                   help="where to write the JSON (default bench/results/clients.json)")
    args = p.parse_args(argv)
    scenarios = tuple(s.strip() for s in args.scenarios.split(",") if s.strip())
    bad = [s for s in scenarios if s not in SCENARIOS]
    if bad or not scenarios:
        p.error(f"--scenarios {args.scenarios!r}: expected some of {', '.join(SCENARIOS)}")
    if args.topics is not None and not 1 <= args.topics <= 1000:
        p.error(f"--topics {args.topics}: expected 1..1000")
    try:
        import pulsar  # noqa: F401
    except ImportError:
        print("python -m bench.clients: the real client is missing: pip install pulsar-client",
              file=sys.stderr)
        return 2
    quiet_logs()
    sz = size(args.quick)
    if args.topics is not None:
        sz = msgspec.structs.replace(sz, topics=args.topics)
    started = time.time()
    results = run_all(sz, args.seed, scenarios, progress=sys.stderr)
    rows = rows_of(results)
    opts = Options(quick=args.quick, seed=args.seed)
    doc = report(rows, opts, ["clients", *argv], started)
    doc["command"] = "python -m bench.clients " + " ".join(argv)
    doc["size"] = msgspec.to_builtins(sz)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        import json

        json.dump(doc, f, indent=2, default=str)
        f.write("\n")
    print(side_by_side(results))
    print(f"\n{sz.brokers} brokers, {sz.topics} topics x (1 producer, 1 consumer), {sz.rate:g} msg/s per "
          f"topic; {time.time() - started:.0f} s; JSON: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
