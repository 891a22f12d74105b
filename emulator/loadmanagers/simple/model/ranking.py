"""How loaded SimpleLoadManagerImpl thinks each broker is, and how many more bundles it could take.

Follows pulsar-common `ResourceUnitRanking.java` (`estimateLoadPercentage`, `compareTo`,
`compareMessageRateTo`, `isIdle`, pre-allocation, `estimateMaxCapacity` / `calculateBrokerMaxCapacity`)
and `SimpleLoadManagerImpl.doLoadRanking` / `updateBrokerToNamespaceToBundle`.

Choices:
- Java keeps `cpuUsageByMsgRate` in a static field that `doLoadRanking` overwrites with the CPU load
  factor; here each ranking carries the factor it was made with (no globals). Between two rankings
  Java's static holds that same value, so the results are the same.
- Java mutates a ranking in place (pre-allocation during placement, a loaded bundle removed) and
  shares the pre-allocated set between the old and the new ranking; `ResourceUnitRanking` is mutable
  and its methods mutate it too, and `do_load_ranking` reproduces the sharing's visible effect.
- Broker ids are used as resource ids without Pulsar's `http://` prefix (the same on every id, so
  every order is unchanged).
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from emulator.model.filters import BundleRangeCache
from emulator.model.java_math import div, jmax, jmin, to_long
from .quota import (
    QuotaStore,
    RealtimeQuotas,
    ResourceQuota,
)
from .report import LoadReport, SystemResourceUsage
from .settings import (
    LEAST_LOADED_SERVER,
    LEAST_MSG_PER_SECOND,
)

__all__ = [
    "KBITS_TO_BYTES",
    "PERCENTAGE_DIFFERENCE_THRESHOLD",
    "ResourceUnitRanking",
    "calculate_broker_max_capacity",
    "LoadRanking",
    "do_load_ranking",
]

KBITS_TO_BYTES = 1024 // 8  # bytes/s of quota -> Kbit/s of the NIC usage
PERCENTAGE_DIFFERENCE_THRESHOLD = 5.0
DEFAULT_CPU_USAGE_BY_MSG_RATE = 0.05  # the static's initial value, before any ranking


def _pct(amount: float, limit: float) -> float:
    """`limit <= 0 ? 0 : Math.min(100, 100 * amount / limit)`."""
    return 0.0 if limit <= 0 else jmin(100.0, div(100 * amount, limit))


def _cmp(a: float, b: float) -> int:
    """`Double.compare` for non-NaN values."""
    return (a > b) - (a < b)


class ResourceUnitRanking(msgspec.Struct, kw_only=True):
    """One broker's estimated load: max(used, allocated quota) + pre-allocated quota, per resource."""

    system_resource_usage: SystemResourceUsage
    loaded_bundles: set[str] = set()
    allocated_quota: ResourceQuota = msgspec.field(default_factory=ResourceQuota)
    pre_allocated_bundles: set[str] = set()
    pre_allocated_quota: ResourceQuota = msgspec.field(default_factory=ResourceQuota)
    cpu_usage_by_msg_rate: float = DEFAULT_CPU_USAGE_BY_MSG_RATE
    # derived by estimate_load_percentage()
    estimated_load_percentage: float = 0.0
    estimated_message_rate: float = 0.0
    allocated_load_percentage_cpu: float = 0.0
    allocated_load_percentage_memory: float = 0.0
    allocated_load_percentage_bandwidth_in: float = 0.0
    allocated_load_percentage_bandwidth_out: float = 0.0
    estimated_load_percentage_cpu: float = 0.0
    estimated_load_percentage_memory: float = 0.0
    estimated_load_percentage_direct_memory: float = 0.0
    estimated_load_percentage_bandwidth_in: float = 0.0
    estimated_load_percentage_bandwidth_out: float = 0.0

    def __post_init__(self) -> None:
        self.estimate_load_percentage()

    def estimate_load_percentage(self) -> None:
        """`estimateLoadPercentage`: per resource, % of its limit (capped at 100); the load is the max
        of CPU, memory, direct memory (used only) and both bandwidths. CPU quota = factor x msg/s;
        bandwidth quota in bytes/s / 128 = Kbit/s."""
        sru, alloc, pre = self.system_resource_usage, self.allocated_quota, self.pre_allocated_quota
        factor = self.cpu_usage_by_msg_rate
        cpu_alloc = factor * (alloc.msg_rate_in + alloc.msg_rate_out)
        cpu_pre = factor * (pre.msg_rate_in + pre.msg_rate_out)
        self.allocated_load_percentage_cpu = _pct(cpu_alloc, sru.cpu.limit)
        self.estimated_load_percentage_cpu = _pct(jmax(sru.cpu.usage, cpu_alloc) + cpu_pre, sru.cpu.limit)

        self.allocated_load_percentage_memory = _pct(alloc.memory, sru.memory.limit)
        self.estimated_load_percentage_memory = _pct(jmax(sru.memory.usage, alloc.memory) + pre.memory,
                                                     sru.memory.limit)

        bw_in_alloc, bw_in_pre = alloc.bandwidth_in / KBITS_TO_BYTES, pre.bandwidth_in / KBITS_TO_BYTES
        self.allocated_load_percentage_bandwidth_in = _pct(bw_in_alloc, sru.bandwidth_in.limit)
        self.estimated_load_percentage_bandwidth_in = _pct(jmax(sru.bandwidth_in.usage, bw_in_alloc) + bw_in_pre,
                                                           sru.bandwidth_in.limit)

        bw_out_alloc, bw_out_pre = alloc.bandwidth_out / KBITS_TO_BYTES, pre.bandwidth_out / KBITS_TO_BYTES
        self.allocated_load_percentage_bandwidth_out = _pct(bw_out_alloc, sru.bandwidth_out.limit)
        self.estimated_load_percentage_bandwidth_out = _pct(
            jmax(sru.bandwidth_out.usage, bw_out_alloc) + bw_out_pre, sru.bandwidth_out.limit)

        self.estimated_load_percentage_direct_memory = _pct(sru.direct_memory.usage, sru.direct_memory.limit)

        self.estimated_load_percentage = jmax(
            self.estimated_load_percentage_cpu,
            jmax(self.estimated_load_percentage_memory,
                 jmax(self.estimated_load_percentage_direct_memory,
                      jmax(self.estimated_load_percentage_bandwidth_in,
                           self.estimated_load_percentage_bandwidth_out))))
        self.estimated_message_rate = (alloc.msg_rate_in + alloc.msg_rate_out
                                       + pre.msg_rate_in + pre.msg_rate_out)

    def compare_to(self, other: ResourceUnitRanking) -> int:
        """`compareTo`: overall load, then memory, CPU, bandwidth in, bandwidth out; the first whose
        difference exceeds 5 points decides, else the overall load."""
        for attr in ("estimated_load_percentage", "estimated_load_percentage_memory",
                     "estimated_load_percentage_cpu", "estimated_load_percentage_bandwidth_in",
                     "estimated_load_percentage_bandwidth_out"):
            mine, theirs = getattr(self, attr), getattr(other, attr)
            if abs(mine - theirs) > PERCENTAGE_DIFFERENCE_THRESHOLD:
                return _cmp(mine, theirs)
        return _cmp(self.estimated_load_percentage, other.estimated_load_percentage)

    def compare_message_rate_to(self, other: ResourceUnitRanking) -> int:
        """`compareMessageRateTo`: by estimated msg/s only."""
        return _cmp(self.estimated_message_rate, other.estimated_message_rate)

    def is_idle(self) -> bool:
        """No bundle loaded and none pre-allocated."""
        return not self.loaded_bundles and not self.pre_allocated_bundles

    def is_service_unit_loaded(self, bundle: str) -> bool:
        return bundle in self.loaded_bundles

    def is_service_unit_pre_allocated(self, bundle: str) -> bool:
        return bundle in self.pre_allocated_bundles

    def add_pre_allocated_service_unit(self, bundle: str, quota: ResourceQuota) -> None:
        """`addPreAllocatedServiceUnit` (in place): the quota is added even if already listed."""
        self.pre_allocated_bundles.add(bundle)
        self.pre_allocated_quota = self.pre_allocated_quota.plus(quota)
        self.estimate_load_percentage()

    def remove_loaded_service_unit(self, bundle: str, quota: ResourceQuota) -> None:
        """`removeLoadedServiceUnit` (in place): only if it was loaded."""
        if bundle in self.loaded_bundles:
            self.loaded_bundles.discard(bundle)
            self.allocated_quota = self.allocated_quota.minus(quota)
            self.estimate_load_percentage()

    def estimate_max_capacity(self, default_quota: ResourceQuota) -> int:
        """`estimateMaxCapacity`: how many default-quota bundles the broker's limits hold."""
        return calculate_broker_max_capacity(self.system_resource_usage, default_quota,
                                             self.cpu_usage_by_msg_rate)

    def estimated_load_percentage_string(self) -> str:
        """`getEstimatedLoadPercentageString` (what Pulsar logs with each assignment)."""
        return (f"msgrate: {self.estimated_message_rate:.0f}, load: {self.estimated_load_percentage:.1f}% - "
                f"cpu: {self.estimated_load_percentage_cpu:.1f}%, "
                f"mem: {self.estimated_load_percentage_memory:.1f}%, "
                f"directMemory: {self.estimated_load_percentage_direct_memory:.1f}%, "
                f"bandwidthIn: {self.estimated_load_percentage_bandwidth_in:.1f}%, "
                f"bandwidthOut: {self.estimated_load_percentage_bandwidth_out:.1f}%")


