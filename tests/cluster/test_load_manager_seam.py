"""The LoadManager seam: LoadManager.create by loadManagerClassName, its fallback, NoopLoadManager, and the
live switch through dynamic configuration (BrokerService's loadManagerClassName listener)."""

from __future__ import annotations

import anyio
import msgspec
import pytest
from structlog.testing import capture_logs

from emulator.cluster import load_manager as lm
from emulator.cluster.events import LoadManagerChanged, LoadManagerCreateFailed
from emulator.cluster.messages import HandleKind, LookupTopic, LookupType
from emulator.loadmanagers.extensible.actors.extensible_wrapper import ExtensibleLoadManagerWrapper
from emulator.loadmanagers.modular.actors.modular_wrapper import ModularLoadManagerWrapper
from emulator.loadmanagers.noop.actors.noop_load_manager import NoopLoadManager
from emulator.model.bundles import NamespaceBundles
from emulator.model.config import ServiceConfig
from emulator.model.loaddata import LocalBrokerData
from emulator.observe.config_http import DynamicConfigRoutes
from emulator.testing import emulated_cluster

NS = "public/default"


def topics(n: int, prefix: str = "t") -> list[str]:
    return [f"persistent://{NS}/{prefix}-{i}" for i in range(n)]


def reports(cluster) -> dict[str, LocalBrokerData]:
    return {b: msgspec.json.decode(cluster.store.peek(f"/loadbalance/brokers/{b}"), type=LocalBrokerData)
            for b in cluster.store.peek_children("/loadbalance/brokers")}


# ------------------------------------------------------------------ choice and fallback


@pytest.mark.parametrize("name, full", [
    ("NoopLoadManager", lm.NOOP), ("ModularLoadManagerImpl", lm.MODULAR),
    ("SimpleLoadManagerImpl", lm.SIMPLE), ("ExtensibleLoadManagerImpl", lm.EXTENSIBLE),
    (lm.NOOP, lm.NOOP), (" org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl ", lm.MODULAR),
    ("com.example.Mine", "com.example.Mine"),
])
def test_load_manager_flag_takes_short_or_full_class_names(name: str, full: str):
    assert lm.resolve_class_name(name) == full


@pytest.mark.asyncio
async def test_the_class_name_picks_the_load_manager_of_every_broker():
    async with emulated_cluster(2, seed=1, conf=ServiceConfig(load_manager_class_name=lm.NOOP)) as cluster:
        assert all(type(b.load_manager) is NoopLoadManager for b in cluster.brokers.values())
    async with emulated_cluster(2, seed=1) as cluster:
        assert all(type(b.load_manager) is ModularLoadManagerWrapper for b in cluster.brokers.values())
    async with emulated_cluster(2, seed=1, conf=ServiceConfig(load_manager_class_name=lm.EXTENSIBLE)) as cluster:
        assert all(type(b.load_manager) is ExtensibleLoadManagerWrapper for b in cluster.brokers.values())


@pytest.mark.asyncio
@pytest.mark.parametrize("name", ["com.example.NoSuchLoadManager", "NoopLoadManager"])
async def test_an_unknown_class_falls_back_to_simple_with_pulsars_warning_once_per_broker(name: str):
    """LoadManager.create: Reflections.createInstance fails -> log.warn("Error when trying to create load
    manager: ", e) -> new SimpleLoadManagerImpl(pulsar). A short name is no class name to Pulsar."""
    failed: list[LoadManagerCreateFailed] = []
    with capture_logs() as logs:
        async with emulated_cluster(3, seed=2, conf=ServiceConfig(load_manager_class_name=name)) as cluster:
            cluster.events.subscribe(lambda e: failed.append(e) if isinstance(e, LoadManagerCreateFailed)
                                     else None)
            await cluster.add_broker("broker-4")
            for b in cluster.brokers.values():
                assert b.load_manager.class_name == lm.SIMPLE and b.load_manager.requested == name
    warnings = [e for e in logs if e["event"] == "Error when trying to create load manager: "]
    assert sorted(e["actor"] for e in warnings) == ["broker-1:8080", "broker-2:8080", "broker-3:8080",
                                                   "broker-4:8080"]
    assert all(e["log_level"] == "warning" and e["requested"] == name for e in warnings)
    assert "ClassNotFoundException" in warnings[0]["error"]
    assert [(e.broker, e.fallback) for e in failed] == [("broker-4:8080", lm.SIMPLE)]


