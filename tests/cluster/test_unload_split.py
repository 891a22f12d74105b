"""Integration: unload on the owner, bundle split (admin and automatic), broker stop modes."""

from __future__ import annotations

import collections

import anyio
import pytest

from emulator.cluster.cluster import ClusterSettings
from emulator.cluster.events import BundleSplit, BundleUnloaded, HandleReconnected
from emulator.cluster.messages import LookupTopic, LookupType, ServerError
from emulator.model.bundles import NamespaceBundles
from emulator.model.config import ServiceConfig
from emulator.testing import emulated_cluster

NS = "public/default"


def topics(n: int, prefix: str = "t") -> list[str]:
    return [f"persistent://{NS}/{prefix}-{i}" for i in range(n)]


def track_unavailability(cluster) -> list[float]:
    downs: list[float] = []
    cluster.events.subscribe(
        lambda e: downs.append(e.unavailable) if isinstance(e, HandleReconnected) else None)
    return downs


@pytest.mark.asyncio
async def test_unload_closes_topics_and_every_producer_reconnects_elsewhere_or_back():
    async with emulated_cluster(3, seed=41, namespaces={NS: 4}) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(40))
        await cluster.wait_until(lambda: client.connected_count() == 40)
        downs = track_unavailability(cluster)
        bundle, owner = sorted(cluster.ownership().items())[0]
        nb = await cluster.namespace_bundles(NS)
        in_bundle = [t for t in topics(40) if nb.find_bundle(t) == bundle]
        assert in_bundle

        result = await cluster.unload_bundle(bundle)
        assert result.ok and result.detail["topics"] == len(in_bundle)
        # the owner released the lock; the clients got CloseProducer and reconnect through a lookup
        await cluster.wait_until(lambda: client.connected_count() == 40, timeout=60)
        assert len(downs) == len(in_bundle)
        assert all(0 < d < 5 for d in downs)  # first backoff is 100 ms; one lookup round
        assert cluster.owner_of(bundle) is not None


@pytest.mark.asyncio
async def test_lookups_during_an_unload_fail_with_metadata_error_on_the_owner():
    settings = ClusterSettings(bundle_close_time=2.0)   # a slow unload, to look inside the window
    async with emulated_cluster(3, seed=42, namespaces={NS: 2}, settings=settings) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(10))
        await cluster.wait_until(lambda: client.connected_count() == 10)
        bundle, owner = sorted(cluster.ownership().items())[0]
        nb = await cluster.namespace_bundles(NS)
        topic = next(t for t in topics(10) if nb.find_bundle(t) == bundle)
        async with anyio.create_task_group() as tg:
            tg.start_soon(cluster.unload_bundle, bundle)
            await anyio.sleep(1.0)
            # the owner itself answers "being unloaded"...
            resp = await cluster.brokers[owner].ask(LookupTopic(topic))
            assert resp.response is LookupType.FAILED and resp.error is ServerError.METADATA_ERROR
            # ...while others still read the ownership node and answer Connect(owner)
            other = next(b for b in cluster.live_brokers() if b != owner)
            resp = await cluster.brokers[other].ask(LookupTopic(topic))
            assert resp.response is LookupType.CONNECT and resp.broker_id == owner
        await cluster.wait_until(lambda: client.connected_count() == 10, timeout=120)


@pytest.mark.asyncio
async def test_admin_split_writes_new_ranges_and_children_land_where_lookups_put_them():
    async with emulated_cluster(3, seed=43, namespaces={NS: 1}) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(60))
        await cluster.wait_until(lambda: client.connected_count() == 60)
        (parent, owner), = cluster.ownership().items()
        result = await cluster.split_bundle(parent, "range_equally_divide", unload=True)
        assert result.ok, result.message
        nb: NamespaceBundles = await cluster.namespace_bundles(NS)
        assert nb.names == [f"{NS}/0x00000000_0x7fffffff", f"{NS}/0x7fffffff_0xffffffff"]
        # every broker refreshes through the local-policies watch
        await anyio.sleep(0.5)
        for b in cluster.live_brokers():
            assert (await cluster.brokers[b].namespace_bundles(NS)).names == nb.names
        # children unloaded: clients look them up again and the leader places each one
        await cluster.wait_until(lambda: client.connected_count() == 60, timeout=120)
        owners = cluster.ownership()
        assert set(owners) == set(nb.names)


