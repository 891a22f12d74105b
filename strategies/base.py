"""The placement-strategy contract (Pulsar's ModularLoadManagerStrategy) and shared helpers.

A strategy is a pure decision: it reads model Structs and an injected `random.Random`, keeps only its
own small state (e.g. an EMA per broker), and returns a broker id or None. Users write their own
against `PlacementStrategy` and load them with `strategies.create("pkg.module:Class", rng)`.

The fast path, for any strategy that declares it: a class attribute `placement_reads_bundle_data =
False` says that `select_broker` reads only `load_data.broker_data` (local data, time averages,
preallocations) and `bundle_to_assign`, never another bundle's windows in `load_data.bundle_data`.
The load manager then skips making every bundle's windows current before the call (with the
columnar windows of a big cluster that is most of an assignment's cost); what the strategy reads
is the same. Undeclared (or True), every window is current when `select_broker` runs. Every
built-in placement declares False.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from emulator.model.config import ServiceConfig
    from emulator.model.loaddata import BundleData, LoadData, LocalBrokerData

__all__ = [
    "BasePlacementStrategy",
    "PlacementStrategy",
    "choose",
    "placement_usage",
    "select_broker_for_bundle",
    "weighted_max_usage",
]


@runtime_checkable
class PlacementStrategy(Protocol):
    """What the load manager calls. `last_scores` (optional) feeds the decision log."""

    def select_broker(
        self,
        candidates: set[str],
        bundle_to_assign: BundleData,
        load_data: LoadData,
        conf: ServiceConfig,
    ) -> str | None: ...

    def on_active_brokers_change(self, active_brokers: set[str]) -> None: ...


class BasePlacementStrategy:
    """Convenience base: stores the rng, no-op broker-change hook, default `select_broker_for_bundle`."""

    last_scores: dict[str, float] | None

    def __init__(self, rng: random.Random) -> None:
        if not isinstance(rng, random.Random):
            raise TypeError(f"rng must be a random.Random, got {type(rng).__name__}")
        self.rng = rng
        self.last_scores = None

    def select_broker(
        self,
        candidates: set[str],
        bundle_to_assign: BundleData,
        load_data: LoadData,
        conf: ServiceConfig,
    ) -> str | None:
        raise NotImplementedError

    def select_broker_for_bundle(
        self,
        candidates: set[str],
        bundle_name: str,
        bundle_to_assign: BundleData,
        load_data: LoadData,
        conf: ServiceConfig,
    ) -> str | None:
        """PR #26246's hook; every strategy but the newest AvgShedder ignores the bundle name."""
        return self.select_broker(candidates, bundle_to_assign, load_data, conf)

    def on_active_brokers_change(self, active_brokers: set[str]) -> None:
        return None

    placement_reads_bundle_data: bool = True
    """Set False in a subclass whose `select_broker` reads no bundle windows (module doc)."""


def select_broker_for_bundle(
    strategy: PlacementStrategy,
    candidates: set[str],
    bundle_name: str,
    bundle_to_assign: BundleData,
    load_data: LoadData,
    conf: ServiceConfig,
) -> str | None:
    """Call `select_broker_for_bundle` when the strategy has it, else `select_broker` (the Java default)."""
    hook = getattr(strategy, "select_broker_for_bundle", None)
    if hook is not None:
        return hook(candidates, bundle_name, bundle_to_assign, load_data, conf)
    return strategy.select_broker(candidates, bundle_to_assign, load_data, conf)


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
