"""The messages real clients publish: one bounded, in-memory log per topic, held by the cluster's wire
server, not by a bundle owner, so an unload, a transfer or a broker crash loses nothing acknowledged
(in Pulsar the managed ledger lives in BookKeeper and outlives its broker).

An entry is stored as it was sent (headersAndPayload: checksum, MessageMetadata, payload), a batch
as one entry of `num_messages`. Message ids are (ledgerId, entryId) with one ledger per topic.
A subscription is a cursor: the mark-delete position, the entries acknowledged above it
(ManagedCursorImpl.individualDeletedMessages), and the entries handed to a consumer and not yet
acknowledged (the dispatcher's pendingAcks), which go back for redelivery when that consumer leaves
or asks (PersistentDispatcherMultipleConsumers.redeliverUnacknowledgedMessages).

Deduplication follows `brokerDeduplicationEnabled` (ServiceConfiguration, false by default, as in
Pulsar): when on, producers are deduplicated by name and sequence id (MessageDeduplication), so a resend
after a reconnect is acknowledged with the id first given and stored once; when off, a resend is stored
again, as Pulsar's at-least-once publish does. Choice: the bound (`max_entries` per topic) drops the
oldest entries every subscription has acknowledged, then the oldest at all (a retention limit), counted
in `dropped`.
"""

from __future__ import annotations

import zlib
from collections import deque
from dataclasses import dataclass, field

__all__ = ["Entry", "Subscription", "TopicLog", "TopicLogs"]


@dataclass(slots=True)
class Entry:
    entry_id: int
    data: bytes
    messages: int


@dataclass(slots=True)
class Subscription:
    name: str
    mark_delete: int = -1
    """Every entry id <= this is acknowledged."""
    acked: set[int] = field(default_factory=set)
    pending: dict[int, tuple[str, int]] = field(default_factory=dict)
    """Entry id -> (connection, consumer id) it was dispatched to, not yet acknowledged."""
    redeliver: set[int] = field(default_factory=set)
    read_position: int = 0
    """The next entry id never dispatched."""
    redelivery_count: dict[int, int] = field(default_factory=dict)

    def ack(self, entry_id: int) -> None:
        self.pending.pop(entry_id, None)
        self.redeliver.discard(entry_id)
        self.redelivery_count.pop(entry_id, None)
        if entry_id <= self.mark_delete:
            return
        self.acked.add(entry_id)
        while self.mark_delete + 1 in self.acked:
            self.mark_delete += 1
            self.acked.discard(self.mark_delete)

    def ack_cumulative(self, entry_id: int) -> None:
        for eid in [e for e in self.pending if e <= entry_id]:
            self.pending.pop(eid)
        self.redeliver = {e for e in self.redeliver if e > entry_id}
        if entry_id > self.mark_delete:
            self.mark_delete = entry_id
            self.acked = {e for e in self.acked if e > entry_id}
        while self.mark_delete + 1 in self.acked:
            self.mark_delete += 1
            self.acked.discard(self.mark_delete)

    def release(self, connection: str, consumer_id: int | None = None,
                entries: set[int] | None = None) -> int:
        """Entries pending on that consumer (every consumer of the connection if None) go back."""
        back = [e for e, (c, cid) in self.pending.items()
                if c == connection and (consumer_id is None or cid == consumer_id)
                and (entries is None or e in entries)]
        for e in back:
            del self.pending[e]
            self.redeliver.add(e)
            self.redelivery_count[e] = self.redelivery_count.get(e, 0) + 1
        return len(back)

    def is_acked(self, entry_id: int) -> bool:
        return entry_id <= self.mark_delete or entry_id in self.acked


class TopicLog:
    def __init__(self, topic: str, max_entries: int, *, deduplicate: bool = False) -> None:
        self.topic = topic
        self.deduplicate = deduplicate
        self.ledger_id = zlib.crc32(topic.encode()) & 0x7FFFFFFF
        self.max_entries = max_entries
        self.entries: deque[Entry] = deque()
        self.next_entry = 0
        self.subscriptions: dict[str, Subscription] = {}
        self.last_sequence: dict[str, tuple[int, int]] = {}
        """Producer name -> (highest sequence id stored, its entry id)."""
        self.dropped = 0

    def append(self, producer: str, sequence_id: int, highest_sequence_id: int, data: bytes,
               messages: int) -> tuple[int, bool]:
        """(entry id, stored): with deduplication on, a sequence id at or below the producer's last is
        a duplicate, answered with the entry first stored."""
        last = self.last_sequence.get(producer) if self.deduplicate else None
        if last is not None and sequence_id <= last[0]:
            return last[1], False
        eid = self.next_entry
        self.next_entry += 1
        self.entries.append(Entry(eid, data, messages))
        if self.deduplicate:
            self.last_sequence[producer] = (max(sequence_id, highest_sequence_id), eid)
        self._trim()
        return eid, True

    def _trim(self) -> None:
        entries, subs = self.entries, self.subscriptions.values()
        while entries and subs and all(s.is_acked(entries[0].entry_id) for s in subs):
            entries.popleft()
        while len(entries) > self.max_entries:
            entries.popleft()
            self.dropped += 1

    def entry(self, entry_id: int) -> Entry | None:
        if not self.entries:
            return None
        first = self.entries[0].entry_id
        i = entry_id - first
        return self.entries[i] if 0 <= i < len(self.entries) else None

    def subscribe(self, name: str, earliest: bool) -> Subscription:
        sub = self.subscriptions.get(name)
        if sub is None:
            start = (self.entries[0].entry_id if self.entries else self.next_entry) if earliest \
                else self.next_entry
            sub = self.subscriptions[name] = Subscription(name, mark_delete=start - 1, read_position=start)
        return sub

    def next_for(self, sub: Subscription) -> Entry | None:
        """The next entry to dispatch: redeliveries first (lowest id), then the read position on."""
        while sub.redeliver:
            eid = min(sub.redeliver)
            sub.redeliver.discard(eid)
            e = self.entry(eid)
            if e is not None and not sub.is_acked(eid):
                return e
        first = self.entries[0].entry_id if self.entries else self.next_entry
        sub.read_position = max(sub.read_position, first)
        while sub.read_position < self.next_entry:
            eid = sub.read_position
            sub.read_position += 1
            if not sub.is_acked(eid) and eid not in sub.pending:
                return self.entry(eid)
        return None


class TopicLogs:
    """Every topic's log, for one cluster."""

    def __init__(self, max_entries: int = 100_000, *, deduplicate: bool = False) -> None:
        self.max_entries = max_entries
        self.deduplicate = deduplicate
        self.topics: dict[str, TopicLog] = {}

    def get(self, topic: str) -> TopicLog:
        log = self.topics.get(topic)
        if log is None:
            log = self.topics[topic] = TopicLog(topic, self.max_entries, deduplicate=self.deduplicate)
        return log
