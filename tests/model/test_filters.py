"""Candidate filters (LoadManagerShared §4) and the BrokerFilter pipeline (§3 step 6)."""

from __future__ import annotations

import pytest

from emulator.model.config import ServiceConfig
from emulator.model.filters import (
    BrokerFilterException,
    BundleRangeCache,
    anti_affinity_namespace_counts,
    apply_namespace_policies,
    broker_load_manager_class_filter,
    broker_version_filter,
    filter_anti_affinity_group_owned_brokers,
    filter_brokers_with_large_topic_count,
    parse_broker_host,
    remove_most_servicing_brokers_for_namespace,
    should_anti_affinity_namespace_unload,
    should_namespace_policies_unload,
)
from emulator.model.loaddata import (
    BrokerData,
    BundleData,
    LoadData,
    LocalBrokerData,
    TimeAverageMessageData,
)
from emulator.model.policies import (
    AutoFailoverPolicyData,
    ClusterPolicies,
    LocalPolicies,
    NamespaceIsolationPolicy,
    PolicyView,
)

NS = "public/default"
BUNDLE = "public/default/0x00000000_0x40000000"


def load_data(**locals_: LocalBrokerData) -> LoadData:
    """Keys use '_' for ':' so brokers can be keyword arguments: b1_8080 → 'b1:8080'."""
    return LoadData(
        broker_data={k.replace("_", ":"): BrokerData(local_data=v) for k, v in locals_.items()}
    )


def window(rate: float) -> TimeAverageMessageData:
    return TimeAverageMessageData(max_samples=10, num_samples=1, msg_rate_in=rate, msg_rate_out=rate)


# --------------------------------------------------------------------------- BundleRangeCache


def test_bundle_range_cache_reload_replaces_and_add_accumulates() -> None:
    cache = BundleRangeCache()
    cache.reload_broker("b1:8080", ["a/x/0x00000000_0x80000000", "a/x/0x80000000_0xffffffff",
                                    "a/y/0x00000000_0xffffffff"])
    assert cache.count("b1:8080", "a/x") == 2
    assert cache.count("b1:8080", "a/y") == 1
    assert cache.count("b1:8080", "a/z") == 0
    assert cache.count("nobody:1", "a/x") == 0
    cache.add("b1:8080", "a/z/0x00000000_0xffffffff")
    cache.add("b1:8080", "a/z/0x00000000_0xffffffff")  # a set: idempotent
    assert cache.count("b1:8080", "a/z") == 1
    assert cache.namespaces("b1:8080") == ["a/x", "a/y", "a/z"]
    cache.reload_broker("b1:8080", ["a/y/0x00000000_0xffffffff"])
    assert cache.namespaces("b1:8080") == ["a/y"]
    assert cache.count("b1:8080", "a/x") == 0
    cache.remove_broker("b1:8080")
    assert cache.brokers() == []


def test_parse_broker_host_uses_last_colon() -> None:
    assert parse_broker_host("broker-1.example:8080") == "broker-1.example"
    assert parse_broker_host("[::1]:8080") == "[::1]"
    assert parse_broker_host("no-port") is None


# --------------------------------------------------------------------------- §4.1


def test_no_isolation_keeps_reporting_brokers_that_load_persistent_topics() -> None:
    ld = load_data(
        b1_8080=LocalBrokerData(),
        b2_8080=LocalBrokerData(persistent_topics_enabled=False),
        b3_8080=LocalBrokerData(non_persistent_topics_enabled=False),
    )
    available = ["b4:8080", "b3:8080", "b2:8080", "b1:8080", "noport"]
    # b4 has no report yet → the topic-type predicate answers false; "noport" cannot be parsed.
    assert apply_namespace_policies(BUNDLE, available, ld, PolicyView()) == ["b1:8080", "b3:8080"]
    assert apply_namespace_policies(BUNDLE, available, ld, PolicyView(), non_persistent=True) == [
        "b1:8080",
        "b2:8080",
    ]


def iso_view(min_limit: int = 1, secondary: list[str] | None = None) -> PolicyView:
    policy = NamespaceIsolationPolicy(
        namespaces=["public/iso.*"],
        primary=["b1", "b2"],
        secondary=secondary if secondary is not None else ["b3"],
        auto_failover_policy=AutoFailoverPolicyData(parameters={"min_limit": str(min_limit)}),
    )
    return PolicyView(ClusterPolicies(isolation={"p": policy}))


