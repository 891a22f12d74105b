"""ResourceUnitRanking and doLoadRanking of SimpleLoadManagerImpl.

Vectors from Pulsar's `LoadBalancerTest.testBrokerRanking` and hand-computed cases of
`ResourceUnitRanking.estimateLoadPercentage` / `calculateBrokerMaxCapacity`.
"""

from __future__ import annotations

import pytest

from emulator.model.filters import BundleRangeCache
from emulator.model.loaddata import NamespaceBundleStats, ResourceUsage
from emulator.loadmanagers.simple.model.quota import INITIAL_QUOTA, QuotaStore, RealtimeQuotas, ResourceQuota
from emulator.loadmanagers.simple.model.ranking import (
    ResourceUnitRanking,
    calculate_broker_max_capacity,
    do_load_ranking,
    final_rank,
)
from emulator.loadmanagers.simple.model.report import LoadReport, SystemResourceUsage
from emulator.loadmanagers.simple.model.settings import (
    LEAST_LOADED_SERVER,
    LEAST_MSG_PER_SECOND,
    WEIGHTED_RANDOM_SELECTION,
)


def _usage(cpu=(0.0, 400.0), memory=(0.0, 8192.0), direct=(0.0, 1024.0), bw=(0.0, 1024000.0)):
    return SystemResourceUsage(cpu=ResourceUsage(*cpu), memory=ResourceUsage(*memory),
                               direct_memory=ResourceUsage(*direct), bandwidth_in=ResourceUsage(*bw),
                               bandwidth_out=ResourceUsage(*bw))


def test_broker_ranking_vectors():
    """LoadBalancerTest.testBrokerRanking: memory 1024 MB of 2048 x (i+1), CPU 60 of 400, no bundles:
    ranks 50, 25, 16, 15, 15 under leastLoadedServer."""
    reports = {f"broker-{i}:8080": LoadReport(name=f"broker-{i}:8080", system_resource_usage=SystemResourceUsage(
        bandwidth_in=ResourceUsage(0, 1024000), bandwidth_out=ResourceUsage(0, 1024000),
        memory=ResourceUsage(1024, 2048 * (i + 1)), cpu=ResourceUsage(60, 400))) for i in range(5)}
    result = do_load_ranking(reports, {}, RealtimeQuotas(), QuotaStore(), LEAST_LOADED_SERVER, BundleRangeCache())
    assert result is not None
    assert result.sorted_rankings == {50: {"broker-0:8080"}, 25: {"broker-1:8080"}, 16: {"broker-2:8080"},
                                      15: {"broker-3:8080", "broker-4:8080"}}
    assert all(r.is_idle() for r in result.rankings.values())


def test_estimated_load_takes_max_of_usage_and_quota_plus_preallocation():
    quota = ResourceQuota(msg_rate_in=100.0, msg_rate_out=300.0, bandwidth_in=128000.0, bandwidth_out=256000.0,
                          memory=1024.0)
    ranking = ResourceUnitRanking(system_resource_usage=_usage(cpu=(5.0, 400.0), memory=(512.0, 8192.0),
                                                               bw=(100.0, 10000.0)),
                                  loaded_bundles={"t/ns/0x00000000_0xffffffff"}, allocated_quota=quota,
                                  cpu_usage_by_msg_rate=0.025)
    assert ranking.estimated_load_percentage_cpu == pytest.approx(100 * 10.0 / 400)  # 0.025 x 400 msg/s
    assert ranking.estimated_load_percentage_memory == pytest.approx(100 * 1024 / 8192)
    # 128000 B/s = 1000 Kbit/s
    assert ranking.estimated_load_percentage_bandwidth_in == pytest.approx(100 * 1000 / 10000)
    assert ranking.estimated_load_percentage_bandwidth_out == pytest.approx(20.0)
    assert ranking.estimated_load_percentage == pytest.approx(20.0)
    assert ranking.allocated_load_percentage_memory == pytest.approx(12.5)
    assert ranking.estimated_message_rate == 400.0
    ranking.add_pre_allocated_service_unit("t/other/0x00000000_0xffffffff", quota)
    assert ranking.estimated_load_percentage_bandwidth_out == pytest.approx(40.0)
    assert ranking.allocated_load_percentage_bandwidth_out == pytest.approx(20.0)  # allocated only
    assert ranking.estimated_message_rate == 800.0
    ranking.remove_loaded_service_unit("t/ns/0x00000000_0xffffffff", quota)
    assert ranking.loaded_bundles == set() and not ranking.is_idle()
    assert ranking.estimated_load_percentage_bandwidth_out == pytest.approx(21.0)  # usage 1 % + pre 20 %
    ranking.remove_loaded_service_unit("t/ns/0x00000000_0xffffffff", quota)  # not loaded: no change
    assert ranking.allocated_quota.msg_rate_in == 0.0


