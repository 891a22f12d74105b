"""LeastLongTermMessageRate: the default placement (§5.1, PIP-358 weighted usage).

Score = long-term msg rate in+out of the broker's bundles (TimeAverageBrokerData) plus that of its
preallocated bundles, so every bundle assigned since the broker's last report adds its expected load
(100 msg/s for a never-seen bundle). A broker whose weighted max usage is strictly above the overload
threshold scores +∞. The lowest score wins; exact ties are broken by the rng.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from emulator.model.selection import ALL_OVERLOADED_RANDOM, Selection, choose, placement_usage
from strategies.base import BasePlacementStrategy

if TYPE_CHECKING:
    from emulator.model.config import ServiceConfig
    from emulator.model.loaddata import BrokerData, BundleData, LoadData

__all__ = ["LeastLongTermMessageRate", "broker_score"]


def broker_score(broker_data: BrokerData, conf: ServiceConfig) -> float:
    """LeastLongTermMessageRate.getScore: +∞ when overloaded, else expected long-term msg/s."""
    overload_threshold = conf.load_balancer_broker_overloaded_threshold_percentage / 100.0
    if placement_usage(broker_data.local_data, conf) > overload_threshold:
        return math.inf
    total = broker_data.preallocated_long_term_msg_rate()
    tad = broker_data.time_average_data
    return total + (tad.long_term_msg_rate_in + tad.long_term_msg_rate_out)


def _scorer(conf: ServiceConfig) -> Callable[[BrokerData], float]:
    """`broker_score` for one selection: the threshold and the usage's weights read once (a leader
    of 1,000 brokers scores every one of them on every assignment); the same operations per broker."""
    overload_threshold = conf.load_balancer_broker_overloaded_threshold_percentage / 100.0
    unweighted = conf.emulator_unweighted_max_usage
    weights = conf.resource_weights

    def score(broker_data: BrokerData) -> float:
        local = broker_data.local_data
        usage = local.max_resource_usage() if unweighted else local.max_resource_usage_with_weight(*weights)
        if usage > overload_threshold:
            return math.inf
        total = broker_data.preallocated_long_term_msg_rate()
        tad = broker_data.time_average_data
        return total + (tad.long_term_msg_rate_in + tad.long_term_msg_rate_out)

    return score


class LeastLongTermMessageRate(BasePlacementStrategy):
    """Least expected long-term message rate; a candidate without BrokerData is skipped.

    Java would throw a NullPointerException on such a candidate; the emulator skips it instead, and
    returns None when no candidate has data. When every scored broker is at +∞ they all tie (Java's
    `score == minScore` with both +∞), i.e. the pick is random among all scored candidates.
    """

    placement_reads_bundle_data = False  # broker data and the bundle to assign only

    def select_broker_explained(
        self,
        candidates: set[str],
        bundle_name: str | None,
        bundle_to_assign: BundleData,
        load_data: LoadData,
        conf: ServiceConfig,
    ) -> Selection:
        """The choice and every scored candidate's score (the bundle's name plays no part)."""
        scores: dict[str, float] = {}
        best: list[str] = []
        min_score = math.inf
        score_of = _scorer(conf)   # broker_score with the conf read once per selection, not per broker
        for broker in sorted(candidates):
            broker_data = load_data.broker_data.get(broker)
            if broker_data is None:
                continue
            score = score_of(broker_data)
            scores[broker] = score
            if score < min_score:
                best = [broker]
                min_score = score
            elif score == min_score:
                best.append(broker)
        if not best:
            best = list(scores)
        if not best:
            return Selection(None, scores)
        if math.isinf(min_score):   # every scored broker overloaded: "Assign randomly in this case."
            return Selection(choose(self.rng, best), scores, fallback=ALL_OVERLOADED_RANDOM)
        return Selection(choose(self.rng, best), scores)