@pytest.mark.asyncio
async def test_a_blank_class_name_is_simple_without_a_warning():
    with capture_logs() as logs:
        async with emulated_cluster(1, seed=2, conf=ServiceConfig(load_manager_class_name=" ")) as cluster:
            assert cluster.brokers["broker-1:8080"].load_manager.class_name == lm.SIMPLE
    assert not [e for e in logs if e["event"].startswith("Error when trying")]


# ------------------------------------------------------------------ NoopLoadManager


@pytest.mark.asyncio
async def test_noop_every_lookup_is_owned_by_the_broker_asked():
    conf = ServiceConfig(load_manager_class_name=lm.NOOP)
    async with emulated_cluster(3, seed=4, conf=conf, namespaces={NS: 6}) as cluster:
        nb = NamespaceBundles.default(NS, 6)
        brokers = cluster.live_brokers()
        by_bundle = {nb.find_bundle(t): t for t in topics(300)}
        asked: dict[str, str] = {}
        for i, (bundle, topic) in enumerate(sorted(by_bundle.items())):
            broker = brokers[i % 3]   # the leader too, and non-leaders that would redirect under Modular
            resp = await cluster.brokers[broker].ask(LookupTopic(topic))
            assert (resp.response, resp.broker_id) == (LookupType.CONNECT, broker)
            asked[bundle] = broker
        assert cluster.ownership() == asked
        # an owned bundle is Connect(owner) wherever it is asked, as with any load manager
        bundle, topic = next(iter(sorted(by_bundle.items())))
        other = next(b for b in brokers if b != asked[bundle])
        resp = await cluster.brokers[other].ask(LookupTopic(topic))
        assert (resp.response, resp.broker_id) == (LookupType.CONNECT, asked[bundle])
        assert sum(b.stats.redirects for b in cluster.brokers.values()) == 0


@pytest.mark.asyncio
async def test_noop_writes_one_bare_report_and_nothing_else():
    conf = ServiceConfig(load_manager_class_name=lm.NOOP)
    async with emulated_cluster(3, seed=5, conf=conf, namespaces={NS: 4}) as cluster:
        first = reports(cluster)
        client = cluster.add_client()
        client.create_handles(topics(100), HandleKind.PRODUCER)
        await cluster.wait_until(lambda: client.connected_count() == 100, timeout=60)
        await anyio.sleep(600)   # 120 report ticks, a shedding interval, bundle-data writes
        written = reports(cluster)
        assert sorted(written) == cluster.live_brokers()
        for b, report in written.items():
            assert report.web_service_url == f"http://{b}"
            assert report.pulsar_service_url == "pulsar://" + b.replace(":8080", ":6650")
            assert report.bundles == set() and report.num_bundles == 0 and report.msg_rate_in == 0.0
            assert report.load_manager_class_name == "" and report.cpu.usage == 0.0
            assert report == first[b]   # lastUpdate too: written once, at start
        assert cluster.store.peek_children("/loadbalance/bundle-data") == []
        assert cluster.events.counts.get("load_report_written", 0) == 0
        assert cluster.events.counts.get("decision", 0) == 0          # no shedding, no split
        leader = cluster.brokers[cluster.leader()]
        assert leader.is_leader and leader.leader_actor is None
        for b in cluster.brokers.values():
            assert b.load_manager.generate_load_report() is None
            assert b.load_manager.available_brokers() == {b.broker_id}
            # the broker's own view of its load is kept for the observers, unwritten
            assert b.local_data.num_bundles == len(b.owned_bundle_names())
        assert sum(b.local_data.msg_rate_in for b in cluster.brokers.values()) > 0


# ------------------------------------------------------------------ the live switch


async def _switched(cluster, class_name: str) -> None:
    await cluster.wait_until(lambda: all(b.load_manager.class_name == class_name
                                         for b in cluster.brokers.values() if b.alive),
                             timeout=60, what=f"every broker running {class_name}")


