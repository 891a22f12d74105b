"""Apply a scenario's `[initial]` plan (initial.py) to a cluster: owners at t = 0 and the warm start.

Everything goes through the paths a real cluster's state comes from, so nothing downstream can tell a
stated state from one the cluster reached by itself:

1. Before any broker starts (warm start only, `before_brokers`): `/loadbalance/bundle-data/<bundle>`
   holds each bundle's BundleData as the leader's LoadResourceQuotaUpdaterTask persists it. The first
   leader reads these at start and `getBundleDataOrDefault` hands a bundle its persisted data the first
   time a report lists it, exactly as a leader that takes over a running cluster does.
2. Once the namespaces exist (`place_owners`): each stated owner takes its bundles through its
   OwnershipCache path (`Cluster.acquire_bundle`): the ephemeral `/namespace/<bundle>` lock on its
   metadata session with Pulsar's NamespaceEphemeralData, and the bundle served there. The clients
   then look their topics up and are answered Connect(owner), and the owner loads the topics on attach.
3. Once every producer and consumer is connected (warm start only, `warm_start`): each broker's stats
   period and host-usage sample are filled with this traffic as steady (stats_window.py `warm`) and a
   load report is written at once, so the leader's first view of every broker is the steady state; the
   leader's ThresholdShedder EMA is stepped as the shedding cycles of the warm time would have stepped
   it (AvgShedder's hit counters stay empty, as in Pulsar); the brokers' time averages the leader now
   holds are persisted under `/loadbalance/broker-time-average`, as its writer would have.

How many samples the warm windows hold (emulator choice, the steady state of Pulsar's own clocks): the
leader adds one sample per bundle per `updateAll`, i.e. per load report written; a broker whose traffic
is steady writes one every `loadBalancerReportUpdateMaxIntervalMinutes`, so a warm time W gives
`brokers × W / maxInterval` samples (at least 1), capped by each window's size (10 short, 1000 long).
Every bundle is persisted, not only the writer's top `loadBalancerMaxNumberOfBundlesInBundleLoadReport`
per broker: the leader of a cluster that ran W has seen every bundle, and this is its view.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable

import anyio
import msgspec
import structlog

from emulator.cluster import paths
from emulator.cluster.events import InitialState, WarmBundleData, WarmStarted
from emulator.cluster.messages import WarmShedder
from emulator.model.config import ServiceConfig
from emulator.model.loaddata import (
    NUM_LONG_SAMPLES,
    NUM_SHORT_SAMPLES,
    BundleData,
    LoadData,
    NamespaceBundleStats,
    TimeAverageMessageData,
)
from emulator.runtime import Actor

from .initial import InitialPlan

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster

    from .build import Workload

__all__ = ["before_brokers", "place_owners", "warm_bundle_data", "warm_samples", "warm_start"]

_CONCURRENT_WRITES = 512


def warm_samples(warm: float, brokers: int, conf: ServiceConfig) -> int:
    """Samples a bundle's windows hold after `warm` seconds of steady traffic (module docstring)."""
    if warm <= 0:
        return 0
    interval = conf.load_balancer_report_update_max_interval_minutes * 60.0
    return max(1, int(warm // interval) * max(1, brokers)) if interval > 0 else NUM_LONG_SAMPLES


def warm_bundle_data(stats: NamespaceBundleStats, samples: int) -> BundleData:
    """BundleData after `samples` equal samples of `stats` (both windows hold exactly its values)."""
    def window(size: int) -> TimeAverageMessageData:
        return TimeAverageMessageData(size, min(size, samples), stats.msg_rate_in, stats.msg_rate_out,
                                      stats.msg_throughput_in, stats.msg_throughput_out)
    return BundleData(window(NUM_SHORT_SAMPLES), window(NUM_LONG_SAMPLES), topics=stats.topics)


def before_brokers(plan: InitialPlan, conf: ServiceConfig, brokers: int
                   ) -> Callable[["Cluster"], Awaitable[None]]:
    """The cluster's `before_brokers` hook of a warm start: persist every bundle's warm BundleData."""
    samples = warm_samples(plan.warm, brokers, conf)

    async def write(cluster: "Cluster") -> None:
        items = [(paths.bundle_data_path(b), msgspec.json.encode(warm_bundle_data(s, samples)))
                 for b, s in plan.stats.items()]
        for lo in range(0, len(items), _CONCURRENT_WRITES):
            async with anyio.create_task_group() as tg:
                for path, data in items[lo:lo + _CONCURRENT_WRITES]:
                    tg.start_soon(cluster.write_node, path, data)
        cluster.events.emit(WarmBundleData(bundles=len(items), samples=samples, warm=plan.warm))

    return write


async def place_owners(cluster: "Cluster", plan: InitialPlan, workload: "Workload") -> None:
    """Every bundle acquired by its stated owner, all at once (errors go to `workload.errors`)."""
    failed: list[str] = []

    async def acquire(bundle: str, broker: str) -> None:
        result = await cluster.acquire_bundle(bundle, broker)
        if not result.ok:
            failed.append(f"{bundle} on {broker}: {result.message}")

    async with anyio.create_task_group() as tg:
        for bundle, broker in plan.owners.items():
            tg.start_soon(acquire, bundle, broker)
    for line in sorted(failed):
        workload.errors.append(f"initial: {line}")
        structlog.get_logger("workload").warning("initial owner not placed", detail=line)
    rates = plan.broker_msg_rates(sorted(cluster.live_brokers()))
    low = min(rates.values(), default=0.0)
    ratio = max(rates.values()) / low if low > 0 else None
    target = workload.scenario.initial.ratio if workload.scenario.initial is not None else None
    if target is not None and (ratio is None or abs(ratio - target) > 0.1):
        structlog.get_logger("workload").warning(
            "initial owners: the bundles cannot make the stated ratio", target=target, planned=ratio)
    cluster.events.emit(InitialState(bundles=len(plan.owners), failed=len(failed),
                                     brokers=len(set(plan.owners.values())), warm=plan.warm,
                                     msg_rate_max_min=ratio))


async def warm_start(cluster: "Cluster", plan: InitialPlan, workload: "Workload", *,
                     connect_timeout: float = 120.0) -> dict[str, Any]:
    """Step 3 of the module docstring, once the clients are connected (or `connect_timeout` passed)."""
    log = structlog.get_logger("workload")
    # every producer and consumer of the scenario, also those `connect_over` has not created yet
    expected = sum(s.producer_count + s.consumer_count for s in plan.stats.values())

    def connected() -> bool:
        return sum(c.connected_count() for c in cluster.clients.values()) >= expected

    try:
        await cluster.wait_until(connected, timeout=connect_timeout, poll=0.05,
                                 what="every producer and consumer connected")
    except TimeoutError as e:   # warm what is connected; the rest joins as in any run
        workload.errors.append(f"initial: warm start: {e}")
        log.warning("warm start before every client connected", error=str(e))
    live = cluster.live_brokers()
    async with anyio.create_task_group() as tg:
        for broker in live:
            tg.start_soon(cluster.warm_broker, broker)
    leader = await _leader_view(cluster, live)
    cycles = int(plan.warm // (cluster.conf.load_balancer_shedding_interval_minutes * 60.0)) \
        if cluster.conf.load_balancer_shedding_interval_minutes > 0 else 0
    if leader is not None:
        actor, load_data = leader
        await actor.ask(WarmShedder(cycles))
        for broker, data in sorted(load_data.broker_data.items()):
            await cluster.write_node(paths.time_average_path(broker),
                                     msgspec.json.encode(data.time_average_data))
    info: dict[str, Any] = {"brokers": len(live), "warm": plan.warm, "shedder_cycles": cycles,
            "leader": leader is not None}
    cluster.events.emit(WarmStarted(**info))
    return info


async def _leader_view(cluster: "Cluster", brokers: list[str],
                       timeout: float = 30.0) -> tuple[Actor, LoadData] | None:
    """The leader actor and its LoadData (the LeaderLoadView capability: Modular's) once that view
    holds the warm report of every broker (None if none shows)."""
    expected = {b: set(cluster.brokers[b].local_data.bundles) for b in brokers}

    def leading() -> tuple[Actor, LoadData] | None:
        leader = cluster.leader()
        b = cluster.brokers.get(leader) if leader else None
        view = b.capabilities.leader_load_view if b is not None and b.alive else None
        load_data = view.leader_load_data() if view is not None else None
        return None if b is None or load_data is None else (b.leader_actor, load_data)

    def seen() -> bool:
        view = leading()
        if view is None:
            return False
        data = view[1].broker_data
        return all(b in data and expected[b] <= set(data[b].local_data.last_stats) for b in brokers)

    try:
        await cluster.wait_until(seen, timeout=timeout, poll=0.01, what="the leader's view of the warm reports")
    except TimeoutError as e:
        structlog.get_logger("workload").warning("warm start: leader view incomplete", error=str(e))
        return None
    return leading()