@pytest.mark.asyncio
async def test_topic_count_split_puts_half_of_the_topics_in_each_child():
    async with emulated_cluster(2, seed=44, namespaces={NS: 1}) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(50))
        await cluster.wait_until(lambda: client.connected_count() == 50)
        (parent, owner), = cluster.ownership().items()
        result = await cluster.split_bundle(parent, "topic_count_equally_divide", unload=False)
        assert result.ok
        nb = await cluster.namespace_bundles(NS)
        per_child = collections.Counter(nb.find_bundle(t) for t in topics(50))
        assert sorted(per_child.values()) == [25, 25]
        # without unload the owner keeps both children and its producers stay attached
        assert set(cluster.ownership().values()) == {owner}
        assert client.connected_count() == 50


@pytest.mark.asyncio
async def test_a_hot_bundle_splits_automatically_and_its_children_land_on_different_brokers():
    conf = ServiceConfig(load_balancer_namespace_bundle_max_topics=20)
    async with emulated_cluster(3, seed=45, namespaces={NS: 1}, conf=conf) as cluster:
        splits = []
        cluster.events.subscribe(lambda e: splits.append(e) if isinstance(e, BundleSplit) else None)
        client = cluster.add_client()
        client.create_handles(topics(30))
        await cluster.wait_until(lambda: client.connected_count() == 30)
        # the owner's first stats update (<= 60 s) lists the 30 topics, its next report (5 s) the leader
        await cluster.wait_until(lambda: len(splits) >= 1, timeout=70)
        assert splits[0].bundle == f"{NS}/0x00000000_0xffffffff"
        await cluster.wait_until(lambda: client.connected_count() == 30
                                 and len(cluster.ownership()) == 2, timeout=120)
        owners = cluster.ownership()
        assert len(set(owners.values())) == 2, owners


@pytest.mark.asyncio
async def test_graceful_drain_of_a_broker_with_50_bundles_moves_all_of_them():
    async with emulated_cluster(3, seed=46, namespaces={NS: 128}) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(1000))
        await cluster.wait_until(lambda: client.connected_count() == 1000, timeout=120)
        per_broker = collections.Counter(cluster.ownership().values())
        leader = cluster.leader()
        victim = max((b for b in per_broker if b != leader), key=lambda b: per_broker[b])
        assert per_broker[victim] >= 40
        downs = track_unavailability(cluster)
        t0 = cluster.system.clock.now()
        finished = await cluster.stop_broker(victim, "graceful")
        assert finished
        drain = cluster.system.clock.now() - t0
        assert victim not in set(cluster.ownership().values())
        await cluster.wait_until(lambda: client.connected_count() == 1000, timeout=300)
        assert set(cluster.ownership().values()) <= set(cluster.live_brokers())
        assert len(cluster.ownership()) == 128
        # bounded unavailability: one bundle at a time, each producer back within a few backoffs
        assert drain < 60 and max(downs) < 30, (drain, max(downs))


@pytest.mark.asyncio
async def test_sigterm_leaves_what_was_not_drained_to_session_expiry():
    settings = ClusterSettings(sigterm_timeout=0.5, bundle_close_time=0.2)
    async with emulated_cluster(3, seed=47, namespaces={NS: 32}, settings=settings) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(300))
        await cluster.wait_until(lambda: client.connected_count() == 300, timeout=120)
        leader = cluster.leader()
        victim = next(b for b in sorted(set(cluster.ownership().values())) if b != leader)
        n_before = sum(1 for v in cluster.ownership().values() if v == victim)
        assert n_before >= 4
        finished = await cluster.stop_broker(victim, "sigterm")
        assert not finished
        left = [k for k, v in cluster.ownership().items() if v == victim]
        assert 0 < len(left) < n_before     # some drained in 0.5 s, the rest still owned
        await anyio.sleep(31)
        assert victim not in set(cluster.ownership().values())   # the session expired
        await cluster.wait_until(lambda: client.connected_count() == 300, timeout=600)