def calculate_broker_max_capacity(
    usage: SystemResourceUsage, default_quota: ResourceQuota, cpu_usage_by_msg_rate: float
) -> int:
    """`calculateBrokerMaxCapacity`: the minimum over CPU (limit / factor / default msg/s), memory
    and both bandwidths (limit x 128 / default bytes/s), as `(long) max(capacity, 0)`."""
    cpu = div(div(usage.cpu.limit, cpu_usage_by_msg_rate), default_quota.msg_rate_in + default_quota.msg_rate_out)
    mem = div(usage.memory.limit, default_quota.memory)
    bw_out = div(usage.bandwidth_out.limit * KBITS_TO_BYTES, default_quota.bandwidth_out)
    bw_in = div(usage.bandwidth_in.limit * KBITS_TO_BYTES, default_quota.bandwidth_in)
    capacity = jmin(cpu, jmin(mem, jmin(bw_out, bw_in)))
    return to_long(jmax(capacity, 0.0))


class LoadRanking(msgspec.Struct, kw_only=True):
    """The result of one `doLoadRanking`: rankings by broker, brokers by rank (`sortedRankings`) and
    each broker's rank (the `brk_lb_load_rank` metric of its own row)."""

    rankings: dict[str, ResourceUnitRanking] = {}
    sorted_rankings: dict[int, set[str]] = {}
    ranks: dict[str, int] = {}


