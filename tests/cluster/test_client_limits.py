"""The Java client's lookup limits per connection (issue 27): concurrentLookupRequest permits, then
the waiting queue up to maxLookupRequest, then TooManyRequests in the client; rejections close the
connection on the 51st; sends during a reconnect longer than sendTimeout fail."""

from __future__ import annotations

import random

import anyio
import msgspec
import pytest

from emulator.cluster.capacity import BrokerCapacity, Capacity, ClientCapacity
from emulator.cluster.client import ClientSettings
from emulator.cluster.cluster import ClusterSettings
from emulator.cluster.connection_pool import ConnectionPool
from emulator.cluster.latency import ZERO, Constant, Latencies, LatencySampler
from emulator.cluster.messages import HandleKind
from emulator.observe.publish import PublishAccounting
from emulator.testing import emulated_cluster

NS = "public/default"


def limits(concurrent: int, most: int, lookup_cpu: float = 0.01) -> ClusterSettings:
    """Client limits, and lookups that take `lookup_cpu` of the broker's I/O thread (so they stay
    in flight long enough to be counted)."""
    return ClusterSettings(capacity=msgspec.structs.replace(
        Capacity.unlimited(),
        client=ClientCapacity(concurrent_lookup_request=concurrent, max_lookup_request=most),
        broker=BrokerCapacity(lookup_cpu=Constant(lookup_cpu), assignment_cpu=ZERO, admin_cpu=ZERO)))


def topics(n: int) -> list[str]:
    return [f"persistent://{NS}/t-{i}" for i in range(n)]


@pytest.mark.asyncio
async def test_lookups_beyond_the_permits_wait_on_their_connection():
    async with emulated_cluster(1, seed=1, settings=limits(2, 10)) as cluster:
        broker = cluster.brokers[cluster.live_brokers()[0]]
        client = cluster.add_client()
        client.create_handles(topics(8), HandleKind.PRODUCER)
        await anyio.sleep(0.005)
        assert client.pool.lookups_in_flight() == (2, 6)      # 2 sent, 6 waiting
        assert broker.stats.lookups == 0                      # the first two are on the I/O thread
        await cluster.wait_until(lambda: client.connected_count() == 8, timeout=30)
        assert client.pool.lookups_queued == 6 and client.pool.lookups_rejected == 0
        assert client.stats.lookups_failed == 0
        assert client.pool.lookups_in_flight() == (0, 0)      # every permit came back


@pytest.mark.asyncio
async def test_lookups_beyond_max_lookup_request_fail_in_the_client_and_retry():
    async with emulated_cluster(1, seed=2, settings=limits(2, 4)) as cluster:
        broker = cluster.brokers[cluster.live_brokers()[0]]
        client = cluster.add_client(settings=ClientSettings(record_lookups=True))
        client.create_handles(topics(8), HandleKind.PRODUCER)
        await anyio.sleep(0.005)
        assert client.pool.lookups_in_flight() == (2, 2)
        assert client.pool.lookups_rejected == 4               # 2 sent + 2 waiting, 4 refused locally
        await cluster.wait_until(lambda: client.connected_count() == 8, timeout=30)
        failed = [r for r in client.records if r.outcome.startswith("Failed:TooManyRequests")]
        assert len(failed) >= 4 and all(not r.hops for r in failed)   # never reached a broker
        assert broker.stats.too_many == 0


@pytest.mark.asyncio
async def test_unlimited_client_sends_every_lookup_at_once():
    async with emulated_cluster(1, seed=1, settings=limits(0, 0)) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(8), HandleKind.PRODUCER)
        await cluster.wait_until(lambda: client.connected_count() == 8, timeout=30)
        assert client.pool.lookups_queued == 0 and client.pool.lookups_rejected == 0


def test_the_51st_rejection_within_60_s_closes_the_connection():
    pool = ConnectionPool(["b1"], random.Random(1), network=None,  # type: ignore[arg-type]
                          latency=LatencySampler(Latencies.zero(), 1, "c"), service=False,
                          max_rejected=50, rejected_reset=60.0)
    assert not any(pool.rejected("b1", 1.0) for _ in range(50))
    assert pool.rejected("b1", 2.0)                          # getAndIncrement() = 50 >= 50
    assert not any(pool.rejected("b1", 3.0) for _ in range(50))   # a new connection counts anew
    assert not pool.rejected("b1", 63.5)                     # the reset timer fired at 63 s


@pytest.mark.asyncio
async def test_a_lookup_that_times_out_keeps_its_permit_and_counts_as_rejected():
    # the broker's I/O thread takes 40 s per lookup: past the 30 s operation timeout
    async with emulated_cluster(1, seed=3, settings=limits(2, 10, lookup_cpu=40.0)) as cluster:
        broker_id = cluster.live_brokers()[0]
        client = cluster.add_client()
        client.create_handles(topics(1), HandleKind.PRODUCER)
        await anyio.sleep(30.5)
        permits = client.pool._permits[broker_id]
        # Pulsar's leak: the timed-out lookup's permit stays taken; the retry holds the other one
        assert permits.leaked == 1 and permits.pending == 2
        assert client.pool._rejections[broker_id][0] == 1      # PR #11688


@pytest.mark.asyncio
async def test_sends_during_a_reconnect_longer_than_send_timeout_fail():
    async with emulated_cluster(2, seed=4, namespaces={NS: 4}) as cluster:
        acc = PublishAccounting(cluster)
        client = cluster.add_client(settings=ClientSettings(send_timeout=5.0))
        client.create_handles(topics(20), HandleKind.PRODUCER)
        await cluster.wait_until(lambda: client.connected_count() == 20, timeout=30)
        await anyio.sleep(10)
        owners = cluster.ownership()
        # an unload: the producers reconnect within a second, nothing fails
        bundle = next(iter(owners))
        assert (await cluster.unload_bundle(bundle)).ok
        await cluster.wait_until(lambda: client.connected_count() == 20, timeout=30)
        assert acc.failed[0] == 0.0
        # a crash: the producers wait for the session to expire (30 s), past the 5 s send timeout
        victim = cluster.live_brokers()[0]
        cluster.kill_broker(victim)
        await anyio.sleep(1)
        assert client.connected_count() < 20
        await cluster.wait_until(lambda: client.connected_count() == 20, timeout=300)
        assert acc.failed[0] > 0.0                           # failed by the send timeout
        acc.close()


def test_max_lookup_request_must_exceed_concurrent_lookup_request():
    with pytest.raises(ValueError, match="max_lookup_request"):
        ClientCapacity(concurrent_lookup_request=10, max_lookup_request=10)
