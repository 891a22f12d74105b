"""A broker's executors (issue 27): lookups queue on their connection's netty I/O thread, placement
decisions on the broker's assignment lock, the lookup semaphore answers TooManyRequests and the
client retries, and a graceful shutdown stops at brokerShutdownTimeoutMs."""

from __future__ import annotations

import anyio
import msgspec
import pytest

from emulator.cluster.capacity import BrokerCapacity, Capacity
from emulator.cluster.client import ClientSettings
from emulator.cluster.cluster import ClusterSettings
from emulator.cluster.events import BrokerStopped
from emulator.cluster.latency import ZERO, Constant
from emulator.cluster.load_source import FlatLoad
from emulator.cluster.messages import HandleKind, LookupTopic, LookupType
from emulator.model.config import ServiceConfig
from emulator.testing import emulated_cluster

NS = "public/default"
TOPIC = f"persistent://{NS}/t"


def broker_capacity(**cpu: float) -> ClusterSettings:
    """The cost-free cluster but for the given broker CPU costs (seconds, constant)."""
    fields = {"lookup_cpu": ZERO, "assignment_cpu": ZERO, "admin_cpu": ZERO}
    fields.update({k: Constant(v) for k, v in cpu.items()})
    return ClusterSettings(capacity=msgspec.structs.replace(Capacity.unlimited(),
                                                            broker=BrokerCapacity(**fields)))


async def burst(broker, n: int, connections: int) -> float:
    """n lookups of an owned topic at once, spread over `connections` connections; when the last
    was answered."""
    start = broker.now
    ends: list[float] = []

    async def one(i: int) -> None:
        resp = await broker.ask(LookupTopic(TOPIC, client=f"c{i % connections}"), timeout=600)
        assert resp.response is LookupType.CONNECT
        ends.append(broker.now)

    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(one, i)
    return max(ends) - start


@pytest.mark.asyncio
async def test_a_burst_of_lookups_takes_n_times_service_over_the_io_threads():
    conf = ServiceConfig(num_io_threads=4)
    async with emulated_cluster(1, seed=1, conf=conf, settings=broker_capacity(lookup_cpu=0.001)) as cluster:
        broker = cluster.brokers[cluster.live_brokers()[0]]
        await broker.ask(LookupTopic(TOPIC, authoritative=True))   # owned: answered from memory
        # 400 lookups over 40 connections on 4 I/O threads: 400 x 1 ms / 4
        assert await burst(broker, 400, 40) == pytest.approx(0.1, rel=0.05)
        # one connection is one I/O thread: its 100 lookups are served one after another
        assert await burst(broker, 100, 1) == pytest.approx(0.1, rel=0.05)
        assert len(broker.executors.io_threads) == 4


@pytest.mark.asyncio
async def test_io_and_web_threads_default_from_each_hosts_cores():
    """numIOThreads = 2 x and numHttpServerThreads = max(8, 2 x) availableProcessors(), which is the
    broker's own host's cores (rounded up, as the JVM counts a CPU quota), not one figure for all."""
    load = FlatLoad(cores=4, broker_cores={"broker-2:8080": 16, "broker-3:8080": 0.5})
    async with emulated_cluster(3, seed=1, load_source=load, settings=broker_capacity(lookup_cpu=0.001)) as cluster:
        threads = {b: (len(cluster.brokers[b].executors.io_threads), cluster.brokers[b].executors.http.servers)
                   for b in cluster.live_brokers()}
        assert threads == {"broker-1:8080": (8, 8), "broker-2:8080": (32, 32), "broker-3:8080": (2, 8)}


@pytest.mark.asyncio
async def test_capacity_broker_cores_is_every_jvms_count_whatever_its_host():
    settings = broker_capacity(lookup_cpu=0.001)
    assert settings.capacity is not None
    pinned = msgspec.structs.replace(settings, capacity=msgspec.structs.replace(
        settings.capacity, broker=msgspec.structs.replace(settings.capacity.broker, cores=3)))
    load = FlatLoad(cores=4, broker_cores={"broker-2:8080": 16})
    async with emulated_cluster(2, seed=1, load_source=load, settings=pinned) as cluster:
        assert {len(cluster.brokers[b].executors.io_threads) for b in cluster.live_brokers()} == {6}


