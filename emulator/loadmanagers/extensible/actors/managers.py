"""Waiting for an unload or a split to finish: Pulsar's UnloadManager and SplitManager.

Follows apache/pulsar `extensions/manager/UnloadManager.java` (@04453ebc: `waitAsync`, `handleEvent`,
`complete`; the latency summaries are left out) and `SplitManager.java` (@02c92744). Both are
state-change listeners of the broker's channel: an unload is done when the bundle reaches Free
(unload) or Owned (transfer), a split when the parent reaches Deleted (or Owned / Init); a
listener called with an error fails the wait. A wait that outlives `timeout` fails (Failure/Unknown).
The counters are counted as Pulsar counts them: the decision's own (label, reason) on success.

Both watch the bundles they wait for through the channel (`track_with`): a broker's channel hands its
listeners only the values that concern it (see `channel.py`).

Deviation (see `channel.py`): the wait is registered before the event is published, not after the
publish is acknowledged, so a result that arrives in the same emulated instant is not missed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import anyio

from ..model.counters import SplitCounter, UnloadCounter
from ..model.decisions import (
    SplitDecision,
    SplitLabel,
    SplitReason,
    UnloadDecision,
    UnloadLabel,
    UnloadReason,
)
from ..model.state import ServiceUnitState, ServiceUnitStateData, state_of

__all__ = ["SplitManager", "UnloadManager"]

_S = ServiceUnitState


class _InFlight:
    """`inFlightUnloadRequest` / `inFlightSplitRequests`: one future per bundle."""

    def __init__(self, done_states: frozenset[ServiceUnitState]) -> None:
        self.done_states = done_states
        self.requests: dict[str, asyncio.Future[None]] = {}
        self.trackers: list[tuple[Callable[[str], None], Callable[[str], None]]] = []

    def future(self, bundle: str) -> asyncio.Future[None]:
        future = self.requests.get(bundle)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            self.requests[bundle] = future
            for watch, _ in self.trackers:
                watch(bundle)
        return future

    def _forget(self, bundle: str) -> None:
        del self.requests[bundle]
        for _, unwatch in self.trackers:
            unwatch(bundle)

    async def wait(self, publish: Awaitable[object], bundle: str, timeout: float) -> None:
        """Publish, then wait for the bundle's future; on timeout it fails for every waiter
        (`future.orTimeout(timeout)`), and the request is forgotten once done."""
        future = self.future(bundle)
        try:
            await publish
            with anyio.move_on_after(timeout):
                await asyncio.shield(future)
            if not future.done():
                future.set_exception(TimeoutError(f"unload/split of {bundle} not done in {timeout} s"))
            future.result()
        finally:
            if self.requests.get(bundle) is future:
                self._forget(bundle)
            if future.done() and not future.cancelled():
                future.exception()

    def handle_event(self, bundle: str, data: ServiceUnitStateData | None, error: BaseException | None) -> None:
        future = self.requests.get(bundle)
        if future is None or future.done():
            return
        if error is not None:
            future.set_exception(error)
        elif state_of(data) in self.done_states:
            future.set_result(None)

    def close(self, what: str) -> None:
        for bundle, future in list(self.requests.items()):
            if not future.done():
                future.set_exception(RuntimeError(f"{what} bundle: {bundle}, but the manager already closed."))
                future.exception()
        for bundle in list(self.requests):
            self._forget(bundle)


class _Waits:
    """What UnloadManager and SplitManager share: a StateChangeListener over their in-flight waits
    (`handleEvent` completes a wait when the bundle reaches one of `done_states`), the channel's
    bundle tracking, and `close`."""

    _in_flight: _InFlight
    _what = ""

    def track_with(self, watch: Callable[[str], None], unwatch: Callable[[str], None]) -> None:
        """`TracksBundles`: the channel this listens on watches each bundle while it is waited for."""
        self._in_flight.trackers.append((watch, unwatch))

    def handle_event(self, bundle: str, data: ServiceUnitStateData | None, error: BaseException | None) -> None:
        """`handleEvent` (a StateChangeListener): a done state completes the bundle's wait."""
        self._in_flight.handle_event(bundle, data, error)

    def close(self) -> None:
        self._in_flight.close(self._what)


class UnloadManager(_Waits):
    """`UnloadManager`: `wait` for an unload published by the unload scheduler or an admin; Free or
    Owned completes it."""

    _what = "Unloading"

    def __init__(self, counter: UnloadCounter, clock: Callable[[], int]) -> None:
        self.counter = counter
        self.clock = clock
        self._in_flight = _InFlight(frozenset({_S.FREE, _S.OWNED}))

    async def wait(self, publish: Awaitable[object], bundle: str, decision: UnloadDecision,
                   timeout: float) -> bool:
        """`waitAsync(eventPubFuture, bundle, decision, timeout)`: True when the unload completed."""
        try:
            await self._in_flight.wait(publish, bundle, timeout)
        except Exception:
            self.counter.update(UnloadLabel.FAILURE, UnloadReason.UNKNOWN, self.clock())
            return False
        self.counter.update_decision(decision, self.clock())
        return True



class SplitManager(_Waits):
    """`SplitManager`: `wait` for a split published by the split scheduler or an admin; Deleted, Owned
    or Init completes it."""

    _what = "Splitting"

    def __init__(self, counter: SplitCounter, clock: Callable[[], int]) -> None:
        self.counter = counter
        self.clock = clock
        self._in_flight = _InFlight(frozenset({_S.DELETED, _S.OWNED, _S.INIT}))

    async def wait(self, publish: Awaitable[object], bundle: str, decision: SplitDecision,
                   timeout: float) -> bool:
        """`waitAsync`: True when the parent was split (counted with the decision's reason)."""
        try:
            await self._in_flight.wait(publish, bundle, timeout)
        except Exception:
            self.counter.update(SplitLabel.FAILURE, SplitReason.UNKNOWN, self.clock())
            return False
        self.counter.update_decision(decision, self.clock())
        return True

