"""The placement-strategy contract (Pulsar's ModularLoadManagerStrategy) and shared helpers.

The helpers shedders use as well (`choose`, `placement_usage`, `weighted_max_usage`) live in
`emulator.model.selection` and are re-exported here.

A strategy is a pure decision: it reads model Structs and an injected `random.Random`, keeps only its
own small state (e.g. an EMA per broker), and returns a broker id or None. Users write their own
against `PlacementStrategy` and load them with `strategies.create("pkg.module:Class", rng)`.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from emulator.model.selection import choose, placement_usage, weighted_max_usage

if TYPE_CHECKING:
    from emulator.model.config import ServiceConfig
    from emulator.model.loaddata import BundleData, LoadData

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
