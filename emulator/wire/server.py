"""The emulated brokers' binary-protocol listeners: broker k on `base_port + k - 1`.

One `WireServer` per cluster run (wall clock only). It listens for every live broker with
`asyncio.start_server` on the run's own loop, advertises `pulsar://HOST:PORT` for a broker in the
lookups it answers (`url_of`), opens a listener for a broker added later and closes a stopped or
crashed broker's listener and connections (the client sees the connection drop, as with a killed
broker). It holds what outlives a broker: the topics' logs (`TopicLogs`) and the measured rates
(`RateMeter`) the brokers' load source adds to their stats (`MeteredLoadSource`).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

import structlog

from emulator.model.publish_latency import BaseLatency
from emulator.runtime import Actor, derive_rng

from .connection import WireConnection
from .meter import RateMeter
from .ledger_write import WriteLatency
from .topic_log import TopicLogs

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster
    from emulator.cluster.network import Network

__all__ = ["WireServer"]

KEEP_ALIVE_SECONDS = 30.0
"""keepAliveIntervalSeconds (ServiceConfiguration default)."""
WATCH_SECONDS = 0.2

log = structlog.get_logger("wire")
_BROKER_N = re.compile(r"^broker-(\d+):")


class WireServer:
    connection_class: type[WireConnection] = WireConnection
    """What serves each accepted connection (a subclass can watch them: bench/clients.py)."""

    def __init__(self, cluster: "Cluster", base_port: int, host: str = "127.0.0.1", *,
                 meter: RateMeter | None = None, partitions: Mapping[str, int] | None = None,
                 keep_alive: float = KEEP_ALIVE_SECONDS, max_entries: int = 100_000) -> None:
        self.cluster = cluster
        self.base_port = base_port
        self.host = host
        self.meter = meter or RateMeter()
        self.logs = TopicLogs(max_entries, deduplicate=cluster.conf.broker_deduplication_enabled)
        accounting = getattr(cluster, "publish_accounting", None)   # the run's, with its base latency
        self.write_latency = WriteLatency(accounting.base if accounting is not None else BaseLatency(),
                                          derive_rng(cluster.system.seed, "wire/ledger-writes"))
        """How long a SEND takes to persist before its receipt (ledger_write.py)."""
        self.partitions = dict(partitions or {})
        self.keep_alive = keep_alive
        self.ports: dict[str, int] = {}
        self._listeners: dict[str, asyncio.AbstractServer] = {}
        self._connections: set[WireConnection] = set()
        self._consumers: dict[str, set[tuple[WireConnection, int]]] = {}
        self._seq = itertools.count(1)
        self._producer_seq = itertools.count(0)
        self._watch: asyncio.Task[None] | None = None
        self.errors: list[str] = []

    @property
    def network(self) -> "Network":
        return self.cluster.network

    # ------------------------------------------------------------------ addresses
    def port_of(self, broker_id: str) -> int:
        """broker-k listens on base + k - 1; a broker named otherwise on the next free port."""
        port = self.ports.get(broker_id)
        if port is None:
            m = _BROKER_N.match(broker_id)
            taken = set(self.ports.values())
            port = self.base_port + int(m.group(1)) - 1 if m else max(taken | {self.base_port - 1}) + 1
            while port in taken:
                port += 1
            self.ports[broker_id] = port
        return port

    async def ensure_default_namespace(self) -> None:
        """`public/default`, written on its first use (`Cluster.ensure_default_namespace`)."""
        await self.cluster.ensure_default_namespace()

    def url_of(self, broker_id: str) -> str:
        """brokerServiceUrl of a broker (its id, `host:8080`) as the lookups advertise it: the bound
        host, loopback for a wildcard bind (0.0.0.0 or ::, where no client can connect), an IPv6
        literal in brackets."""
        host = self.host
        if host in ("", "0.0.0.0"):
            host = "127.0.0.1"
        elif host == "::":
            host = "[::1]"
        elif ":" in host:
            host = f"[{host}]"
        return f"pulsar://{host}:{self.port_of(broker_id)}"

    def broker_actor(self, broker_id: str) -> Actor:
        return self.network.broker(broker_id)

    def partitions_of(self, topic: str) -> int:
        return self.partitions.get(topic, 0)

    def producer_name(self, broker_id: str) -> str:
        """A generated producer name, as BrokerService.generateUniqueProducerName: cluster-broker-seq."""
        return f"{self.cluster.name}-{broker_id.split(':')[0]}-{next(self._producer_seq)}"

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        await self._sync()
        self._watch = asyncio.get_running_loop().create_task(self._watch_brokers())

    async def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        for broker_id in list(self._listeners):
            self._close_listener(broker_id)
        for conn in list(self._connections):
            conn.close("shutdown")

    async def _watch_brokers(self) -> None:
        while True:
            await asyncio.sleep(WATCH_SECONDS)
            try:
                await self._sync()
            except Exception as e:   # never the run's end
                log.info("wire listener change failed", error=repr(e))

    async def _sync(self) -> None:
        """A listener per listening broker, none for a stopped one."""
        live = set(self.network.listening())
        for broker_id in [b for b in self._listeners if b not in live]:
            self._close_listener(broker_id)
        for broker_id in sorted(live - set(self._listeners)):
            port = self.port_of(broker_id)
            try:
                self._listeners[broker_id] = await asyncio.start_server(
                    functools.partial(self._accept, broker_id), self.host, port)
            except OSError as e:
                msg = f"broker {broker_id}: cannot listen on {self.host}:{port}: {e.strerror or e}"
                if msg not in self.errors:
                    self.errors.append(msg)
                    log.warning("wire listener refused", broker=broker_id, port=port, error=str(e))

    def _close_listener(self, broker_id: str) -> None:
        server = self._listeners.pop(broker_id, None)
        if server is not None:
            server.close()
        for conn in [c for c in self._connections if c.broker_id == broker_id]:
            conn.close("broker stopped")

    async def _accept(self, broker_id: str, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        if not self.network.is_listening(broker_id):
            writer.close()
            return
        name = f"wire-{broker_id.split(':')[0]}-{next(self._seq)}"
        conn = self.connection_class(name, self.cluster.system, server=self, broker_id=broker_id,
                                     reader=reader, writer=writer)
        self.cluster.system.spawn(conn)
        self.network.register_client(name, conn)
        self._connections.add(conn)
        pinger = asyncio.get_running_loop().create_task(conn.keep_alive(self.keep_alive))
        try:
            await conn.serve()
        finally:
            pinger.cancel()

    def forget(self, conn: WireConnection) -> None:
        self._connections.discard(conn)

    # ------------------------------------------------------------------ consumers
    def add_consumer(self, topic: str, conn: WireConnection, consumer_id: int) -> None:
        self._consumers.setdefault(topic, set()).add((conn, consumer_id))

    def remove_consumer(self, topic: str, conn: WireConnection, consumer_id: int) -> None:
        self._consumers.get(topic, set()).discard((conn, consumer_id))

    def has_other_consumer(self, topic: str, subscription: str, conn: WireConnection,
                           consumer_id: int) -> bool:
        return any(c.consumers.get(cid) is not None and c.consumers[cid].subscription == subscription
                   and (c, cid) != (conn, consumer_id) for c, cid in self._consumers.get(topic, ()))

    def dispatch_topic(self, topic: str) -> None:
        """New or returned entries: every consumer of the topic takes what its permits allow."""
        for conn, cid in sorted(self._consumers.get(topic, ()), key=lambda x: (x[0].name, x[1])):
            conn.dispatch(cid)
