"""Assignment by any broker: a lookup that finds no owner picks one and writes it to the channel.

Follows `ExtensibleLoadManagerImpl.assign` (@00e97aef) for a bundle of an ordinary namespace:
`dedupeLookupRequest` (one assignment in flight per bundle on this broker),
`getOrSelectOwnerAsync` (the channel's owner if there is one: AssignCounter Skip; else `selectAsync`
and `publishAssignEventAsync`: Success, and the lookup waits on the channel for the Owned value;
no broker to select: an error, counted Empty). The internal system topics (assigned to the channel
owner) and the heartbeat / SLA-monitor namespaces (assigned to their own broker) are the caller's
business.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from ..model.counters import AssignCounter

from .channel import ServiceUnitStateChannel
from .host import ChannelHost

__all__ = ["Assigner", "AssignmentFailed", "NoBrokerSelectedError"]


class AssignmentFailed(RuntimeError):
    """`IllegalStateException("Failed to get or assign the owner for bundle:...")`: the channel answered
    no owner after an assignment."""


class NoBrokerSelectedError(Exception):
    """`IllegalStateException("Failed to select the new owner broker for bundle: ...")`."""


class Selector(Protocol):
    """What the Assigner asks to pick a broker: `ExtensibleLoadManagerImpl.selectAsync`."""

    async def select(self, bundle: str, excluded: frozenset[str]) -> str | None: ...


class Assigner:
    """`assign(bundle)` on one broker, through its channel."""

    def __init__(self, channel: ServiceUnitStateChannel, host: ChannelHost | Selector,
                 counter: AssignCounter | None = None,
                 on_assigned: Callable[[str, str | None, str | None], None] | None = None) -> None:
        self.channel = channel
        self.host = host
        self.counter = counter if counter is not None else AssignCounter()
        self.on_assigned = on_assigned
        """Told (bundle, selected broker or None, the owner the channel answered) after each selection."""
        self._requests: dict[str, asyncio.Future[str]] = {}

    async def assign(self, bundle: str) -> str:
        """The bundle's owner broker, assigning one if it has none (the same answer for every
        concurrent caller on this broker)."""
        future = self._requests.get(bundle)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            self._requests[bundle] = future
            self.channel.start_soon(self._resolve, bundle, future)
        return await asyncio.shield(future)

    async def _resolve(self, bundle: str, future: asyncio.Future[str]) -> None:
        try:
            owner = await self._get_or_select_owner(bundle)
            if owner is None:
                raise AssignmentFailed(f"Failed to get or assign the owner for bundle:{bundle}")
            future.set_result(owner)
        except Exception as exc:
            future.set_exception(exc)
            future.exception()
        finally:
            if self._requests.get(bundle) is future:
                del self._requests[bundle]

    async def _get_or_select_owner(self, bundle: str) -> str | None:
        owner = await self.channel.get_owner(bundle)
        if owner is not None:
            self.counter.increment_skip()
            return owner
        selected = await self.host.select(bundle, frozenset())
        if selected is None:
            self.counter.increment_empty()
            if self.on_assigned is not None:
                self.on_assigned(bundle, None, None)
            raise NoBrokerSelectedError(f"Failed to select the new owner broker for bundle: {bundle}")
        self.counter.increment_success()
        owner = await self.channel.publish_assign(bundle, selected)
        if self.on_assigned is not None:
            self.on_assigned(bundle, selected, owner)
        return owner
