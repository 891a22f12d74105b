"""The Extensible load manager's placement contract (Pulsar's `extensions/strategy/BrokerSelectionStrategy`).

Not the Modular `PlacementStrategy`: ExtensibleLoadManagerImpl calls
`Optional<String> select(Set<String> brokers, ServiceUnitId bundle, LoadManagerContext context)`
(BrokerSelectionStrategy.java @0ba1071d) with the candidates its filter pipeline left, for a new
assignment, an orphan's re-assignment and a transfer's destination check. Here:

    s = strategies.create_extensible(
        "org.apache.pulsar.broker.loadbalance.extensions.strategy.LeastResourceUsageWithWeight", rng)
    s.select(candidates: set[str], bundle: str, context: LoadManagerContext) -> str | None

`context` (emulator.loadmanagers.extensible.model.context) carries the configuration, the broker load-data store
and the clock. None is Pulsar's `Optional.empty()` (no candidate). `last_scores` (optional) feeds
the decision log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from emulator.loadmanagers.extensible.model.context import LoadManagerContext

__all__ = ["BrokerSelectionStrategy"]


@runtime_checkable
class BrokerSelectionStrategy(Protocol):
    """What the Extensible load manager calls to pick a bundle's owner among filtered candidates."""

    def select(self, brokers: set[str], bundle: str, context: LoadManagerContext) -> str | None: ...