def test_isolated_namespace_uses_primaries_and_fails_over_below_min_limit() -> None:
    ld = load_data(b1_8080=LocalBrokerData(), b2_8080=LocalBrokerData(), b3_8080=LocalBrokerData(),
                   b4_8080=LocalBrokerData())
    all_brokers = ["b1:8080", "b2:8080", "b3:8080", "b4:8080"]
    iso_bundle = "public/isolated/0x00000000_0xffffffff"
    assert apply_namespace_policies(iso_bundle, all_brokers, ld, iso_view(min_limit=1)) == ["b1:8080", "b2:8080"]
    # Only one primary alive and min_limit 2 → secondaries join; the shared b4 never does.
    assert apply_namespace_policies(iso_bundle, ["b1:8080", "b3:8080", "b4:8080"], ld, iso_view(min_limit=2)) == [
        "b1:8080",
        "b3:8080",
    ]
    # No primary at all with min_limit 1 → failover.
    assert apply_namespace_policies(iso_bundle, ["b3:8080", "b4:8080"], ld, iso_view(min_limit=1)) == ["b3:8080"]


def test_isolation_branch_ignores_topic_predicate_and_missing_reports() -> None:
    ld = load_data(b1_8080=LocalBrokerData(persistent_topics_enabled=False))
    iso_bundle = "public/isolated/0x00000000_0xffffffff"
    assert apply_namespace_policies(iso_bundle, ["b1:8080", "b2:8080"], ld, iso_view()) == ["b1:8080", "b2:8080"]


def test_primary_brokers_of_any_policy_are_not_shared() -> None:
    ld = load_data(b1_8080=LocalBrokerData(), b3_8080=LocalBrokerData(), b4_8080=LocalBrokerData())
    # b1 is a primary of the isolation policy → not a candidate for other namespaces; b3 (secondary) is.
    assert apply_namespace_policies(BUNDLE, ["b1:8080", "b3:8080", "b4:8080"], ld, iso_view()) == [
        "b3:8080",
        "b4:8080",
    ]


def test_regexes_are_full_matches_on_the_host() -> None:
    policy = NamespaceIsolationPolicy(namespaces=["public/iso"], primary=["b1"], secondary=[])
    view = PolicyView(ClusterPolicies(isolation={"p": policy}))
    ld = load_data(b1_8080=LocalBrokerData(), b10_8080=LocalBrokerData())
    # "b1" matches host "b1" but not "b10"; "public/iso" does not match "public/isolated".
    assert apply_namespace_policies("public/iso/0x00000000_0xffffffff", ["b1:8080", "b10:8080"], ld, view) \
        == ["b1:8080"]
    assert apply_namespace_policies("public/isolated/0x00000000_0xffffffff", ["b1:8080", "b10:8080"], ld, view) == [
        "b10:8080"
    ]



def test_a_policy_may_name_brokers_as_host_port_as_newer_pulsar_matches_them() -> None:
    """NamespaceIsolationPolicyImpl.matchesBrokerRegex (master): `host:port` is matched whole, then by
    its host. A policy written from `pulsar-admin brokers list` (`b1:8080`) isolates b1, and only on
    that port; the host regexes answer as before."""
    policy = NamespaceIsolationPolicy(namespaces=["public/iso"], primary=["b1:8080"], secondary=["b2"])
    view = PolicyView(ClusterPolicies(isolation={"p": policy}))
    ld = load_data(b1_8080=LocalBrokerData(), b1_8081=LocalBrokerData(), b2_8080=LocalBrokerData(),
                   b3_8080=LocalBrokerData())
    brokers = ["b1:8080", "b1:8081", "b2:8080", "b3:8080"]
    assert apply_namespace_policies("public/iso/0x00000000_0xffffffff", brokers, ld, view) == ["b1:8080"]
    # b1:8080 is a primary of a policy, so not shared; b1:8081 is
    assert apply_namespace_policies(BUNDLE, brokers, ld, view) == ["b1:8081", "b2:8080", "b3:8080"]
    assert policy.is_primary_broker("b1:8080")
    assert not policy.is_primary_broker("b1") and not policy.is_primary_broker("b1:80800")
    assert policy.is_secondary_broker("b2:8080") and policy.is_secondary_broker("b2")
    assert not policy.is_secondary_broker("b2:http")   # no numeric port: matched whole only


