"""A system topic the Extensible load manager keeps its tables in: a keyed log, compacted.

Pulsar's Extensible load manager has no tables of its own: each is a topic in `pulsar/system` that
every broker reads through a client `TableView` (`table_view.TableView` here):

- `persistent://pulsar/system/loadbalancer-service-unit-state`: the service-unit state channel
  (`ServiceUnitStateTableViewImpl`), compacted with `ServiceUnitStateDataConflictResolver` as its
  strategy (`topicCompactionStrategyClassName`), compaction threshold 5 MiB
  (`ExtensibleLoadManagerImpl.COMPACTION_THRESHOLD`, set by the leader);
- `non-persistent://pulsar/system/loadbalancer-broker-load-data` and `...-top-bundles-load-data`
  (`TableViewLoadDataStoreImpl`): non-persistent, so nothing is kept for a reader that starts later
  (a new TableView sees only what is published after it subscribed; this is why
  `ExtensibleLoadManagerImpl.playLeader/playFollower` force every reporter to publish at once).

The topic is one actor, standing for the topic as a service (its owning broker and bookies are not
modelled). A `publish` is acknowledged after a `TopicLatencies` draw; the entry is appended to the log
in acknowledgement order (per producer, in send order: one connection is one ordered stream) and is
then handed to every subscribed reader, which applies it after its own delivery draw (in log order).

Compaction (`Compactor` / `StrategicTwoPhaseCompactor` with the topic's strategy): the uncompacted
tail is folded into one value per key, where `strategy(previous, incoming)` True drops `incoming` (a
losing write is dropped, as `ServiceUnitStateDataConflictResolver.shouldKeepLeft` makes Pulsar's
compactor drop it) and a None value (a tombstone) removes the key. It runs when the tail exceeds
`compaction_threshold_bytes` of JSON (Pulsar checks the backlog size every
`brokerServiceCompactionMonitorIntervalInSeconds`; here the check is at each append) or on `compact()`.
A reader that subscribes reads the compacted values and then the tail, as a TableView does.

Bystander readers (a reader that subscribes with a `tag`, on a topic with a strategy: the channel's
views). In Pulsar every TableView reads every message: with 100 brokers each value of the channel is
read, resolved and handled 100 times, and a broker restart writes several values for each of the
cluster's bundles, which made the emulated readers the largest cost of a large cluster (tens of
millions of deliveries). Most of those reads change nothing but the reader's copy of the table: the
value names another broker and nobody on the reader's broker waits for the bundle. So the topic
keeps one shared copy (`shared`, as of offset `shared_offset`), into which each entry is applied once,
after one delivery draw of its own (chained in log order, as a reader's are), and a shared index
beside it (`index`); every tagged reader reads the shared copy. An entry is still delivered to a
tagged reader one by one, after its own delivery draw, when it concerns the reader: it names the
reader's tag (`names(value)`: the channel's destination and source brokers), or the reader
`watch`es its key (a waiting lookup, an unload or split waited for); a reader that starts watching a
key while an entry of it is on its way to the shared copy is handed it when the shared copy applies
it. A tagged reader keeps, for a key with such an entry pending or applied ahead of the shared copy,
its own value (`TableView`), so what it reads of that key moves only when it applies the entry.
What this approximates: a bystander's copy changes at the shared draw's time, not at one of its own
(the same distribution; the draws differ per reader in Pulsar), and its per-value work (handlers
that do nothing for it) is not run, only counted (`index`).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar

import msgspec

from emulator.runtime import Actor, ActorSystem

from .topic_latency import TopicLatencies, TopicLatencySampler

__all__ = [
    "BROKER_LOAD_DATA_STORE_TOPIC",
    "COMPACTION_THRESHOLD",
    "TOP_BUNDLES_LOAD_DATA_STORE_TOPIC",
    "KeepLeft",
    "SharedIndex",
    "SystemTopic",
    "TopicEntry",
    "TopicReader",
]

COMPACTION_THRESHOLD = 5 * 1024 * 1024
"""`ExtensibleLoadManagerImpl.COMPACTION_THRESHOLD`: the channel topic's compaction threshold, bytes."""
BROKER_LOAD_DATA_STORE_TOPIC = "non-persistent://pulsar/system/loadbalancer-broker-load-data"
TOP_BUNDLES_LOAD_DATA_STORE_TOPIC = "non-persistent://pulsar/system/loadbalancer-top-bundles-load-data"