@pytest.mark.asyncio
async def test_unlimited_capacity_answers_a_burst_at_once():
    async with emulated_cluster(1, seed=1) as cluster:
        broker = cluster.brokers[cluster.live_brokers()[0]]
        await broker.ask(LookupTopic(TOPIC, authoritative=True))
        assert await burst(broker, 400, 1) == 0.0
        assert broker.executors.io_threads[0].admitted == 0   # nothing queued, nothing drawn


@pytest.mark.asyncio
async def test_placement_decisions_are_made_one_at_a_time():
    # 64 bundles, each assigned by the leader's selectBrokerForAssignment (10 ms under its lock)
    async with emulated_cluster(3, seed=2, namespaces={NS: 64},
                                settings=broker_capacity(assignment_cpu=0.01)) as cluster:
        leader = cluster.brokers[await cluster.wait_for_leader()]
        client = cluster.add_client()
        start = cluster.system.clock.now()
        client.create_handles([f"persistent://{NS}/t-{i}" for i in range(400)], HandleKind.PRODUCER)
        await cluster.wait_until(lambda: client.connected_count() == 400, timeout=60)
        took = cluster.system.clock.now() - start
        decisions = leader.executors.assignment.admitted
        assert decisions >= 64
        assert took >= decisions * 0.01 * 0.99          # serialised: not one decision's time
        assert leader.executors.assignment.max_wait > 0.3


@pytest.mark.asyncio
async def test_too_many_lookups_are_refused_and_the_client_retries_until_connected():
    # two permits, and each resolution holds its lookups 10 ms at the assignment lock
    conf = ServiceConfig(max_concurrent_lookup_request=2)
    async with emulated_cluster(3, seed=3, conf=conf, namespaces={NS: 32},
                                settings=broker_capacity(assignment_cpu=0.01)) as cluster:
        await cluster.wait_for_leader()
        client = cluster.add_client(settings=ClientSettings(record_lookups=True))
        client.create_handles([f"persistent://{NS}/t-{i}" for i in range(100)], HandleKind.PRODUCER)
        await cluster.wait_until(lambda: client.connected_count() == 100, timeout=120)
        refused = sum(b.stats.too_many for b in cluster.brokers.values())
        assert refused > 0
        assert client.stats.lookups_failed >= 1
        assert any(r.outcome.startswith("Failed:TooManyRequests") for r in client.records)


@pytest.mark.asyncio
async def test_graceful_shutdown_stops_at_broker_shutdown_timeout():
    # 8 bundles at 2 s each to close: 16 s of draining, cut at brokerShutdownTimeoutMs = 5 s
    conf = ServiceConfig(broker_shutdown_timeout_ms=5000)
    settings = ClusterSettings(bundle_close_time=2.0)
    async with emulated_cluster(1, seed=4, conf=conf, namespaces={NS: 8}, settings=settings) as cluster:
        broker_id = cluster.live_brokers()[0]
        client = cluster.add_client()
        client.create_handles([f"persistent://{NS}/t-{i}" for i in range(64)], HandleKind.PRODUCER)
        await cluster.wait_until(lambda: client.connected_count() == 64, timeout=60)
        assert len(cluster.brokers[broker_id].owned) == 8
        stopped: list[BrokerStopped] = []
        cluster.events.subscribe(lambda e: stopped.append(e) if isinstance(e, BrokerStopped) else None)
        start = cluster.system.clock.now()
        assert await cluster.stop_broker(broker_id) is False
        assert cluster.system.clock.now() - start == pytest.approx(5.0)
        assert stopped[0].graceful is False and 0 < stopped[0].bundles_left < 8
