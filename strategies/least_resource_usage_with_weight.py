"""LeastResourceUsageWithWeight, current version (§5.2).

Keeps an EMA of each broker's weighted max usage (history weight `load_balancer_history_resource_percentage`)
and picks at random among the brokers at least `..._difference_threshold_percentage` points below the
candidates' average. Overload is not an exclusion here (Pulsar only logs it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from emulator.model.selection import (ALL_OVERLOADED_RANDOM, Selection, UsageHistory, choose,
                                      weighted_max_usage)
from strategies.base import BasePlacementStrategy

if TYPE_CHECKING:
    from emulator.model.config import ServiceConfig
    from emulator.model.loaddata import BrokerData, BundleData, LoadData

__all__ = ["LeastResourceUsageWithWeight"]

MAX_RESOURCE_USAGE = 1.0


class LeastResourceUsageWithWeight(UsageHistory, BasePlacementStrategy):
    """EMA-of-usage placement. Candidates without BrokerData are skipped (Java would throw).

    The history is updated for every scored candidate on every call, so asking twice moves the EMA
    twice, as in Pulsar.
    """

    placement_reads_bundle_data = False  # broker data and the bundle to assign only

    def _update_and_get(self, broker: str, broker_data: BrokerData, conf: ServiceConfig) -> float:
        local = broker_data.local_data
        # A restarted or idle broker: its current usage replaces the history.
        restart = len(local.bundles) == 0 or (local.msg_rate_in == 0 and local.msg_rate_out == 0)
        return self.update_history(broker, weighted_max_usage(local, conf), conf, restart=restart)

    def select_broker_explained(
        self,
        candidates: set[str],
        bundle_name: str | None,
        bundle_to_assign: BundleData,
        load_data: LoadData,
        conf: ServiceConfig,
    ) -> Selection:
        """The choice and the scored candidates' EMAs after this call's update."""
        scored: list[str] = []
        total = 0.0
        for broker in sorted(candidates):
            broker_data = load_data.broker_data.get(broker)
            if broker_data is None:
                continue
            total += self._update_and_get(broker, broker_data, conf)
            scored.append(broker)
        scores = {b: self.history[b] for b in scored}
        if not scored:
            return Selection(None, scores)
        avg = total / len(scored)
        diff = conf.load_balancer_average_resource_usage_difference_threshold_percentage / 100.0
        best = [b for b in scored if self.history.get(b, MAX_RESOURCE_USAGE) + diff <= avg]
        if not best:   # "Assign randomly as all brokers are overloaded."
            return Selection(choose(self.rng, scored), scores, fallback=ALL_OVERLOADED_RANDOM)
        return Selection(choose(self.rng, best), scores)

    def warm_up(self, load_data: LoadData, conf: ServiceConfig) -> None:
        """A scenario's warm start: the history as after the warm time's steady traffic, each broker's
        weighted max usage now (the EMA's fixed point: a steady usage is its own next value). Without
        it the first decision after the warm start would score from an empty history, as only a
        cold cluster's first lookup does."""
        for broker, broker_data in sorted(load_data.broker_data.items()):
            self.history[broker] = weighted_max_usage(broker_data.local_data, conf)
