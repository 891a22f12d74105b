"""A client's connections (Pulsar's ConnectionPool of ClientCnx): which brokers it holds a connection
to, its pooled connection to the service name, the service URL each new lookup starts at, and the
TooManyRequests count of each connection.

Apart from `client.py`, which moves each producer/consumer through its connect path (`Phase`) and
asks this pool what a connection costs and where a lookup goes."""

from __future__ import annotations

import random

from .latency import LatencySampler
from .network import Network

SERVICE = "service->"
"""Prefix of the pool key of the connection to the service name (see `service_connection`)."""


class ConnectionPool:
    """The connections of one client, keyed by broker id (or SERVICE + broker id for the
    service-name connection); `rng` is the client's own (the service URL start, the Service's pick).
    `service`, `max_rejected` and `rejected_reset` are the client's settings `service_url == "service"`,
    `max_rejected_per_connection` and `rejected_reset`."""

    def __init__(self, service_urls: list[str], rng: random.Random, *, network: Network,
                 latency: LatencySampler, service: bool, max_rejected: int,
                 rejected_reset: float) -> None:
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
        """The connection is closed: the next use opens (and pays for) a new one."""
        self._cnx.discard(key)

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
            self._cnx.discard(SERVICE + current)
        listening = self.network.listening()
        ready = [b for b in listening if not self.network.is_draining(b)] or list(listening)
        self.service_broker = ready[self.rng.randrange(len(ready))] if ready else None
        return self.service_broker

    def close_service_connection(self, broker_id: str) -> bool:
        """checkServerError on the service-name connection: only that connection closes (True if it
        was open to `broker_id`)."""
        if self.service_broker != broker_id:
            return False
        self._cnx.discard(SERVICE + broker_id)
        self.service_broker = None
        return True

    def rejected(self, key: str, now: float) -> bool:
        """One TooManyRequests on connection `key`; True when it is the `max_rejected`th within
        `rejected_reset` seconds (ClientCnx.checkServerError): the caller closes it."""
        count, since = self._rejections.get(key, (0, now))
        if now - since > self.rejected_reset:
            count, since = 0, now
        count += 1
        close = count >= self.max_rejected
        if close:
            count, since = 0, now
        self._rejections[key] = (count, since)
        return close
