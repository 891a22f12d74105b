"""One broker's TableView of a system topic: the latest value per key, and listeners.

Follows the Pulsar client's `TableViewImpl` (`handleMessage`, `forEachAndListen`, `refreshAsync`) as
the Extensible load manager builds it (`newTableViewBuilder(schema).topic(t).loadConf(
{"topicCompactionStrategyClassName": ...})`): every message is checked with the strategy against the
value held; a losing one is skipped (`handleSkippedMessage`, the skipped listeners here) and
touches nothing; otherwise a None value removes the key, any other replaces it, and the listeners run
in registration order with (key, value).

A view belongs to an actor (its broker's): every entry is applied as that actor's callback after its
delivery delay, in log order, and nothing is applied once the actor is dead (a crashed broker's view
stops). `start` reads what the topic keeps (compacted values, then the tail) before it tails, and
then calls `existing(key, value)` for each held item, as `tableview.forEach(existingItemListener)`.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, ItemsView, Iterator
from typing import Any, Generic, TypeVar

import anyio

from emulator.runtime import Actor

from .system_topic import KeepLeft, SystemTopic, TopicEntry

__all__ = ["Listener", "TableView"]

V = TypeVar("V")
Listener = Callable[[str, Any], None]


class TableView(Generic[V]):
    """`data` is the table; `listen` / `listen_skipped` add listeners; `start` / `close`."""

    def __init__(self, topic: SystemTopic, owner: Actor, *, strategy: KeepLeft | None = None) -> None:
        self.topic = topic
        self.owner = owner
        self.strategy = strategy
        self.data: dict[str, V] = {}
        self.applied_offset = -1
        self.started = False
        self._listeners: list[Listener] = []
        self._skipped: list[Listener] = []
        self._queue: deque[tuple[float, TopicEntry]] = deque()
        self._last_due = 0.0
        self._armed = False
        self._subscribed = False
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self.on_change: Callable[[str | None, Any], None] | None = None
        """Told every change of `data` as it happens: (key, new value or None when removed), and
        (None, None) when the view is closed (its data dropped). For an index kept beside the table."""

    def __repr__(self) -> str:
        return f"<TableView {self.topic.topic} of {self.owner.name} keys={len(self.data)}>"

    # ------------------------------------------------------------------ reading

    def get(self, key: str) -> V | None:
        return self.data.get(key)

    def items(self) -> ItemsView[str, V]:
        return self.data.items()

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def listen(self, listener: Listener) -> None:
        """`TableView.listen`: called with (key, value) for each applied message (value None = removed)."""
        self._listeners.append(listener)

    def listen_skipped(self, listener: Listener) -> None:
        """The strategy's `handleSkippedMessage`: called with (key, value) for each dropped message."""
        self._skipped.append(listener)

    # ------------------------------------------------------------------ lifecycle

    async def start(self, existing: Listener | None = None) -> None:
        """`createAsync()` then `forEach(existing)`: subscribe, read what the topic keeps (after one
        delivery draw), then tail; entries appended meanwhile are applied after that first read."""
        if self._subscribed:
            raise RuntimeError(f"{self!r} is already started; close() it before starting it again")
        self._subscribed = True
        first = self.topic.subscribe(self)
        await anyio.sleep(self.topic.first_read_delay())
        for entry in first:
            self._apply(entry, notify=False)
        self.started = True
        if existing is not None:
            for key, value in list(self.data.items()):
                existing(key, value)
        self._arm()

    def close(self) -> None:
        """`TableView.close()`: stop reading; the data held is dropped with the view."""
        self.topic.unsubscribe(self)
        self._subscribed = False
        self.started = False
        self._queue.clear()
        self.data = {}
        self.applied_offset = -1
        if self.on_change is not None:
            self.on_change(None, None)

    async def refresh(self, timeout: float) -> bool:
        """`refreshAsync()` bounded by `timeout` seconds: wait until every entry the topic held when
        called is applied. True if caught up in time."""
        target = self.topic.last_offset
        if self.applied_offset >= target:
            return True
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((target, future))
        with anyio.move_on_after(timeout):
            await future
            return True
        return False

    # ------------------------------------------------------------------ delivery (TopicReader)

    def deliver(self, entry: TopicEntry, delay: float) -> None:
        now = self.owner.now
        due = max(self._last_due, now + delay)
        self._last_due = due
        self._queue.append((due, entry))
        self._arm()

    def _arm(self) -> None:
        if self._armed or not self._queue or not self.started:
            return
        self._armed = True
        self.owner.call_later(max(0.0, self._queue[0][0] - self.owner.now), self._drain)

    def _drain(self) -> None:
        self._armed = False
        now = self.owner.now
        queue = self._queue
        while queue and queue[0][0] <= now and self.started:
            _, entry = queue.popleft()
            self._apply(entry, notify=True)
        self._arm()

    def _apply(self, entry: TopicEntry, *, notify: bool) -> None:
        if entry.offset > self.applied_offset:
            self.applied_offset = entry.offset
        key, value = entry.key, entry.value
        strategy = self.strategy
        if strategy is None:
            dropped = False
        elif entry.dropped is not None and strategy is self.topic.strategy:
            dropped = entry.dropped   # the topic's verdict: the same values before it as here
        else:
            dropped = bool(strategy(self.data.get(key), value))
        if dropped:
            if notify:
                for listener in self._skipped:
                    listener(key, value)
        else:
            if value is None:
                self.data.pop(key, None)
            else:
                self.data[key] = value
            if self.on_change is not None:
                self.on_change(key, value)
            if notify:
                for listener in self._listeners:
                    listener(key, value)
        if self._waiters:
            done = [w for w in self._waiters if w[0] <= self.applied_offset]
            if done:
                self._waiters = [w for w in self._waiters if w[0] > self.applied_offset]
                for _, future in done:
                    if not future.done():
                        future.set_result(None)
