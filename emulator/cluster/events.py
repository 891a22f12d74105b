"""The cluster's outward voice: actors emit events and decisions; observers subscribe.

`cluster/` imports no observer (metrics, recorder, invariant checks, logs). Instead every actor holds the
cluster's `ClusterEvents` and calls `emit(kind, **fields)`; listeners are plain callables registered by
whoever wants to watch. Each event is stamped with emulated time.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

from emulator.runtime import Clock

Listener = Callable[["Event"], None]


class Event(dict):
    """One emitted event: `kind`, `t` (emulated seconds) and the fields given by the emitter."""

    @property
    def kind(self) -> str:
        return self["kind"]


class ClusterEvents:
    """`now` reads the clock faster where the caller has a faster reader of the same time (an
    entered ActorSystem's `now`, bound to the loop's own time): one event per producer connecting
    in a storm."""

    def __init__(self, clock: Clock, now: Callable[[], float] | None = None) -> None:
        self._now = now if now is not None else clock.now
        self.listeners: list[Listener] = []
        self.counts: Counter[str] = Counter()
        self._seen: set[Any] = set()

    def first(self, key: Any) -> bool:
        """True the first time `key` is given: a fault that repeats every lookup is logged once per
        distinct error (and counted every time by its event)."""
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    def emit(self, kind: str, **fields: Any) -> None:
        self.counts[kind] += 1
        if not self.listeners:
            return
        event = Event(kind=kind, t=self._now(), **fields)
        for listener in tuple(self.listeners):
            listener(event)
