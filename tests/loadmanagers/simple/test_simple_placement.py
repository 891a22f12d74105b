"""SimpleLoadManagerImpl's broker choice: getLeastLoaded with each placement strategy.

Ported from Pulsar's `SimpleLoadManagerImplTest` (testBasicBrokerSelection, testPrimary,
testEvenBundleDistribution) and `LoadBalancerTest` (testTopicAssignmentWithExistingBundles,
testUpdateLoadReportAndCheckUpdatedRanking), plus the rules of `findBrokerForPlacement`.
"""

from __future__ import annotations

import random
from collections import Counter

from emulator.model.config import ServiceConfig
from emulator.model.loaddata import NamespaceBundleStats, ResourceUsage
from emulator.model.policies import AutoFailoverPolicyData, ClusterPolicies, NamespaceIsolationPolicy, PolicyView
from emulator.loadmanagers.simple.model.placement import (
    PlacementState,
    final_candidates,
    find_broker_for_placement,
    get_least_loaded_broker,
    weighted_random_selection,
)
from emulator.loadmanagers.simple.model.quota import QuotaStore, RealtimeQuotas, ResourceQuota
from emulator.loadmanagers.simple.model.ranking import ResourceUnitRanking, do_load_ranking
from emulator.loadmanagers.simple.model.report import LoadReport, SystemResourceUsage
from emulator.loadmanagers.simple.model.settings import SimpleSettings

NO_POLICIES = PolicyView()


def _usage(cpu=(10.0, 100.0), memory=(1024.0, 4096.0), bw_in=(250 * 1024, 1024 * 1024),
           bw_out=(550 * 1024, 1024 * 1024)):
    return SystemResourceUsage(cpu=ResourceUsage(*cpu), memory=ResourceUsage(*memory),
                               bandwidth_in=ResourceUsage(*bw_in), bandwidth_out=ResourceUsage(*bw_out))


def _settings(strategy: str = "leastLoadedServer", **keys) -> SimpleSettings:
    return SimpleSettings.resolve(ServiceConfig().with_overrides({"loadBalancerPlacementStrategy": strategy, **keys},
                                                                 source="test"))


class Manager:
    """One SimpleLoadManagerImpl's state, driven as Pulsar's updateRanking and getLeastLoaded do."""

    def __init__(self, reports, store=None, strategy="leastLoadedServer", policies=NO_POLICIES, seed=1):
        self.reports, self.store, self.policies = reports, store or QuotaStore(), policies
        self.settings = _settings(strategy)
        self.state, self.quotas, self.rng = PlacementState(), RealtimeQuotas(last_update_ms=0), random.Random(seed)

    def rank(self):
        self.state.install(do_load_ranking(self.reports, self.state.rankings, self.quotas, self.store,
                                           self.settings.strategy, self.state.bundle_ranges))

    def lookup(self, bundle, active=None):
        return get_least_loaded_broker(bundle, self.state, self.quotas, self.store, self.reports,
                                       self.reports if active is None else active, self.policies,
                                       self.settings, self.rng)


def test_basic_broker_selection_finds_nothing_when_the_ranked_broker_is_not_registered():
    """SimpleLoadManagerImplTest.testBasicBrokerSelection."""
    reports = {"prod2-broker7.messaging.usw.example.com:8080": LoadReport(system_resource_usage=_usage())}
    manager = Manager(reports)
    manager.rank()
    assert manager.lookup("pulsar/use/primary-ns.10", active={"localhost:8080"}) is None


def test_primary_broker_of_an_isolation_policy_is_found():
    """SimpleLoadManagerImplTest.testPrimary: primary `localhost*`, min_available 1."""
    policy = NamespaceIsolationPolicy(
        namespaces=["pulsar/use/primary-ns.*"], primary=["localhost*"],
        secondary=["prod2-broker([78]).messaging.usw.example.co.*"],
        auto_failover_policy=AutoFailoverPolicyData(parameters={"min_limit": "1", "usage_threshold": "100"}))
    policies = PolicyView(ClusterPolicies(isolation={"primaryBrokerPolicy": policy}))
    manager = Manager({"localhost:8080": LoadReport(system_resource_usage=SystemResourceUsage())}, policies=policies)
    manager.rank()
    assert manager.lookup("pulsar/use/primary-ns.10") == "localhost:8080"
    other = Manager({"localhost:8080": LoadReport(), "elsewhere:8080": LoadReport()}, policies=policies)
    other.rank()
    assert {other.lookup(f"pulsar/use/primary-ns.{n}/0x00000000_0xffffffff") for n in range(10)} == {"localhost:8080"}


