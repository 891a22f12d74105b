"""TopicLoader: a broker's topic loads, at most `maxConcurrentTopicLoadRequest` at once, the rest queued.

Pulsar (BrokerService.loadOrCreatePersistentTopic): a load takes a permit of `topicLoadRequestSemaphore`
(maxConcurrentTopicLoadRequest, default 5000, per broker) with tryAcquire; without one, the topic goes
to `pendingTopicLoadingQueue` (FIFO), and every finished load releases its permit and starts the next
pending one (createPendingLoadTopic). Loads of one topic in flight share one future (the `topics` map
holds the future), so a second producer of a loading topic waits for the same load.

When loads start (choice, written once here): Pulsar preloads a bundle's topics right after the
ownership is acquired (NamespaceService.searchForCandidateBroker -> PulsarService.loadNamespaceTopics,
which lists the namespace's managed ledgers and calls BrokerService.getOrCreateTopic for those in the
bundle), and ServerCnx.handleProducer/handleSubscribe joins that load or starts it. The emulator keeps
no managed-ledger list, so a topic's load starts at the first CommandProducer/CommandSubscribe that
reaches the owner; the load, the permit and the queue are Pulsar's, and a producer waits for its topic
exactly as behind a preload that its attach joins. The difference is the client's round trip between
the lookup answer and the attach, by which Pulsar's preload starts earlier.

What a load costs: with the bookies modelled (`[capacity.bookkeeper] bookies` > 0) it is the managed
ledger's open, step by step (`opener`: bookkeeper_open.py: metadata reads and writes, the recovery of a
ledger left open, a new ledger); without (the cost-free cluster), one `topic_load` draw, after which
`opened` applies the open's effect on BookKeeper (the fencing of a ledger another broker left open).

Not modelled: topicLoadTimeoutSeconds (60 s; a load that waits longer fails and the client retries).

A load is a timer (the owning actor's `call_later`) or a chain of callbacks, not a task: a storm holds
one per topic.
"""

from __future__ import annotations

import functools
from collections import deque
from typing import Any, Callable, Hashable

__all__ = ["TopicLoader"]


class TopicLoader:
    """The semaphore and the pending queue of one broker's topic loads."""

    __slots__ = ("_call_later", "_duration", "_limit", "_loading", "_pending", "_opener", "_opened",
                 "active", "queued_total")

    def __init__(self, call_later: Callable[..., None], duration: Callable[[], float],
                 limit: Callable[[], int], *,
                 opener: Callable[[Hashable, Callable[[], Any]], None] | None = None,
                 opened: Callable[[Hashable], None] | None = None) -> None:
        self._call_later = call_later      # the broker's timer: skipped if the broker is dead
        self._duration = duration          # one topic_load draw, seconds (without an opener)
        self._limit = limit                # maxConcurrentTopicLoadRequest, read at each use (dynamic)
        self._opener = opener              # opener(key, finished): the load as a chain of callbacks
        self._opened = opened              # opened(key): when a load by `duration` ends
        self._loading: dict[Hashable, list[Callable[[], Any]]] = {}
        self._pending: deque[Hashable] = deque()
        self.active = 0                    # permits held
        self.queued_total = 0              # loads that had to wait for a permit, since start

    @property
    def pending(self) -> int:
        return len(self._pending)

    def load(self, key: Hashable, done: Callable[[], Any]) -> None:
        """Run `done()` once `key` is loaded: at once if the load takes no time and a permit is free;
        a load of `key` already in flight is joined."""
        waiters = self._loading.get(key)
        if waiters is not None:
            waiters.append(done)
            return
        if self.active < self._limit():
            if self._opener is not None:
                self._loading[key] = [done]
                self.active += 1
                self._opener(key, functools.partial(self._loaded, key))
                return
            delay = self._duration()
            if delay <= 0.0:
                if self._opened is not None:
                    self._opened(key)
                done()
                return
            self._loading[key] = [done]
            self.active += 1
            self._call_later(delay, self._loaded, key)
        else:
            self._loading[key] = [done]
            self._pending.append(key)
            self.queued_total += 1

    def _loaded(self, key: Hashable) -> None:
        self.active -= 1
        if self._opener is None and self._opened is not None:
            self._opened(key)
        for done in self._loading.pop(key, ()):
            done()
        self._start_pending()

    def _start_pending(self) -> None:
        """createPendingLoadTopic: as many queued loads as there are free permits, in FIFO order."""
        while self._pending and self.active < self._limit():
            key = self._pending.popleft()
            self.active += 1
            if self._opener is not None:
                self._opener(key, functools.partial(self._loaded, key))
            else:
                self._call_later(self._duration(), self._loaded, key)
