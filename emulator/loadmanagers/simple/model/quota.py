"""Resource quotas per bundle: what SimpleLoadManagerImpl assumes a bundle costs, and how it learns it.

Follows pulsar-common `policies/data/ResourceQuota.java`, pulsar-broker `cache/BundlesQuotas.java`
and `resources/LoadBalanceResources.QuotaResources` (paths, `INITIAL_QUOTA`, lookup with fallback)
and `SimpleLoadManagerImpl` (`timeSmoothValue`, `timeSmoothQuota`, `updateRealtimeResourceQuota`,
`getResourceQuota`, `getTotalAllocatedQuota`, `compareAndWriteQuota`, `writeResourceQuotasToZooKeeper`).

Choices:
- Paths are today's `QuotaResources`: `/loadbalance/resource-quota/<tenant>/<ns>/<range>` and
  `/loadbalance/resource-quota/default`. Before 2.8 (`ResourceQuotaCache`) bundles lived under
  `/loadbalance/resource-quota/namespace/...`, which is still where ModularLoadManagerImpl looks for
  a legacy quota (`RESOURCE_QUOTA_ZPATH`): `legacy_bundle_quota_path` gives that path.
- `compareAndWriteQuota` compared the new bandwidth-in with the *old bandwidth-out* until Pulsar
  fixed it (`SimpleLoadManagerImplQuotaTest.testNeedToUpdateQuotaUsesMatchingBandwidthFields`);
  `need_to_update_quota` follows the fix, `legacy_bandwidth_compare=True` gives the old test.
- Pulsar's maps are HashMaps; sums here run in the order of the mappings given (sorted by the
  callers), which can differ from Java's only in the last bits of a float sum.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import msgspec

from emulator.model.java_math import div, idiv, jmax, jmin
from .report import LoadReport

__all__ = [
    "ResourceQuota",
    "INITIAL_QUOTA",
    "RESOURCE_QUOTA_ROOT",
    "DEFAULT_RESOURCE_QUOTA_PATH",
    "RESOURCE_QUOTA_GO_UP_TIMEWINDOW_MS",
    "RESOURCE_QUOTA_GO_DOWN_TIMEWINDOW_MS",
    "bundle_quota_path",
    "legacy_bundle_quota_path",
    "QuotaStore",
    "RealtimeQuotas",
    "total_quota",
    "time_smooth_value",
    "time_smooth_quota",
    "update_realtime_resource_quota",
    "need_to_update_quota",
    "quota_writes",
]

RESOURCE_QUOTA_ROOT = "/loadbalance/resource-quota"
DEFAULT_RESOURCE_QUOTA_PATH = RESOURCE_QUOTA_ROOT + "/default"
_LEGACY_BUNDLE_ROOT = RESOURCE_QUOTA_ROOT + "/namespace"

RESOURCE_QUOTA_GO_UP_TIMEWINDOW_MS = 30 * 60 * 1000
RESOURCE_QUOTA_GO_DOWN_TIMEWINDOW_MS = 1440 * 60 * 1000
_MIN_CPU_FACTOR, _MAX_CPU_FACTOR = 0.01, 0.1
_MIN_MEM_FACTOR, _MAX_MEM_FACTOR = 10.0, 50.0
_MIN_MSGRATE_IN = _MIN_MSGRATE_OUT = 5.0
_MIN_BANDWIDTH_IN = _MIN_BANDWIDTH_OUT = 10000.0
_MIN_MEMORY = 2.0
_MAX_MSGRATE_IN = _MAX_MSGRATE_OUT = 0.0  # 0 = no upper bound
_MAX_BANDWIDTH_IN = _MAX_BANDWIDTH_OUT = 1000000.0
_MAX_MEMORY = 200.0
_MEM_OBJECT_GROUP_SIZE = 500  # topics + producers + consumers per memory group
INITIAL_CPU_LOAD_FACTOR = 0.025  # CPU % per msg/s
INITIAL_MEMORY_LOAD_FACTOR = 25.0  # MB per memory group


class ResourceQuota(msgspec.Struct, rename="camel", frozen=True, kw_only=True):
    """What one bundle (or the default) is assumed to use: msg/s, bytes/s, MB; `dynamic` = may be
    re-estimated from traffic. JSON as Jackson writes it (`isValid()` is `@JsonIgnore`)."""

    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0
    bandwidth_in: float = 0.0
    bandwidth_out: float = 0.0
    memory: float = 0.0
    dynamic: bool = True

    def is_valid(self) -> bool:
        """Every amount > 0 (what pre-2.8 ResourceQuotaCache required before using a stored quota)."""
        return (self.msg_rate_in > 0 and self.msg_rate_out > 0 and self.bandwidth_in > 0
                and self.bandwidth_out > 0 and self.memory > 0)

    def plus(self, other: ResourceQuota) -> ResourceQuota:
        """`add`: amounts summed, `dynamic` kept (a copy; Java adds in place)."""
        return msgspec.structs.replace(
            self,
            msg_rate_in=self.msg_rate_in + other.msg_rate_in,
            msg_rate_out=self.msg_rate_out + other.msg_rate_out,
            bandwidth_in=self.bandwidth_in + other.bandwidth_in,
            bandwidth_out=self.bandwidth_out + other.bandwidth_out,
            memory=self.memory + other.memory,
        )

    def minus(self, other: ResourceQuota) -> ResourceQuota:
        """`substract` (sic), as a copy."""
        return msgspec.structs.replace(
            self,
            msg_rate_in=self.msg_rate_in - other.msg_rate_in,
            msg_rate_out=self.msg_rate_out - other.msg_rate_out,
            bandwidth_in=self.bandwidth_in - other.bandwidth_in,
            bandwidth_out=self.bandwidth_out - other.bandwidth_out,
            memory=self.memory - other.memory,
        )


INITIAL_QUOTA = ResourceQuota(msg_rate_in=40.0, msg_rate_out=120.0, bandwidth_in=100000.0,
                              bandwidth_out=300000.0, memory=80.0, dynamic=True)
"""`BundlesQuotas.INITIAL_QUOTA`: the default quota while none is stored."""


def bundle_quota_path(bundle: str) -> str:
    """`QuotaResources.getBundleQuotaPath`: `/loadbalance/resource-quota/<tenant>/<ns>/<range>`."""
    return f"{RESOURCE_QUOTA_ROOT}/{bundle}"


def legacy_bundle_quota_path(bundle: str) -> str:
    """Pre-2.8 `ResourceQuotaCache.path` (and MLMI's `RESOURCE_QUOTA_ZPATH`): `.../namespace/<bundle>`."""
    return f"{_LEGACY_BUNDLE_ROOT}/{bundle}"


class QuotaStore(msgspec.Struct, kw_only=True):
    """What is stored under `/loadbalance/resource-quota`: per-bundle quotas and the default."""

    bundles: dict[str, ResourceQuota] = {}
    default: ResourceQuota | None = None

    def default_quota(self) -> ResourceQuota:
        """`BundlesQuotas.getDefaultResourceQuota`: the stored default, else `INITIAL_QUOTA`."""
        return self.default if self.default is not None else INITIAL_QUOTA

    def quota(self, bundle: str) -> ResourceQuota:
        """`BundlesQuotas.getResourceQuota`: the bundle's stored quota, else the default."""
        stored = self.bundles.get(bundle)
        return stored if stored is not None else self.default_quota()


def total_quota(quotas: Iterable[ResourceQuota]) -> ResourceQuota:
    """`getTotalAllocatedQuota`: a fresh `ResourceQuota()` (dynamic) plus each quota."""
    total = ResourceQuota()
    for quota in quotas:
        total = total.plus(quota)
    return total


def time_smooth_value(old: float, sample: float, minimum: float, maximum: float, time_past_ms: int) -> float:
    """`timeSmoothValue`: clamp the sample to [minimum, maximum] (maximum ≤ 0 = unbounded) and move
    toward it by the elapsed share of 30 min when rising, of 24 h when falling."""
    sample = jmax(minimum, sample)
    if maximum > 0:
        sample = jmin(maximum, sample)
    if sample >= old:
        weight = jmin(1.0, jmax(0.0, time_past_ms / RESOURCE_QUOTA_GO_UP_TIMEWINDOW_MS))
    elif sample < old:
        weight = jmin(1.0, jmax(0.0, time_past_ms / RESOURCE_QUOTA_GO_DOWN_TIMEWINDOW_MS))
    else:  # NaN on either side: Java leaves the weight at 0
        weight = 0.0
    return (1 - weight) * old + weight * sample


def time_smooth_quota(old: ResourceQuota, msg_rate_in: float, msg_rate_out: float, bandwidth_in: float,
                      bandwidth_out: float, memory: float, time_past_ms: int) -> ResourceQuota:
    """`timeSmoothQuota`: each amount smoothed with its bounds; a non-dynamic quota is kept as is."""
    if not old.dynamic:
        return old
    return ResourceQuota(
        msg_rate_in=time_smooth_value(old.msg_rate_in, msg_rate_in, _MIN_MSGRATE_IN, _MAX_MSGRATE_IN,
                                      time_past_ms),
        msg_rate_out=time_smooth_value(old.msg_rate_out, msg_rate_out, _MIN_MSGRATE_OUT, _MAX_MSGRATE_OUT,
                                       time_past_ms),
        bandwidth_in=time_smooth_value(old.bandwidth_in, bandwidth_in, _MIN_BANDWIDTH_IN, _MAX_BANDWIDTH_IN,
                                       time_past_ms),
        bandwidth_out=time_smooth_value(old.bandwidth_out, bandwidth_out, _MIN_BANDWIDTH_OUT,
                                        _MAX_BANDWIDTH_OUT, time_past_ms),
        memory=time_smooth_value(old.memory, memory, _MIN_MEMORY, _MAX_MEMORY, time_past_ms),
    )


class RealtimeQuotas(msgspec.Struct, kw_only=True):
    """The quota state SimpleLoadManagerImpl keeps in memory (on every broker, not only the leader).

    `quotas` is `realtimeResourceQuotas`: per-bundle quotas learnt from reports, plus store values
    cached by `quota()`. `avg_quota` is `realtimeAvgResourceQuota` (start: the stored default, read
    in `start()`), `last_update_ms` is `lastResourceQuotaUpdateTimestamp` (start: the start time)."""

    cpu_load_factor: float = INITIAL_CPU_LOAD_FACTOR
    memory_load_factor: float = INITIAL_MEMORY_LOAD_FACTOR
    avg_quota: ResourceQuota = msgspec.field(default_factory=ResourceQuota)
    quotas: dict[str, ResourceQuota] = {}
    last_update_ms: int = -1

    def quota(self, bundle: str, store: QuotaStore) -> ResourceQuota:
        """`getResourceQuota`: the learnt quota, else the store's (then cached here, as Java does)."""
        quota = self.quotas.get(bundle)
        if quota is None:
            quota = self.quotas[bundle] = store.quota(bundle)
        return quota

    def total(self, bundles: Iterable[str], store: QuotaStore) -> ResourceQuota:
        """`getTotalAllocatedQuota(bundles)` (caches what it reads from the store)."""
        return total_quota(self.quota(b, store) for b in bundles)


def _mem_groups(topics: int, producers: int, consumers: int) -> int:
    return 1 + idiv(topics + producers + consumers, _MEM_OBJECT_GROUP_SIZE)


def update_realtime_resource_quota(
    state: RealtimeQuotas, reports: Mapping[str, LoadReport], store: QuotaStore
) -> None:
    """`updateRealtimeResourceQuota`, in place on `state` (runs on each ranking, on every broker).

    From all reports: the CPU and memory load factors (only with > 1000 msg/s and > 30 memory groups
    in the cluster), the average bundle quota (only with > 30 bundles and a dynamic average), and
    every reported bundle's quota, smoothed over the time since the last update (the newest report
    timestamp minus `last_update_ms`). Bundles not reported any more leave `state.quotas`."""
    if not reports:
        return
    total_bundles = total_mem_groups = 0
    rate_in = rate_out = cpu = memory = bw_in = bw_out = 0.0
    newest = -1
    for report in reports.values():
        newest = max(newest, report.timestamp)
        for stats in report.bundle_stats.values():
            total_bundles += 1
            total_mem_groups += _mem_groups(stats.topics, stats.producer_count, stats.consumer_count)
            bw_in += stats.msg_throughput_in
            bw_out += stats.msg_throughput_out
        for stats in report.bundle_stats.values():  # LoadReport.getMsgRateIn/Out
            rate_in += stats.msg_rate_in
            rate_out += stats.msg_rate_out
        cpu += report.system_resource_usage.cpu.usage
        memory += report.system_resource_usage.memory.usage
    total_rate = rate_in + rate_out
    time_past = newest - state.last_update_ms
    state.last_update_ms = newest
    if total_rate > 1000 and total_mem_groups > 30:
        state.cpu_load_factor = time_smooth_value(state.cpu_load_factor, div(cpu, total_rate),
                                                  _MIN_CPU_FACTOR, _MAX_CPU_FACTOR, time_past)
        state.memory_load_factor = time_smooth_value(state.memory_load_factor, div(memory, total_mem_groups),
                                                     _MIN_MEM_FACTOR, _MAX_MEM_FACTOR, time_past)
    if total_bundles > 30 and state.avg_quota.dynamic:
        state.avg_quota = time_smooth_quota(state.avg_quota, rate_in / total_bundles, rate_out / total_bundles,
                                            bw_in / total_bundles, bw_out / total_bundles,
                                            memory / total_bundles, time_past)
    new_quotas: dict[str, ResourceQuota] = {}
    for report in reports.values():
        for bundle, stats in report.bundle_stats.items():
            groups = _mem_groups(stats.topics, stats.producer_count, stats.consumer_count)
            old = state.quota(bundle, store)
            new_quotas[bundle] = time_smooth_quota(old, stats.msg_rate_in, stats.msg_rate_out,
                                                   stats.msg_throughput_in, stats.msg_throughput_out,
                                                   groups * state.memory_load_factor, time_past)
    state.quotas = new_quotas


def need_to_update_quota(old: ResourceQuota, new: ResourceQuota, *, legacy_bandwidth_compare: bool = False) -> bool:
    """`compareAndWriteQuota`'s test: write unless the stored quota is static or every amount moved
    less than its minimum (5 msg/s, 10000 B/s, 2 MB). `legacy_bandwidth_compare` = the old code's
    `new.bandwidthIn - old.bandwidthOut`."""
    old_bw_in = old.bandwidth_out if legacy_bandwidth_compare else old.bandwidth_in
    unchanged = (abs(new.msg_rate_in - old.msg_rate_in) < _MIN_MSGRATE_IN
                 and abs(new.msg_rate_out - old.msg_rate_out) < _MIN_MSGRATE_OUT
                 and abs(new.bandwidth_in - old_bw_in) < _MIN_BANDWIDTH_IN
                 and abs(new.bandwidth_out - old.bandwidth_out) < _MIN_BANDWIDTH_OUT
                 and abs(new.memory - old.memory) < _MIN_MEMORY)
    return not (not old.dynamic or unchanged)


def quota_writes(
    state: RealtimeQuotas, store: QuotaStore, *, legacy_bandwidth_compare: bool = False
) -> list[tuple[str, ResourceQuota]]:
    """`writeResourceQuotasToZooKeeper` (leader, every `loadBalancerResourceQuotaUpdateIntervalMinutes`):
    the (path, quota) writes it makes, the default first, then each learnt bundle (sorted by name).
    The two load factors it also writes are in `settings.load_factor_writes`."""
    writes: list[tuple[str, ResourceQuota]] = []
    if need_to_update_quota(store.default_quota(), state.avg_quota, legacy_bandwidth_compare=legacy_bandwidth_compare):
        writes.append((DEFAULT_RESOURCE_QUOTA_PATH, state.avg_quota))
    for bundle in sorted(state.quotas):
        quota = state.quotas[bundle]
        if need_to_update_quota(store.quota(bundle), quota, legacy_bandwidth_compare=legacy_bandwidth_compare):
            writes.append((bundle_quota_path(bundle), quota))
    return writes
