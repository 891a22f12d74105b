"""Integration: load reports (10 % / 15 min rule), the leader's view, placement spread, rebuild from the store."""

from __future__ import annotations

import collections
import math

import anyio
import msgspec
import pytest

from emulator.cluster import paths
from emulator.cluster.bundle_owner import BundleOwner
from emulator.cluster.events import LoadReportWritten
from emulator.cluster.load_source import FlatLoad
from emulator.cluster.messages import Attach, Detach, HandleKind
from emulator.model.loaddata import BundleData, LocalBrokerData
from emulator.runtime import DEFAULT_START_EPOCH_MS, ActorSystem, VirtualClock
from emulator.testing import emulated_cluster

NS = "public/default"


def topics(n: int, prefix: str = "t") -> list[str]:
    return [f"persistent://{NS}/{prefix}-{i}" for i in range(n)]


@pytest.mark.asyncio
async def test_reports_are_written_on_change_and_at_least_every_15_minutes():
    async with emulated_cluster(3, seed=31, namespaces={NS: 6}) as cluster:
        reports = collections.defaultdict(list)
        cluster.events.subscribe(
            lambda e: reports[e.broker].append(e.t) if isinstance(e, LoadReportWritten) else None)
        client = cluster.add_client()
        client.create_handles(topics(60))
        await cluster.wait_until(lambda: client.connected_count() == 60)
        t0 = cluster.system.clock.now()
        # gaining the first bundles is an infinite change, but a report lists the bundles of the last
        # stats update (PulsarStats.updateStats, every 60 s): every owner reports at the first 5 s
        # tick after its next stats update (was: at the next tick, with instant stats)
        await anyio.sleep(65.01)
        owners = set(cluster.ownership().values())
        assert owners and all(reports[b] and reports[b][-1] > t0 for b in owners)
        # steady traffic: nothing changes by more than 10 %, so the next write is the 15-minute one
        last = {b: reports[b][-1] for b in owners}
        await anyio.sleep(14 * 60)
        assert all(reports[b][-1] == last[b] for b in owners)
        await anyio.sleep(70)   # the write comes at the first 5 s tick strictly past 15 min
        for b in owners:
            assert 15 * 60 < reports[b][-1] - last[b] <= 15 * 60 + 5.01
        # the node holds Pulsar's LocalBrokerData JSON
        raw = cluster.store.peek(paths.broker_path(sorted(owners)[0]))
        doc = msgspec.json.decode(raw)
        assert {"webServiceUrl", "pulsarServiceUrl", "cpu", "bandwidthIn", "msgRateIn", "lastStats",
                "numBundles", "lastUpdate"} <= set(doc)
        report = msgspec.json.decode(raw, type=LocalBrokerData)
        assert report.num_bundles == len(report.last_stats) > 0
        # every field of Pulsar's LocalBrokerData (pulsar-common policies/data/loadbalancer), and the
        # loadReportType Pulsar's LoadReportDeserializer reads
        assert PULSAR_FIELDS <= set(doc), PULSAR_FIELDS - set(doc)
        assert doc["loadReportType"] == "LocalBrokerData" and doc["protocols"] == {}
        assert doc["advertisedListeners"] == {"internal": {"brokerServiceUrl": doc["pulsarServiceUrl"]}}
        # lastUpdate: epoch milliseconds, from the fixed default start (2024-01-01T00:00:00Z) on
        written = reports[sorted(owners)[0]][-1]
        assert doc["lastUpdate"] == DEFAULT_START_EPOCH_MS + math.floor(written * 1000 + 1e-6)


PULSAR_FIELDS = {
    "webServiceUrl", "webServiceUrlTls", "pulsarServiceUrl", "pulsarServiceUrlTls", "persistentTopicsEnabled",
    "nonPersistentTopicsEnabled", "cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut",
    "msgThroughputIn", "msgThroughputOut", "msgRateIn", "msgRateOut", "lastUpdate", "lastStats", "numTopics",
    "numBundles", "numConsumers", "numProducers", "bundles", "lastBundleGains", "lastBundleLosses",
    "brokerVersionString", "protocols", "advertisedListeners"}


@pytest.mark.asyncio
async def test_a_stated_start_is_the_calendar_time_of_the_reports():
    clock = VirtualClock()
    clock.start_epoch_ms = 1_714_554_000_000            # 2024-05-01T09:00:00Z
    async with emulated_cluster(2, seed=31, namespaces={NS: 2}, clock=clock) as cluster:
        await anyio.sleep(1.0)
        for broker in cluster.live_brokers():
            doc = msgspec.json.decode(cluster.store.peek(paths.broker_path(broker)))
            assert 1_714_554_000_000 <= doc["lastUpdate"] < 1_714_554_000_000 + 2_000


