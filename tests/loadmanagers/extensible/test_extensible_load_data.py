"""The Extensible load data: BrokerLoadDataTest (@04fc474f) and TopKBundlesTest (@028ed629) vectors,
Pulsar's JSON field names, and the decision models and counters."""

from __future__ import annotations

import random

import msgspec
import pytest

from emulator.model.config import ServiceConfig
from emulator.loadmanagers.extensible.model.counters import (
    AssignCounter,
    SplitCounter,
    UnloadCounter,
)
from emulator.loadmanagers.extensible.model.decisions import (
    Split,
    SplitDecision,
    SplitLabel,
    SplitReason,
    Unload,
    UnloadDecision,
    UnloadLabel,
    UnloadReason,
)
from emulator.loadmanagers.extensible.model.load_data import (
    BrokerLoadData,
    BrokerLookupData,
    TopBundlesLoadData,
)
from emulator.loadmanagers.extensible.model.top_bundles import partition_sort, top_k_bundles
from emulator.model.loaddata import NamespaceBundleStats, ResourceUsage
from emulator.model.policies import (
    AutoFailoverPolicyData,
    ClusterPolicies,
    LocalPolicies,
    NamespaceIsolationPolicy,
    PolicyView,
)

HALF = ServiceConfig().with_overrides({
    "loadBalancerCPUResourceWeight": 0.5, "loadBalancerMemoryResourceWeight": 0.5,
    "loadBalancerDirectMemoryResourceWeight": 0.5, "loadBalancerBandwidthInResourceWeight": 0.5,
    "loadBalancerBandwidthOutResourceWeight": 0.5, "loadBalancerHistoryResourcePercentage": 0.75,
}, source="BrokerLoadDataTest")


def usage(cpu: float, memory: float) -> dict[str, ResourceUsage]:
    return {"cpu": ResourceUsage(usage=cpu, limit=100.0), "memory": ResourceUsage(usage=memory, limit=200.0),
            "direct_memory": ResourceUsage(usage=2.0, limit=100.0),
            "bandwidth_in": ResourceUsage(usage=3.0, limit=100.0),
            "bandwidth_out": ResourceUsage(usage=4.0, limit=100.0)}


def test_update_by_system_resource_usage() -> None:
    data = BrokerLoadData()
    data.update(**usage(1.0, 800.0), msg_throughput_in=1, msg_throughput_out=2, msg_rate_in=3, msg_rate_out=4,
                bundle_count=5, topics=6, conf=HALF, now_ms=1000)
    assert (data.msg_throughput_in, data.msg_throughput_out, data.msg_rate_in, data.msg_rate_out) == (1, 2, 3, 4)
    assert (data.bundle_count, data.topics, data.updated_at) == (5, 6, 1000)
    assert data.max_resource_usage == 0.04  # memory is left out
    assert data.weighted_max_ema == 2  # memory 400 % × 0.5
    assert data.msg_throughput_ema == 3

    data.update(**usage(300.0, 200.0), msg_throughput_in=5, msg_throughput_out=6, msg_rate_in=7, msg_rate_out=8,
                bundle_count=9, topics=10, conf=HALF, now_ms=2000)
    assert data.cpu == ResourceUsage(usage=300.0, limit=100.0)
    assert data.max_resource_usage == 3.0  # not capped at 100 %
    assert data.weighted_max_ema == 1.875  # 2 × 0.75 + 1.5 × 0.25
    assert data.msg_throughput_ema == 5
    assert data.reported_at == 0
    data.clear()
    assert data == BrokerLoadData()


def test_update_by_broker_load_data() -> None:
    other = BrokerLoadData()
    other.update(**usage(1.0, 800.0), msg_throughput_in=1, msg_throughput_out=2, msg_rate_in=3, msg_rate_out=4,
                 bundle_count=5, topics=6, conf=HALF, now_ms=1000)
    data = BrokerLoadData()
    data.update_from(other)
    assert data == other


def test_first_update_at_time_zero_leaves_the_next_one_first() -> None:
    """`updatedAt == 0` marks "no history": Pulsar's own test of the EMA relies on a real clock."""
    data = BrokerLoadData()
    for now, cpu in ((0, 10.0), (0, 50.0)):
        data.update(**usage(cpu, 0.0), msg_throughput_in=0, msg_throughput_out=0, msg_rate_in=0, msg_rate_out=0,
                    bundle_count=0, topics=0, conf=HALF, now_ms=now)
    assert data.weighted_max_ema == pytest.approx(0.25)  # 50 % × 0.5, no history kept


