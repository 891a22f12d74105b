"""The Pulsar 3.0 restart case: every broker of a large cluster restarted within two emulated minutes.

100 brokers, 65,000 bundles (65 namespaces of 1,000), 100,000 producers on 100,000 topics (100
clients of 1,000). Once every producer is connected (t0), broker i is stopped gracefully at
t0 + i * 1.2 s (`stop_broker(id, "graceful")`, which drains its bundles one by one) and started
again with the same host (`add_broker(host)`); the run goes on until t0 + 30 emulated minutes.

Figures: wall time of the whole run (boot and first connect included), peak RSS, and the emulated
time from t0 until every producer is connected again. Targets: <= 5 min wall, <= 4 GiB.
The invariant checker runs every `CHECK_INTERVAL` emulated seconds (each check walks every
ownership node: once a second it would cost more than the cluster itself).
"""

from __future__ import annotations

import bisect
import contextlib
import time
from typing import Any

import anyio
import anyio.lowlevel

from emulator.cluster.events import (
    Event,
    HandleConnected,
    HandleDisconnected,
    HandleReconnected,
)
from emulator.cluster.messages import HandleKind
from emulator.observe.attach import observe
from emulator.observe.decision_log import DEFAULT_LEVEL
from emulator.runtime import VirtualClock, run
from emulator.testing import emulated_cluster

from .harness import Options, Row, Target, peak_rss_bytes, quiet_logs

CHECK_INTERVAL = 60.0
GIB = 1024 ** 3