KeepLeft = Callable[[Any, Any], bool]
"""A compaction strategy's `shouldKeepLeft(previous, incoming)`: True drops `incoming`."""


class TopicEntry(msgspec.Struct, frozen=True):
    """One message of the log: its offset (the message id), key and value (None = tombstone).

    `dropped`: on a topic with a strategy, whether the strategy drops it against the values before it
    in the log (None without a strategy). Every reader holds exactly those values when it applies the
    entry (it reads the log in order from the compacted values), so the verdict is decided once here
    rather than once per reader."""

    offset: int
    key: str
    value: Any
    size: int
    dropped: bool | None = None


class TopicReader(Protocol):
    """What the topic needs of a subscribed reader (a TableView)."""

    def deliver(self, entry: TopicEntry, delay: float) -> None:
        """Apply `entry` `delay` seconds from now, after every entry delivered before it."""

    def caught_up(self, key: str) -> None:
        """(Tagged readers) the shared copy has applied an entry of `key` delivered to this reader."""

    def shared_advanced(self) -> None:
        """(Tagged readers waiting in `refresh`) the shared copy applied more entries."""


class SharedIndex(Protocol):
    """Something kept beside the shared copy of a tagged topic (`SystemTopic.index`)."""

    def change(self, key: str, value: Any) -> None:
        """The shared copy's `key` now holds `value` (None: removed)."""


IndexT = TypeVar("IndexT", bound=SharedIndex)