def test_broker_load_data_json_is_pulsars() -> None:
    data = BrokerLoadData(bundle_count=3, topics=3, weighted_max_ema=0.156, msg_throughput_ema=38.9)
    doc = msgspec.json.decode(msgspec.json.encode(data))
    assert list(doc) == ["cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut", "msgThroughputIn",
                         "msgThroughputOut", "msgRateIn", "msgRateOut", "bundleCount", "topics",
                         "maxResourceUsage", "weightedMaxEMA", "msgThroughputEMA", "updatedAt", "reportedAt"]
    assert doc["cpu"] == {"usage": 0.0, "limit": 0.0}
    assert msgspec.json.decode(msgspec.json.encode(data), type=BrokerLoadData) == data
    # A fresh broker looks fully loaded.
    assert (BrokerLoadData().max_resource_usage, BrokerLoadData().weighted_max_ema) == (1.0, 1.0)


def test_top_bundles_and_lookup_json() -> None:
    top = top_k_bundles({"t/ns/0x00000000_0xffffffff": NamespaceBundleStats(msg_rate_in=1.0)}, 10, ServiceConfig())
    doc = msgspec.json.decode(msgspec.json.encode(top))
    assert doc == {"topBundlesLoadData": [{"bundleName": "t/ns/0x00000000_0xffffffff", "stats": {
        "msgRateIn": 1.0, "msgRateOut": 0.0, "msgThroughputIn": 0.0, "msgThroughputOut": 0.0,
        "consumerCount": 0, "producerCount": 0, "topics": 0, "cacheSize": 0}}]}
    assert msgspec.json.decode(msgspec.json.encode(top), type=TopBundlesLoadData) == top
    lookup = msgspec.json.decode(msgspec.json.encode(BrokerLookupData(broker_id="b:8080")))
    assert {"brokerId", "webServiceUrl", "pulsarServiceUrl", "persistentTopicsEnabled",
            "nonPersistentTopicsEnabled", "loadManagerClassName", "startTimestamp", "brokerVersion"} <= set(lookup)


# --- TopKBundles --------------------------------------------------------------------------------------

B1, B2, B3, B4 = (f"my-tenant/my-namespace{i}/0x00000000_0x0FFFFFFF" for i in range(1, 5))
CONF = ServiceConfig()


def rates(**by_bundle: float) -> dict[str, NamespaceBundleStats]:
    return {b: NamespaceBundleStats(msg_rate_in=r) for b, r in by_bundle.items()}


def names(top: TopBundlesLoadData) -> list[str]:
    return [e.bundle_name for e in top.top_bundles_load_data]


def test_top_bundles_load_data_least_loaded_first() -> None:
    stats = {B1: NamespaceBundleStats(msg_rate_in=100000), B2: NamespaceBundleStats(msg_rate_in=500),
             B3: NamespaceBundleStats(msg_rate_in=10000), B4: NamespaceBundleStats(msg_rate_in=0)}
    assert names(top_k_bundles(stats, 3, CONF)) == [B2, B3, B1]


def test_system_namespace() -> None:
    stats = {"pulsar/system/0x00000000_0x0FFFFFFF": NamespaceBundleStats(msg_rate_in=500),
             B1: NamespaceBundleStats(msg_rate_in=10000)}
    assert names(top_k_bundles(stats, 2, CONF)) == [B1]


def test_shedding_excluded_namespaces() -> None:
    conf = CONF.with_overrides({"loadBalancerSheddingExcludedNamespaces": "my-tenant/my-namespace2"}, source="t")
    stats = {B2: NamespaceBundleStats(msg_rate_in=500), B1: NamespaceBundleStats(msg_rate_in=10000)}
    assert names(top_k_bundles(stats, 2, conf)) == [B1]


ISOLATION = ClusterPolicies(isolation={"policy": NamespaceIsolationPolicy(
    namespaces=["my-tenant/my-namespace1.*"], primary=["prod1-broker[1-3].messaging.use.example.com"],
    secondary=["prod1-broker.*.use.example.com"],
    auto_failover_policy=AutoFailoverPolicyData(parameters={"min_limit": "3", "usage_threshold": "90"}))})
ANTI_AFFINITY = {"my-tenant/my-namespace2": LocalPolicies(namespace_anti_affinity_group="namespaceAntiAffinityGroup")}


def test_isolation_and_anti_affinity_policies() -> None:
    stats = {B1: NamespaceBundleStats(msg_rate_in=500), B2: NamespaceBundleStats(msg_rate_in=10000)}
    assert names(top_k_bundles(stats, 2, CONF, PolicyView(ISOLATION))) == [B2]
    assert names(top_k_bundles(stats, 2, CONF, PolicyView(local_policies=ANTI_AFFINITY))) == [B1]
    both = PolicyView(ISOLATION, ANTI_AFFINITY)
    enabled = CONF.with_overrides({"loadBalancerSheddingBundlesWithPoliciesEnabled": True}, source="t")
    assert names(top_k_bundles(stats, 2, enabled, both)) == [B1, B2]
    assert names(top_k_bundles(stats, 2, CONF, both)) == []