class _Connected:
    """Counts connected producers from the cluster's events, and remembers when the count climbed
    back to `total` (no polling over 100,000 handles): `full_at` the last time (None while not all are
    connected), `first_full_since(t)` the first time at or after `t`.

    The figures read `first_full_since(the end of the disruption)`: "every producer is back". A later
    blip (a bundle the load manager moves afterwards: under the Extensible load manager a transfer
    disconnects its producers for ~0.1 s) is not part of the recovery; `full_at` (connected again and
    staying so to the end) is reported beside it."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.now = 0
        self.full_at: float | None = None
        self.min_after_t0: int | None = None
        self._became_full: list[float] = []   # each time the count reached total
        self._left_full: list[float] = []     # each time it dropped from total

    def __call__(self, event: Event) -> None:
        kind = type(event)
        if kind is HandleConnected or kind is HandleReconnected:
            self.now += 1
            if self.now == self.total:
                self.full_at = event.t
                self._became_full.append(event.t)
        elif kind is HandleDisconnected:
            if self.now == self.total:
                self._left_full.append(event.t)
            self.now -= 1
            self.full_at = None
            if self.min_after_t0 is not None:
                self.min_after_t0 = min(self.min_after_t0, self.now)

    def first_full_since(self, t: float) -> float | None:
        """The first instant at or after `t` at which every producer was connected (None: never)."""
        i = bisect.bisect_right(self._became_full, t)   # the times it became full, up to t: [:i]
        if i:
            last = self._became_full[i - 1]
            j = bisect.bisect_right(self._left_full, last)   # the first drop after it
            if j == len(self._left_full) or self._left_full[j] > t:
                return t                                      # full at t already
        return self._became_full[i] if i < len(self._became_full) else None


async def restart_case(*, brokers: int, namespaces: int, bundles_per_ns: int, clients: int,
                       producers_per_client: int, restart_window: float, duration: float,
                       seed: int, record_dir: str | None = None,
                       record_decisions: str = DEFAULT_LEVEL, load_manager: str | None = None) -> dict[str, Any]:
    """The case; with `record_dir`, recorded there as `run --record` does (metrics, samples every
    10 emulated s, decisions at `record_decisions`, events). `load_manager`: a loadManagerClassName
    (default Modular; the Extensible one gets TransferShedder, as its docs configure it)."""
    from emulator.model.config import ServiceConfig

    wall0 = time.perf_counter()
    ns = [f"public/ns-{i}" for i in range(namespaces)]
    total = clients * producers_per_client
    names = [f"persistent://{ns[i % namespaces]}/topic-{i}" for i in range(total)]
    conf = None
    if load_manager is not None:
        conf = ServiceConfig(load_manager_class_name=load_manager)
        if load_manager.endswith("ExtensibleLoadManagerImpl"):
            conf = ServiceConfig(load_manager_class_name=load_manager, load_balancer_load_shedding_strategy=(
                "org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder"))
    async with emulated_cluster(brokers, seed=seed, namespaces={n: bundles_per_ns for n in ns},
                                check_interval=CHECK_INTERVAL, conf=conf) as cluster:
        if cluster.decision_log is not None:
            cluster.decision_log.close()  # 100k assignment traces: the benchmark reads none of them
        counter = _Connected(total)
        cluster.events.subscribe(counter)
        async with contextlib.AsyncExitStack() as stack:
            if record_dir is not None:
                await stack.enter_async_context(observe(
                    cluster, record_dir=record_dir, record_decisions=record_decisions,
                    run_info={"scenario": "bench.restart", "seed": seed}))
            return await _drive(cluster, counter, names, total, clients, brokers, namespaces,
                                bundles_per_ns, restart_window, duration, wall0)


async def _drive(cluster: Any, counter: _Connected, names: list[str], total: int, clients: int,
                 brokers: int, namespaces: int, bundles_per_ns: int, restart_window: float,
                 duration: float, wall0: float) -> dict[str, Any]:
    boot_wall = time.perf_counter() - wall0
    cs = [cluster.add_client() for _ in range(clients)]
    await anyio.lowlevel.checkpoint()
    for i, c in enumerate(cs):
        c.create_handles(names[i::clients], HandleKind.PRODUCER)
    await cluster.wait_until(lambda: counter.now == total, timeout=3600, poll=1.0,
                             what="every producer connected")
    connect_wall = time.perf_counter() - wall0 - boot_wall
    clock = cluster.system.clock
    t0 = clock.now()
    counter.min_after_t0 = counter.now
    owned_before = len(cluster.ownership())
    step = restart_window / brokers
    stopped_in_time = 0

    async def restart(i: int, broker_id: str) -> None:
        nonlocal stopped_in_time
        await anyio.sleep(i * step)
        host = cluster.brokers[broker_id].host
        if await cluster.stop_broker(broker_id, "graceful"):
            stopped_in_time += 1
        await cluster.add_broker(host)

    async with anyio.create_task_group() as tg:
        for i, b in enumerate(cluster.live_brokers()):
            tg.start_soon(restart, i, b)
    restarts_done = clock.now() - t0
    await anyio.sleep(max(0.0, t0 + duration - clock.now()))
    back = counter.first_full_since(t0 + restarts_done)
    reconnected_after = None if back is None else back - t0
    stays_after = None if counter.full_at is None or counter.now != total else counter.full_at - t0
    return {
        "brokers": brokers, "bundles": namespaces * bundles_per_ns, "producers": total,
        "boot_wall_s": boot_wall, "connect_wall_s": connect_wall,
        "connect_emulated_s": t0,
        "restarts_done_emulated_s": restarts_done, "graceful_in_time": stopped_in_time,
        "bundles_owned_before": owned_before, "bundles_owned_after": len(cluster.ownership()),
        "producers_connected_at_end": counter.now,
        "fewest_connected_during": counter.min_after_t0,
        "all_reconnected_after_s": reconnected_after,
        "connected_to_the_end_after_s": stays_after,
        "unavailable_events": cluster.events.counts.get("handle_disconnected", 0),
        "emulated_s": clock.now(),
        "invariant_checks": cluster.invariants.checks if cluster.invariants else 0,
        "violations": len(cluster.invariants.violations) if cluster.invariants else 0,
    }


def sizes(quick: bool) -> dict[str, Any]:
    if quick:
        return dict(brokers=10, namespaces=5, bundles_per_ns=130, clients=10,
                    producers_per_client=100, restart_window=12.0, duration=180.0)
    return dict(brokers=100, namespaces=65, bundles_per_ns=1000, clients=100,
                producers_per_client=1000, restart_window=120.0, duration=1800.0)


EXTENSIBLE = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"


def run_bench_extensible(opts: Options) -> list[Row]:
    """The same case under the Extensible load manager (`python -m bench --only restart_extensible`),
    with the same targets: its rows are `restart_extensible.*`."""
    return run_bench(opts, load_manager=EXTENSIBLE, prefix="restart_extensible")


def run_bench(opts: Options, *, load_manager: str | None = None, prefix: str = "restart") -> list[Row]:
    quiet_logs()
    reps = opts.repetitions(1, 1)
    walls: list[float] = []
    last: dict[str, Any] = {}
    size = {**sizes(opts.quick), **({"load_manager": load_manager} if load_manager else {})}
    for _ in range(reps):
        t = time.perf_counter()
        last = run(_call, size, opts.seed, clock=VirtualClock())
        walls.append(time.perf_counter() - t)
    walls_sorted = sorted(walls)
    wall = walls_sorted[len(walls) // 2]
    rss = peak_rss_bytes() / GIB
    note = "" if last.get("all_reconnected_after_s") is not None else \
        "not every producer was connected again at the end"
    if last.get("violations"):
        note = (note + "; " if note else "") + f"{last['violations']} invariant violations"
    common = {"reps": reps, "details": last}
    return [
        Row(name=f"{prefix}.wall", figure=wall, unit="s", target=Target("figure", "<=", 300.0),
            samples=walls, baseline=last.get("emulated_s"), baseline_unit="emulated s",
            ratio=(last.get("emulated_s") or 0) / wall, note=note, **common),
        Row(name=f"{prefix}.peak_rss", figure=rss, unit="GiB", target=Target("figure", "<=", 4.0),
            samples=[rss], reps=reps),
        Row(name=f"{prefix}.all_reconnected", figure=last.get("all_reconnected_after_s"),
            unit="emulated s", samples=[], reps=reps,
            note="from the first restart until every producer is connected again"),
    ]


async def _call(size: dict[str, Any], seed: int) -> dict[str, Any]:
    return await restart_case(seed=seed, **size)
