"""When a broker under SimpleLoadManagerImpl writes its load report, and what the report holds.

Follows `SimpleLoadManagerImpl.writeLoadReportOnZookeeper` (the write decision and the heap
average), `generateLoadReportForcefully` (the report) and `getSystemResourceUsage` (heap memory
replaced by the averaged JVM heap). The report task runs every 5 s on every broker
(`LoadReportUpdaterTask`); a write is followed by that broker's `doNamespaceBundleSplit`.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from emulator.model.config import ServiceConfig
from emulator.model.loaddata import NamespaceBundleStats, ResourceUsage
from emulator.model.java_math import idiv, to_long
from .quota import QuotaStore, RealtimeQuotas
from .report import (
    SIMPLE_LOAD_MANAGER_CLASS,
    LoadReport,
    SystemResourceUsage,
    is_above_load_level,
    is_below_load_level,
)
from .settings import SimpleSettings

__all__ = ["average_jvm_heap_mb", "with_heap_memory", "build_load_report", "ReportDecision",
           "need_load_report_update"]


def average_jvm_heap_mb(previous_avg_mb: int, realtime_mb: int, conf: ServiceConfig) -> int:
    """The heap average `writeLoadReportOnZookeeper` keeps: about the last 120 s of samples taken
    every `loadBalancerReportUpdateMinIntervalMillis` (integer arithmetic, as Java's longs)."""
    if previous_avg_mb <= 0:
        return realtime_mb
    weight = max(1, idiv(120_000, conf.load_balancer_report_update_min_interval_millis))
    return idiv((weight - 1) * previous_avg_mb + realtime_mb, weight)


def with_heap_memory(usage: SystemResourceUsage, heap_mb: int) -> SystemResourceUsage:
    """`getSystemResourceUsage`: the host usage with memory.usage = the (averaged) JVM heap in MB."""
    return msgspec.structs.replace(usage, memory=ResourceUsage(usage=float(heap_mb), limit=usage.memory.limit))


def build_load_report(
    *,
    name: str,
    web_service_url: str,
    pulsar_service_url: str,
    broker_version: str,
    usage: SystemResourceUsage,
    bundle_stats: Mapping[str, NamespaceBundleStats],
    previous_bundles: set[str],
    pre_allocated_bundles: set[str],
    quotas: RealtimeQuotas,
    store: QuotaStore,
    settings: SimpleSettings,
    conf: ServiceConfig,
    now_ms: int,
    start_ms: int,
    web_service_url_tls: str | None = None,
    pulsar_service_url_tls: str | None = None,
) -> LoadReport:
    """`generateLoadReportForcefully`: the report with over/underload flags, bundle gains and losses
    against the previous report, and the allocated and pre-allocated totals of the quotas.

    `pre_allocated_bundles` is this broker's own ranking's pre-allocated set (empty if it has none);
    Pulsar removes the reported bundles from that set in place, which the caller should do too.
    The quotas are read through `quotas` (caching store values, as `getResourceQuota` does)."""
    bundles = set(bundle_stats)
    pre = pre_allocated_bundles - bundles
    allocated = quotas.total(sorted(bundles), store)
    pre_quota = quotas.total(sorted(pre), store)
    factor = quotas.cpu_load_factor
    report = LoadReport(
        name=name,
        broker_version_string=broker_version,
        web_service_url=web_service_url,
        web_service_url_tls=msgspec.UNSET if web_service_url_tls is None else web_service_url_tls,
        pulsar_service_url=pulsar_service_url,
        pulsar_service_url_tls=msgspec.UNSET if pulsar_service_url_tls is None else pulsar_service_url_tls,
        persistent_topics_enabled=conf.enable_persistent_topics,
        non_persistent_topics_enabled=conf.enable_non_persistent_topics,
        timestamp=now_ms,
        load_manager_class_name=SIMPLE_LOAD_MANAGER_CLASS,
        start_timestamp=start_ms,
        system_resource_usage=usage,
        bundle_stats=dict(bundle_stats),
        bundle_gains=bundles - previous_bundles,
        bundle_losses=previous_bundles - bundles,
        allocated_cpu=(allocated.msg_rate_in + allocated.msg_rate_out) * factor,
        allocated_memory=allocated.memory,
        allocated_bandwidth_in=allocated.bandwidth_in,
        allocated_bandwidth_out=allocated.bandwidth_out,
        allocated_msg_rate_in=allocated.msg_rate_in,
        allocated_msg_rate_out=allocated.msg_rate_out,
        pre_allocated_cpu=(pre_quota.msg_rate_in + pre_quota.msg_rate_out) * factor,
        pre_allocated_memory=pre_quota.memory,
        pre_allocated_bandwidth_in=pre_quota.bandwidth_in,
        pre_allocated_bandwidth_out=pre_quota.bandwidth_out,
        pre_allocated_msg_rate_in=pre_quota.msg_rate_in,
        pre_allocated_msg_rate_out=pre_quota.msg_rate_out,
        under_loaded=is_below_load_level(usage, settings.underload_threshold),
        over_loaded=is_above_load_level(usage, settings.overload_threshold),
    )
    return report.with_derived()


class ReportDecision(msgspec.Struct, frozen=True, kw_only=True):
    """`write`: write a new report now. `usage_checked`: the host usage was compared (the caller then
    sets `lastResourceUsageTimestamp` to now). `resource_change`: the largest change in % (or -1)."""

    write: bool
    usage_checked: bool = False
    resource_change: int = -1


def _change(new: ResourceUsage, old: ResourceUsage) -> float:
    return (new.usage - old.usage) * 100 / new.limit if new.limit > 0 else 0.0


def need_load_report_update(
    last: LoadReport | None,
    *,
    force: bool,
    now_ms: int,
    bundle_count: int,
    last_resource_usage_ms: int,
    usage: SystemResourceUsage,
    conf: ServiceConfig,
) -> ReportDecision:
    """`writeLoadReportOnZookeeper`'s test: write the first time or when forced; when the last report
    is older than `loadBalancerReportUpdateMaxIntervalMinutes`; else, past
    `loadBalancerReportUpdateMinIntervalMillis`, when the bundle count changed or (at most every
    `loadBalancerHostUsageCheckIntervalMinutes`) any resource moved more than
    `loadBalancerReportUpdateThresholdPercentage` points of its limit. Strict comparisons throughout."""
    if last is None or force:
        return ReportDecision(write=True)
    elapsed = now_ms - last.timestamp
    if elapsed > conf.load_balancer_report_update_max_interval_minutes * 60_000:
        return ReportDecision(write=True)
    if elapsed <= conf.load_balancer_report_update_min_interval_millis:
        return ReportDecision(write=False)
    if bundle_count != len(last.bundle_stats):
        return ReportDecision(write=True)
    if now_ms - last_resource_usage_ms <= conf.load_balancer_host_usage_check_interval_minutes * 60_000:
        return ReportDecision(write=False)
    old = last.system_resource_usage
    changes = (_change(usage.cpu, old.cpu), _change(usage.direct_memory, old.direct_memory),
               _change(usage.memory, old.memory), _change(usage.bandwidth_out, old.bandwidth_out),
               _change(usage.bandwidth_in, old.bandwidth_in))
    change = to_long(min(100.0, max(abs(c) for c in changes)))
    return ReportDecision(write=change > conf.load_balancer_report_update_threshold_percentage,
                          usage_checked=True, resource_change=change)
