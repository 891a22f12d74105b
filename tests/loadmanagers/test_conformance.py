"""Every load manager behind the seam, held to the same behaviours (issue 28), as anyio runs one suite on
every backend (its `anyio_backend` fixture): the `manager` fixture is parametrised over `LOAD_MANAGERS`,
so a fifth manager added to the table runs all of this without a line here but its `Spec`.

The shape: each class subclasses `LoadManager` and implements every abstract method; what it declares
beyond it is one of the seam's named capabilities and the broker resolves exactly those. The
behaviours, each on an emulated cluster with the invariant checker on: the lookup of a new bundle
(it gets a live owner; under Noop, the broker asked), an admin unload, the loss of a broker (its bundles
get a new owner and its clients reconnect), the load report (written where the manager writes it, or
nowhere for Noop) and the metrics (the Prometheus text has the manager's own families, and not the
others')."""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable
from typing import Any

import anyio
import msgspec
import pytest
from prometheus_client.parser import text_string_to_metric_families

from emulator.cluster import load_manager as lm
from emulator.cluster import paths
from emulator.cluster.load_manager import CAPABILITIES, LOAD_MANAGERS, Capabilities, LoadManager
from emulator.cluster.messages import HandleKind, LookupTopic, LookupType
from emulator.model.bundles import NamespaceBundles
from emulator.model.config import LOAD_MANAGER_CLASSES, ServiceConfig
from emulator.model.loaddata import LocalBrokerData
from emulator.observe.metrics import ClusterMetrics
from emulator.testing import emulated_cluster

NS = "public/default"
BUNDLES = 4


# ------------------------------------------------------------------ what each manager is expected to be


def _modular_report(cluster: Any, broker: str) -> int | None:
    node = cluster.store.peek(f"/loadbalance/brokers/{broker}")
    return None if node is None else msgspec.json.decode(node, type=LocalBrokerData).num_bundles


def _simple_report(cluster: Any, broker: str) -> int | None:
    from emulator.loadmanagers.simple.model import decode_load_report

    node = cluster.store.peek(f"/loadbalance/brokers/{broker}")
    return None if node is None else len(decode_load_report(node).bundles())


def _extensible_report(cluster: Any, broker: str) -> int | None:
    """The broker load-data topic as another live broker's table view reads it."""
    reader = next(b for b in cluster.live_brokers() if b != broker)
    metrics = cluster.brokers[reader].capabilities.extensible_metrics
    data = metrics.broker_load_data_view().get(broker)
    return None if data is None else data.bundle_count


@dataclasses.dataclass(frozen=True)
class Spec:
    """One load manager's expected answers to the shared behaviours."""

    class_name: str
    capabilities: frozenset[str]
    """The seam's capability interfaces it declares (their names)."""
    report: Callable[[Any, str], int | None] | None
    """The number of bundles a broker's last report lists, as the cluster reads it (None: writes none)."""
    decides_where_asked: bool = False
    """getLeastLoaded is the broker that was asked (NoopLoadManager)."""

    @property
    def short(self) -> str:
        return self.class_name.rsplit(".", 1)[1]


SPECS = {s.class_name: s for s in (
    Spec(lm.MODULAR, frozenset({"ReportTicks", "LeaderLoadView"}), _modular_report),
    Spec(lm.SIMPLE, frozenset({"LoadBalancingMetrics"}), _simple_report),
    Spec(lm.NOOP, frozenset({"ReportTicks"}), None, decides_where_asked=True),
    Spec(lm.EXTENSIBLE, frozenset({"ChannelOwnership", "ExtensibleMetrics"}), _extensible_report),
)}

# The metric families only one manager has (Simple's rank and quota gauges, Extensible's getMetrics()).
OWN_FAMILIES = {
    lm.SIMPLE: {"pulsar_lb_load_rank", "pulsar_lb_quota_pct_cpu", "pulsar_lb_quota_pct_memory"},
    lm.EXTENSIBLE: {"pulsar_sunit_state_chn_owned_su_total", "pulsar_lb_unload_broker_breakdown_total",
                    "pulsar_lb_assign_broker_breakdown_total", "pulsar_lb_resource_usage"},
}


def test_every_load_manager_has_a_spec_here():
    assert set(SPECS) == set(LOAD_MANAGERS) == set(LOAD_MANAGER_CLASSES)


@pytest.fixture(params=sorted(LOAD_MANAGERS), ids=lambda name: name.rsplit(".", 1)[1])
def manager(request: pytest.FixtureRequest) -> Spec:
    """Each load manager of the table in turn (anyio's `anyio_backend`, for load managers)."""
    return SPECS[request.param]


# ------------------------------------------------------------------ the shape: base and capabilities


def _class(class_name: str) -> type:
    module, _, attr = LOAD_MANAGERS[class_name].partition(":")
    return getattr(__import__(module, fromlist=[attr]), attr)


