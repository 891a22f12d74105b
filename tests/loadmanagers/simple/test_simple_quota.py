"""Resource quotas of SimpleLoadManagerImpl: defaults, paths, JSON, smoothing, learnt quotas, writes.

Vectors from Pulsar's `LoadBalancerTest.testDynamicNamespaceBundleQuota`,
`SimpleLoadManagerImplQuotaTest` and `BundlesQuotasTest`.
"""

from __future__ import annotations

import json

import msgspec
import pytest

from emulator.model.loaddata import NamespaceBundleStats, ResourceUsage
from emulator.loadmanagers.simple.model.quota import (
    DEFAULT_RESOURCE_QUOTA_PATH,
    INITIAL_QUOTA,
    RESOURCE_QUOTA_GO_DOWN_TIMEWINDOW_MS,
    RESOURCE_QUOTA_GO_UP_TIMEWINDOW_MS,
    QuotaStore,
    RealtimeQuotas,
    ResourceQuota,
    bundle_quota_path,
    legacy_bundle_quota_path,
    need_to_update_quota,
    quota_writes,
    time_smooth_value,
    total_quota,
    update_realtime_resource_quota,
)
from emulator.loadmanagers.simple.model.report import LoadReport, SystemResourceUsage

BROKERS = 5


def test_initial_quota_and_store_fallbacks_are_bundles_quotas():
    assert INITIAL_QUOTA == ResourceQuota(msg_rate_in=40, msg_rate_out=120, bandwidth_in=100000,
                                          bandwidth_out=300000, memory=80, dynamic=True)
    stored = ResourceQuota(msg_rate_in=10, msg_rate_out=20, bandwidth_in=10000, bandwidth_out=20000,
                           memory=100, dynamic=False)
    store = QuotaStore()
    assert store.default_quota() == INITIAL_QUOTA and store.quota("pulsar/test/ns-2/0x0_0x1") == INITIAL_QUOTA
    store = QuotaStore(default=stored)
    assert store.quota("pulsar/test/ns-2/0x0_0x1") == stored
    store = QuotaStore(bundles={"b": INITIAL_QUOTA}, default=stored)
    assert store.quota("b") == INITIAL_QUOTA


def test_paths_and_json_are_pulsars():
    assert DEFAULT_RESOURCE_QUOTA_PATH == "/loadbalance/resource-quota/default"
    assert bundle_quota_path("t/ns/0x00000000_0xffffffff") == "/loadbalance/resource-quota/t/ns/0x00000000_0xffffffff"
    assert legacy_bundle_quota_path("t/ns/0x0_0x1") == "/loadbalance/resource-quota/namespace/t/ns/0x0_0x1"
    text = ('{"msgRateIn":40.0,"msgRateOut":120.0,"bandwidthIn":100000.0,"bandwidthOut":300000.0,'
            '"memory":80.0,"dynamic":true}')
    assert msgspec.json.encode(INITIAL_QUOTA).decode() == text
    assert msgspec.json.decode(text, type=ResourceQuota) == INITIAL_QUOTA
    assert not ResourceQuota().is_valid() and INITIAL_QUOTA.is_valid()


def test_totals_add_every_amount_and_stay_dynamic():
    total = total_quota([INITIAL_QUOTA, msgspec.structs.replace(INITIAL_QUOTA, dynamic=False)])
    assert (total.msg_rate_in, total.memory, total.dynamic) == (80.0, 160.0, True)
    assert total.minus(INITIAL_QUOTA) == INITIAL_QUOTA