@pytest.mark.asyncio
async def test_live_switch_modular_noop_modular_keeps_the_invariants():
    """update-dynamic-config loadManagerClassName: every broker's listener creates the new manager,
    stops the old one (its registration lock goes, the leader's load data and timers with it), starts
    the new one (registers again, in its own report shape) and sets it. The invariant checker runs
    throughout (one owner per bundle, coverage, every lookup ends); no bundle moves."""
    changes: list[LoadManagerChanged] = []
    async with emulated_cluster(3, seed=6, namespaces={NS: 8}) as cluster:
        cluster.events.subscribe(lambda e: changes.append(e) if isinstance(e, LoadManagerChanged) else None)
        routes = DynamicConfigRoutes(cluster)
        client = cluster.add_client()
        client.create_handles(topics(200), HandleKind.PRODUCER)
        await cluster.wait_until(lambda: client.connected_count() == 200, timeout=120)
        owners = cluster.ownership()
        leader_id = cluster.leader()
        assert all(r.load_manager_class_name == lm.MODULAR for r in reports(cluster).values())

        cluster.set_config("loadManagerClassName", lm.NOOP)           # the scenario event's call
        await _switched(cluster, lm.NOOP)
        await cluster.wait_until(lambda: len(reports(cluster)) == 3, timeout=10)
        assert all(r.load_manager_class_name == "" and r.num_bundles == 0 for r in reports(cluster).values())
        assert cluster.leader() == leader_id and cluster.brokers[leader_id].leader_actor is None
        for b in cluster.brokers.values():   # the capabilities are the new manager's, resolved with it
            assert b.capabilities == lm.Capabilities(report_ticks=b.load_manager)
        assert cluster.ownership() == owners and client.connected_count() == 200
        # new bundles now go to whichever broker a lookup reaches
        more = cluster.add_client()
        await cluster.create_namespace("public/other", 4)
        more.create_handles([f"persistent://public/other/x-{i}" for i in range(40)], HandleKind.PRODUCER)
        await cluster.wait_until(lambda: more.connected_count() == 40, timeout=120)

        status, _, _ = await routes.handle(                           # pulsar-admin update-dynamic-config
            "POST", f"/admin/v2/brokers/configuration/loadManagerClassName/{lm.MODULAR}", b"")
        assert status in (200, 204)
        await _switched(cluster, lm.MODULAR)
        await cluster.wait_until(lambda: cluster.brokers[leader_id].leader_actor is not None, timeout=10)
        for b in cluster.brokers.values():
            assert b.capabilities == lm.Capabilities(report_ticks=b.load_manager, leader_load_view=b.load_manager)
        await cluster.wait_until(lambda: len(reports(cluster)) == 3, timeout=10)
        assert all(r.load_manager_class_name == lm.MODULAR for r in reports(cluster).values())
        # the bundles join the reports with the next stats update (statsUpdateFrequencyInSecs)
        await cluster.wait_until(lambda: sum(r.num_bundles for r in reports(cluster).values())
                                 == len(cluster.ownership()) == 12, timeout=180)
        # the new leader half decides again: a third namespace is placed through it
        last = cluster.add_client()
        await cluster.create_namespace("public/third", 4)
        last.create_handles([f"persistent://public/third/y-{i}" for i in range(40)], HandleKind.PRODUCER)
        await cluster.wait_until(lambda: last.connected_count() == 40, timeout=120)
        assert client.connected_count() == 200 and more.connected_count() == 40
    brokers = {"broker-1:8080", "broker-2:8080", "broker-3:8080"}
    assert len(changes) == 6
    assert {(c.broker, c.previous, c.current) for c in changes[:3]} == {
        (b, lm.MODULAR, lm.NOOP) for b in brokers}
    assert {(c.broker, c.previous, c.current) for c in changes[3:]} == {
        (b, lm.NOOP, lm.MODULAR) for b in brokers}


@pytest.mark.asyncio
async def test_an_unknown_class_is_refused_live_by_pulsars_validator():
    """BrokerService registers `Class.forName(className)` as loadManagerClassName's validator: an
    unknown class is 412 and nothing changes (only broker.conf can make the fallback happen)."""
    async with emulated_cluster(2, seed=7) as cluster:
        status, _, body = await DynamicConfigRoutes(cluster).handle(
            "POST", "/admin/v2/brokers/configuration/loadManagerClassName/NoopLoadManager", b"")
        assert status == 412 and b"Invalid dynamic-config value" in body
        assert all(b.load_manager.class_name == lm.MODULAR for b in cluster.brokers.values())