@pytest.mark.asyncio
async def test_leader_samples_bundle_data_once_per_report_notification():
    async with emulated_cluster(2, seed=32, namespaces={NS: 2},
                                load_source=FlatLoad(rate=100.0)) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(20))
        await cluster.wait_until(lambda: client.connected_count() == 20)
        await anyio.sleep(70)   # the owners' next stats update (<= 60 s), then their next report
        leader = cluster.brokers[cluster.leader()].leader_actor
        lm = leader.lm
        for bundle in cluster.ownership():
            data = lm.view().bundle_data[bundle]
            # the 50 msg/s defaults were overwritten by the first real sample
            assert data.short_term_data.num_samples >= 1
            assert data.short_term_data.msg_rate_in == pytest.approx(
                100.0 * len([t for t in topics(20) if cluster_bundle(cluster, t) == bundle]))
        assert leader.updates >= 3


def cluster_bundle(cluster, topic: str) -> str:
    broker = next(iter(cluster.brokers.values()))
    return broker._ns_bundles[NS].find_bundle(topic)


@pytest.mark.asyncio
async def test_preallocation_spreads_a_burst_of_new_bundles_over_the_brokers():
    async with emulated_cluster(4, seed=33, namespaces={NS: 16}) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(400))
        await cluster.wait_until(lambda: client.connected_count() == 400)
        per_broker = collections.Counter(cluster.ownership().values())
        assert sum(per_broker.values()) == 16
        assert set(per_broker) == set(cluster.live_brokers())
        assert max(per_broker.values()) - min(per_broker.values()) <= 2


@pytest.mark.asyncio
async def test_a_new_leader_rebuilds_its_view_from_the_store():
    async with emulated_cluster(3, seed=34, namespaces={NS: 8}) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(80))
        await cluster.wait_until(lambda: client.connected_count() == 80)
        old = cluster.leader()
        # the leader writes bundle data every 15 minutes
        await anyio.sleep(15 * 60 + 1)
        written = [p for p, _ in cluster.store.peek_prefix(paths.BUNDLE_DATA + "/")
                   if p.count("/") == 5]
        assert len(written) == 8
        before = msgspec.json.decode(cluster.store.peek(written[0]), type=BundleData)
        assert before.long_term_data.num_samples > 1

        cluster.kill_broker(old)
        new = await cluster.wait_for_leader(timeout=60)
        assert new != old
        lm = cluster.brokers[new].leader_actor.lm
        assert set(lm.persisted_bundle_data) == {p[len(paths.BUNDLE_DATA) + 1:] for p in written}
        assert set(lm.load_data.broker_data) == set(cluster.live_brokers())


def test_a_bundle_owners_topic_table_changes_version_with_every_change():
    """The load source keeps per-bundle arrays while the version stays: every change must bump it."""
    system = ActorSystem(1, VirtualClock())
    owner = BundleOwner("o", system, bundle=f"{NS}/0x00000000_0x80000000", broker_id="b")
    child = BundleOwner("c", system, bundle=f"{NS}/0x40000000_0x80000000", broker_id="b")
    table = owner.topics
    versions = [table.version]

    def changed() -> bool:
        versions.append(table.version)
        return versions[-1] > versions[-2]

    p = Attach(topic="persistent://public/default/a", client="c1", handle_id=1, kind=HandleKind.PRODUCER)
    owner.attach(p)
    assert changed() and table["persistent://public/default/a"].producers == 1
    owner.attach(p)                                   # a duplicate attach changes nothing
    assert not changed()
    owner.attach(Attach(topic="persistent://public/default/a", client="c1", handle_id=2,
                         kind=HandleKind.CONSUMER))
    assert changed()
    owner.detach(Detach(topic="persistent://public/default/a", client="c1", handle_id=2,
                         kind=HandleKind.CONSUMER))
    assert changed() and table["persistent://public/default/a"].consumers == 0
    child_version = child.topics.version
    owner.hand_over(child, lambda t: True)
    assert changed() and child.topics.version > child_version and not table


@pytest.mark.asyncio
async def test_unloading_a_bundle_empties_its_table_under_a_new_version():
    async with emulated_cluster(2, seed=33, namespaces={NS: 1}) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(4))
        await cluster.wait_until(lambda: client.connected_count() == 4)
        (broker_id, owned), = [(b, o) for b, br in cluster.brokers.items() for o in br.owned.values()
                               if o.active]
        table = owned.actor.topics
        before = table.version
        assert len(table) == 4 and before >= 8          # 4 topics added, 4 producers attached
        await cluster.brokers[broker_id].unload_bundle(owned.bundle)
        assert not table and table.version > before