def test_percentages_are_capped_and_zero_without_a_limit():
    ranking = ResourceUnitRanking(system_resource_usage=SystemResourceUsage(cpu=ResourceUsage(500.0, 400.0)))
    assert ranking.estimated_load_percentage == 100.0
    assert ResourceUnitRanking(system_resource_usage=SystemResourceUsage()).estimated_load_percentage == 0.0


def test_compare_uses_five_point_bands_then_the_overall_load():
    def ranking(cpu, memory):
        return ResourceUnitRanking(system_resource_usage=_usage(cpu=(cpu, 100.0), memory=(memory, 100.0)))

    assert ranking(10, 0).compare_to(ranking(20, 0)) == -1
    assert ranking(30, 12).compare_to(ranking(32, 1)) == 1  # loads 2 apart, memory 11 apart decides
    assert ranking(30, 1).compare_to(ranking(32, 3)) == -1  # all within 5: overall load decides
    a, b = ranking(0, 0), ranking(0, 0)
    b.add_pre_allocated_service_unit("x/y/0x0_0x1", INITIAL_QUOTA)
    assert a.compare_message_rate_to(b) == -1


def test_max_capacity_is_the_scarcest_resource_in_default_bundles():
    usage = _usage(cpu=(0.0, 400.0), memory=(0.0, 8192.0), bw=(0.0, 1024000.0))
    # cpu: 400 / 0.025 / 160 = 100; memory: 8192 / 80 = 102; bandwidth out: 1024000 x 128 / 300000 = 436
    assert calculate_broker_max_capacity(usage, INITIAL_QUOTA, 0.025) == 100
    assert calculate_broker_max_capacity(usage, INITIAL_QUOTA, 0.05) == 50
    assert calculate_broker_max_capacity(SystemResourceUsage(), INITIAL_QUOTA, 0.025) == 0  # limits -1
    assert calculate_broker_max_capacity(usage, ResourceQuota(), 0.025) > 10**18  # /0 = Infinity, as Java


def test_final_rank_per_strategy():
    ranking = ResourceUnitRanking(system_resource_usage=_usage(cpu=(100.0, 400.0)), cpu_usage_by_msg_rate=0.025,
                                  allocated_quota=ResourceQuota(msg_rate_in=10.7, msg_rate_out=20.0))
    assert final_rank(ranking, LEAST_LOADED_SERVER, INITIAL_QUOTA) == 25
    assert final_rank(ranking, LEAST_MSG_PER_SECOND, INITIAL_QUOTA) == 30
    assert final_rank(ranking, WEIGHTED_RANDOM_SELECTION, INITIAL_QUOTA) == int(100 * 0.75 * 0.75)


def test_ranking_keeps_unreported_preallocations_and_refills_bundle_ranges_from_the_old_ranking():
    loaded, pending, landed = "t/ns/0x00000000_0x40000000", "t/ns/0x40000000_0x80000000", "t/ns/0x80000000_0xc0000000"
    report = LoadReport(system_resource_usage=_usage(), bundle_stats={loaded: NamespaceBundleStats(),
                                                                      landed: NamespaceBundleStats()})
    old = ResourceUnitRanking(system_resource_usage=_usage(), loaded_bundles={loaded},
                              pre_allocated_bundles={pending, landed})
    cache = BundleRangeCache()
    result = do_load_ranking({"b:8080": report, "new:8080": report}, {"b:8080": old, "gone:8080": old},
                             RealtimeQuotas(), QuotaStore(), LEAST_LOADED_SERVER, cache)
    assert result is not None
    new = result.rankings["b:8080"]
    assert new.pre_allocated_bundles == {pending}
    assert new.pre_allocated_quota.msg_rate_in == INITIAL_QUOTA.msg_rate_in
    assert new.allocated_quota.msg_rate_in == 2 * INITIAL_QUOTA.msg_rate_in
    assert result.rankings["new:8080"].pre_allocated_bundles == set()
    # Pulsar refills brokerToNamespaceToBundleRange from the rankings it is replacing
    assert cache.ranges("b:8080", "t/ns") == ["0x00000000_0x40000000", "0x40000000_0x80000000"]
    assert cache.ranges("gone:8080", "t/ns") == sorted(r.rsplit("/", 1)[1] for r in (loaded, pending, landed))
    assert cache.count("new:8080", "t/ns") == 0
    assert do_load_ranking({}, {}, RealtimeQuotas(), QuotaStore(), LEAST_LOADED_SERVER, cache) is None
