"""The Extensible broker filters: vectors of apache/pulsar's filter tests (extensions/filter,
BrokerMaxTopicCountFilterTest @0524997, BrokerVersionFilterTest @442b4cd2, BrokerLoadManagerClassFilterTest
@2cd18d86, BrokerIsolationPoliciesFilterTest @18a11cbc), the anti-affinity filter over the channel's
ownership, and the pipeline."""

from __future__ import annotations

import msgspec
import pytest

from emulator.model.config import ServiceConfig
from emulator.loadmanagers.extensible.model.context import LoadManagerContext
from emulator.loadmanagers.extensible.model.filters import (
    DEFAULT_PIPELINE,
    BrokerFilterBadVersionException,
    BrokerFilterException,
    anti_affinity_bundle_counts,
    anti_affinity_group_policy_filter,
    apply_filters,
    broker_isolation_policies_filter,
    broker_load_manager_class_filter,
    broker_max_topic_count_filter,
    broker_version_filter,
)
from emulator.loadmanagers.extensible.model.load_data import BrokerLoadData, BrokerLookupData
from emulator.model.policies import (
    AutoFailoverPolicyData,
    ClusterPolicies,
    LocalPolicies,
    NamespaceIsolationPolicy,
    PolicyView,
)

EXTENSIBLE = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
MODULAR = "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"
BUNDLE = "my-tenant/my-ns/0x00000000_0xffffffff"
# BrokerFilterTestBase.getContext: preferLaterVersions on.
CONF = ServiceConfig().with_overrides({"preferLaterVersions": True}, source="BrokerFilterTestBase")


def ctx(conf: ServiceConfig = CONF, **fields: object) -> LoadManagerContext:
    return msgspec.structs.replace(LoadManagerContext(conf=conf), **fields)


def lookup(version: str | None = "3.0.0", lm: str | None = EXTENSIBLE, persistent: bool = True,
           non_persistent: bool = True) -> BrokerLookupData:
    return BrokerLookupData(broker_version=version, load_manager_class_name=lm,
                            persistent_topics_enabled=persistent, non_persistent_topics_enabled=non_persistent)


def test_max_topic_count_filter() -> None:
    limit = CONF.load_balancer_broker_max_topics
    store = {"broker1": BrokerLoadData(topics=limit), "broker2": BrokerLoadData(),
             "broker3": BrokerLoadData(topics=limit * 2)}
    brokers = {f"broker{i}": lookup() for i in range(1, 5)}
    result = broker_max_topic_count_filter(brokers, BUNDLE, ctx(broker_load_data=store))
    assert set(result) == {"broker2", "broker4"}
    assert len(brokers) == 4  # the input is left alone


def test_version_filter_empty_and_disabled() -> None:
    assert broker_version_filter({}, BUNDLE, ctx()) == {}
    brokers = {"localhost:6650": lookup("2.10.0"), "localhost:6651": lookup("2.10.1")}
    off = CONF.with_overrides({"preferLaterVersions": False}, source="t")
    assert broker_version_filter(brokers, BUNDLE, ctx(off)) == brokers


@pytest.mark.parametrize("versions, kept", [
    (["2.10.0", "2.10.1", "2.10.1", "2.10.1"], {"localhost:6651", "localhost:6652", "localhost:6653"}),
    (["2.10.0", "2.10.1-SNAPSHOT", "2.10.1", "2.10.1"], {"localhost:6652", "localhost:6653"}),
    (["2.10.0", "2.10.1-SNAPSHOT", "2.10.1", "2.10.2-SNAPSHOT"], {"localhost:6653"}),
])
def test_version_filter(versions: list[str], kept: set[str]) -> None:
    brokers = {f"localhost:{6650 + i}": lookup(v) for i, v in enumerate(versions)}
    assert set(broker_version_filter(brokers, BUNDLE, ctx())) == kept


@pytest.mark.parametrize("version", ["xxx", "", None])
def test_version_filter_bad_version(version: str | None) -> None:
    with pytest.raises(BrokerFilterBadVersionException):
        broker_version_filter({"localhost:6650": lookup(version)}, BUNDLE, ctx())
    assert issubclass(BrokerFilterBadVersionException, BrokerFilterException)


def test_load_manager_class_filter() -> None:
    brokers = {"broker1": lookup(lm=EXTENSIBLE), "broker2": lookup(lm=EXTENSIBLE), "broker3": lookup(lm=MODULAR),
               "broker4": lookup(lm=MODULAR), "broker5": lookup(lm=None)}
    extensible = CONF.with_overrides({"loadManagerClassName": EXTENSIBLE}, source="t")
    assert set(broker_load_manager_class_filter(brokers, BUNDLE, ctx(extensible))) == {"broker1", "broker2"}
    modular = CONF.with_overrides({"loadManagerClassName": MODULAR}, source="t")
    assert set(broker_load_manager_class_filter(brokers, BUNDLE, ctx(modular))) == {"broker3", "broker4"}


def isolation(min_limit: int) -> PolicyView:
    return PolicyView(ClusterPolicies(isolation={"p": NamespaceIsolationPolicy(
        namespaces=["my-tenant/my-ns"], primary=["broker1"], secondary=["broker2"],
        auto_failover_policy=AutoFailoverPolicyData(parameters={"min_limit": str(min_limit)}))}))