def test_even_bundle_distribution_within_a_namespace():
    """SimpleLoadManagerImplTest.testEvenBundleDistribution: 16 bundles of one namespace, 2 brokers,
    leastLoadedServer: after every even number of lookups both brokers have the same count."""
    reports = {"primary:8080": LoadReport(system_resource_usage=_usage()),
               "secondary:8080": LoadReport(system_resource_usage=_usage(cpu=(50.0, 100.0)))}
    manager = Manager(reports)
    manager.rank()
    counts: Counter[str] = Counter()
    step = 0x100000000 // 16
    for i in range(16):
        bundle = f"pulsar/use/test/0x{i * step:08x}_0x{min((i + 1) * step, 0xffffffff):08x}"
        counts[manager.lookup(bundle)] += 1
        if sum(counts.values()) % 2 == 0:
            assert counts["primary:8080"] == counts["secondary:8080"]


def test_topic_assignment_with_existing_bundles_follows_capacity():
    """LoadBalancerTest.testTopicAssignmentWithExistingBundles: default quota 20/60/20000/60000/87 MB,
    memory limits 2048 x (i+1), (i+1) x 5 bundles already loaded; 250 new namespaces land within 10 %
    of 17, 34, 51, 68, 85."""
    default = ResourceQuota(msg_rate_in=20, msg_rate_out=60, bandwidth_in=20000, bandwidth_out=60000, memory=87)
    reports = {}
    for i in range(5):
        usage = SystemResourceUsage(bandwidth_in=ResourceUsage(0, 1024000), bandwidth_out=ResourceUsage(0, 1024000),
                                    memory=ResourceUsage(0, 2048 * (i + 1)), cpu=ResourceUsage(60, 400))
        stats = {f"pulsar/use/primary-ns-{i}-{j}/0x00000000_0xffffffff": NamespaceBundleStats()
                 for j in range((i + 1) * 5)}
        reports[f"broker-{i}:8080"] = LoadReport(name=f"broker-{i}:8080", system_resource_usage=usage,
                                                 bundle_stats=stats)
    manager = Manager(reports, store=QuotaStore(default=default))
    manager.rank()
    owners = Counter(manager.lookup(f"pulsar/use/primary-ns-{n}/0x00000000_0xffffffff") for n in range(250))
    for i, expected in enumerate((17, 34, 51, 68, 85)):
        assert abs(owners[f"broker-{i}:8080"] - expected) * 100.0 / expected < 10.0, owners


def test_equal_brokers_share_new_namespaces_evenly():
    """LoadBalancerTest.testUpdateLoadReportAndCheckUpdatedRanking: 5 equal brokers, 200 namespaces,
    each broker within 10 % of 40."""
    usage = SystemResourceUsage(bandwidth_in=ResourceUsage(256, 1024000), bandwidth_out=ResourceUsage(250, 1024000),
                                memory=ResourceUsage(1024, 8192), cpu=ResourceUsage(5, 400))
    manager = Manager({f"broker-{i}:8080": LoadReport(system_resource_usage=usage) for i in range(5)})
    manager.rank()
    owners = Counter(manager.lookup(f"pulsar/use/primary-ns-{n}/0x00000000_0xffffffff") for n in range(200))
    assert all(36 <= owners[f"broker-{i}:8080"] <= 44 for i in range(5)), owners


def _ranking(load: float, bundles: int = 1) -> ResourceUnitRanking:
    return ResourceUnitRanking(system_resource_usage=SystemResourceUsage(cpu=ResourceUsage(load, 100.0)),
                               loaded_bundles={f"t/x/0x0000000{n}_0x0000000{n + 1}" for n in range(bundles)})


def _place(rankings, settings=None, cursor=0, bundle="t/ns/0x00000000_0xffffffff"):
    state = PlacementState()
    state.rankings, state.rotation_cursor = rankings, cursor
    candidates = sorted((0, b) for b in rankings)
    chosen = find_broker_for_placement(candidates, bundle, state, RealtimeQuotas(), QuotaStore(),
                                       settings or _settings())
    return chosen, state


def test_least_loaded_server_fills_a_broker_to_the_underload_threshold_before_an_idle_one():
    assert _place({"a": _ranking(40), "b": _ranking(30), "idle": _ranking(0, 0)})[0] == "b"
    assert _place({"a": _ranking(60), "b": _ranking(70), "idle": _ranking(0, 0)})[0] == "idle"
    assert _place({"a": _ranking(0, 0), "b": _ranking(0, 0)})[0] == "a"


