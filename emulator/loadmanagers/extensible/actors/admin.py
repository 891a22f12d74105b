"""One broker's Extensible admin operations through the service-unit state channel: an unload (or a
transfer), a split and a scenario's stated owner; a part of ExtensibleLoadManagerWrapper
(extensible_wrapper.py), and what the broker asks of its ChannelOwnership capability
(emulator/cluster/load_manager_capabilities.py) for those admin calls.

Follows apache/pulsar `ExtensibleLoadManagerImpl.unloadNamespaceBundleAsync` and
`splitNamespaceBundleAsync` (an Admin decision published to the channel, waited for by the
UnloadManager / SplitManager at most `namespaceBundleUnloadingTimeoutMs`). A mixin of the wrapper; the
fields it reads are declared here and set by the wrapper's constructor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emulator.cluster.messages import AdminError
from emulator.model.bundles import parse_bundle, split_boundaries

from ..model.counters import UnloadCounter
from ..model.decisions import (
    Split,
    SplitDecision,
    SplitLabel,
    SplitReason,
    Unload,
    UnloadDecision,
    UnloadLabel,
    UnloadReason,
)
from .channel import ServiceUnitStateChannel
from .managers import SplitManager, UnloadManager

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.broker import Broker

__all__ = ["ExtensibleAdmin"]


class ExtensibleAdmin:
    """Admin unload, split and stated assignment through the channel (see the module docstring)."""

    broker: "Broker"
    state: str
    channel: ServiceUnitStateChannel | None
    unload_manager: UnloadManager
    split_manager: SplitManager
    unload_counter: UnloadCounter

    if TYPE_CHECKING:  # pragma: no cover
        def _now_ms(self) -> int: ...   # the wrapper's

    async def unload_namespace_bundle(self, bundle: str, destination: str | None = None) -> dict[str, Any]:
        """unloadNamespaceBundleAsync: an Admin unload (a transfer with a destination) through the
        channel, waited for at most `namespaceBundleUnloadingTimeoutMs`."""
        channel = self._running_channel()
        owner = channel.view.get(bundle)
        source = owner.dst_broker if owner is not None and owner.dst_broker else None
        if source is None or owner is None or owner.state.value != "Owned":
            raise AdminError(f"Namespace bundle: {bundle} is not owned by any broker.")
        if destination is not None and source.endswith(destination):
            raise AdminError(f"Namespace bundle: {bundle} own by {source}, cannot be transfer to same broker.")
        decision = UnloadDecision(unload=Unload(source_broker=source, service_unit=bundle,
                                                dest_broker=destination),
                                  label=UnloadLabel.SUCCESS, reason=UnloadReason.ADMIN)
        timeout = self.broker.conf.namespace_bundle_unloading_timeout_ms / 1000.0
        assert decision.unload is not None
        done = await self.unload_manager.wait(channel.publish_unload(decision.unload), bundle, decision, timeout)
        if not done:
            raise AdminError(f"Failed to unload {bundle} within {timeout:g} s")
        self.unload_counter.update_unload_broker_count(1, self._now_ms())
        return {"bundle": bundle, "source": source, "destination": destination}

    async def split_namespace_bundle(self, bundle: str) -> dict[str, Any]:
        """splitNamespaceBundleAsync: an Admin split through the channel (children by the default
        algorithm's boundaries, no destination)."""
        channel = self._running_channel()
        b = self.broker
        data = channel.view.get(bundle)
        if data is None or data.state.value != "Owned" or not data.dst_broker:
            raise AdminError(f"Namespace bundle: {bundle} is not owned by any broker.")
        namespace, lower, upper = parse_bundle(bundle)
        owned = b.owned.get(bundle)
        topics = b._topic_stats(owned.actor) if owned is not None and owned.actor is not None else {}
        algorithm = b.conf.default_namespace_bundle_split_algorithm
        try:   # getSplitBoundary with the default algorithm
            bounds = split_boundaries(algorithm, lower, upper, topics, b.conf)
        except ValueError as e:
            raise AdminError(str(e)) from None
        if not bounds:
            raise AdminError(f"No valid boundary to split bundle {bundle} ({algorithm})")
        edges = [lower, *bounds, upper]
        children: dict[str, str | None] = {f"0x{lo:08x}_0x{hi:08x}": None for lo, hi in zip(edges, edges[1:])}
        decision = SplitDecision(split=Split(service_unit=bundle, source_broker=data.dst_broker,
                                             split_service_unit_to_dest_broker=children),
                                 label=SplitLabel.SUCCESS, reason=SplitReason.ADMIN)
        timeout = b.conf.namespace_bundle_unloading_timeout_ms / 1000.0
        assert decision.split is not None
        done = await self.split_manager.wait(channel.publish_split(decision.split), bundle, decision, timeout)
        if not done:
            raise AdminError(f"Failed to split {bundle} within {timeout:g} s")
        return {"bundle": bundle, "children": [f"{namespace}/{r}" for r in children]}

    async def assign_stated(self, bundle: str, broker: str) -> dict[str, Any]:
        """A scenario's owner at t = 0: (Assigning, dst = `broker`) written to the channel, as a lookup
        that selected it would write, waited for until Owned."""
        channel = self._running_channel()
        owner = await channel.publish_assign(bundle, broker)
        return {"bundle": bundle, "broker": owner}

    def _running_channel(self) -> ServiceUnitStateChannel:
        if self.channel is None or self.state != "RUNNING":
            raise AdminError(f"The load manager of {self.broker.broker_id} is not running")
        return self.channel

    async def wait_assigned(self, bundle: str) -> str | None:
        """The bundle's owner once the channel says so (tests)."""
        channel = self._running_channel()
        return await channel.get_owner(bundle)
