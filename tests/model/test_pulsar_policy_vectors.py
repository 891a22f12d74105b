"""Pulsar's own test vectors for the policy filters, step by step (read in apache/pulsar):
LoadManagerSharedTest.testRemoveMostServicingBrokersForNamespace,
AntiAffinityNamespaceGroupTest.testAntiAffinityNamespaceFilteringWithDomain / ...WithoutDomain /
testLoadSheddingUtilWithAntiAffinityNamespace, and
ModularLoadManagerImplTest.testNamespaceIsolationPoliciesForPrimaryAndSecondaryBrokers /
testLoadSheddingWithNamespaceIsolationPolicies. The running-cluster versions are in
tests/cluster/test_isolation.py."""

from __future__ import annotations

import pytest

from emulator.model.config import ServiceConfig
from emulator.model.filters import (
    BundleRangeCache,
    apply_namespace_policies,
    filter_anti_affinity_group_owned_brokers,
    remove_most_servicing_brokers_for_namespace,
    should_anti_affinity_namespace_unload,
    should_namespace_policies_unload,
)
from emulator.model.loaddata import BrokerData, LoadData, LocalBrokerData
from emulator.model.policies import (
    AutoFailoverPolicyData,
    ClusterPolicies,
    LocalPolicies,
    NamespaceIsolationPolicy,
    PolicyView,
)

FULL = "0x00000000_0xffffffff"


def test_remove_most_servicing_brokers_for_namespace():
    namespace = "tenant1/ns1"
    assigned = namespace + "/0x00000000_0x40000000"
    cache = BundleRangeCache()
    assert remove_most_servicing_brokers_for_namespace(assigned, [], cache) == []
    assert remove_most_servicing_brokers_for_namespace(assigned, ["broker1"], cache) == ["broker1"]
    cache.add("broker1", namespace + "/0x40000000_0x80000000")
    assert remove_most_servicing_brokers_for_namespace(assigned, ["broker1"], cache) == ["broker1"]
    assert remove_most_servicing_brokers_for_namespace(assigned, ["broker1", "broker2"], cache) == ["broker2"]
    cache.add("broker2", namespace + "/0x80000000_0xc0000000")
    assert remove_most_servicing_brokers_for_namespace(assigned, ["broker1", "broker2"], cache) == [
        "broker1", "broker2"]
    cache.add("broker2", namespace + "/0xc0000000_0xd0000000")
    assert remove_most_servicing_brokers_for_namespace(assigned, ["broker1", "broker2"], cache) == ["broker1"]
    cache.add("broker3", namespace + "/0xd0000000_0xffffffff")
    assert remove_most_servicing_brokers_for_namespace(assigned, ["broker1", "broker2", "broker3"], cache) == [
        "broker1", "broker3"]


NS = "my-tenant/use/my-ns"
GROUP = {f"{NS}{i}": LocalPolicies(namespace_anti_affinity_group="my-antiaffinity") for i in range(5)}


def select(cache: BundleRangeCache, broker: str, namespace: str) -> None:
    """The test's selectBrokerForNamespace: the broker's map becomes {namespace: {bundle}}."""
    cache.reload_broker(broker, [f"{namespace}/{FULL}"])


def test_anti_affinity_filtering_with_domain():
    brokers = ["brokerName-0", "brokerName-1", "brokerName-2", "brokerName-3"]
    domains = {"brokerName-0": "domain-0", "brokerName-1": "domain-0",
               "brokerName-2": "domain-1", "brokerName-3": "domain-1"}
    view = PolicyView(ClusterPolicies(failure_domains=domains), local_policies=GROUP)
    conf = ServiceConfig(failure_domains_enabled=True)
    cache = BundleRangeCache()

    def candidates(i: int) -> list[str]:
        return filter_anti_affinity_group_owned_brokers(f"{NS}{i}/{FULL}", brokers, cache, view, conf)

    assert candidates(0) == brokers
    select(cache, "brokerName-0", NS + "0")
    assert candidates(1) == ["brokerName-2", "brokerName-3"]
    select(cache, "brokerName-2", NS + "1")
    assert candidates(2) == ["brokerName-1", "brokerName-3"]
    select(cache, "brokerName-1", NS + "2")
    assert candidates(3) == ["brokerName-3"]
    select(cache, "brokerName-3", NS + "3")
    assert candidates(4) == brokers


