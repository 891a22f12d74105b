"""SimpleLoadManagerImpl's doLoadShedding, and the bundle order it sheds in.

Ported from Pulsar's `SimpleLoadManagerImplTest.testDoLoadShedding` and `testNamespaceBundleStats`,
plus the rules of `doLoadShedding` / `unloadNamespacesFromOverLoadedBrokers`.
"""

from __future__ import annotations

import random

from emulator.model.config import ServiceConfig
from emulator.model.filters import BundleRangeCache
from emulator.model.loaddata import NamespaceBundleStats, ResourceUsage
from emulator.model.policies import PolicyView
from emulator.model.java_math import tree_map_order
from emulator.model.bundle_order import (
    ResourceType,
    compare_bundle_stats,
    compare_by_bandwidth_in,
    compare_by_bandwidth_out,
    compare_by_cache_size,
    compare_by_msg_rate,
    compare_by_topic_connections,
    sorted_bundle_stats,
)
from emulator.loadmanagers.simple.model.report import LoadReport, SystemResourceUsage
from emulator.loadmanagers.simple.model.settings import SimpleSettings
from emulator.loadmanagers.simple.model.shedding import do_load_shedding

NS1 = "property/cluster/namespace1/0x00000000_0xFFFFFFFF"
NS2 = "property/cluster/namespace2/0x00000000_0xFFFFFFFF"
B1, B2 = "pulsar-broker1.com:8080", "pulsar-broker2.com:8080"


def test_namespace_bundle_stats_comparisons():
    """SimpleLoadManagerImplTest.testNamespaceBundleStats."""
    nsb1 = NamespaceBundleStats(msg_rate_out=10000, producer_count=1, consumer_count=1, cache_size=4,
                                msg_rate_in=500, msg_throughput_in=30, msg_throughput_out=30)
    nsb2 = NamespaceBundleStats(msg_rate_out=20000, producer_count=300, consumer_count=300, cache_size=110000,
                                msg_rate_in=5000, msg_throughput_in=110000.0, msg_throughput_out=110000.0)
    for compare in (compare_bundle_stats, compare_by_msg_rate, compare_by_topic_connections, compare_by_cache_size,
                    compare_by_bandwidth_out, compare_by_bandwidth_in):
        assert compare(nsb1, nsb2) == -1
    assert compare_by_msg_rate(NamespaceBundleStats(msg_rate_in=100), NamespaceBundleStats()) == 0  # within 100


def test_sorted_bundle_stats_puts_the_most_loaded_first_and_keeps_ties_in_insertion_order():
    stats = {name: NamespaceBundleStats(msg_throughput_in=tin) for name, tin in
             (("a", 0.0), ("b", 5e5), ("c", 0.0), ("d", 2e6), ("e", 5.5e5))}
    assert sorted_bundle_stats(stats, ResourceType.BANDWIDTH_IN) == ["d", "b", "e", "a", "c"]
    assert sorted_bundle_stats(stats, ResourceType.CPU) == ["a", "b", "c", "d", "e"]  # all tie on msg rate


def test_tree_map_order_replays_javas_red_black_insertion():
    # a consistent comparator: plain descending order, whatever the insertion order
    rng = random.Random(5)
    for _ in range(200):  # rotations that broke the in-order sequence would show here
        keys = [str(n) for n in rng.sample(range(1000), 60)]
        assert tree_map_order(keys, lambda a, b: -1 if int(a) > int(b) else 1) == sorted(keys, key=int, reverse=True)
    # a threshold comparator is not transitive (0 ~ 1 ~ 2 but 2 > 0): the tree's shape decides.
    def near(a: str, b: str) -> int:
        return -1 if int(a) - int(b) > 1 else 1

    # 0 goes right of the root 1; 2 passes 1 (a tie) and goes left of 0; rotating right at 0 and
    # left at 1 makes 2 the root: 1, 2, 0.
    assert tree_map_order(["1", "0", "2"], near) == ["1", "2", "0"]
    # 1 goes right of the root 0, 2 left of it (2 > 0 + 1); no rotation: 2, 0, 1.
    assert tree_map_order(["0", "1", "2"], near) == ["2", "0", "1"]
    # a longer insertion exercises both rotations and recolouring; order is still a permutation
    keys = [str(n) for n in (4, 8, 1, 6, 3, 9, 0, 7, 2, 5)]
    assert sorted(tree_map_order(keys, near)) == sorted(keys)