class SystemTopic(Actor):
    """The log of one system topic: `publish`, `subscribe`, `compact`; the actor's name is the topic."""

    def __init__(
        self,
        topic: str,
        system: ActorSystem,
        *,
        persistent: bool | None = None,
        strategy: KeepLeft | None = None,
        latencies: TopicLatencies | None = None,
        compaction_threshold_bytes: int | None = COMPACTION_THRESHOLD,
    ) -> None:
        super().__init__(topic, system)
        self.topic = topic
        self.persistent = topic.startswith("persistent://") if persistent is None else persistent
        self.strategy = strategy
        self.latency = TopicLatencySampler(latencies or TopicLatencies(), system.seed, topic)
        self.compaction_threshold_bytes = compaction_threshold_bytes
        self.compacted: dict[str, Any] = {}
        """The compacted ledger: one value per key, as of offset `compacted_horizon`."""
        self.compacted_horizon = -1
        self.tail: list[TopicEntry] = []
        """Entries after the compacted horizon (a persistent topic only keeps them)."""
        self.last_offset = -1
        self.published = 0
        self.compactions = 0
        self.dropped_by_compaction = 0
        self._tail_bytes = 0
        self._readers: dict[TopicReader, None] = {}
        """Readers that read every entry one by one."""
        self._last_arrival: dict[str, float] = {}
        self._resolved: dict[str, Any] = {}
        """With a strategy: each key's value after every entry so far (what a reader holds)."""
        # the tagged readers and the shared copy they read (see the module docstring)
        self._tagged: dict[str, list[TopicReader]] = {}
        self._tag_of: dict[TopicReader, str] = {}
        self._names: Callable[[Any], Iterable[str | None]] | None = None
        self._watchers: dict[str, dict[TopicReader, int]] = {}
        self._waiting: dict[TopicReader, None] = {}
        self.shared: dict[str, Any] = {}
        """Each key's value after every entry the shared copy has applied (read, never written, by
        the tagged readers)."""
        self.shared_offset = -1
        self._shared_queue: deque[tuple[float, TopicEntry, tuple[TopicReader, ...]]] = deque()
        self._shared_due = 0.0
        self._shared_armed = False
        self._indexes: dict[Callable[[], SharedIndex], SharedIndex] = {}
        self._sharing = False
        """The shared copy is kept (from the first tagged reader on)."""

    # ------------------------------------------------------------------ producing

    def publish(self, producer: Actor, key: str, value: Any) -> asyncio.Future[int]:
        """`producer.newMessage().key(key).value(value).sendAsync()`: a future of the entry's offset,
        resolved at the acknowledgement; `value` None is a tombstone (`removeAsync` / `delete`)."""
        if not isinstance(key, str) or not key:
            raise ValueError(f"{self.topic}: a table-view message needs a non-empty str key, got {key!r}")
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        now = self.now
        arrival = max(self._last_arrival.get(producer.name, 0.0), now + self.latency.publish(self.persistent))
        self._last_arrival[producer.name] = arrival
        self.call_later(arrival - now, self._append, key, value, future)
        return future

    def _append(self, key: str, value: Any, future: asyncio.Future[int]) -> None:
        self.last_offset += 1
        self.published += 1
        size = 0 if value is None else len(msgspec.json.encode(value))
        dropped: bool | None = None
        if self.strategy is not None:
            resolved = self._resolved
            dropped = bool(self.strategy(resolved.get(key), value))
            if not dropped:
                if value is None:
                    resolved.pop(key, None)
                else:
                    resolved[key] = value
        entry = TopicEntry(self.last_offset, key, value, size, dropped)
        if self.persistent:
            self.tail.append(entry)
            self._tail_bytes += size
        readers = list(self._readers)
        if self._sharing:
            concerned = self._concerned(key, value)
            due = max(self._shared_due, self.now + self.latency.delivery())
            self._shared_due = due
            self._shared_queue.append((due, entry, concerned))
            self._arm_shared()
            readers.extend(concerned)
        if readers:
            for reader, delay in zip(readers, self.latency.deliveries(len(readers))):
                reader.deliver(entry, delay)
        if not future.done():
            future.set_result(entry.offset)
        threshold = self.compaction_threshold_bytes
        if self.persistent and threshold is not None and self._tail_bytes > threshold:
            self.compact()

    def _concerned(self, key: str, value: Any) -> tuple[TopicReader, ...]:
        """The tagged readers an entry is delivered to one by one: those of the tags its value
        names, then those watching its key (each once, in that order)."""
        concerned: dict[TopicReader, None] = {}
        if value is not None and self._names is not None:
            for tag in self._names(value):
                if tag:
                    for reader in self._tagged.get(tag, ()):
                        concerned[reader] = None
        watchers = self._watchers.get(key)
        if watchers:
            for reader in watchers:
                concerned[reader] = None
        return tuple(concerned)

    # ------------------------------------------------------------------ the shared copy

    def _arm_shared(self) -> None:
        if self._shared_armed or not self._shared_queue:
            return
        self._shared_armed = True
        self.call_later(max(0.0, self._shared_queue[0][0] - self.now), self._drain_shared)

    def _drain_shared(self) -> None:
        self._shared_armed = False
        now = self.now
        queue = self._shared_queue
        shared = self.shared
        indexes = tuple(self._indexes.values())
        while queue and queue[0][0] <= now:
            _, entry, concerned = queue.popleft()
            key, value = entry.key, entry.value
            if not entry.dropped:
                if value is None:
                    shared.pop(key, None)
                else:
                    shared[key] = value
                for index in indexes:
                    index.change(key, value)
            self.shared_offset = entry.offset
            watchers = self._watchers.get(key)
            if watchers:
                for reader in list(watchers):
                    if reader not in concerned:   # began watching while the entry was on its way
                        reader.deliver(entry, 0.0)
            for reader in concerned:
                reader.caught_up(key)
        if self._waiting:
            for reader in list(self._waiting):
                reader.shared_advanced()
        self._arm_shared()

    def index(self, factory: Callable[[], IndexT]) -> IndexT:
        """The one index `factory` makes, kept beside the shared copy from now on (made and filled
        with the shared copy on the first call)."""
        index = self._indexes.get(factory)
        if index is None:
            made = factory()
            self._indexes[factory] = made
            for key, value in self.shared.items():
                made.change(key, value)
            return made
        return index  # type: ignore[return-value]  # made by this factory

    def watch(self, reader: TopicReader, key: str) -> None:
        """A tagged reader wants every entry of `key` one by one until `unwatch` (counted)."""
        watchers = self._watchers.setdefault(key, {})
        watchers[reader] = watchers.get(reader, 0) + 1

    def unwatch(self, reader: TopicReader, key: str) -> None:
        watchers = self._watchers.get(key)
        if watchers is None or reader not in watchers:
            return
        if watchers[reader] > 1:
            watchers[reader] -= 1
            return
        del watchers[reader]
        if not watchers:
            del self._watchers[key]

    def wait_shared(self, reader: TopicReader, waiting: bool) -> None:
        """A tagged reader is (or is no longer) told each time the shared copy advances."""
        if waiting:
            self._waiting[reader] = None
        else:
            self._waiting.pop(reader, None)

    # ------------------------------------------------------------------ reading

    @property
    def resolved(self) -> dict[str, Any]:
        """On a topic with a strategy: each key's value after every entry so far, the table a reader
        that has read the whole log holds (a copy)."""
        return dict(self._resolved)

    def subscribe(self, reader: TopicReader) -> list[TopicEntry]:
        """Register `reader` for every entry appended from now on and return what it reads first:
        the compacted values, then the tail (nothing for a non-persistent topic)."""
        self._readers[reader] = None
        first = [TopicEntry(self.compacted_horizon, k, v, 0) for k, v in self.compacted.items()]
        first.extend(self.tail)
        return first

    def subscribe_tagged(self, reader: TopicReader, tag: str,
                         names: Callable[[Any], Iterable[str | None]]) -> None:
        """Register a reader of the shared copy (a topic with a strategy only): entries whose value
        `names` `tag`, or whose key it watches, are delivered to it one by one."""
        if self.strategy is None:
            raise ValueError(f"{self.topic}: tagged readers need a topic with a strategy")
        if not self._sharing:   # from here on every entry goes to the shared copy too
            self._sharing = True
            self.shared = dict(self._resolved)
            self.shared_offset = self.last_offset
            for index in self._indexes.values():
                for key, value in self.shared.items():
                    index.change(key, value)
        self._names = names
        self._tag_of[reader] = tag
        self._tagged.setdefault(tag, []).append(reader)

    def unsubscribe(self, reader: TopicReader) -> None:
        self._readers.pop(reader, None)
        tag = self._tag_of.pop(reader, None)
        if tag is not None:
            readers = self._tagged[tag]
            readers.remove(reader)
            if not readers:
                del self._tagged[tag]
            for key in [k for k, w in self._watchers.items() if reader in w]:
                del self._watchers[key][reader]
                if not self._watchers[key]:
                    del self._watchers[key]
            self._waiting.pop(reader, None)

    def first_read_delay(self) -> float:
        """How long a new reader's first read takes (one delivery draw)."""
        return self.latency.delivery()

    # ------------------------------------------------------------------ compaction

    def compact(self) -> int:
        """Fold the tail into the compacted values with the strategy; returns how many were dropped."""
        dropped = 0
        compacted = self.compacted
        keep_left = self.strategy
        for entry in self.tail:
            previous = compacted.get(entry.key)
            if keep_left is not None and keep_left(previous, entry.value):
                dropped += 1
                continue
            if entry.value is None:
                compacted.pop(entry.key, None)
            else:
                compacted[entry.key] = entry.value
        if self.tail:
            self.compacted_horizon = self.tail[-1].offset
        self.tail = []
        self._tail_bytes = 0
        self.compactions += 1
        self.dropped_by_compaction += dropped
        return dropped
