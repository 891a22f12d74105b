"""The emulated network: broker addresses, client connections, and what a crash does to them.

A broker is reached by its service URL (`pulsar://host:6650`) or its broker id (`host:8080`, Pulsar's
`brokerId` = advertised address + web port). Sending to an address nobody listens on fails like a refused
TCP connection (`ActorDead`). The network also remembers which clients hold a connection to which broker,
so that killing a broker drops those connections at once, as a real crash does.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from emulator.runtime import ActorDead

from .messages import ConnectionClosed

if TYPE_CHECKING:  # pragma: no cover
    from emulator.runtime import Actor

WEB_PORT = 8080
BROKER_PORT = 6650


def broker_id_for(host: str) -> str:
    return f"{host}:{WEB_PORT}"


def host_of(broker_id: str) -> str:
    return broker_id.rsplit(":", 1)[0]


def service_url_of(broker_id: str) -> str:
    return f"pulsar://{host_of(broker_id)}:{BROKER_PORT}"


def web_url_of(broker_id: str) -> str:
    return f"http://{broker_id}"


class Network:
    """Address book of live brokers plus the client→broker connection table."""

    def __init__(self, latency: float = 0.0) -> None:
        if latency < 0:
            raise ValueError(f"network latency = {latency}; must be >= 0 seconds")
        self.latency = latency            # one way; a client request waits a round trip
        self._brokers: dict[str, Actor] = {}
        self._by_url: dict[str, str] = {}
        self._connections: dict[str, set[str]] = defaultdict(set)  # broker id -> client actor names
        self._clients: dict[str, Actor] = {}
        self._listening: tuple[str, ...] | None = None   # sorted listening ids, rebuilt on change

    # ------------------------------------------------------------------ brokers
    def listen(self, broker_id: str, actor: Actor) -> None:
        self._brokers[broker_id] = actor
        self._by_url[service_url_of(broker_id)] = broker_id
        self._listening = None

    def unlisten(self, broker_id: str) -> None:
        self._brokers.pop(broker_id, None)
        self._listening = None

    def broker(self, address: str) -> Actor:
        """The live broker at a broker id or service URL; `ActorDead` (connection refused) otherwise."""
        broker_id = self._by_url.get(address, address)
        actor = self._brokers.get(broker_id)
        if actor is None or not actor.alive:
            raise ActorDead(address, "connection refused")
        return actor

    def is_listening(self, broker_id: str) -> bool:
        actor = self._brokers.get(broker_id)
        return actor is not None and actor.alive

    def is_draining(self, broker_id: str) -> bool:
        """A listening broker on its way out (PulsarService state Closing): not ready for a Service."""
        return bool(getattr(self._brokers.get(broker_id), "closing", False))

    def listening(self) -> tuple[str, ...]:
        """The brokers accepting connections, sorted (what a Service in front of them routes to);
        kept until the next listen/unlisten (a crash unlistens too)."""
        if self._listening is None:
            self._listening = tuple(sorted(b for b, a in self._brokers.items() if a.alive))
        return self._listening

    @property
    def broker_ids(self) -> list[str]:
        return sorted(b for b, a in self._brokers.items() if a.alive)

    # ------------------------------------------------------------------ clients
    def register_client(self, name: str, actor: Actor) -> None:
        self._clients[name] = actor

    def unregister_client(self, name: str) -> None:
        """A client that is gone for good (a real client's TCP connection, emulator/wire/)."""
        self._clients.pop(name, None)

    def client(self, name: str) -> Actor | None:
        actor = self._clients.get(name)
        return actor if actor is not None and actor.alive else None

    def connect(self, client: str, broker_id: str) -> None:
        self._connections[broker_id].add(client)

    def is_connected(self, client: str, broker_id: str) -> bool:
        return client in self._connections.get(broker_id, ())

    def disconnect(self, client: str, broker_id: str) -> None:
        self._connections[broker_id].discard(client)

    def drop_connections(self, broker_id: str) -> int:
        """A crashed or closed broker: every connected client sees its TCP connection close."""
        clients = sorted(self._connections.pop(broker_id, ()))
        for name in clients:
            actor = self.client(name)
            if actor is not None:
                actor.tell(ConnectionClosed(broker_id))
        return len(clients)
