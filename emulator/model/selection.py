"""What placement strategies and shedders both use to decide: Java's "any" of tied brokers, made
deterministic, and the usage figures the overload gates compare.

In the model layer so that `strategies/` and `shedders/` (one layer up, side by side) share them
without importing each other; `strategies.base` re-exports them for strategies written against it.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from .config import ServiceConfig
    from .loaddata import LocalBrokerData

__all__ = ["ALL_OVERLOADED_RANDOM", "Selection", "choose", "placement_usage", "weighted_max_usage"]


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
