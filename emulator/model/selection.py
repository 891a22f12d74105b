"""What placement strategies and shedders both use to decide: Java's "any" of tied brokers, made
deterministic, the usage figures the overload gates compare, and `BasePlacementStrategy`, the base of
every built-in placement, AvgShedder (a shedder that also places) included.

In the model layer so that `strategies/` and `shedders/` (one layer up, side by side) share them
without importing each other; `strategies.base` re-exports them for strategies written against it.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import msgspec

from .class_registry import DecisionBase, explains

if TYPE_CHECKING:
    from .config import ServiceConfig
    from .loaddata import BundleData, LoadData, LocalBrokerData

__all__ = ["ALL_OVERLOADED_RANDOM", "BasePlacementStrategy", "Selection", "UsageHistory", "choose",
           "placement_usage", "weighted_max_usage"]


class Selection(msgspec.Struct, frozen=True):
    """A placement with the numbers behind it: what the assignment event carries.

    `scores`: broker -> the score the strategy compared (+inf: excluded as overloaded), for the
    candidates it scored; `explanation`: anything else JSON-able it wants in the decision log;
    `fallback`: the strategy's own last resort, when it took one (`ALL_OVERLOADED_RANDOM`)."""

    broker: str | None
    scores: dict[str, float] | None = None
    explanation: dict[str, Any] | None = None
    fallback: str | None = None


ALL_OVERLOADED_RANDOM = "all_overloaded_random"
"""A placement's fallback: no candidate qualified, so the pick is random among all of them (Pulsar's
"Assign randomly as all brokers are overloaded" in LeastResourceUsageWithWeight and "All brokers are
overloaded. Assign randomly" in LeastLongTermMessageRate)."""


def choose(rng: random.Random, ties: Iterable[str]) -> str:
    """Java picks "any" tied broker (ThreadLocalRandom over HashSet order); we pick over sorted ids."""
    return rng.choice(sorted(ties))


def weighted_max_usage(local: LocalBrokerData, conf: ServiceConfig) -> float:
    """LocalBrokerData.getMaxResourceUsageWithWeight with the 4 configured weights (PIP-358), a fraction."""
    return local.weighted_max_usage(conf)


def placement_usage(local: LocalBrokerData, conf: ServiceConfig) -> float:
    """The usage the overload gates of LeastLongTermMessageRate and MLMI's retry compare.

    PIP-358 weighted usage; `emulator_unweighted_max_usage` selects the pre-PIP-358 unweighted max.
    """
    if conf.emulator_unweighted_max_usage:
        return local.max_resource_usage()
    return local.weighted_max_usage(conf)


class BasePlacementStrategy(DecisionBase):
    """The base of the built-in placements (`strategies.BasePlacementStrategy`; AvgShedder's too): the rng
    and the no-op broker-change hook (`DecisionBase`), and every plain method from the one a subclass
    writes, `select_broker_explained` (or `select_broker` alone)."""

    def select_broker_explained(
        self,
        candidates: set[str],
        bundle_name: str | None,
        bundle_to_assign: BundleData,
        load_data: LoadData,
        conf: ServiceConfig,
    ) -> Selection:
        """The choice and the numbers behind it: what a subclass writes (see `ExplainedPlacementStrategy`)."""
        raise NotImplementedError(f"{type(self).__qualname__} defines neither select_broker_explained nor "
                                  "select_broker; a placement strategy writes one of them")

    def select_broker(
        self,
        candidates: set[str],
        bundle_to_assign: BundleData,
        load_data: LoadData,
        conf: ServiceConfig,
    ) -> str | None:
        """The broker of `select_broker_explained` (no bundle name: ModularLoadManagerStrategy's call)."""
        return self.select_broker_explained(candidates, None, bundle_to_assign, load_data, conf).broker

    def select_broker_for_bundle(
        self,
        candidates: set[str],
        bundle_name: str,
        bundle_to_assign: BundleData,
        load_data: LoadData,
        conf: ServiceConfig,
    ) -> str | None:
        """PR #26246's hook: the broker of `select_broker_explained` for this bundle when that method speaks
        for the class, else `select_broker` (Java's default, which ignores the name). Only the newest
        AvgShedder reads the name."""
        cls: type = type(self)
        if explains(cls, "select_broker_explained", "select_broker"):
            return self.select_broker_explained(candidates, bundle_name, bundle_to_assign, load_data, conf).broker
        return self.select_broker(candidates, bundle_to_assign, load_data, conf)

    placement_reads_bundle_data: bool = True
    """Set False in a subclass whose `select_broker` reads no bundle windows (`strategies.base`'s doc)."""


class UsageHistory(DecisionBase):
    """`history`: broker -> EMA of its usage (a fraction), weighted by
    `loadBalancerHistoryResourcePercentage`, as LeastResourceUsageWithWeight and ThresholdShedder each
    keep it; a broker that leaves is forgotten, so a returning one starts from its usage. Put it first
    among the bases: `class ThresholdShedder(UsageHistory, BaseShedder)`."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__(rng)
        self.history: dict[str, float] = {}

    def update_history(self, broker: str, usage: float, conf: ServiceConfig, *, restart: bool = False) -> float:
        """One EMA step of `broker` (its usage alone when it has no history, or `restart`); the new value."""
        h = conf.load_balancer_history_resource_percentage
        previous = None if restart else self.history.get(broker)
        value = usage if previous is None else previous * h + (1 - h) * usage
        self.history[broker] = value
        return value

    def on_active_brokers_change(self, active_brokers: set[str]) -> None:
        """Forget the EMA of brokers that left."""
        for broker in [b for b in self.history if b not in active_brokers]:
            del self.history[broker]
