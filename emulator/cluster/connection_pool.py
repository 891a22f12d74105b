"""A client's connections (Pulsar's ConnectionPool of ClientCnx): which brokers it holds a connection
to, its pooled connection to the service name, the service URL each new lookup starts at, and the
TooManyRequests count of each connection.

Apart from `client.py`, which moves each producer/consumer through its connect path (`Phase`) and
asks this pool what a connection costs and where a lookup goes."""

from __future__ import annotations

import random
from collections import deque
from typing import Any, Callable

from .latency import LatencySampler
from .network import Network

SERVICE = "service->"
"""Prefix of the pool key of the connection to the service name (see `service_connection`)."""


SEND, QUEUED, REJECTED = 1, 0, -1
"""`ConnectionPool.acquire_lookup`'s answers."""


class LookupPermits:
    """One connection's lookup limits (ClientCnx): `pendingLookupRequestSemaphore`
    (concurrentLookupRequest permits: lookups sent and not yet answered) and
    `maxLookupRequestSemaphore` (maxLookupRequest - concurrentLookupRequest places in
    `waitingLookupRequests`, the lookups queued in the client until a permit frees).

    ClientCnx.getAndRemovePendingLookupRequest, at an answer: the permit goes to the first waiting
    lookup if there is one (it is sent then), else back to the semaphore. A lookup that times out
    (checkRequestTimeout) leaves pendingRequests without that call, so its permit is never given back
    while the connection lives: Pulsar's leak, kept (a new connection has all its permits again)."""

    __slots__ = ("pending", "waiting", "leaked")

    def __init__(self) -> None:
        self.pending = 0                   # permits held
        self.waiting: deque[Any] = deque()
        self.leaked = 0                    # permits of timed-out lookups, never given back

    def release(self) -> Any | None:
        """An answer came: the next waiting lookup to send (it keeps the permit), or None."""
        if self.waiting:
            return self.waiting.popleft()
        self.pending -= 1
        return None