def _reports(ru1_usage: SystemResourceUsage, stats=None) -> dict[str, LoadReport]:
    stats = stats or {NS1: NamespaceBundleStats(msg_rate_out=10000), NS2: NamespaceBundleStats(msg_rate_out=10000)}
    return {B1: LoadReport(system_resource_usage=ru1_usage, bundle_stats=stats),
            B2: LoadReport(system_resource_usage=SystemResourceUsage(), bundle_stats=stats)}


def _shed(reports, conf=None, recently=None, now=0):
    conf = conf or ServiceConfig()
    return do_load_shedding(reports, {0: set(reports)}, PolicyView(), BundleRangeCache(), SimpleSettings.resolve(conf),
                            conf, recently or {}, now)


def test_do_load_shedding_unloads_one_bundle_from_the_overloaded_broker():
    """SimpleLoadManagerImplTest.testDoLoadShedding: broker 1 at 90 % bandwidth in, broker 2 idle."""
    plan = _shed(_reports(SystemResourceUsage(bandwidth_in=ResourceUsage(90, 100))))
    assert plan.unloads == [(B1, NS1)]  # both bundles tie on bandwidth in: the first one
    assert (plan.overload_threshold, plan.comfort_load_threshold) == (85, 65)


def test_the_bottleneck_resource_picks_the_bundle():
    stats = {NS1: NamespaceBundleStats(msg_rate_in=10.0, msg_throughput_out=9e6),
             NS2: NamespaceBundleStats(msg_rate_in=5000.0, msg_throughput_out=1e5)}
    cpu_bound = SystemResourceUsage(cpu=ResourceUsage(95, 100), bandwidth_out=ResourceUsage(50, 100))
    assert _shed(_reports(cpu_bound, stats)).unloads == [(B1, NS2)]
    nic_bound = SystemResourceUsage(cpu=ResourceUsage(50, 100), bandwidth_out=ResourceUsage(95, 100))
    assert _shed(_reports(nic_bound, stats)).unloads == [(B1, NS1)]


def test_nothing_leaves_a_sole_bundle_a_broker_without_a_comfortable_peer_or_a_recent_unload():
    hot = SystemResourceUsage(cpu=ResourceUsage(95, 100))
    assert _shed(_reports(hot, {NS1: NamespaceBundleStats()})).sole_bundle == [B1]
    busy_peers = {B1: LoadReport(system_resource_usage=hot, bundle_stats={NS1: NamespaceBundleStats(),
                                                                          NS2: NamespaceBundleStats()}),
                  B2: LoadReport(system_resource_usage=SystemResourceUsage(cpu=ResourceUsage(65, 100)))}
    plan = _shed(busy_peers)
    assert plan.unloads == [] and plan.no_capacity == [(B1, NS1)]
    recently = {NS1: 0}
    assert _shed(_reports(hot), recently=recently, now=30 * 60_000 - 1).recently_unloaded == [(B1, NS1)]
    assert _shed(_reports(hot), recently=recently, now=30 * 60_000).unloads == [(B1, NS1)]


def test_disabled_shedding_is_a_dry_run_and_the_dynamic_threshold_applies():
    hot = SystemResourceUsage(cpu=ResourceUsage(90, 100))
    conf = ServiceConfig().with_overrides({"loadBalancerSheddingEnabled": "false"}, source="test")
    plan = _shed(_reports(hot), conf=conf)
    assert plan.unloads == [] and plan.dry_run == [(B1, NS1)]
    conf = ServiceConfig().with_overrides({"loadBalancerBrokerOverloadedThresholdPercentage": "95"}, source="test")
    assert _shed(_reports(hot), conf=conf).unloads == []
