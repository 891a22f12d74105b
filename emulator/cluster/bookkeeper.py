"""Bookies: the cluster's BookKeeper, one object owned by the Cluster and shared by its brokers.

Two jobs, both of BookKeeper:

* Capacity. Each bookie is a `ServiceQueue` of `read_threads` servers: a ledger recovery's fence
  (ReadLastConfirmed with the fence flag) and its recovery reads are read requests, served by the
  bookie's read worker pool (BookieRequestProcessor -> ReadEntryProcessorV3). The publish traffic
  (the brokers' msgThroughputIn x write_quorum, spread over the bookies) is a fluid load: it takes
  `utilisation` of every bookie, so a request's service stretches by 1 / (1 - utilisation), the
  share of the device left to it. A storm of recoveries therefore queues behind each other and
  behind the publish load.
* Fencing. Every topic's managed ledger writes to one ledger at a time; `_ledgers` remembers which
  broker writes it (BookKeeper knows the writer by its handle; we name the broker) and on which
  ensemble. Opening a managed ledger recovers its last ledger when it was not closed
  (ManagedLedgerImpl.initialize -> BookKeeper.asyncOpenLedger, recovery = fence + read the last
  entries + close): a ledger left open by another broker that still writes it is fenced, and that
  broker's next add fails with ManagedLedgerFencedException. PersistentTopic.addFailed then closes
  the topic (`close()`: its producers and consumers are disconnected, CommandCloseProducer /
  CommandCloseConsumer; the failed send gets no SendError: the client resends it after reconnecting).
  The emulator tells that broker `LedgerFenced`, and it closes its topic at once (the fluid producers
  publish continuously, so the next add is immediate; a topic with no producer would close at its
  next write in Pulsar and closes at once here). A ledger closed by an unload or a graceful
  shutdown needs no recovery (LedgerHandle.recover returns at once for a CLOSED ledger); one left by a
  crash does.

Nothing here is an actor: the bookies' answers are finish instants (`ServiceQueue.admit`), and the
broker that opens schedules its own continuation (bookkeeper_open.py).
"""

from __future__ import annotations

from typing import Callable

import msgspec

from emulator.runtime.rng import derive_rng

from .capacity_bookkeeper import BookKeeperCapacity
from .service_queue import ServiceQueue

__all__ = ["Bookies", "Ledger", "LedgerFenced"]


class LedgerFenced(msgspec.Struct, frozen=True):
    """Bookies -> the broker that wrote `topic`'s ledger: another broker's open fenced it; that
    broker's next add fails (ManagedLedgerFencedException) and PersistentTopic closes the topic."""

    topic: str
    by: str


class Ledger:
    """The ledger a topic's managed ledger writes now: its writer (a broker id), its ensemble (bookie
    indices), closed or not."""

    __slots__ = ("writer", "ensemble", "closed")

    def __init__(self, writer: str, ensemble: tuple[int, ...]) -> None:
        self.writer = writer
        self.ensemble = ensemble
        self.closed = False