# --------------------------------------------------------------------------- §4.2


def test_max_topics_counts_preallocated_topics_and_keeps_everyone_if_all_exceed() -> None:
    pre = BundleData(short_term_data=window(1), long_term_data=window(1), topics=5)
    ld = LoadData(
        broker_data={
            "b1:8080": BrokerData(local_data=LocalBrokerData(num_topics=10)),
            "b2:8080": BrokerData(local_data=LocalBrokerData(num_topics=6),
                                  preallocated_bundle_data={"x/y/0x0_0x1": pre}),
            "b3:8080": BrokerData(local_data=LocalBrokerData(num_topics=11)),
        }
    )
    cands = ["b1:8080", "b2:8080", "b3:8080", "b4:8080"]  # b4 has no data → counts as 0 topics
    assert filter_brokers_with_large_topic_count(cands, ld, 10) == ["b1:8080", "b4:8080"]
    assert filter_brokers_with_large_topic_count(["b2:8080", "b3:8080"], ld, 10) == ["b2:8080", "b3:8080"]


# --------------------------------------------------------------------------- §4.3


def anti_affinity_setup(
    counts: dict[str, int], failure_domains: dict[str, str] | None = None
) -> tuple[BundleRangeCache, PolicyView]:
    """Each broker holds `n` distinct namespaces of group "G"; plus one namespace outside the group."""
    local = {"t/target": LocalPolicies(namespace_anti_affinity_group="G")}
    cache = BundleRangeCache()
    for broker, n in counts.items():
        bundles = []
        for i in range(n):
            ns = f"t/{broker.split(':')[0]}-ns{i}"
            local[ns] = LocalPolicies(namespace_anti_affinity_group="g" if i % 2 else "G")  # case-insensitive
            bundles.append(f"{ns}/0x00000000_0xffffffff")
        bundles.append("t/other/0x00000000_0xffffffff")
        cache.reload_broker(broker, bundles)
    cluster = ClusterPolicies(failure_domains=failure_domains or {})
    return cache, PolicyView(cluster, local_policies=local)


def test_anti_affinity_javadoc_example_with_failure_domains() -> None:
    counts = {"b1:1": 2, "b2:1": 1, "b3:1": 2, "b4:1": 1, "b5:1": 2, "b6:1": 2}
    domains = {"b1:1": "d1", "b2:1": "d1", "b3:1": "d2", "b4:1": "d2", "b5:1": "d3", "b6:1": "d3"}
    cache, view = anti_affinity_setup(counts, domains)
    assert anti_affinity_namespace_counts("t/target", cache, view) == counts
    conf = ServiceConfig(failure_domains_enabled=True)
    result = filter_anti_affinity_group_owned_brokers("t/target/0x00000000_0xffffffff", list(counts), cache, view, conf)
    assert result == ["b2:1", "b4:1"]
    # Domain step alone: d3 (4) goes, d1 and d2 (3 each) stay.
    assert filter_anti_affinity_group_owned_brokers(
        "t/target/0x0_0x1", ["b1:1", "b3:1", "b5:1", "b6:1"], cache, view, conf
    ) == ["b1:1", "b3:1"]
    # Without the domain switch only the broker step runs.
    conf_off = ServiceConfig(failure_domains_enabled=False)
    assert filter_anti_affinity_group_owned_brokers(
        "t/target/0x0_0x1", ["b1:1", "b3:1", "b5:1", "b6:1"], cache, view, conf_off
    ) == ["b1:1", "b3:1", "b5:1", "b6:1"]


