"""AvgShedder (PIP-364, §8.4 and §5.4): pairs the most and least loaded brokers and moves load
between them; the same instance then places the moved bundles on the planned partner.

Shedding. Score = weighted max usage × 100. Brokers sorted by score ascending are paired from the
outside in (lowest with highest, ...; with an odd count the middle broker pairs with itself). A pair
whose score gap is below `loadBalancerAvgShedderLowThreshold` clears both brokers' hit counters;
otherwise it counts a "low" hit for both, and a "high" hit for both if the gap reaches
`...HighThreshold` (else their high counters are cleared). A pair sheds once either broker has
`...HitCountHighThreshold` high hits or `...HitCountLowThreshold` low hits; its counters are then
cleared. It moves `(max − min) × maxUnloadPercentage` of msg rate if that exceeds
`minUnloadMessage`, else of throughput if that exceeds `minUnloadMessageThroughput`: bundles of the
busier broker, biggest short-term traffic first, each taken iff `0 < traffic ≤ remaining`. Without
any pair all hit counters are cleared.

Sorting: current Pulsar sorts by the double score, stably (ties keep map order);
`emulator_avg_shedder_int_comparator` selects the older `(int)(s1 − s2)` comparator, under which
scores less than one point apart compare equal (sorted as Java's TimSort does, see
`shedders.base.java_list_sort`).

Placement (PR #26246). The plan maps bundle *name* → planned destination; it is built during
`find_bundles_for_unloading`, published when that call ends (a planning error leaves the old plan),
and cleared by `on_unload_attempt_completed`. `select_broker_for_bundle` returns the planned broker
while it is a candidate; if it is not, it places as `select_broker` does (uniformly at random over
the sorted candidates, from the injected rng: Pulsar hashes a fresh random int, which is uniform
too; nothing is cached). If the planned broker's score exceeds
`loadBalancerBrokerOverloadedThresholdPercentage`, it picks at random among the other candidates
whose score is at most that threshold (as in the revision of #26246 we could read: the shedding
source is not excluded), keeping the planned broker when there are none.

`on_active_brokers_change` is a no-op, as in Pulsar: hit counters of a departed broker stay until a
pairing clears them.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from emulator.model.selection import BasePlacementStrategy, Selection, choose
from shedders.base import (
    BaseShedder,
    Metric,
    UnloadPlan,
    broker_msg_rate,
    broker_throughput,
    candidates_explained,
    java_double_key,
    java_int,
    java_list_sort,
    shedding_candidates,
)

if TYPE_CHECKING:
    from emulator.model.config import ServiceConfig
    from emulator.model.loaddata import BundleData, LoadData

__all__ = ["AvgShedder"]


class AvgShedder(BaseShedder, BasePlacementStrategy):
    """Both a LoadSheddingStrategy and a placement strategy (one instance serves both roles); as each
    built-in, it writes only the explained methods, and its bases make the plain ones from them.

    State across calls: `hit_count_high` and `hit_count_low` (broker → hits) and `plan`
    (bundle name → destination broker, for the current unload attempt).
    """

    def __init__(self, rng: random.Random) -> None:
        super().__init__(rng)
        self.hit_count_high: dict[str, int] = {}
        self.hit_count_low: dict[str, int] = {}
        self.plan: dict[str, str] = {}

    # --- Shedding ----------------------------------------------------------------------------------

    @staticmethod
    def _score(broker: str, load_data: LoadData, conf: ServiceConfig) -> float | None:
        broker_data = load_data.broker_data.get(broker)
        if broker_data is None:
            return None
        return broker_data.local_data.weighted_max_usage(conf) * 100

    def _sorted_brokers(self, scores: dict[str, float], conf: ServiceConfig) -> list[str]:
        if conf.emulator_avg_shedder_int_comparator:
            return java_list_sort(list(scores), lambda a, b: java_int(scores[a] - scores[b]))
        return sorted(scores, key=lambda b: java_double_key(scores[b]))

    def _forget(self, *brokers: str) -> None:
        for broker in brokers:
            self.hit_count_high.pop(broker, None)
            self.hit_count_low.pop(broker, None)

    def _find_broker_pairs(
        self, brokers: list[str], scores: dict[str, float], low: float, high: float
    ) -> list[tuple[str, str, float]]:
        """(min broker, max broker, score gap) pairs; updates the hit counters as Pulsar does."""
        pairs: list[tuple[str, str, float]] = []
        i, j = 0, len(brokers) - 1
        while i <= j:
            max_broker, min_broker = brokers[j], brokers[i]
            gap = scores[max_broker] - scores[min_broker]
            if gap < low:
                self._forget(max_broker, min_broker)
            else:
                pairs.append((min_broker, max_broker, gap))
                # Each increment is separate, so a middle broker paired with itself counts twice.
                for broker in (min_broker, max_broker):
                    self.hit_count_low[broker] = self.hit_count_low.get(broker, 0) + 1
                if gap < high:
                    self.hit_count_high.pop(max_broker, None)
                    self.hit_count_high.pop(min_broker, None)
                else:
                    for broker in (min_broker, max_broker):
                        self.hit_count_high[broker] = self.hit_count_high.get(broker, 0) + 1
            i += 1
            j -= 1
        return pairs

    def find_bundles_for_unloading_explained(
        self, load_data: LoadData, conf: ServiceConfig
    ) -> UnloadPlan:
        """The pairs and the scores, pairing, hit counters and bundle choice of every pair."""
        low = float(conf.load_balancer_avg_shedder_low_threshold)
        high = float(conf.load_balancer_avg_shedder_high_threshold)
        hit_count_high_threshold = conf.load_balancer_avg_shedder_hit_count_high_threshold
        hit_count_low_threshold = conf.load_balancer_avg_shedder_hit_count_low_threshold

        scores = {
            broker: broker_data.local_data.weighted_max_usage(conf) * 100
            for broker, broker_data in load_data.broker_data.items()
        }
        brokers = self._sorted_brokers(scores, conf)
        pairs = self._find_broker_pairs(brokers, scores, low, high)
        selected: list[tuple[str, str]] = []
        plan: dict[str, str] = {}
        pair_info: list[dict[str, Any]] = []
        explanation: dict[str, Any] = {
            "shedder": "AvgShedder",
            "scores": scores,
            "sorted": brokers,
            "low_threshold": low,
            "high_threshold": high,
            "hit_count_high_after_pairing": dict(self.hit_count_high),
            "hit_count_low_after_pairing": dict(self.hit_count_low),
            "pairs": pair_info,
        }

        if not pairs:
            self.hit_count_high.clear()
            self.hit_count_low.clear()
            explanation["skip"] = "no_pairs"
        shedding_view: dict[str, BundleData] | None = None
        for min_broker, max_broker, gap in pairs:
            info: dict[str, Any] = {"min_broker": min_broker, "max_broker": max_broker, "gap": gap}
            pair_info.append(info)
            # Java's short-circuit `!(a >= t) && ...` with computeIfAbsent: entries appear as 0.
            hit = (
                self.hit_count_high.setdefault(min_broker, 0) >= hit_count_high_threshold
                or self.hit_count_high.setdefault(max_broker, 0) >= hit_count_high_threshold
                or self.hit_count_low.setdefault(min_broker, 0) >= hit_count_low_threshold
                or self.hit_count_low.setdefault(max_broker, 0) >= hit_count_low_threshold
            )
            if not hit:
                info["skip"] = "hit_count_not_reached"
                continue
            self._forget(min_broker, max_broker)
            if shedding_view is None:
                shedding_view = load_data.bundle_data_for_load_shedding()
            self._select_bundles(
                load_data, conf, min_broker, max_broker, shedding_view, selected, plan, info
            )

        explanation["hit_count_high_after"] = dict(self.hit_count_high)
        explanation["hit_count_low_after"] = dict(self.hit_count_low)
        explanation["selected"] = [list(p) for p in selected]
        explanation["plan"] = dict(plan)
        self.plan = plan
        return UnloadPlan(selected, explanation)

    def _select_bundles(
        self,
        load_data: LoadData,
        conf: ServiceConfig,
        min_broker: str,
        max_broker: str,
        shedding_view: dict[str, BundleData],
        selected: list[tuple[str, str]],
        plan: dict[str, str],
        info: dict[str, Any],
    ) -> None:
        min_local = load_data.broker_data[min_broker].local_data
        max_local = load_data.broker_data[max_broker].local_data
        pct = conf.max_unload_percentage
        msg_required = (broker_msg_rate(max_local) - broker_msg_rate(min_local)) * pct
        thr_required = (broker_throughput(max_local) - broker_throughput(min_local)) * pct
        info.update(msg_rate_required=msg_required, throughput_required=thr_required)
        metric: Metric
        if msg_required > conf.min_unload_message:
            metric, remaining = "msg_rate", msg_required
        elif thr_required > conf.min_unload_message_throughput:
            metric, remaining = "throughput", thr_required
        else:
            info["skip"] = "below_min_unload"
            return
        info["metric"] = metric
        if len(max_local.bundles) <= 1:  # Pulsar only warns, then sheds what fits anyway
            info["warning"] = "sole_bundle" if max_local.bundles else "no_bundles"
        candidates = shedding_candidates(
            shedding_view, max_local, load_data.recently_unloaded_bundles, metric
        )
        chosen: list[str] = []
        for bundle, traffic in candidates:
            if traffic > 0 and traffic <= remaining:
                chosen.append(bundle)
                selected.append((max_broker, bundle))
                plan[bundle] = min_broker
                remaining -= traffic
        info["candidates"] = candidates_explained(candidates, chosen, metric)
        info["selected"] = chosen
        info["remaining"] = remaining

    def on_unload_attempt_completed(self, planned: list[tuple[str, str]]) -> None:
        """The plan lives for one shedding attempt (#26246)."""
        self.plan = {}

    # --- Placement ---------------------------------------------------------------------------------

    placement_reads_bundle_data = False  # placement reads broker data and its plan; shedding reads bundles

    def select_broker_explained(
        self,
        candidates: set[str],
        bundle_name: str | None,
        bundle_to_assign: BundleData,
        load_data: LoadData,
        conf: ServiceConfig,
    ) -> Selection:
        """With a bundle name (`select_broker_for_bundle`): the planned destination while it is a candidate
        and not overloaded (see module doc); without one (`select_broker`), or for a bundle without a plan:
        uncached random placement over the sorted candidates (None if there are none). The scores are
        those it compared: the planned broker's, and those of the healthy alternatives when it is
        overloaded."""
        if not candidates:
            return Selection(None)
        planned = self.plan.get(bundle_name) if bundle_name is not None else None
        if planned is None or planned not in candidates:
            return Selection(choose(self.rng, candidates))
        overload = conf.load_balancer_broker_overloaded_threshold_percentage
        planned_score = self._score(planned, load_data, conf)
        scores = {planned: planned_score} if planned_score is not None else None
        if planned_score is not None and planned_score > overload:
            healthy: dict[str, float] = {}
            for candidate in sorted(candidates):
                score = self._score(candidate, load_data, conf)
                if candidate != planned and score is not None and score <= overload:
                    healthy[candidate] = score
            if healthy:
                chosen = choose(self.rng, healthy)
                return Selection(chosen, {planned: planned_score, **healthy})
        return Selection(planned, scores)
