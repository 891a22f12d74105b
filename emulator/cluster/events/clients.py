"""Client events: a producer or consumer handle connected, lost, reconnected, failed or closed."""

from __future__ import annotations

from .base import Event

class HandleEvent(Event, kw_only=True):
    """A producer or consumer handle of a client: `handle` is its id within `client`."""

    abstract = True
    client: str
    topic: str
    handle: int


class HandleConnected(HandleEvent, kw_only=True):
    """First attach of a handle (the lookup and the connect succeeded)."""

    kind = "handle_connected"
    broker: str


class HandleDisconnected(HandleEvent, kw_only=True):
    kind = "handle_disconnected"
    reason: str


class HandleReconnected(HandleEvent, kw_only=True):
    """Attached again after a disconnect, `unavailable` seconds later."""

    kind = "handle_reconnected"
    broker: str
    unavailable: float


class HandleFailed(HandleEvent, kw_only=True):
    """The creation gave up past the operation timeout; the handle was wanted since `since`."""

    kind = "handle_failed"
    reason: str
    since: float


class HandleClosed(HandleEvent, kw_only=True):
    """Closed by its application (the workload's consumer jitter)."""

    kind = "handle_closed"
    reason: str