def test_overloaded_brokers_give_way_to_the_most_available_capacity_and_full_ones_rotate():
    big = ResourceUnitRanking(system_resource_usage=SystemResourceUsage(
        cpu=ResourceUsage(90.0, 1000.0), memory=ResourceUsage(0, 10**6),
        bandwidth_in=ResourceUsage(0, 10**7), bandwidth_out=ResourceUsage(0, 10**7)), loaded_bundles={"t/x/0x0_0x1"})
    small = ResourceUnitRanking(system_resource_usage=SystemResourceUsage(
        cpu=ResourceUsage(8.6, 10.0), memory=ResourceUsage(0, 10**6),
        bandwidth_in=ResourceUsage(0, 10**7), bandwidth_out=ResourceUsage(0, 10**7)), loaded_bundles={"t/x/0x0_0x1"})
    # both above 85 %: the least loaded is "small" (86 % < 90 %) but "big" has more room
    assert _place({"big": big, "small": small})[0] == "big"
    full = {"a": _ranking(100), "b": _ranking(100), "c": _ranking(100)}
    picks = [_place(full, cursor=c)[0] for c in range(4)]
    assert picks == ["a", "b", "c", "a"]  # brokerRotationCursor % candidates


def test_the_choice_is_preallocated_once_and_a_loaded_candidate_forgets_the_bundle():
    bundle = "t/ns/0x00000000_0xffffffff"
    chosen, state = _place({"a": _ranking(10), "b": _ranking(20)}, bundle=bundle)
    assert chosen == "a" and state.rotation_cursor == 1
    assert state.rankings["a"].pre_allocated_bundles == {bundle}
    assert state.bundle_ranges.count("a", "t/ns") == 1
    loaded = _ranking(10)
    loaded.loaded_bundles.add(bundle)
    _, state = _place({"a": loaded}, bundle=bundle)
    assert bundle not in state.rankings["a"].loaded_bundles and bundle in state.rankings["a"].pre_allocated_bundles


def test_a_preallocated_bundle_goes_back_to_its_broker_without_a_new_choice():
    manager = Manager({"a:8080": LoadReport(system_resource_usage=_usage()),
                       "b:8080": LoadReport(system_resource_usage=_usage(cpu=(90.0, 100.0)))})
    manager.rank()
    manager.state.rankings["b:8080"].add_pre_allocated_service_unit("t/ns/0x00000000_0xffffffff", ResourceQuota())
    assert manager.lookup("t/ns/0x00000000_0xffffffff") == "b:8080"
    assert manager.state.rotation_cursor == 0


def test_least_msg_per_second_compares_message_rates_only():
    quiet = _ranking(90)
    busy = _ranking(10)
    busy.allocated_quota = ResourceQuota(msg_rate_in=1000.0)
    busy.estimate_load_percentage()
    assert _place({"busy": busy, "quiet": quiet}, settings=_settings("leastMsgPerSecond"))[0] == "quiet"


def test_weighted_random_selection_draws_in_proportion_to_rank():
    rng = random.Random(7)
    picks = Counter(weighted_random_selection([(10, "a"), (30, "b")], rng) for _ in range(4000))
    assert 900 < picks["a"] < 1100 and 2900 < picks["b"] < 3100
    assert weighted_random_selection([(0, "a"), (0, "b")], random.Random(1)) in {"a", "b"}
    assert weighted_random_selection([], rng) is None
    same = [weighted_random_selection([(5, "a"), (5, "b")], random.Random(3)) for _ in range(2)]
    assert same[0] == same[1]  # a seed decides


def test_weighted_random_selection_end_to_end_uses_capacity_ranks():
    idle_nic = {"memory": (0.0, 10**6), "bw_in": (0.0, 1024 * 1024), "bw_out": (0.0, 1024 * 1024)}
    manager = Manager({"big:8080": LoadReport(system_resource_usage=_usage(cpu=(0.0, 400.0), **idle_nic)),
                       "small:8080": LoadReport(system_resource_usage=_usage(cpu=(0.0, 100.0), **idle_nic))},
                      strategy="weightedRandomSelection")
    manager.rank()
    assert manager.state.sorted_rankings == {100: {"big:8080"}, 25: {"small:8080"}}
    owners = Counter(manager.lookup(f"t/ns-{n}/0x00000000_0xffffffff") for n in range(1000))
    assert 720 < owners["big:8080"] < 880  # 100 : 25
    assert manager.state.rotation_cursor == 0 and not manager.state.rankings["big:8080"].pre_allocated_bundles


def test_final_candidates_drop_brokers_without_persistent_topics_and_the_busiest_in_the_namespace():
    reports = {"a:8080": LoadReport(), "b:8080": LoadReport(persistent_topics_enabled=False), "c:8080": LoadReport()}
    state = PlacementState()
    state.bundle_ranges.add("c:8080", "t/ns/0x00000000_0x80000000")
    got = final_candidates("t/ns/0x80000000_0xffffffff", {0: ["a:8080", "b:8080", "c:8080"]}, reports,
                           NO_POLICIES, state.bundle_ranges)
    assert got == [(0, "a:8080")]
    # a namespace name (shedding's check) counts nothing: every allowed broker stays
    assert final_candidates("t/ns", {3: ["c:8080"], 1: ["a:8080"]}, reports, NO_POLICIES,
                            state.bundle_ranges) == [(1, "a:8080"), (3, "c:8080")]
