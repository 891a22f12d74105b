"""LeastResourceUsageWithWeight of the Extensible load manager (a different class from the Modular one).

Follows apache/pulsar `extensions/strategy/LeastResourceUsageWithWeight.java` @c3126c68 (`select`) and
LeastResourceUsageWithWeightTest @0524997. No history of its own: the score of a candidate is the
`weightedMaxEMA` its broker last published (BrokerLoadData keeps the EMA), so asking twice gives the
same scores. The average is over the candidates with load data; the best are those with
`score + loadBalancerAverageResourceUsageDifferenceThresholdPercentage/100 <= average`; one of them is
picked at random, or one of all candidates (those without load data included) when none is best.
A score above `loadBalancerBrokerOverloadedThresholdPercentage` is only logged in Pulsar, so it does
not exclude a broker here either.

Java picks with `ThreadLocalRandom` over a HashSet's order; we pick with the injected rng over the
sorted candidates, so a seed decides.

When the context says its load-data store is frozen (`broker_load_data_frozen`: one copy per change),
the scores and the candidates to pick from are kept for the same store object, candidates and
threshold: only the random pick is made again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from emulator.model.class_registry import DecisionBase
from strategies.base import choose

if TYPE_CHECKING:
    import random

    from emulator.loadmanagers.extensible.model.context import LoadManagerContext

__all__ = ["LeastResourceUsageWithWeight"]


class LeastResourceUsageWithWeight(DecisionBase):
    """`select(brokers, bundle, context)`; `last_scores` holds the scores of the last call. The rng is
    kept by `DecisionBase`, the constructor every built-in shares."""

    last_scores: dict[str, float] | None

    def __init__(self, rng: random.Random) -> None:
        super().__init__(rng)
        self.last_scores = None
        self.last_fallback = False
        # (store, candidates, threshold) -> (scores, the candidates to pick from, fallback), kept
        # while the context says its store never changes (a restart storm selects tens of
        # thousands of times between two load-data updates)
        self._last: tuple[object, frozenset[str], float, dict[str, float], list[str], bool] | None = None

    def select(self, brokers: set[str], bundle: str, context: LoadManagerContext) -> str | None:
        if not brokers:
            self.last_scores = {}
            self.last_fallback = False
            return None
        store = context.broker_load_data
        diff = context.conf.load_balancer_average_resource_usage_difference_threshold_percentage / 100.0
        last = self._last
        candidates = frozenset(brokers) if context.broker_load_data_frozen else None
        if candidates is not None and last is not None and last[0] is store and last[2] == diff \
                and last[1] == candidates:
            _, _, _, self.last_scores, ties, self.last_fallback = last
            return choose(self.rng, ties)
        scores = {b: store[b].weighted_max_ema for b in sorted(brokers) if b in store}
        self.last_scores = scores
        best: list[str] = []
        if scores:
            total = 0.0
            for score in scores.values():
                total += score
            avg = total / len(scores)
            best = [b for b, score in scores.items() if score + diff <= avg]
        self.last_fallback = not best   # none clearly below the average: any candidate
        ties = sorted(best or brokers)
        self._last = None if candidates is None else (store, candidates, diff, scores, ties, self.last_fallback)
        return choose(self.rng, ties)