def test_each_class_subclasses_the_base_and_implements_every_abstract_method(manager: Spec):
    cls = _class(manager.class_name)
    assert issubclass(cls, LoadManager)
    assert inspect.isabstract(LoadManager) and not inspect.isabstract(cls), cls.__abstractmethods__
    assert cls.class_name == manager.class_name
    assert lm._factory(manager.class_name) is cls


def test_what_a_manager_declares_beyond_the_base_is_a_named_capability(manager: Spec):
    """Each abstract base class a manager has, other than `LoadManager`, is one of the seam's named
    interfaces (no private protocol the broker would have to probe for), and they are the ones its
    Spec names."""
    cls = _class(manager.class_name)
    abstract_bases = {c for c in cls.__mro__[1:] if inspect.isabstract(c) or c in CAPABILITIES}
    assert abstract_bases - {LoadManager} <= set(CAPABILITIES)
    assert {c.__name__ for c in abstract_bases - {LoadManager}} == manager.capabilities


def test_the_capabilities_are_one_field_each_named_for_its_interface():
    fields = [f.name for f in dataclasses.fields(Capabilities)]
    assert fields == [re.sub(r"(?<!^)(?=[A-Z])", "_", c.__name__).lower() for c in CAPABILITIES]
    for c in CAPABILITIES:
        assert inspect.isabstract(c) and c.__abstractmethods__, c   # every method is the manager's to write


def test_a_base_default_says_which_pulsar_method_it_follows():
    """The base's concrete hooks are Pulsar's defaults: each docstring names the Java method it follows
    (a camelCase name), or says that Pulsar has none."""
    defaults = [name for name, member in vars(LoadManager).items()
                if callable(member) and not name.startswith("_") and not getattr(member, "__isabstractmethod__", False)]
    assert len(defaults) >= 10, defaults
    for name in defaults:
        doc = getattr(LoadManager, name).__doc__ or ""
        assert re.search(r"\b[a-z]+[A-Z]\w*", doc) or "no Pulsar method" in doc, name


# ------------------------------------------------------------------ behaviours on a running cluster


def _conf(spec: Spec) -> ServiceConfig:
    return ServiceConfig(load_manager_class_name=spec.class_name)


def _topics(namespace: str, n: int, prefix: str = "t") -> list[str]:
    return [f"persistent://{namespace}/{prefix}-{i}" for i in range(n)]


async def _connected(cluster: Any, n: int, namespace: str = NS) -> Any:
    client = cluster.add_client()
    client.create_handles(_topics(namespace, n), HandleKind.PRODUCER)
    await cluster.wait_until(lambda: client.connected_count() == n, timeout=120,
                             what=f"{n} producers connected")
    return client


def _recorded_owner(cluster: Any, bundle: str, spec: Spec) -> str | None:
    """The owner where the manager records it: the service-unit state channel with ChannelOwnership
    (Extensible: no `/namespace/<bundle>` lock), else the ownership lock (OwnershipCache)."""
    lock = cluster.store.peek(paths.ownership_path(bundle))
    if "ChannelOwnership" in spec.capabilities:
        assert lock is None, f"{bundle}: an ownership lock under {spec.short}"
        owners = [shared.ownership().get(bundle) for shared in cluster.load_manager_shared.values()]
        return next((o for o in owners if o is not None), None)
    return None if lock is None else msgspec.json.decode(lock)["httpUrl"].split("://")[-1]


async def _lookup(cluster: Any, topic: str, at: str) -> tuple[str, int]:
    """A client's lookup of `topic` starting at broker `at`, following redirects (ClientCnx's loop):
    the broker it connects to, and the redirects it took."""
    authoritative = False
    for redirects in range(4):
        resp = await cluster.brokers[at].ask(LookupTopic(topic, authoritative=authoritative))
        if resp.response is LookupType.CONNECT:
            return resp.broker_id, redirects
        assert resp.response is LookupType.REDIRECT, resp
        at, authoritative = resp.broker_id, resp.authoritative
    raise AssertionError(f"lookup of {topic} still redirected after 4 hops")


@pytest.mark.asyncio
async def test_the_lookup_of_a_new_bundle_gives_it_a_live_owner(manager: Spec):
    async with emulated_cluster(3, seed=11, conf=_conf(manager), namespaces={NS: BUNDLES}) as cluster:
        assert all(b.capabilities == Capabilities.of(b.load_manager) for b in cluster.brokers.values())
        await cluster.create_namespace("public/fresh", BUNDLES)
        nb = NamespaceBundles.default("public/fresh", BUNDLES)
        by_bundle = {nb.find_bundle(t): t for t in _topics("public/fresh", 200)}
        assert len(by_bundle) == BUNDLES and cluster.ownership().keys().isdisjoint(by_bundle)
        followers = [b for b in cluster.live_brokers() if b != cluster.leader()]
        for i, (bundle, topic) in enumerate(sorted(by_bundle.items())):
            asked = followers[i % len(followers)]
            connected, redirects = await _lookup(cluster, topic, asked)
            assert cluster.owner_of(bundle) == connected and connected in cluster.live_brokers()
            assert _recorded_owner(cluster, bundle, manager) == connected
            assert redirects <= 2   # to the leader (centralized), then to its choice
            if manager.decides_where_asked:   # NoopLoadManager: not centralized, getLeastLoaded = itself
                assert (connected, redirects) == (asked, 0)
            # an owned bundle is Connect(owner) from any broker, with no decision
            for other in cluster.live_brokers():
                assert await _lookup(cluster, topic, other) == (connected, 0)