def final_rank(ranking: ResourceUnitRanking, strategy: str, default_quota: ResourceQuota) -> int:
    """The rank `doLoadRanking` files a broker under: `(long)` load % (leastLoadedServer),
    `(long)` msg/s (leastMsgPerSecond), else `(long)(maxCapacity x idle² )` (weightedRandomSelection)."""
    load = ranking.estimated_load_percentage
    if strategy == LEAST_LOADED_SERVER:
        return to_long(load)
    if strategy == LEAST_MSG_PER_SECOND:
        return to_long(ranking.estimated_message_rate)
    idle = (100 - load) / 100
    return to_long(ranking.estimate_max_capacity(default_quota) * idle * idle)


def do_load_ranking(
    reports: Mapping[str, LoadReport],
    previous: Mapping[str, ResourceUnitRanking],
    quotas: RealtimeQuotas,
    store: QuotaStore,
    strategy: str,
    bundle_ranges: BundleRangeCache,
) -> LoadRanking | None:
    """`doLoadRanking` over the current reports (None with no report: Pulsar keeps the old ranking).

    A broker keeps its previous pre-allocations that its report does not list yet. Side effect, as
    in Pulsar: `bundle_ranges` (brokerToNamespaceToBundleRange) is refilled for every broker of the
    *previous* rankings with that ranking's loaded bundles and its remaining pre-allocations (Java
    calls `updateBrokerToNamespaceToBundle` before swapping the rankings in). Reads the quotas of the
    bundles through `quotas` (which caches store values, as `getResourceQuota` does)."""
    if not reports:
        return None
    default_quota = store.default_quota()
    factor = quotas.cpu_load_factor
    out = LoadRanking()
    carried: dict[str, set[str]] = {}
    for broker, report in reports.items():
        loaded = report.bundles()
        old = previous.get(broker)
        pre = (old.pre_allocated_bundles - loaded) if old is not None else set()
        carried[broker] = pre
        ranking = ResourceUnitRanking(
            system_resource_usage=report.system_resource_usage,
            loaded_bundles=loaded,
            allocated_quota=quotas.total(sorted(loaded), store),
            pre_allocated_bundles=set(pre),
            pre_allocated_quota=quotas.total(sorted(pre), store),
            cpu_usage_by_msg_rate=factor,
        )
        out.rankings[broker] = ranking
        rank = final_rank(ranking, strategy, default_quota)
        out.ranks[broker] = rank
        out.sorted_rankings.setdefault(rank, set()).add(broker)
    for broker, old in previous.items():
        pre = carried.get(broker, old.pre_allocated_bundles)
        bundle_ranges.reload_broker(broker, sorted(old.loaded_bundles | pre))
    return out
