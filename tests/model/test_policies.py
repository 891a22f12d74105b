"""Policy Structs keep Pulsar's JSON; PolicyView answers the placement code's questions."""

from __future__ import annotations

import msgspec
import pytest

from emulator.model.bundles import NamespaceBundles
from emulator.model.policies import (
    AutoFailoverPolicyData,
    BundlesData,
    ClusterPolicies,
    LocalPolicies,
    NamespaceIsolationPolicy,
    PolicyView,
    bundles_data_from,
)

PULSAR_ISOLATION_JSON = b"""{
  "namespaces": ["tenant/ns.*"],
  "primary": ["broker-[12]\\\\.example"],
  "secondary": ["broker-3\\\\.example"],
  "auto_failover_policy": {"policy_type": "min_available",
                           "parameters": {"min_limit": "2", "usage_threshold": "80"}}
}"""


def test_isolation_policy_decodes_pulsar_json() -> None:
    policy = msgspec.json.decode(PULSAR_ISOLATION_JSON, type=NamespaceIsolationPolicy)
    assert policy.matches_namespace("tenant/ns1")
    assert not policy.matches_namespace("other/tenant/ns1")  # full match, not search
    assert policy.is_primary_broker("broker-1.example")
    assert not policy.is_primary_broker("broker-1xexample")  # the dot is escaped
    assert policy.is_secondary_broker("broker-3.example")
    assert policy.auto_failover_policy.min_limit == 2
    assert policy.should_failover(1) and not policy.should_failover(2)


def test_isolation_policy_rejects_bad_regex_and_policy_type() -> None:
    with pytest.raises(ValueError, match="primary"):
        NamespaceIsolationPolicy(namespaces=["a/b"], primary=["broker-(1"])
    with pytest.raises(ValueError, match="policy_type"):
        AutoFailoverPolicyData(policy_type="max_available", parameters={"min_limit": "1"})
    with pytest.raises(ValueError, match="min_limit"):
        AutoFailoverPolicyData(parameters={"usage_threshold": "80"})
    with pytest.raises(ValueError, match="min_limit"):
        AutoFailoverPolicyData(parameters={"min_limit": "two"})


def test_local_policies_json_is_camel_case() -> None:
    lp = LocalPolicies(
        bundles=BundlesData(boundaries=["0x00000000", "0x80000000", "0xffffffff"], num_bundles=2),
        namespace_anti_affinity_group="group-a",
    )
    raw = msgspec.json.decode(msgspec.json.encode(lp))
    assert raw == {
        "bundles": {"boundaries": ["0x00000000", "0x80000000", "0xffffffff"], "numBundles": 2},
        "namespaceAntiAffinityGroup": "group-a",
    }
    assert msgspec.json.decode(msgspec.json.encode(lp), type=LocalPolicies) == lp


def test_bundles_data_must_have_num_bundles_plus_one_boundaries() -> None:
    with pytest.raises(ValueError, match="numBundles"):
        BundlesData(boundaries=["0x00000000", "0xffffffff"], num_bundles=2)
    with pytest.raises(ValueError, match="0xzz"):
        BundlesData(boundaries=["0x00000000", "0xzz"], num_bundles=1)


def test_local_policies_round_trip_namespace_bundles() -> None:
    nb = NamespaceBundles.default("public/default", 4)
    data = bundles_data_from(nb)
    assert data.boundaries == ["0x00000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"]
    assert data.num_bundles == 4
    lp = LocalPolicies.from_namespace_bundles(nb, "g")
    assert lp.namespace_anti_affinity_group == "g"
    back = lp.to_namespace_bundles("public/default")
    assert back.names == nb.names
    # No stored layout: one bundle covering the whole range.
    assert LocalPolicies().to_namespace_bundles("public/default").names == ["public/default/0x00000000_0xffffffff"]


def test_policy_view_answers_without_policies() -> None:
    view = PolicyView()
    assert view.isolation_policy("a/b") is None
    assert view.is_shared_broker("any-host")
    assert view.anti_affinity_group("a/b") is None
    assert view.failure_domain("b:1") is None


def test_policy_view_first_matching_isolation_policy_wins() -> None:
    first = NamespaceIsolationPolicy(namespaces=["a/.*"], primary=["h1"])
    second = NamespaceIsolationPolicy(namespaces=["a/b"], primary=["h2"])
    view = PolicyView(ClusterPolicies(isolation={"first": first, "second": second}, failure_domains={"h1:1": "d1"}))
    assert view.isolation_policy("a/b") is first
    assert not view.is_shared_broker("h2")  # a primary of *any* policy is not shared
    assert view.is_shared_broker("h3")
    assert view.failure_domain("h1:1") == "d1"


def test_policy_view_is_a_snapshot() -> None:
    local = {"a/b": LocalPolicies(namespace_anti_affinity_group="g")}
    view = PolicyView(local_policies=local)
    local["a/b"] = LocalPolicies(namespace_anti_affinity_group="other")
    assert view.anti_affinity_group("a/b") == "g"
    with pytest.raises(TypeError, match="ClusterPolicies"):
        PolicyView(cluster={"isolation": {}})  # type: ignore[arg-type]