@pytest.mark.parametrize("min_limit, available, kept", [
    (1, [1, 2, 3], {1}), (1, [2, 3], {2}), (1, [3], set()),
    (2, [1, 2, 3], {1, 2}), (2, [2, 3], {2}), (2, [3], set()),
])
def test_isolation_policies_primary_and_secondary(min_limit: int, available: list[int], kept: set[int]) -> None:
    brokers = {f"broker{i}:8080": lookup() for i in available}
    result = broker_isolation_policies_filter(brokers, BUNDLE, ctx(policies=isolation(min_limit)))
    assert set(result) == {f"broker{i}:8080" for i in kept}



def test_isolation_policies_naming_brokers_as_host_port() -> None:
    """Newer Pulsar (NamespaceIsolationPolicyImpl.matchesBrokerRegex) matches a `host:port` regex
    against the broker id: primary=broker1:8080 keeps broker1:8080 and not broker1:8081."""
    policies = PolicyView(ClusterPolicies(isolation={"p": NamespaceIsolationPolicy(
        namespaces=["my-tenant/my-ns"], primary=["broker1:8080"], secondary=["broker2:8080"])}))
    brokers = {b: lookup() for b in ["broker1:8080", "broker1:8081", "broker2:8080", "broker3:8080"]}
    assert set(broker_isolation_policies_filter(brokers, BUNDLE, ctx(policies=policies))) == {"broker1:8080"}

def test_isolation_filter_with_persistent_or_non_persistent_disabled() -> None:
    def run(non_persistent: bool, **flags: tuple[bool, bool]) -> set[str]:
        brokers = {f"broker{i}:8080": lookup(persistent=flags.get(f"b{i}", (True, True))[0],
                                             non_persistent=flags.get(f"b{i}", (True, True))[1]) for i in (1, 2, 3)}
        return set(broker_isolation_policies_filter(brokers, BUNDLE, ctx(), non_persistent=non_persistent))

    every = {"broker1:8080", "broker2:8080", "broker3:8080"}
    assert run(True) == every
    assert run(True, b1=(True, False), b2=(True, False)) == {"broker3:8080"}
    assert run(False) == every
    assert run(False, b1=(False, True)) == {"broker2:8080", "broker3:8080"}


GROUP = PolicyView(local_policies={f"t/ns{i}": LocalPolicies(namespace_anti_affinity_group="G") for i in (1, 2, 3)})


def test_anti_affinity_counts_owned_bundles_of_the_group() -> None:
    owners = {"t/ns1/0x00000000_0x80000000": "b1:8080", "t/ns1/0x80000000_0xffffffff": "b1:8080",
              "t/ns2/0x00000000_0xffffffff": "b2:8080", "t/other/0x00000000_0xffffffff": "b3:8080"}
    c = ctx(policies=GROUP, owners=owners)
    assert anti_affinity_bundle_counts("t/ns3/0x00000000_0xffffffff", c) == {"b1:8080": 2, "b2:8080": 1}
    assert anti_affinity_bundle_counts("t/other/0x00000000_0xffffffff", c) is None
    brokers = {b: lookup() for b in ("b1:8080", "b2:8080", "b3:8080")}
    assert set(anti_affinity_group_policy_filter(brokers, "t/ns3/0x00000000_0xffffffff", c)) == {"b3:8080"}
    # Without a broker free of the group: the one owning the fewest.
    two = {b: brokers[b] for b in ("b1:8080", "b2:8080")}
    assert set(anti_affinity_group_policy_filter(two, "t/ns3/0x00000000_0xffffffff", c)) == {"b2:8080"}
    # A namespace without a group keeps everyone.
    assert anti_affinity_group_policy_filter(brokers, "t/other/0x00000000_0xffffffff", c) == brokers


def test_anti_affinity_spreads_over_failure_domains_first() -> None:
    domains = ClusterPolicies(failure_domains={"b1:8080": "d1", "b2:8080": "d1", "b3:8080": "d2", "b4:8080": "d2"})
    policies = PolicyView(domains, {f"t/ns{i}": LocalPolicies(namespace_anti_affinity_group="G") for i in (1, 2)})
    owners = {"t/ns1/0x00000000_0xffffffff": "b1:8080"}
    conf = CONF.with_overrides({"failureDomainsEnabled": True}, source="t")
    brokers = {f"b{i}:8080": lookup() for i in range(1, 5)}
    result = anti_affinity_group_policy_filter(brokers, "t/ns2/0x00000000_0xffffffff",
                                               ctx(conf, policies=policies, owners=owners))
    assert set(result) == {"b3:8080", "b4:8080"}  # domain d1 already holds one
    flat = anti_affinity_group_policy_filter(brokers, "t/ns2/0x00000000_0xffffffff",
                                             ctx(policies=policies, owners=owners))
    assert set(flat) == {"b2:8080", "b3:8080", "b4:8080"}


def test_default_pipeline_runs_every_filter_in_pulsars_order() -> None:
    assert DEFAULT_PIPELINE == (broker_load_manager_class_filter, broker_max_topic_count_filter,
                                broker_version_filter, anti_affinity_group_policy_filter,
                                broker_isolation_policies_filter)
    conf = CONF.with_overrides({"loadManagerClassName": EXTENSIBLE}, source="t")
    brokers = {"a:8080": lookup("3.1.0"), "b:8080": lookup("3.0.0"), "c:8080": lookup("3.1.0", lm=MODULAR),
               "d:8080": lookup("3.1.0"), "e:8080": lookup("3.1.0", persistent=False)}
    store = {"d:8080": BrokerLoadData(topics=conf.load_balancer_broker_max_topics)}
    result = apply_filters(DEFAULT_PIPELINE, brokers, BUNDLE, ctx(conf, broker_load_data=store))
    # c: another load manager; d: too many topics; b: older than the newest left; e: no persistent topics.
    assert set(result) == {"a:8080"}