def test_time_smoothing_rises_over_30_minutes_and_falls_over_a_day():
    half_hour, day = RESOURCE_QUOTA_GO_UP_TIMEWINDOW_MS, RESOURCE_QUOTA_GO_DOWN_TIMEWINDOW_MS
    assert time_smooth_value(10.0, 40.0, 5.0, 0.0, half_hour // 2) == 25.0
    assert time_smooth_value(10.0, 40.0, 5.0, 0.0, 2 * half_hour) == 40.0
    assert time_smooth_value(40.0, 10.0, 5.0, 0.0, day // 2) == 25.0
    assert time_smooth_value(40.0, 1.0, 5.0, 0.0, day) == 5.0  # clamped to the minimum
    assert time_smooth_value(40.0, 1e9, 5.0, 100.0, half_hour) == 100.0  # and to the maximum
    assert time_smooth_value(40.0, 1e9, 5.0, 100.0, -5) == 40.0  # a negative time moves nothing


def _reports(timestamp: int) -> dict[str, LoadReport]:
    """LoadBalancerTest.writeLoadReportsForDynamicQuota."""
    reports = {}
    for i in range(BROKERS):
        usage = SystemResourceUsage(bandwidth_in=ResourceUsage(5000 * (10 + i * 5), 1024000),
                                    bandwidth_out=ResourceUsage(15000 * (10 + i * 5), 1024000),
                                    memory=ResourceUsage(25 * (10 + i * 5), 2048 * (i + 1)),
                                    cpu=ResourceUsage(200, 400))
        stats = {}
        for j in range(5):
            k = i + j
            stats[f"pulsar/use/primary-ns-{i}-{j}/0x00000000_0xffffffff"] = NamespaceBundleStats(
                msg_rate_in=5 * k, msg_rate_out=15 * k, msg_throughput_in=5000 * k, msg_throughput_out=15000 * k,
                topics=25 * k, consumer_count=50 * k, producer_count=50 * k)
        reports[f"broker-{i}:8080"] = LoadReport(name=f"broker-{i}:8080", timestamp=timestamp,
                                                 system_resource_usage=usage, bundle_stats=stats)
    return reports


def _check(quota: ResourceQuota, rate_in, rate_out, bw_in, bw_out, memory):
    for got, expected in ((quota.msg_rate_in, rate_in), (quota.msg_rate_out, rate_out),
                          (quota.bandwidth_in, bw_in), (quota.bandwidth_out, bw_out), (quota.memory, memory)):
        assert abs(got - expected) < 1, (got, expected)


def test_dynamic_namespace_bundle_quota_vectors():
    """LoadBalancerTest.testDynamicNamespaceBundleQuota: default 20/60/20000/60000/75, reports at
    start, +30 min and +24 h."""
    start = 1_700_000_000_000
    default = ResourceQuota(msg_rate_in=20, msg_rate_out=60, bandwidth_in=20000, bandwidth_out=60000, memory=75)
    store = QuotaStore(default=default)
    state = RealtimeQuotas(avg_quota=default, last_update_ms=start)
    update_realtime_resource_quota(state, _reports(start), store)
    _check(state.quotas["pulsar/use/primary-ns-0-0/0x00000000_0xffffffff"], 20, 60, 20000, 60000, 75)

    update_realtime_resource_quota(state, _reports(start + RESOURCE_QUOTA_GO_UP_TIMEWINDOW_MS), store)
    _check(state.quotas["pulsar/use/primary-ns-0-0/0x00000000_0xffffffff"], 19.0, 58.0, 19791.0, 58958.0, 74.0)
    _check(state.quotas["pulsar/use/primary-ns-2-2/0x00000000_0xffffffff"], 20.0, 60.0, 20000.0, 60000.0, 100.0)
    _check(state.quotas["pulsar/use/primary-ns-4-4/0x00000000_0xffffffff"], 40.0, 120.0, 40000.0, 120000.0, 150.0)
    assert state.memory_load_factor == 50.0  # 2500 MB / 41 groups, clamped to 50, fully risen
    assert state.cpu_load_factor == pytest.approx(0.1)  # 1000 % / 2000 msg/s, clamped to 0.1

    update_realtime_resource_quota(state, _reports(start + RESOURCE_QUOTA_GO_DOWN_TIMEWINDOW_MS), store)
    _check(state.quotas["pulsar/use/primary-ns-0-0/0x00000000_0xffffffff"], 5.0, 6.0, 10203.0, 11019.0, 50.0)
    _check(state.quotas["pulsar/use/primary-ns-2-2/0x00000000_0xffffffff"], 20.0, 60.0, 20000.0, 60000.0, 100.0)
    _check(state.quotas["pulsar/use/primary-ns-4-4/0x00000000_0xffffffff"], 40.0, 120.0, 40000.0, 120000.0, 150.0)
    assert state.avg_quota == default  # 25 bundles: the average needs more than 30
    assert state.last_update_ms == start + RESOURCE_QUOTA_GO_DOWN_TIMEWINDOW_MS


def test_average_quota_learns_with_more_than_30_bundles_and_static_quotas_stay():
    start = 0
    reports = {"b:8080": LoadReport(timestamp=RESOURCE_QUOTA_GO_UP_TIMEWINDOW_MS, bundle_stats={
        f"t/ns-{n}/0x00000000_0xffffffff": NamespaceBundleStats(msg_rate_in=100.0, msg_rate_out=300.0,
                                                                msg_throughput_in=50000.0,
                                                                msg_throughput_out=150000.0)
        for n in range(31)}, system_resource_usage=SystemResourceUsage(memory=ResourceUsage(310.0, 1000.0)))}
    static = msgspec.structs.replace(INITIAL_QUOTA, dynamic=False)
    store = QuotaStore(bundles={"t/ns-0/0x00000000_0xffffffff": static})
    state = RealtimeQuotas(avg_quota=INITIAL_QUOTA, last_update_ms=start)
    update_realtime_resource_quota(state, reports, store)
    # rising amounts take 30 min (fully risen here), falling ones a day (1/48 of the way)
    fall = RESOURCE_QUOTA_GO_UP_TIMEWINDOW_MS / RESOURCE_QUOTA_GO_DOWN_TIMEWINDOW_MS
    avg = state.avg_quota
    assert (avg.msg_rate_in, avg.msg_rate_out) == (100.0, 300.0)
    assert avg.bandwidth_in == pytest.approx(100000 - 50000 * fall)
    assert avg.memory == pytest.approx(80 - (80 - 310 / 31) * fall)  # broker MB per bundle
    assert state.quotas["t/ns-0/0x00000000_0xffffffff"] is static
    assert state.quotas["t/ns-1/0x00000000_0xffffffff"].msg_rate_in == 100.0
    update_realtime_resource_quota(state, {}, store)  # no reports: nothing changes
    assert len(state.quotas) == 31


def test_need_to_update_quota_compares_matching_bandwidth_fields():
    """SimpleLoadManagerImplQuotaTest.testNeedToUpdateQuotaUsesMatchingBandwidthFields."""
    old = ResourceQuota(msg_rate_in=100, msg_rate_out=100, bandwidth_in=100_000, bandwidth_out=200_000, memory=100)
    new = msgspec.structs.replace(old, bandwidth_in=old.bandwidth_in + 1)
    assert not need_to_update_quota(old, new)
    assert need_to_update_quota(old, new, legacy_bandwidth_compare=True)  # the bug the test pins
    new = msgspec.structs.replace(old, bandwidth_in=old.bandwidth_in + 10_000)
    assert need_to_update_quota(old, new)
    assert not need_to_update_quota(msgspec.structs.replace(old, dynamic=False), new)


def test_quota_writes_list_the_default_then_changed_bundles():
    state = RealtimeQuotas(avg_quota=msgspec.structs.replace(INITIAL_QUOTA, msg_rate_in=100.0), quotas={
        "t/ns/0x80000000_0xffffffff": INITIAL_QUOTA,
        "t/ns/0x00000000_0x80000000": msgspec.structs.replace(INITIAL_QUOTA, memory=90.0)})
    writes = quota_writes(state, QuotaStore())
    assert [path for path, _ in writes] == ["/loadbalance/resource-quota/default",
                                            "/loadbalance/resource-quota/t/ns/0x00000000_0x80000000"]
    assert json.loads(msgspec.json.encode(writes[1][1]))["memory"] == 90.0
