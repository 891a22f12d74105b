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

A view made with a `tag` (the channel's, tagged with its broker) reads the topic's shared copy
instead of holding its own (see `system_topic`): only the entries that concern it are delivered to
it one by one (after its own delivery draw, with the listeners run), and for a key with such an
entry pending or applied ahead of the shared copy it keeps its own value (`_private`), so what it
reads of the key changes when it applies the entry, as a view of its own would; otherwise it reads
the shared copy. `watch` / `unwatch` a key to have its entries delivered one by one (the listeners
of a view hear only the entries delivered to it, and `existing` only the held values that name it).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, ItemsView, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

import anyio

from emulator.runtime import Actor

from .system_topic import KeepLeft, SystemTopic, TopicEntry

__all__ = ["Listener", "TableView"]

V = TypeVar("V")
Listener = Callable[[str, Any], None]
_ABSENT: Any = object()
"""A private value that says the key is not in the table."""


class _Overlay(Mapping[str, Any]):
    """The shared copy with a tagged view's own values in front (the shared copy's order, then the
    view's own keys the shared copy lacks)."""

    __slots__ = ("private", "shared")

    def __init__(self, shared: dict[str, Any], private: dict[str, tuple[int, Any]]) -> None:
        self.shared = shared
        self.private = private

    def __getitem__(self, key: str) -> Any:
        own = self.private.get(key)
        if own is None:
            return self.shared[key]
        if own[1] is _ABSENT:
            raise KeyError(key)
        return own[1]

    def get(self, key: str, default: Any = None) -> Any:
        own = self.private.get(key)
        if own is None:
            return self.shared.get(key, default)
        return default if own[1] is _ABSENT else own[1]

    def __contains__(self, key: object) -> bool:
        own = self.private.get(key)  # type: ignore[call-overload]
        return key in self.shared if own is None else own[1] is not _ABSENT

    def __iter__(self) -> Iterator[str]:
        private = self.private
        for key in self.shared:
            own = private.get(key)
            if own is None or own[1] is not _ABSENT:
                yield key
        for key, own in private.items():
            if own[1] is not _ABSENT and key not in self.shared:
                yield key

    def __len__(self) -> int:
        return sum(1 for _ in self)


class TableView(Generic[V]):
    """`data` is the table; `listen` / `listen_skipped` add listeners; `start` / `close`."""

    def __init__(self, topic: SystemTopic, owner: Actor, *, strategy: KeepLeft | None = None,
                 tag: str | None = None, names: Callable[[Any], Iterable[str | None]] | None = None) -> None:
        self.topic = topic
        self.owner = owner
        self.strategy = strategy
        self.tag = tag
        """Set: the view reads the topic's shared copy; entries whose value `names` the tag, or
        whose key it watches, are delivered to it one by one."""
        self.names = names
        self._data: dict[str, V] = {}
        self.version = 0
        """(Untagged) counts the changes of `data` (and closes): equal versions, equal data."""
        self._private: dict[str, tuple[int, Any]] = {}
        """(Tagged) key -> (offset of the entry applied here, or -1; the value or _ABSENT), for keys
        with an entry delivered here that the shared copy has not applied yet or this view has not."""
        self._pending: dict[str, int] = {}
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
        (None, None) when the view is closed (its data dropped). For an index kept beside the table.
        Untagged views only: a tagged view's index is the topic's (`SystemTopic.index`)."""

    def __repr__(self) -> str:
        return f"<TableView {self.topic.topic} of {self.owner.name} keys={len(self.data)}>"

    # ------------------------------------------------------------------ reading

    @property
    def data(self) -> Mapping[str, V]:
        """The table as this view holds it (read only)."""
        if self.tag is None:
            return self._data
        if not self.started:
            return {}
        if not self._private:
            return self.topic.shared
        return _Overlay(self.topic.shared, self._private)

    def get(self, key: str) -> V | None:
        if self.tag is None:
            return self._data.get(key)
        if not self.started:
            return None
        own = self._private.get(key)
        if own is None:
            return self.topic.shared.get(key)
        return None if own[1] is _ABSENT else own[1]

    def watch(self, key: str) -> None:
        """(Tagged) have every entry of `key` delivered here one by one until `unwatch`."""
        if self.tag is not None and self._subscribed:
            self.topic.watch(self, key)

    def unwatch(self, key: str) -> None:
        if self.tag is not None:
            self.topic.unwatch(self, key)

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
        if self.tag is not None:
            assert self.names is not None, "a tagged view needs `names`"
            self.topic.subscribe_tagged(self, self.tag, self.names)
            await anyio.sleep(self.topic.first_read_delay())
            self.started = True   # it reads the shared copy from now on
        else:
            first = self.topic.subscribe(self)
            await anyio.sleep(self.topic.first_read_delay())
            for entry in first:
                self._apply(entry, notify=False)
            self.started = True
        if existing is not None:
            for key, value in self._held() if self.tag is not None else list(self._data.items()):
                existing(key, value)
        self._arm()

    def _held(self) -> list[tuple[str, Any]]:
        """(Tagged) the held values that name this view's tag, in table order: what `existing` is
        called with (a value naming another broker concerns this one no more at the start than
        later on; the channel's `handleExisting` acts on its own Owned values only)."""
        assert self.names is not None
        tag, names, private = self.tag, self.names, self._private
        shared = self.topic.shared
        if not private:
            return [(k, v) for k, v in shared.items() if tag in names(v)]
        items = [(k, own[1] if (own := private.get(k)) is not None else v) for k, v in shared.items()]
        items.extend((k, own[1]) for k, own in private.items() if k not in shared)
        return [(k, v) for k, v in items if v is not _ABSENT and tag in names(v)]

    def close(self) -> None:
        """`TableView.close()`: stop reading; the data held is dropped with the view."""
        self.topic.unsubscribe(self)
        self._subscribed = False
        self.started = False
        self._queue.clear()
        self._data = {}
        self.version += 1
        self._private.clear()
        self._pending.clear()
        self.applied_offset = -1
        if self.on_change is not None:
            self.on_change(None, None)

    async def refresh(self, timeout: float) -> bool:
        """`refreshAsync()` bounded by `timeout` seconds: wait until every entry the topic held when
        called is applied. True if caught up in time."""
        target = self.topic.last_offset
        if self._caught_up_to(target):
            return True
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((target, future))
        if self.tag is not None:
            self.topic.wait_shared(self, True)
        with anyio.move_on_after(timeout):
            await future
            return True
        return False

    def _caught_up_to(self, target: int) -> bool:
        if self.tag is None:
            return self.applied_offset >= target
        queue = self._queue
        return self.topic.shared_offset >= target and (not queue or queue[0][1].offset > target)

    def _wake_waiters(self) -> None:
        done = [w for w in self._waiters if self._caught_up_to(w[0])]
        if done:
            self._waiters = [w for w in self._waiters if not self._caught_up_to(w[0])]
            for _, future in done:
                if not future.done():
                    future.set_result(None)
        if not self._waiters and self.tag is not None:
            self.topic.wait_shared(self, False)

    def shared_advanced(self) -> None:
        if self.started and self.owner.alive:
            self._wake_waiters()

    def caught_up(self, key: str) -> None:
        """The shared copy applied an entry of `key` delivered here: once this view has applied
        every entry of it delivered here, and none ahead of the shared copy, it reads the shared copy."""
        own = self._private.get(key)
        if own is not None and not self._pending.get(key) and own[0] <= self.topic.shared_offset:
            del self._private[key]

    # ------------------------------------------------------------------ delivery (TopicReader)

    def deliver(self, entry: TopicEntry, delay: float) -> None:
        if self.tag is not None:
            key = entry.key
            self._pending[key] = self._pending.get(key, 0) + 1
            if key not in self._private:   # what it reads of the key stays until it applies the entry
                self._private[key] = (-1, self.topic.shared.get(key, _ABSENT))
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
        tagged = self.tag is not None
        if strategy is None:
            dropped = False
        elif entry.dropped is not None and strategy is self.topic.strategy:
            dropped = entry.dropped   # the topic's verdict: the same values before it as here
        else:
            dropped = bool(strategy(self.get(key) if tagged else self._data.get(key), value))
        if tagged:
            self._apply_own(entry, dropped)
        if dropped:
            if notify:
                for listener in self._skipped:
                    listener(key, value)
        else:
            if not tagged:
                if value is None:
                    self._data.pop(key, None)
                else:
                    self._data[key] = value
                self.version += 1
                if self.on_change is not None:
                    self.on_change(key, value)
            if notify:
                for listener in self._listeners:
                    listener(key, value)
        if self._waiters:
            self._wake_waiters()

    def _apply_own(self, entry: TopicEntry, dropped: bool) -> None:
        """(Tagged) an entry delivered here: this view's own value of the key, until the shared copy
        has applied it too."""
        key = entry.key
        left = self._pending.get(key, 1) - 1
        if left:
            self._pending[key] = left
        else:
            self._pending.pop(key, None)
        own = self._private.get(key, (-1, _ABSENT))
        if not dropped:
            own = (entry.offset, _ABSENT if entry.value is None else entry.value)
        if not left and own[0] <= self.topic.shared_offset:
            self._private.pop(key, None)
        else:
            self._private[key] = own
