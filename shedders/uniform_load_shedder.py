"""UniformLoadShedder (§8.3, current master): move traffic from the busiest broker toward the idlest.

Over the last reports (map order, strict comparisons, first broker wins ties) it finds the max/min
broker by msg rate (in+out) and by throughput (in+out); max starts at −1 and min at
Integer.MAX_VALUE, and a min within ±1e−6 counts as 1.0. The rate trigger
(`(max − min)·100/min > loadBalancerMsgRateDifferenceShedderThreshold`, if that is > 0) has priority
over the throughput trigger (`max/min > loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold`,
if > 0): when the rate fires, only the max-rate broker is considered, even if it cannot shed.

The budget is `(int)((max − min)·maxUnloadPercentage)` (Java truncation) and must reach
`minUnloadMessage` (rate) or `minUnloadMessageThroughput` (throughput); the source needs more than
one bundle. Bundles, biggest short-term traffic first, are taken while `traffic ≤ budget`, and the
budget shrinks by `(int)(−traffic)` (truncation toward zero, so 1000.7 costs 1000). At most
`maxUnloadBundleNumPerShedding` bundles (−1 = no cap).

Variant: `emulator_uniform_skip_zero_traffic_bundles` is the unmerged PR #21214, which never picks a
bundle with zero traffic (master picks them once the budget allows, which it always does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shedders.base import (
    INTEGER_MAX_VALUE,
    BaseShedder,
    Metric,
    UnloadPlan,
    broker_msg_rate,
    broker_throughput,
    candidates_explained,
    java_int,
    java_int_add,
    shedding_candidates,
)

if TYPE_CHECKING:
    from emulator.model.config import ServiceConfig
    from emulator.model.loaddata import LoadData

__all__ = ["UniformLoadShedder", "EPS"]

EPS = 1e-6


class UniformLoadShedder(BaseShedder):
    """Stateless: every call compares only the last reports."""

    def find_bundles_for_unloading_explained(
        self, load_data: LoadData, conf: ServiceConfig
    ) -> UnloadPlan:
        """The pairs and the extremes and differences compared with the thresholds."""
        max_rate = max_thr = -1.0
        min_rate = min_thr = float(INTEGER_MAX_VALUE)
        max_rate_broker = max_thr_broker = min_rate_broker = min_thr_broker = None
        for broker, broker_data in load_data.broker_data.items():
            rate = broker_msg_rate(broker_data.local_data)
            thr = broker_throughput(broker_data.local_data)
            if rate > max_rate:
                max_rate_broker, max_rate = broker, rate
            if thr > max_thr:
                max_thr_broker, max_thr = broker, thr
            if rate < min_rate:
                min_rate_broker, min_rate = broker, rate
            if thr < min_thr:
                min_thr_broker, min_thr = broker, thr

        if -EPS <= min_rate <= EPS:
            min_rate = 1.0
        if -EPS <= min_thr <= EPS:
            min_thr = 1.0
        rate_difference_pct = ((max_rate - min_rate) * 100) / min_rate
        thr_difference_rate = max_thr / min_thr

        rate_threshold = conf.load_balancer_msg_rate_difference_shedder_threshold
        thr_threshold = conf.load_balancer_msg_throughput_multiplier_difference_shedder_threshold
        rate_exceeded = rate_threshold > 0 and rate_difference_pct > rate_threshold
        thr_exceeded = thr_threshold > 0 and thr_difference_rate > thr_threshold

        selected: list[tuple[str, str]] = []
        explanation: dict[str, Any] = {
            "shedder": "UniformLoadShedder",
            "max_msg_rate": {"broker": max_rate_broker, "value": max_rate},
            "min_msg_rate": {"broker": min_rate_broker, "value": min_rate},
            "max_throughput": {"broker": max_thr_broker, "value": max_thr},
            "min_throughput": {"broker": min_thr_broker, "value": min_thr},
            "msg_rate_difference_pct": rate_difference_pct,
            "throughput_difference_rate": thr_difference_rate,
            "msg_rate_threshold_exceeded": rate_exceeded,
            "throughput_threshold_exceeded": thr_exceeded,
        }

        if rate_exceeded or thr_exceeded:
            pct = conf.max_unload_percentage
            metric: Metric
            if rate_exceeded:
                metric, source = "msg_rate", max_rate_broker
                required = java_int((max_rate - min_rate) * pct)
                minimum = conf.min_unload_message
            else:
                metric, source = "throughput", max_thr_broker
                required = java_int((max_thr - min_thr) * pct)
                minimum = conf.min_unload_message_throughput
            explanation.update(metric=metric, source=source, required=required, minimum=minimum)
            self._select(load_data, conf, source, metric, required, minimum, selected, explanation)
        else:
            explanation["skip"] = "no_threshold_exceeded"

        explanation["selected"] = [list(p) for p in selected]
        return UnloadPlan(selected, explanation)

    def _select(
        self,
        load_data: LoadData,
        conf: ServiceConfig,
        source: str | None,
        metric: Metric,
        required: int,
        minimum: int,
        selected: list[tuple[str, str]],
        explanation: dict[str, Any],
    ) -> None:
        broker_data = load_data.broker_data.get(source) if source is not None else None
        if source is None or broker_data is None:  # unreachable once a threshold fired
            explanation["skip"] = "no_source_broker"
            return
        local = broker_data.local_data
        if not (len(local.bundles) > 1 and required >= minimum):
            explanation["skip"] = "sole_bundle" if len(local.bundles) <= 1 else "below_min_unload"
            return
        candidates = shedding_candidates(
            load_data.bundle_data_for_load_shedding(),
            local,
            load_data.recently_unloaded_bundles,
            metric,
        )
        if conf.emulator_uniform_skip_zero_traffic_bundles:
            candidates = [(b, v) for b, v in candidates if v > 0]
        cap = conf.max_unload_bundle_num_per_shedding
        chosen: list[str] = []
        for bundle, traffic in candidates:
            if cap != -1 and len(selected) >= cap:
                continue
            if traffic <= required:
                required = java_int_add(required, java_int(-traffic))
                chosen.append(bundle)
                selected.append((source, bundle))
        explanation["candidates"] = candidates_explained(candidates, chosen, metric)
        explanation["remaining"] = required
