"""ThresholdShedder (§8.2), the default shedder: unload from brokers well above the cluster average.

Each call first moves every broker's EMA of weighted usage one step
(`hist = hist·h + (1−h)·usage`, `h = loadBalancerHistoryResourcePercentage`; a broker without
history starts at its usage) and averages the EMAs. A broker sheds unless `hist < avg + t`
(`t = loadBalancerBrokerThresholdShedderPercentage/100`), so exactly `avg + t` sheds. It offloads at
least `(throughput in+out) × (hist − avg − t + 0.05)`, biggest short-term bundles first and at least
one, but only if that minimum reaches `loadBalancerBundleUnloadMinThroughputThreshold` MiB/s.

Lower-boundary pass (`lowerBoundarySheddingEnabled`, PIP-217), only when nothing was selected: the
average is computed **again, which moves every EMA a second time in the same cycle** (as Pulsar);
the broker with the highest EMA above `avg − t` and more than one bundle (first in map order on
ties) sheds `throughput × t × 0.5`, provided some broker sits below `avg − t`.

Variants: `emulator_threshold_shedder_clamp_usage` is the reverted #16937, where a usage above 100 %
is recomputed ignoring every weighted resource above 100 %. Usage is the 4-weight form (memory
excluded, #19559/PIP-358); the clamp recomputation passes the memory weight too, as that code did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emulator.model.selection import UsageHistory
from shedders.base import (
    ADDITIONAL_THRESHOLD_PERCENT_MARGIN,
    MIB,
    BaseShedder,
    UnloadPlan,
    broker_throughput,
    candidates_explained,
    offload_from_broker,
    select_until_offloaded,
    shedding_candidates,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from emulator.model.config import ServiceConfig
    from emulator.model.loaddata import BundleData, LoadData, LocalBrokerData

__all__ = ["ThresholdShedder", "LOWER_BOUNDARY_THRESHOLD_MARGIN"]

LOWER_BOUNDARY_THRESHOLD_MARGIN = 0.5


class ThresholdShedder(UsageHistory, BaseShedder):
    """`history` (broker → EMA of weighted usage, a fraction; `UsageHistory`) persists across calls."""

    # --- EMA ---------------------------------------------------------------------------------------

    def _usage(self, local: LocalBrokerData, conf: ServiceConfig) -> float:
        usage = local.weighted_max_usage(conf)
        if conf.emulator_threshold_shedder_clamp_usage and usage > 1.0:
            cpu_w, direct_w, in_w, out_w = conf.resource_weights
            usage = local.max_resource_usage_with_weight_within_limit(
                cpu_w, conf.load_balancer_memory_resource_weight, direct_w, in_w, out_w
            )
        return usage

    def _update_avg_usage(
        self, broker: str, local: LocalBrokerData, conf: ServiceConfig, usages: dict[str, float]
    ) -> float:
        usage = self._usage(local, conf)
        usages[broker] = usage
        return self.update_history(broker, usage, conf)

    def _broker_avg_usage(
        self, load_data: LoadData, conf: ServiceConfig, usages: dict[str, float]
    ) -> float:
        """One EMA step for every broker (their usage goes to `usages`), then the EMAs' mean."""
        total = 0.0
        count = 0
        for broker, broker_data in load_data.broker_data.items():
            total += self._update_avg_usage(broker, broker_data.local_data, conf, usages)
            count += 1
        return total / count if count > 0 else 0.0

    def warm_up(self, load_data: LoadData, conf: ServiceConfig, cycles: int) -> None:
        """A warm start: the EMA after `cycles` cycles of getBrokerAvgUsage over this load data (one
        step per cycle; a steady usage is its own fixed point, so at most 64 steps are made)."""
        for _ in range(min(cycles, 64)):
            self._broker_avg_usage(load_data, conf, {})

    # --- Decision ----------------------------------------------------------------------------------

    def find_bundles_for_unloading_explained(
        self, load_data: LoadData, conf: ServiceConfig
    ) -> UnloadPlan:
        """The pairs and, per broker, its usage, EMA, offload minimum and candidates."""
        threshold = conf.load_balancer_broker_threshold_shedder_percentage / 100.0
        min_throughput_threshold = conf.load_balancer_bundle_unload_min_throughput_threshold * MIB
        selected: list[tuple[str, str]] = []
        brokers: dict[str, dict[str, Any]] = {}
        explanation: dict[str, Any] = {
            "shedder": "ThresholdShedder",
            "threshold": threshold,
            "min_throughput_threshold": min_throughput_threshold,
            "brokers": brokers,
            "selected": selected,
        }

        usages: dict[str, float] = {}
        avg = self._broker_avg_usage(load_data, conf, usages)
        explanation["avg"] = avg
        if avg == 0:
            explanation["skip"] = "average_usage_is_zero"
            return self._finish(selected, explanation)

        shedding_view: list[Mapping[str, BundleData]] = []
        for broker, broker_data in load_data.broker_data.items():
            local = broker_data.local_data
            current = self.history.get(broker, 0.0)
            info: dict[str, Any] = {
                "usage": usages.get(broker),
                "hist": current,
                "bundles": len(local.bundles),
            }
            brokers[broker] = info
            if current < avg + threshold:
                info["skip"] = "below_upper_bound"
                continue
            throughput = broker_throughput(local)
            min_offload = throughput * (
                current - avg - threshold + ADDITIONAL_THRESHOLD_PERCENT_MARGIN
            )
            info.update(throughput=throughput, min_offload=min_offload)
            if min_offload < min_throughput_threshold:
                info["skip"] = "below_min_throughput"
                continue
            offload_from_broker(broker, local, min_offload, load_data, shedding_view, info, selected)

        if not selected and conf.lower_boundary_shedding_enabled:
            explanation["lower_boundary"] = self._try_lower_boundary_shedding(
                load_data, conf, selected
            )
        return self._finish(selected, explanation)

    def _try_lower_boundary_shedding(
        self, load_data: LoadData, conf: ServiceConfig, selected: list[tuple[str, str]]
    ) -> dict[str, Any]:
        threshold = conf.load_balancer_broker_threshold_shedder_percentage / 100.0
        avg = self._broker_avg_usage(load_data, conf, {})  # the second EMA step of this cycle
        info: dict[str, Any] = {"avg": avg, "hist": dict(self.history)}

        max_usage_broker = ""
        max_usage = avg - threshold
        has_broker_below_lower_bound = False
        for broker, data in load_data.broker_data.items():
            current = self.history.get(broker, 0.0)
            if current > max_usage and len(data.local_data.bundles) > 1:
                max_usage = current
                max_usage_broker = broker
            if current < avg - threshold:
                has_broker_below_lower_bound = True
        info["max_usage_broker"] = max_usage_broker or None
        info["has_broker_below_lower_bound"] = has_broker_below_lower_bound

        broker_data = load_data.broker_data.get(max_usage_broker)
        if broker_data is None:
            info["skip"] = "no_broker_above_lower_bound_with_several_bundles"
            return info
        if not has_broker_below_lower_bound:
            info["skip"] = "no_broker_below_lower_bound"
            return info
        local = broker_data.local_data
        throughput = broker_throughput(local)
        min_offload = throughput * threshold * LOWER_BOUNDARY_THRESHOLD_MARGIN
        min_throughput_threshold = conf.load_balancer_bundle_unload_min_throughput_threshold * MIB
        info.update(throughput=throughput, min_offload=min_offload)
        if min_throughput_threshold > min_offload:
            info["skip"] = "below_min_throughput"
            return info
        candidates = shedding_candidates(
            load_data.bundle_data_for_load_shedding(),
            local,
            load_data.recently_unloaded_bundles,
            "throughput",
        )
        chosen = select_until_offloaded(candidates, min_offload)
        info["candidates"] = candidates_explained(candidates, chosen, "throughput")
        info["selected"] = chosen
        selected.extend((max_usage_broker, bundle) for bundle in chosen)
        return info

    def _finish(self, selected: list[tuple[str, str]], explanation: dict[str, Any]) -> UnloadPlan:
        explanation["selected"] = [list(p) for p in selected]
        explanation["hist_after"] = dict(self.history)
        return UnloadPlan(list(selected), explanation)