def test_anti_affinity_domain_step_picks_least_loaded_domain() -> None:
    counts = {"b1:1": 1, "b2:1": 1, "b3:1": 3}
    cache, view = anti_affinity_setup(counts, {"b1:1": "d1", "b2:1": "d1"})
    conf = ServiceConfig(failure_domains_enabled=True)
    # d1 = 2, "default" (b3, unmapped) = 3 → d1 wins, then b1/b2 tie at 1.
    assert filter_anti_affinity_group_owned_brokers("t/target/0x0_0x1", list(counts), cache, view, conf) == [
        "b1:1",
        "b2:1",
    ]


def test_anti_affinity_broker_without_group_namespaces_wins() -> None:
    cache, view = anti_affinity_setup({"b1:1": 1, "b2:1": 2})
    conf = ServiceConfig()
    candidates = ["b1:1", "b2:1", "b3:1"]
    assert filter_anti_affinity_group_owned_brokers("t/target/0x0_0x1", candidates, cache, view, conf) == [
        "b3:1"
    ]


def test_anti_affinity_no_group_means_no_filtering() -> None:
    cache, view = anti_affinity_setup({"b1:1": 1})
    conf = ServiceConfig()
    assert anti_affinity_namespace_counts("t/nogroup", cache, view) is None
    assert filter_anti_affinity_group_owned_brokers("t/nogroup/0x0_0x1", ["b2:1", "b1:1"], cache, view, conf) == [
        "b1:1",
        "b2:1",
    ]


def test_blank_anti_affinity_group_is_ignored() -> None:
    view = PolicyView(local_policies={"t/a": LocalPolicies(namespace_anti_affinity_group="  ")})
    assert view.anti_affinity_group("t/a") is None


# --------------------------------------------------------------------------- §4.4


def test_even_distribution_keeps_brokers_with_fewest_bundles_of_the_namespace() -> None:
    cache = BundleRangeCache()
    cache.reload_broker("b1:1", [f"{NS}/0x00000000_0x40000000", f"{NS}/0x40000000_0x80000000"])
    cache.reload_broker("b2:1", [f"{NS}/0x80000000_0xc0000000", "other/ns/0x00000000_0xffffffff"])
    cache.reload_broker("b3:1", [f"{NS}/0xc0000000_0xffffffff"])
    assert remove_most_servicing_brokers_for_namespace(BUNDLE, ["b1:1", "b2:1", "b3:1"], cache) == ["b2:1", "b3:1"]
    assert remove_most_servicing_brokers_for_namespace(BUNDLE, ["b1:1", "b2:1", "b4:1"], cache) == ["b4:1"]
    assert remove_most_servicing_brokers_for_namespace(BUNDLE, [], cache) == []


# --------------------------------------------------------------------------- §3 step 6


def test_load_manager_class_filter_drops_other_classes_keeps_unreported() -> None:
    ld = load_data(b1_1=LocalBrokerData(), b2_1=LocalBrokerData(load_manager_class_name="x.ExtensibleLoadManagerImpl"))
    assert broker_load_manager_class_filter(["b1:1", "b2:1", "b3:1"], ld, ServiceConfig()) == ["b1:1", "b3:1"]


def test_version_filter_only_with_prefer_later_versions() -> None:
    ld = load_data(b1_1=LocalBrokerData(broker_version_string="3.0.0"),
                   b2_1=LocalBrokerData(broker_version_string="3.1.0"))
    assert broker_version_filter(["b1:1", "b2:1"], ld, ServiceConfig()) == ["b1:1", "b2:1"]
    assert broker_version_filter(["b1:1", "b2:1"], ld, ServiceConfig(prefer_later_versions=True)) == ["b2:1"]


@pytest.mark.parametrize(
    ("versions", "kept"),
    [
        ({"b1:1": "4.0.0-SNAPSHOT", "b2:1": "4.0.0"}, ["b2:1"]),  # release > pre-release
        ({"b1:1": "4.0.0-rc.2", "b2:1": "4.0.0-rc.10"}, ["b2:1"]),  # numeric identifiers compare as numbers
        ({"b1:1": "4.0.0+build.1", "b2:1": "4.0.0"}, ["b1:1", "b2:1"]),  # equality ignores build metadata
        ({"b1:1": "10.0.0", "b2:1": "9.9.9"}, ["b1:1"]),
    ],
)
def test_version_filter_semver_order(versions: dict[str, str], kept: list[str]) -> None:
    ld = LoadData(broker_data={b: BrokerData(local_data=LocalBrokerData(broker_version_string=v))
                               for b, v in versions.items()})
    assert broker_version_filter(list(versions), ld, ServiceConfig(prefer_later_versions=True)) == kept