class ConnectionPool:
    """The connections of one client, keyed by broker id (or SERVICE + broker id for the
    service-name connection); `rng` is the client's own (the service URL start, the Service's pick).
    `service`, `max_rejected` and `rejected_reset` are the client's settings `service_url == "service"`,
    `max_rejected_per_connection` and `rejected_reset`."""

    def __init__(self, service_urls: list[str], rng: random.Random, *, network: Network,
                 latency: LatencySampler, service: bool, max_rejected: int,
                 rejected_reset: float, concurrent_lookups: int = 0, max_lookups: int = 0,
                 on_dropped: Callable[[list[Any]], None] | None = None) -> None:
        # concurrentLookupRequest / maxLookupRequest per connection (0: unlimited); `on_dropped`
        # gets the lookups still waiting in a connection that closes (channelInactive fails them)
        self.concurrent_lookups = concurrent_lookups
        self.max_waiting = max(0, max_lookups - concurrent_lookups) if concurrent_lookups else 0
        self._permits: dict[str, LookupPermits] = {}
        self._on_dropped = on_dropped
        self.lookups_queued = 0      # lookups that waited for a permit, since start
        self.lookups_rejected = 0    # lookups failed locally: waiting queue full
        self.network = network
        self.latency = latency
        self.service = service
        self.max_rejected = max_rejected
        self.rejected_reset = rejected_reset
        self.rng = rng
        self.service_urls = service_urls
        self._url_index = rng.randrange(len(service_urls))
        self._cnx: set[str] = set()   # brokers this client holds a connection to (ClientCnx pool)
        self._rejections: dict[str, tuple[int, float]] = {}
        self.service_broker: str | None = None   # behind the service-name connection ("service")

    def connect_time(self, broker_id: str) -> float:
        """`tcp_connect` for a broker this client has no connection to yet (then it has one)."""
        if broker_id in self._cnx:
            return 0.0
        self._cnx.add(broker_id)
        return self.latency("tcp_connect")

    def discard(self, key: str) -> None:
        """The connection is closed: the next use opens (and pays for) a new one; the lookups waiting
        in it fail (ClientCnx.channelInactive)."""
        self._cnx.discard(key)
        self._rejections.pop(key, None)
        permits = self._permits.pop(key, None)
        if permits is not None and permits.waiting and self._on_dropped is not None:
            self._on_dropped(list(permits.waiting))

    # ------------------------------------------------------------------ lookup permits (ClientCnx)

    def acquire_lookup(self, key: str, lookup: Any) -> tuple[int, LookupPermits | None]:
        """ClientCnx.newLookup on connection `key`: SEND with the permit taken, QUEUED in the
        waiting queue, or REJECTED (TooManyRequestsException, local: no checkServerError). The
        LookupPermits is the connection's, to release the permit on (None: unlimited)."""
        if not self.concurrent_lookups:
            return SEND, None
        permits = self._permits.get(key)
        if permits is None:
            permits = self._permits[key] = LookupPermits()
        if permits.pending < self.concurrent_lookups:
            permits.pending += 1
            return SEND, permits
        if len(permits.waiting) < self.max_waiting:
            permits.waiting.append(lookup)
            self.lookups_queued += 1
            return QUEUED, permits
        self.lookups_rejected += 1
        return REJECTED, permits

    def lookups_in_flight(self) -> tuple[int, int]:
        """(permits held, lookups waiting) over this client's connections, for metrics."""
        return (sum(p.pending for p in self._permits.values()),
                sum(len(p.waiting) for p in self._permits.values()))

    def next_service_url(self) -> str:
        if self.service:
            return self.service_connection() or self.service_urls[0]
        urls = self.service_urls
        if len(urls) == 1:
            return urls[0]
        self._url_index = (self._url_index + 1) % len(urls)
        return urls[self._url_index]

    def service_connection(self) -> str | None:
        """The broker behind this client's pooled connection to the service name.

        ConnectionPool keys a connection by (logical, physical) address, so every lookup's first hop
        to the service name shares one connection, apart from the connections to the brokers'
        own addresses that producers attach over. Behind a Service that connection stays on the pod
        it was opened to (kube-proxy routes an established connection to its pod) until it is
        closed; a new one goes to a ready pod, and a terminating pod is not ready (Kubernetes takes
        it out of the Service's endpoints when its termination starts): a broker that is listening
        and not draining. None: no broker is listening."""
        current = self.service_broker
        if current is not None:
            if self.network.is_listening(current):
                return current
            self.discard(SERVICE + current)
        listening = self.network.listening()
        ready = [b for b in listening if not self.network.is_draining(b)] or list(listening)
        self.service_broker = ready[self.rng.randrange(len(ready))] if ready else None
        return self.service_broker

    def close_service_connection(self, broker_id: str) -> bool:
        """checkServerError on the service-name connection: only that connection closes (True if it
        was open to `broker_id`)."""
        if self.service_broker != broker_id:
            return False
        self.discard(SERVICE + broker_id)
        self.service_broker = None
        return True

    def rejected(self, key: str, now: float) -> bool:
        """One rejected request on connection `key` (a TooManyRequests answer, or a lookup that timed
        out: PR #11688, in 2.9); True when the connection closes (the caller closes it).

        ClientCnx.incrementRejectsAndMaybeClose: `rejectedRequests = getAndIncrement()`; the first
        (0 before) schedules the count's reset to 0 after rejectedRequestResetTimeSec (60 s); any
        later one with `rejectedRequests >= maxNumberOfRejectedRequestPerConnection` closes: the
        51st rejection within the window, with the default 50. A closed connection's count goes with
        it."""
        count, since = self._rejections.get(key, (0, now))
        if count and now - since >= self.rejected_reset:
            count = 0   # the reset timer has fired
        before = count
        count += 1
        if before == 0:
            since = now
        elif before >= self.max_rejected:
            self._rejections.pop(key, None)
            return True
        self._rejections[key] = (count, since)
        return False