@pytest.mark.asyncio
async def test_unload_with_a_destination_lands_the_bundle_there():
    async with emulated_cluster(4, seed=48, namespaces={NS: 8}) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(80))
        await cluster.wait_until(lambda: client.connected_count() == 80)
        bundle, owner = sorted(cluster.ownership().items())[0]
        dest = next(b for b in cluster.live_brokers() if b != owner)
        assert (await cluster.unload_bundle(bundle, destination=dest)).ok
        await cluster.wait_until(lambda: client.connected_count() == 80, timeout=60)
        assert cluster.owner_of(bundle) == dest
        refused = await cluster.unload_bundle(bundle, destination="nobody:8080")
        assert not refused.ok and "inactive destination broker" in refused.message


@pytest.mark.asyncio
async def test_unload_namespace_unloads_every_bundle_and_all_producers_come_back():
    async with emulated_cluster(3, seed=49, namespaces={NS: 6}) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(60))
        await cluster.wait_until(lambda: client.connected_count() == 60)
        unloaded = []
        cluster.events.subscribe(lambda e: unloaded.append(e.bundle)
                                 if isinstance(e, BundleUnloaded) else None)
        results = await cluster.unload_namespace(NS)
        assert len(results) == 6 and all(r.ok for r in results)
        assert sorted(unloaded) == sorted((await cluster.namespace_bundles(NS)).names)
        await cluster.wait_until(lambda: client.connected_count() == 60, timeout=60)


@pytest.mark.asyncio
async def test_dynamic_config_turns_shedding_off_at_runtime():
    from emulator.cluster.load_source import FlatLoad

    load = FlatLoad(rate=800.0, msg_size=1024, cores=4, broker_cores={"broker-5:8080": 1})
    async with emulated_cluster(5, seed=51, namespaces={NS: 16}, load_source=load) as cluster:
        cluster.set_config("loadBalancerSheddingEnabled", "false")
        assert cluster.conf.load_balancer_shedding_enabled is False
        client = cluster.add_client()
        client.create_handles(topics(400))
        await cluster.wait_until(lambda: client.connected_count() == 400, timeout=120)
        await anyio.sleep(15 * 60)
        assert cluster.decision_log.of("unload") == []
        cluster.set_config("load_balancer_shedding_enabled", True)
        await anyio.sleep(15 * 60)
        assert cluster.decision_log.of("unload")
        with pytest.raises(ValueError, match="loadBalancerSheddingIntervalMinutes"):
            cluster.set_config("loadBalancerSheddingIntervalMinutes", "soon")


@pytest.mark.asyncio
async def test_lookups_that_race_a_split_still_end_at_the_right_owner():
    settings = ClusterSettings(metadata_op_latency=0.005)
    async with emulated_cluster(3, seed=50, namespaces={NS: 1}, settings=settings) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(40, "old"))
        await cluster.wait_until(lambda: client.connected_count() == 40)
        (parent, _), = cluster.ownership().items()
        late = cluster.add_client()
        async with anyio.create_task_group() as tg:
            tg.start_soon(cluster.split_bundle, parent, None)
            late.create_handles(topics(200, "new"))     # looked up while the ranges change
        await cluster.wait_until(lambda: late.connected_count() == 200 and client.connected_count() == 40,
                                 timeout=300)
        await anyio.sleep(1)
        nb = await cluster.namespace_bundles(NS)
        assert len(nb) == 2
        owners = cluster.ownership()
        assert set(owners) == set(nb.names)
        for c in (client, late):
            for h in c.handles.values():
                assert h.broker_id == owners[nb.find_bundle(h.topic)], h.topic
