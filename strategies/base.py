"""The placement-strategy contract (Pulsar's ModularLoadManagerStrategy) and shared helpers.

The helpers and data shedders use as well (`Selection`, `choose`, `placement_usage`,
`weighted_max_usage`, and `BasePlacementStrategy`, which AvgShedder, a shedder that also places,
subclasses) live in `emulator.model.selection` and are re-exported here.

A strategy is a pure decision: it reads model Structs and an injected `random.Random`, keeps only its
own small state (e.g. an EMA per broker), and returns a broker id or None. Users write their own
against `PlacementStrategy` and load them with `strategies.create("pkg.module:Class", rng)`.

The numbers behind a choice (each candidate's score) are returned, not kept on the strategy: a
strategy may also implement `ExplainedPlacementStrategy.select_broker_explained`, which returns a
`Selection` (broker, scores, explanation); the load manager calls it through `select_broker_explained`
below when it is there and speaks for the class, else plain `select_broker` (a `Selection` without
scores). The built-ins implement it, and only it: `BasePlacementStrategy.select_broker` is its
`broker`, so a new strategy on the base writes one method, `select_broker_explained` (or, without
scores, only `select_broker`).

The fast path, for any strategy that declares it: a class attribute `placement_reads_bundle_data =
False` says that `select_broker` reads only `load_data.broker_data` (local data, time averages,
preallocations) and `bundle_to_assign`, never another bundle's windows in `load_data.bundle_data`.
The load manager then skips making every bundle's windows current before the call (with the
columnar windows of a big cluster that is most of an assignment's cost); what the strategy reads
is the same. Undeclared (or True), every window is current when `select_broker` runs. Every
built-in placement declares False.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from emulator.model.class_registry import explains
from emulator.model.selection import (BasePlacementStrategy, Selection, choose, placement_usage,
                                      weighted_max_usage)

if TYPE_CHECKING:
    from emulator.model.config import ServiceConfig
    from emulator.model.loaddata import BundleData, LoadData

__all__ = [
    "BasePlacementStrategy",
    "ExplainedPlacementStrategy",
    "PlacementStrategy",
    "Selection",
    "choose",
    "placement_usage",
    "select_broker_explained",
    "select_broker_for_bundle",
    "weighted_max_usage",
]


@runtime_checkable
class PlacementStrategy(Protocol):
    """What the load manager calls (see `ExplainedPlacementStrategy` for the scores)."""

    def select_broker(
        self,
        candidates: set[str],
        bundle_to_assign: BundleData,
        load_data: LoadData,
        conf: ServiceConfig,
    ) -> str | None: ...

    def on_active_brokers_change(self, active_brokers: set[str]) -> None: ...


@runtime_checkable
class ExplainedPlacementStrategy(Protocol):
    """Optional: a placement that also says why. `bundle_name` is PR #26246's (see
    `select_broker_for_bundle`); `select_broker` must give the same broker as this method's."""

    def select_broker_explained(
        self,
        candidates: set[str],
        bundle_name: str | None,
        bundle_to_assign: BundleData,
        load_data: LoadData,
        conf: ServiceConfig,
    ) -> Selection: ...


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


def select_broker_explained(
    strategy: PlacementStrategy,
    candidates: set[str],
    bundle_name: str,
    bundle_to_assign: BundleData,
    load_data: LoadData,
    conf: ServiceConfig,
) -> Selection:
    """The strategy's `select_broker_explained` when it speaks for the class (see `explains`), else
    `select_broker_for_bundle` as a `Selection` without scores."""
    if explains(type(strategy), "select_broker_explained", "select_broker", "select_broker_for_bundle"):
        return strategy.select_broker_explained(  # type: ignore[attr-defined]
            candidates, bundle_name, bundle_to_assign, load_data, conf)
    return Selection(select_broker_for_bundle(
        strategy, candidates, bundle_name, bundle_to_assign, load_data, conf))

