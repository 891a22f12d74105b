"""A real client's SEND is persisted before its receipt, as in Pulsar: the entry goes to the topic's log
and the client gets CommandSendReceipt only once the write would have reached the bookies' write quorum
(PersistentTopic.publishMessage -> ManagedLedgerImpl.asyncAddEntry -> addComplete -> the receipt;
consumers read only what is persisted).

The write takes the publish latency of a connected producer the rest of the emulator uses
(`emulator.model.publish_latency.BaseLatency`: log-normal, median 3 ms, P99 9 ms, with its sources),
drawn from the cluster's seeded RNG tree, in emulated time. One producer's writes complete in the order
sent (`done` never earlier than the previous one's): the managed ledger acknowledges adds in order, and
the client requires receipts in sequence order. A write still pending when its producer or connection
closes is dropped with it: the client had no receipt, so it sends the message again after reconnecting
(at least once; `brokerDeduplicationEnabled` stores it once).

On the wall clock a SEND is a real event: the paced loop runs it at the emulated time of its last timer,
which lags the wall clock while the loop waits for its next one (emulator/runtime/paced_loop.py). The
write starts at `arrival()`, the wall clock's emulated time (`PacedEventLoop.wall_now`), so the receipt
comes a drawn latency after the SEND really arrived, not after that last timer.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections import deque
from typing import NamedTuple

from emulator.model.publish_latency import BaseLatency

__all__ = ["LedgerWrites", "PendingWrite", "WriteLatency", "arrival"]


def arrival(loop_now: float) -> float:
    """The emulated instant a real event arrived: the wall clock's on the paced loop (never before the
    loop's own time), the loop's time on any other."""
    wall_now = getattr(asyncio.get_running_loop(), "wall_now", None)
    return max(loop_now, wall_now()) if wall_now is not None else loop_now


class PendingWrite(NamedTuple):
    done: float
    producer_id: int
    sequence_id: int
    highest_sequence_id: int | None
    entry: bytes
    messages: int
    payload_bytes: int


class WriteLatency:
    """Draws of the persistence latency (seconds) from `base`, with its own RNG stream."""

    def __init__(self, base: BaseLatency, rng: random.Random) -> None:
        self.base = base
        self.rng = rng

    def draw(self) -> float:
        return math.exp(self.base.mu + self.base.sigma * self.rng.gauss(0.0, 1.0))


class LedgerWrites:
    """One producer's writes in flight, in the order sent."""

    __slots__ = ("queue", "last_done", "running")

    def __init__(self) -> None:
        self.queue: deque[PendingWrite] = deque()
        self.last_done = -math.inf
        self.running = False

    def add(self, now: float, latency: float, write: PendingWrite) -> PendingWrite:
        """`write` completing `latency` after `now`, not before the previous one: the write queued."""
        done = max(self.last_done, now + latency)
        self.last_done = done
        queued = write._replace(done=done)
        self.queue.append(queued)
        return queued