class Bookies:
    """The cluster's bookies: their queues, the publish load on them, every topic's current ledger."""

    def __init__(self, capacity: BookKeeperCapacity, seed: int,
                 publish_bytes: Callable[[], float] = lambda: 0.0) -> None:
        self.capacity = capacity
        self.publish_bytes = publish_bytes   # the brokers' msgThroughputIn, summed (bytes/s)
        self.queues = [ServiceQueue(f"bookie-{i}", capacity.read_threads) for i in range(capacity.bookies)]
        self._rng = derive_rng(seed, "bookies")
        self._ledgers: dict[str, Ledger] = {}
        self._util = 0.0
        self._util_at = float("-inf")
        # counters (since start)
        self.ledgers_created = 0
        self.recoveries = 0          # opens that recovered a ledger left open (fence + read)
        self.fenced = 0              # recoveries that fenced a ledger another live writer held
        self.fenced_topics = 0       # topics closed on a broker because their ledger was fenced
        self.fenced_handles = 0      # producers and consumers those closes disconnected
        self.requests = 0            # bookie requests (fence, recovery read)
        self.metadata_errors = 0     # metadata operations of an open that failed (the open went on)

    @property
    def unlimited(self) -> bool:
        """No bookie modelled: opens cost no bookie time (fencing still applies)."""
        return not self.queues

    # ------------------------------------------------------------------ capacity

    def utilisation(self, now: float) -> float:
        """The publish traffic's share of one bookie: msgThroughputIn x write_quorum / (bookies x
        write_throughput), capped at max_utilisation; re-read every utilisation_refresh seconds."""
        c = self.capacity
        if not self.queues or c.write_throughput <= 0:
            return 0.0
        if now - self._util_at >= c.utilisation_refresh:
            self._util_at = now
            self._util = self.current_utilisation()
        return self._util

    def current_utilisation(self) -> float:
        """The publish traffic's share now, read without touching the value the opens use (for
        observers: a metrics read must not move the instant of the next refresh)."""
        c = self.capacity
        if not self.queues or c.write_throughput <= 0:
            return 0.0
        load = self.publish_bytes() * c.write_quorum / (len(self.queues) * c.write_throughput)
        return min(max(load, 0.0), c.max_utilisation)

    def request(self, now: float, bookie: int) -> float:
        """One request to `bookie` arriving now: its finish instant."""
        self.requests += 1
        service = self.capacity.request.sample(self._rng)
        return self.queues[bookie].admit(now, service / (1.0 - self.utilisation(now)))

    def round(self, now: float, ensemble: tuple[int, ...]) -> float:
        """One request to each bookie of `ensemble`, sent at once; done when ack_quorum answered
        (the ack_quorum-th earliest finish), as LedgerRecoveryOp / ReadLastConfirmedOp wait."""
        if not ensemble or not self.queues:
            return now
        finishes = sorted(self.request(now, b) for b in ensemble)
        need = min(max(1, self.capacity.ack_quorum), len(finishes))
        return finishes[need - 1]

    def queued(self, now: float) -> int:
        """Requests waiting for a read thread, over every bookie (for metrics)."""
        return sum(q.queued(now) for q in self.queues)

    # ------------------------------------------------------------------ ledgers and fencing

    def open_ledger(self, topic: str) -> Ledger | None:
        """`topic`'s current ledger if it was left open (a recovery is due), else None."""
        ledger = self._ledgers.get(topic)
        return ledger if ledger is not None and not ledger.closed else None

    def writer_of(self, topic: str) -> str | None:
        ledger = self._ledgers.get(topic)
        return ledger.writer if ledger is not None else None

    def fence(self, topic: str, by: str) -> str | None:
        """The fence of a recovery by broker `by` reached the bookies: `by` now holds the ledger (it
        will close it). Returns the broker whose ledger was fenced if it is another one."""
        ledger = self._ledgers.get(topic)
        if ledger is None or ledger.closed:
            return None
        self.recoveries += 1
        previous, ledger.writer = ledger.writer, by
        if previous == by:
            return None
        self.fenced += 1
        return previous

    def created(self, topic: str, writer: str) -> Ledger:
        """A new ledger for `topic`, written by `writer`, on a fresh ensemble (ensemble placement:
        random among the bookies, as the default placement policy without racks)."""
        self.ledgers_created += 1
        n = len(self.queues)
        ensemble = tuple(self._rng.sample(range(n), min(self.capacity.ensemble_size, n))) if n else ()
        ledger = self._ledgers[topic] = Ledger(writer, ensemble)
        return ledger

    def closed(self, topic: str, writer: str) -> None:
        """`writer` closed `topic`'s ledger (PersistentTopic.close -> ManagedLedgerImpl.asyncClose):
        the next open needs no recovery. A ledger another broker holds now is not ours to close."""
        ledger = self._ledgers.get(topic)
        if ledger is not None and ledger.writer == writer:
            ledger.closed = True