@pytest.mark.parametrize("seed", range(5))
def test_partition_sort(seed: int) -> None:
    """testPartitionSort: the first k are the k largest, largest first."""
    rng = random.Random(seed)
    for _ in range(100):
        size = rng.randrange(10) + 1
        values = [rng.randrange(size) for _ in range(size)]
        k = rng.randrange(size) + 1
        arr = list(values)
        partition_sort(arr, k, lambda a, b: (a > b) - (a < b))
        assert arr[:k] == sorted(values, reverse=True)[:k]
        assert sorted(arr) == sorted(values)


# --- decisions and counters ---------------------------------------------------------------------------


def test_decisions_compare_by_value_and_encode_as_pulsar() -> None:
    a = UnloadDecision(unload=Unload(source_broker="a", service_unit="t/n/0x0_0x1", dest_broker="b"),
                       label=UnloadLabel.SUCCESS, reason=UnloadReason.OVERLOADED)
    b = UnloadDecision(unload=Unload(source_broker="a", service_unit="t/n/0x0_0x1", dest_broker="b"),
                       label=UnloadLabel.SUCCESS, reason=UnloadReason.OVERLOADED)
    assert a == b and len({a, b}) == 1
    assert msgspec.json.decode(msgspec.json.encode(a)) == {
        "unload": {"sourceBroker": "a", "serviceUnit": "t/n/0x0_0x1", "destBroker": "b"},
        "label": "Success", "reason": "Overloaded"}
    split = SplitDecision(split=Split(service_unit="t/n/0x00000000_0xffffffff", source_broker="a",
                                      split_service_unit_to_dest_broker={"0x00000000_0x7fffffff": None}),
                          label=SplitLabel.SUCCESS, reason=SplitReason.MSG_RATE)
    assert msgspec.json.decode(msgspec.json.encode(split))["split"]["splitServiceUnitToDestBroker"] == {
        "0x00000000_0x7fffffff": None}


def test_unload_counter_cells() -> None:
    c = UnloadCounter()
    c.update(UnloadLabel.SUCCESS, UnloadReason.OVERLOADED, now_ms=5)
    c.update(UnloadLabel.SKIP, UnloadReason.HIT_COUNT, now_ms=6)
    c.update_unload_broker_count(2, now_ms=7)
    c.update_load_data(0.5, 0.1, now_ms=8)
    assert (c.unload_bundle_count, c.unload_broker_count, c.updated_at) == (1, 2, 8)
    assert c.count(UnloadLabel.SKIP, UnloadReason.HIT_COUNT) == 1
    assert sum(sum(cells.values()) for cells in c.breakdown.values()) == 2
    with pytest.raises(KeyError):
        c.update(UnloadLabel.FAILURE, UnloadReason.OVERLOADED)  # no such series in Pulsar


def test_split_and_assign_counters() -> None:
    s = SplitCounter()
    s.update(SplitLabel.SUCCESS, SplitReason.TOPICS)
    s.update(SplitLabel.FAILURE, SplitReason.UNKNOWN)
    assert (s.split_count, s.count(SplitLabel.FAILURE, SplitReason.UNKNOWN)) == (1, 1)
    with pytest.raises(KeyError):
        s.update(SplitLabel.SKIP, SplitReason.TOPICS)
    a = AssignCounter()
    a.increment_success()
    a.increment_skip()
    a.increment_skip()
    a.increment_empty()
    assert (a.success, a.skip, a.empty) == (1, 2, 1)


def test_each_bundle_is_kept_or_left_out_by_its_own_namespace() -> None:
    """The exclusions are decided once per namespace within a report: bundles of an excluded, a
    system and a kept namespace interleaved keep exactly the kept namespace's."""
    conf = CONF.with_overrides({"loadBalancerSheddingExcludedNamespaces": "my-tenant/my-namespace2"}, source="t")
    stats = {}
    for i in range(4):
        lo, hi = f"0x{i:08x}", f"0x{i + 1:08x}"
        stats[f"my-tenant/my-namespace2/{lo}_{hi}"] = NamespaceBundleStats(msg_rate_in=900)
        stats[f"pulsar/system/{lo}_{hi}"] = NamespaceBundleStats(msg_rate_in=800)
        stats[f"my-tenant/my-namespace3/{lo}_{hi}"] = NamespaceBundleStats(msg_rate_in=100 * (i + 1))
    assert names(top_k_bundles(stats, 10, conf)) == [
        f"my-tenant/my-namespace3/0x{i:08x}_0x{i + 1:08x}" for i in range(4)]
    anti = PolicyView(local_policies={"my-tenant/my-namespace3": LocalPolicies(namespace_anti_affinity_group="g")})
    assert names(top_k_bundles(stats, 10, conf, anti)) == []