def test_anti_affinity_filtering_without_domain():
    brokers = ["broker-0", "broker-1", "broker-2"]
    view = PolicyView(local_policies=GROUP)
    conf = ServiceConfig()
    cache = BundleRangeCache()

    def candidates(i: int) -> list[str]:
        return filter_anti_affinity_group_owned_brokers(f"{NS}{i}/{FULL}", brokers, cache, view, conf)

    assert candidates(0) == brokers
    select(cache, "broker-0", NS + "0")
    assert candidates(1) == ["broker-1", "broker-2"]
    select(cache, "broker-1", NS + "1")
    assert candidates(2) == ["broker-2"]
    select(cache, "broker-2", NS + "2")
    assert candidates(3) == brokers


def test_load_shedding_util_with_anti_affinity_namespace():
    """broker-0 owns ns0: it may unload ns0 while another broker holds fewer of the group, not once
    every broker holds one. (Pulsar's test passes candidate brokers that have no reports; the isolation
    step is bypassed here with an isolation policy naming them, as only the anti-affinity count matters.)"""
    brokers = ["broker-0:1", "broker-1:1", "broker-2:1"]
    iso = NamespaceIsolationPolicy(namespaces=["my-tenant/.*"], primary=["broker-.*"])
    view = PolicyView(ClusterPolicies(isolation={"p": iso}), local_policies=GROUP)
    cache = BundleRangeCache()
    load = LoadData()
    bundle = f"{NS}0/{FULL}"
    select(cache, "broker-0:1", NS + "0")
    assert should_anti_affinity_namespace_unload(bundle, "broker-0:1", brokers, load, view, cache)
    select(cache, "broker-1:1", NS + "1")
    assert should_anti_affinity_namespace_unload(bundle, "broker-0:1", brokers, load, view, cache)
    select(cache, "broker-2:1", NS + "2")
    assert not should_anti_affinity_namespace_unload(bundle, "broker-0:1", brokers, load, view, cache)


def isolation(min_limit: int, primary: str = "prefix0", secondary: str = "prefix1") -> PolicyView:
    policy = NamespaceIsolationPolicy(
        namespaces=["my-property/use/my-ns.*"], primary=[primary], secondary=[secondary],
        auto_failover_policy=AutoFailoverPolicyData(parameters={"min_limit": min_limit, "usage_threshold": 80}))
    return PolicyView(ClusterPolicies(isolation={"my-ns-isolation-policies": policy}))


@pytest.mark.parametrize("min_limit, available, expected", [
    (1, ["broker3:8080", "prefix0:8080", "prefix1:8080"], ["prefix0:8080"]),
    (1, ["broker3:8080", "prefix1:8080"], ["prefix1:8080"]),
    (1, ["broker3:8080"], []),
    (2, ["broker3:8080", "prefix0:8080", "prefix1:8080"], ["prefix0:8080", "prefix1:8080"]),
    (2, ["broker3:8080", "prefix1:8080"], ["prefix1:8080"]),
    (2, ["broker3:8080"], []),
])
def test_isolation_policies_for_primary_and_secondary_brokers(min_limit, available, expected):
    bundle = f"my-property/use/my-ns/{FULL}"
    assert apply_namespace_policies(bundle, available, LoadData(), isolation(min_limit)) == expected


def test_load_shedding_with_namespace_isolation_policies():
    """Two reporting brokers; unload only if the policies allow a broker other than the owner."""
    namespace = "my-tenant/use/my-ns"
    bundle = f"{namespace}/{FULL}"
    two = ["localhost:8080", "localhost1:8080"]
    reported = LoadData(broker_data={b: BrokerData(local_data=LocalBrokerData()) for b in two})
    assert should_namespace_policies_unload(bundle, "localhost:8080", two, reported, PolicyView())

    def policy_on(host: str) -> PolicyView:
        p = NamespaceIsolationPolicy(namespaces=[namespace + ".*"], primary=[host], secondary=[host])
        return PolicyView(ClusterPolicies(isolation={"my-ns-isolation-policies": p}))

    # the policy allows only localhost1, the current owner: no other broker to take the bundle
    assert not should_namespace_policies_unload(bundle, "localhost1:8080", two, reported, policy_on("localhost1"))
    # the policy allows localhost, another broker than the owner localhost1: unload
    assert should_namespace_policies_unload(bundle, "localhost1:8080", two, reported, policy_on("localhost"))