@pytest.mark.parametrize("bad", ["", "4.0", "latest"])
def test_version_filter_raises_on_missing_or_bad_versions(bad: str) -> None:
    ld = load_data(b1_1=LocalBrokerData(broker_version_string="3.0.0"), b2_1=LocalBrokerData(broker_version_string=bad))
    with pytest.raises(BrokerFilterException):
        broker_version_filter(["b1:1", "b2:1"], ld, ServiceConfig(prefer_later_versions=True))


def test_version_filter_raises_on_broker_without_data_and_on_empty_set() -> None:
    ld = load_data(b1_1=LocalBrokerData(broker_version_string="3.0.0"))
    conf = ServiceConfig(prefer_later_versions=True)
    with pytest.raises(BrokerFilterException, match="b9:1"):
        broker_version_filter(["b1:1", "b9:1"], ld, conf)
    with pytest.raises(BrokerFilterException):
        broker_version_filter([], ld, conf)


# --------------------------------------------------------------------------- §4.5


def test_should_namespace_policies_unload_needs_another_allowed_broker() -> None:
    ld = load_data(b1_1=LocalBrokerData(), b2_1=LocalBrokerData(persistent_topics_enabled=False))
    assert not should_namespace_policies_unload(BUNDLE, "b1:1", ["b1:1", "b2:1"], ld, PolicyView())
    ld2 = load_data(b1_1=LocalBrokerData(), b2_1=LocalBrokerData())
    assert should_namespace_policies_unload(BUNDLE, "b1:1", ["b1:1", "b2:1"], ld2, PolicyView())


def test_should_anti_affinity_namespace_unload() -> None:
    ld = load_data(b1_1=LocalBrokerData(), b2_1=LocalBrokerData(), b3_1=LocalBrokerData())
    avail = ["b1:1", "b2:1", "b3:1"]
    target = "t/target/0x00000000_0xffffffff"
    # No group → always.
    assert should_anti_affinity_namespace_unload("t/nogroup/0x0_0x1", "b1:1", avail, ld, PolicyView(),
                                                 BundleRangeCache())
    # Group but nobody holds a group namespace → M empty → true.
    cache, view = anti_affinity_setup({})
    assert should_anti_affinity_namespace_unload(target, "b1:1", avail, ld, view, cache)
    # b3 holds none → least 0 → true.
    cache, view = anti_affinity_setup({"b1:1": 1, "b2:1": 1})
    assert should_anti_affinity_namespace_unload(target, "b1:1", avail, ld, view, cache)
    # All hold one each: the bundle would land on an equal broker → false.
    cache, view = anti_affinity_setup({"b1:1": 1, "b2:1": 1, "b3:1": 1})
    assert not should_anti_affinity_namespace_unload(target, "b1:1", avail, ld, view, cache)
    # Current holds more than the least → true.
    cache, view = anti_affinity_setup({"b1:1": 2, "b2:1": 1, "b3:1": 1})
    assert should_anti_affinity_namespace_unload(target, "b1:1", avail, ld, view, cache)
    # Pulsar quirk: the current broker alone holds the least, yet not all candidates tie → true.
    cache, view = anti_affinity_setup({"b1:1": 1, "b2:1": 2, "b3:1": 2})
    assert should_anti_affinity_namespace_unload(target, "b1:1", avail, ld, view, cache)


def test_the_filters_sort_their_input_as_sorted_set_does_without_sorting_a_sorted_list() -> None:
    """Each filter takes its candidates in any order, with repeats, as any iterable; a strictly
    increasing list (the last filter's output) is taken as it is, and copied."""
    import random

    from emulator.model.filters import _sorted_unique

    rng = random.Random(3)
    for _ in range(200):
        items = [f"b{rng.randint(0, 30)}:8080" for _ in range(rng.randint(0, 12))]
        for given in (items, sorted(items), sorted(set(items)), set(items), iter(items), tuple(items)):
            got = _sorted_unique(given)
            assert got == sorted(set(items)) and got is not given