@pytest.mark.asyncio
async def test_an_admin_unload_releases_the_bundle_and_its_clients_come_back(manager: Spec):
    async with emulated_cluster(3, seed=12, conf=_conf(manager), namespaces={NS: BUNDLES}) as cluster:
        client = await _connected(cluster, 32)
        bundle, owner = sorted(cluster.ownership().items())[0]
        result = await cluster.unload_bundle(bundle)
        assert result.ok, result.message
        assert cluster.owner_of(bundle) is None   # released, not yet looked up again
        assert bundle not in cluster.brokers[owner].owned_bundle_names()
        await cluster.wait_until(lambda: client.connected_count() == 32 and cluster.owner_of(bundle) is not None,
                                 timeout=120, what="the unloaded bundle's producers reconnected")
        assert cluster.owner_of(bundle) in cluster.live_brokers()


@pytest.mark.asyncio
async def test_a_crashed_brokers_bundles_get_a_new_owner(manager: Spec):
    async with emulated_cluster(4, seed=13, conf=_conf(manager), namespaces={NS: 8}) as cluster:
        client = await _connected(cluster, 64)
        owners = cluster.ownership()
        leader = cluster.leader()
        victim = max((b for b in cluster.live_brokers() if b != leader),
                     key=lambda b: sum(1 for o in owners.values() if o == b))
        lost = sorted(bundle for bundle, o in owners.items() if o == victim)
        assert lost, owners
        cluster.kill_broker(victim)

        def recovered() -> bool:
            now = cluster.ownership()
            return client.connected_count() == 64 and all(
                now.get(bundle) not in (None, victim) for bundle in lost)

        await cluster.wait_until(recovered, timeout=600, what=f"the bundles of {victim} owned again")
        live = cluster.live_brokers()
        assert victim not in live and all(cluster.owner_of(bundle) in live for bundle in lost)


@pytest.mark.asyncio
async def test_each_broker_reports_its_load_where_its_manager_writes_it(manager: Spec):
    async with emulated_cluster(3, seed=14, conf=_conf(manager), namespaces={NS: 6}) as cluster:
        registered = {b: cluster.store.peek(f"/loadbalance/brokers/{b}") for b in cluster.live_brokers()}
        await _connected(cluster, 48)
        owned = {b: len(cluster.brokers[b].owned_bundle_names()) for b in cluster.live_brokers()}
        assert sum(owned.values()) == 6
        if manager.report is None:   # NoopLoadManager: the registration is all it ever writes
            await anyio.sleep(120)
            assert {b: cluster.store.peek(f"/loadbalance/brokers/{b}") for b in registered} == registered
            assert not await cluster.brokers[cluster.live_brokers()[0]].load_manager.write_load_report(True)
            return
        report = manager.report
        await cluster.wait_until(lambda: {b: report(cluster, b) for b in owned} == owned, timeout=300,
                                 what="every broker's report listing its bundles")


@pytest.mark.asyncio
async def test_the_metrics_have_the_managers_own_families(manager: Spec):
    async with emulated_cluster(3, seed=15, conf=_conf(manager), namespaces={NS: 6}) as cluster:
        metrics = ClusterMetrics(cluster)
        await _connected(cluster, 48)
        await anyio.sleep(130)   # two shedding cycles (loadBalancerSheddingIntervalMinutes = 1), reports
        families = {f.name: f for f in text_string_to_metric_families(metrics.exposition().decode())}
        metrics.close()
        live = set(cluster.live_brokers())
        for other, names in OWN_FAMILIES.items():
            if other != manager.class_name:
                assert not names & set(families), (other, names & set(families))
        own = OWN_FAMILIES.get(manager.class_name, set())
        assert own <= set(families), own - set(families)
        age = {s.name: s.value for s in families["pulsar_lb_emulator_load_report_age_seconds"].samples}
        reports_read = age["pulsar_lb_emulator_load_report_age_seconds_count"]
        if "LeaderLoadView" in manager.capabilities:
            # the leader's view of every broker's report, read at each shedding cycle
            assert reports_read >= 2 * len(live)
        else:
            assert reports_read == 0
        if manager.class_name == lm.SIMPLE:
            assert {s.labels["broker"] for s in families["pulsar_lb_load_rank"].samples} == live
        if manager.class_name == lm.EXTENSIBLE:
            owned = {s.labels["broker"]: s.value for s in families["pulsar_sunit_state_chn_owned_su_total"].samples}
            assert owned == {b: float(len(cluster.brokers[b].owned_bundle_names())) for b in live}
            assert sum(owned.values()) == 6
