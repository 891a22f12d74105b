"""The service-unit state channel's types: its states, event types, errors, counters and listener.

Split out of `channel.py` (which re-exports them) so the channel actor and the channel owner's
housekeeping (`channel_owner.py`) share them without importing each other; names follow apache/pulsar
`extensions/channel/ServiceUnitStateChannelImpl.java` and its metrics.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import msgspec

from ..model.state import ServiceUnitState, ServiceUnitStateData

__all__ = [
    "BundleDeletedError",
    "ChannelCounters",
    "ChannelNotReadyError",
    "ChannelOwnerUnknownError",
    "ChannelState",
    "Counters",
    "EventType",
    "InFlightTimeoutError",
    "OwnerInactiveError",
    "StateChangeListener",
    "TracksBundles",
]

StateChangeListener = Callable[[str, ServiceUnitStateData | None, BaseException | None], None]
"""`StateChangeListener.handleEvent(serviceUnit, data, throwable)`: the unload/split managers and the
top-bundles reporter; called once the broker's own handling of the value is done (or failed)."""


@runtime_checkable
class TracksBundles(Protocol):
    """The owner of a StateChangeListener that acts on bundles no value names this broker for (the
    unload and split managers' in-flight waits): the channel hands it `watch(bundle)` /
    `unwatch(bundle)`, to call while it waits for a bundle, so the bundle's values reach it."""

    def track_with(self, watch: Callable[[str], None], unwatch: Callable[[str], None]) -> None: ...


class ChannelState(enum.Enum):
    """`ChannelState` (the ones the emulator goes through)."""

    CONSTRUCTED = "Constructed"
    STARTED = "Started"
    DISABLED = "Disabled"
    CLOSED = "Closed"


class EventType(enum.Enum):
    """`EventType`: the `event` label of `brk_sunit_state_chn_event_publish_ops_total`."""

    ASSIGN = "Assign"
    SPLIT = "Split"
    UNLOAD = "Unload"
    OVERRIDE = "Override"


class BundleDeletedError(Exception):
    """`getOwnerAsync` on a Deleted bundle, or a lookup waiting when it became Deleted."""


class InFlightTimeoutError(Exception):
    """`deferGetOwner`: the bundle was still in flight (or Deleted) when the wait ended."""


class OwnerInactiveError(Exception):
    """`getActiveOwnerAsync`: "The new owner <broker> is inactive." (not in the broker registry)."""


class ChannelNotReadyError(Exception):
    """`ServiceUnitNotReadyException` / "Invalid channel state": the channel is not started, or is
    disabled (its broker is shutting down) and dropped the lookup."""


class ChannelOwnerUnknownError(Exception):
    """`isChannelOwnerAsync`: "There is no channel owner now."."""


class Counters(msgspec.Struct):
    total: int = 0
    failure: int = 0


def _per_state() -> dict[ServiceUnitState, Counters]:
    return {s: Counters() for s in ServiceUnitState}


def _per_event() -> dict[EventType, Counters]:
    return {e: Counters() for e in EventType}


class ChannelCounters(msgspec.Struct, kw_only=True):
    """The counters `getMetrics()` renders as `pulsar_sunit_state_chn_*` (`brk_` in Pulsar's source)."""

    owner_lookup: dict[ServiceUnitState, Counters] = msgspec.field(default_factory=_per_state)
    handler: dict[ServiceUnitState, Counters] = msgspec.field(default_factory=_per_state)
    event_publish: dict[EventType, Counters] = msgspec.field(default_factory=_per_event)
    cleanup_errors: int = 0
    inactive_broker_cleanup: int = 0
    inactive_broker_cleanup_scheduled: int = 0
    inactive_broker_cleanup_ignored: int = 0
    inactive_broker_cleanup_cancelled: int = 0
    orphan_service_unit_cleanup: int = 0
    service_unit_tombstone_cleanup: int = 0
