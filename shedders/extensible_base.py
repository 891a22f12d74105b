"""The Extensible load manager's shedding contract (Pulsar's `extensions/scheduler/NamespaceUnloadStrategy`).

Not the Modular `LoadSheddingStrategy`: UnloadScheduler (the channel owner's, every
`loadBalancerSheddingIntervalMinutes`) calls

    Set<UnloadDecision> findBundlesForUnloading(LoadManagerContext context,
                                                Map<String, Long> recentlyUnloadedBundles,
                                                Map<String, Long> recentlyUnloadedBrokers)

Here:

    h = shedders.create_extensible(
        "org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder", rng)
    h.find_bundles_for_unloading(context, recently_unloaded_bundles, recently_unloaded_brokers)
        -> list[UnloadDecision]        # in decision order (Java returns a HashSet)
    h.counter                          # its UnloadCounter (Skip and Failure cells, load avg/std)
    h.last_explanation                 # the numbers behind the last call, plain JSON-able data

`recently_unloaded_bundles` / `_brokers` map a bundle / a source broker to the ms of its last completed
unload; the scheduler fills them (and drops bundles after `loadBalancerSheddingGracePeriodMinutes`).
The strategy may remove brokers from `recently_unloaded_brokers`, as TransferShedder does once their
load data is fresh enough. Success decisions are counted by the caller when their unload completes
(UnloadManager), not by the strategy.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from emulator.loadmanagers.extensible.model.context import LoadManagerContext
    from emulator.loadmanagers.extensible.model.counters import UnloadCounter
    from emulator.loadmanagers.extensible.model.decisions import UnloadDecision

__all__ = ["NamespaceUnloadStrategy"]


@runtime_checkable
class NamespaceUnloadStrategy(Protocol):
    """What the Extensible load manager's UnloadScheduler calls each cycle."""

    counter: UnloadCounter
    last_explanation: dict[str, Any] | None

    def find_bundles_for_unloading(
        self,
        context: LoadManagerContext,
        recently_unloaded_bundles: Mapping[str, int],
        recently_unloaded_brokers: MutableMapping[str, int],
    ) -> list[UnloadDecision]: ...
