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
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

import msgspec

from emulator.runtime import Actor, ActorSystem

from .topic_latency import TopicLatencies, TopicLatencySampler

__all__ = [
    "BROKER_LOAD_DATA_STORE_TOPIC",
    "COMPACTION_THRESHOLD",
    "TOP_BUNDLES_LOAD_DATA_STORE_TOPIC",
    "KeepLeft",
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
        self._last_arrival: dict[str, float] = {}
        self._resolved: dict[str, Any] = {}
        """With a strategy: each key's value after every entry so far (what a reader holds)."""

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
        if readers:
            for reader, delay in zip(readers, self.latency.deliveries(len(readers))):
                reader.deliver(entry, delay)
        if not future.done():
            future.set_result(entry.offset)
        threshold = self.compaction_threshold_bytes
        if self.persistent and threshold is not None and self._tail_bytes > threshold:
            self.compact()

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

    def unsubscribe(self, reader: TopicReader) -> None:
        self._readers.pop(reader, None)

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
