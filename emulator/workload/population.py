"""The applications of a scenario: PulsarClients with the producers and consumers of every topic.

Topics are dealt to the `[clients] count` clients round robin by partitioned topic (all partitions of a
partitioned topic live in one client, as one partitioned producer does), and a topic's producers and
consumers share their client, so their lookups are one (BinaryProtoLookupService shares concurrent
lookups of a topic). With `connect_over`, the topics come online in one batch per emulated second
spread over that time instead of all at t0.

On/off consumer jitter (`[topics] consumer_jitter`) is an actor per topic group: every `period` it closes
the consumers of a random `fraction` of the group's topics that are on, and reopens them `off` later;
each reopen is a new consumer, with its own lookup and attach. Each close is announced as a
`handle_closed` event (the client emits nothing when its application closes a handle), so observers
stop counting a consumer that was down at that moment as unavailable.
"""

from __future__ import annotations

import bisect
import math
from typing import TYPE_CHECKING

import anyio

from emulator.cluster.client import PulsarClient
from emulator.cluster.events import HandleClosed
from emulator.cluster.messages import HandleKind
from emulator.runtime import Actor, ActorSystem, Reply

from .build import client_settings
from .schema import ConsumerJitter, Scenario
from .traffic import topic_names

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster

    from .build import Workload

__all__ = ["ConsumerJitterActor", "Population"]


class _Entry:
    __slots__ = ("topics", "producers", "consumers")

    def __init__(self, producers: int, consumers: int) -> None:
        self.topics: list[str] = []
        self.producers = producers
        self.consumers = consumers


class Population:
    def __init__(self, cluster: "Cluster", scenario: Scenario, workload: "Workload") -> None:
        self.cluster = cluster
        self.scenario = scenario
        self.workload = workload
        self.clients: list[PulsarClient] = []
        # one entry per topic: (partitioned-topic sequence number, client index, topic, producers,
        # consumers), in scenario order
        self._order: list[tuple[int, int, str, int, int]] = []

    def start_clients(self) -> list[PulsarClient]:
        settings = client_settings(self.scenario)
        n = self.scenario.clients.count
        self.clients = [self.cluster.add_client(f"client-{k + 1}", settings=settings) for k in range(n)]
        seq = -1
        last_base = None
        for group in self.scenario.topics:
            for topic, base in topic_names(group):
                if base != last_base:
                    seq += 1
                    last_base = base
                self._order.append((seq, seq % n, topic, group.producers, group.consumers))
        return self.clients

    async def connect(self, spread: float) -> None:
        """Create every producer and consumer, in `ceil(spread)` batches one emulated second apart
        (all at once when `spread` is 0)."""
        if not self._order:
            return
        order = self._order
        total = order[-1][0] + 1
        batches = max(1, min(total, math.ceil(spread)))
        start = self.cluster.system.clock.now()
        seqs = [e[0] for e in order]   # non-decreasing: each batch is a slice (a scan per batch was
        for b in range(batches):       # 300 passes over a million entries in pulsar-large)
            lo, hi = b * total // batches, (b + 1) * total // batches
            if b:
                await anyio.sleep(max(0.0, start + b * spread / batches - self.cluster.system.clock.now()))
            self._create(order[bisect.bisect_left(seqs, lo):bisect.bisect_left(seqs, hi)])

    def _create(self, entries: list[tuple[int, int, str, int, int]]) -> None:
        per_client: dict[tuple[int, int, int], _Entry] = {}
        for _, client_index, topic, p, c in entries:
            key = (client_index, p, c)
            entry = per_client.get(key)
            if entry is None:
                entry = per_client[key] = _Entry(p, c)
            entry.topics.append(topic)
        w = self.workload
        for (client_index, _, _), entry in per_client.items():
            client = self.clients[client_index]
            if entry.producers:
                ids = client.create_handles(entry.topics, HandleKind.PRODUCER, per_topic=entry.producers)
                _record(w.producers, client.name, entry.topics, entry.producers, ids)
            if entry.consumers:
                ids = client.create_handles(entry.topics, HandleKind.CONSUMER, per_topic=entry.consumers)
                _record(w.consumers, client.name, entry.topics, entry.consumers, ids)

    def start_jitter(self) -> list["ConsumerJitterActor"]:
        actors = []
        for gi, group in enumerate(self.scenario.topics):
            if group.consumer_jitter is None or not group.consumers or group.consumer_jitter.fraction == 0:
                continue
            actor = ConsumerJitterActor(
                f"workload/consumer-jitter/{group.label(gi)}", self.cluster.system,
                cluster=self.cluster, workload=self.workload,
                topics=[t for t, _ in topic_names(group)], per_topic=group.consumers,
                spec=group.consumer_jitter)
            self.cluster.system.spawn(actor)
            actors.append(actor)
        return actors


def _record(book: dict[str, list[tuple[str, int]]], client: str, topics: list[str], per_topic: int,
            ids: list[int]) -> None:
    for i, topic in enumerate(topics):
        book.setdefault(topic, []).extend((client, h) for h in ids[i * per_topic:(i + 1) * per_topic])


class ConsumerJitterActor(Actor):
    """On/off consumers of one topic group (see the module docstring)."""

    def __init__(self, name: str, system: ActorSystem, *, cluster: "Cluster", workload: "Workload",
                 topics: list[str], per_topic: int, spec: ConsumerJitter) -> None:
        super().__init__(name, system)
        self.cluster = cluster
        self.workload = workload
        self.topics = topics
        self.per_topic = per_topic
        self.spec = spec
        self.off: dict[str, None] = {}
        self.cycles = 0

    async def on_start(self) -> None:
        self.start_soon(self._loop)

    async def receive(self, msg: object, reply: Reply) -> None:
        raise TypeError(f"{self.name}: unexpected message {type(msg).__name__}")

    async def _loop(self) -> None:
        spec = self.spec
        while True:
            await anyio.sleep(spec.period)
            on = [t for t in self.topics if t not in self.off and self.workload.consumers.get(t)]
            k = min(len(on), max(1, round(spec.fraction * len(self.topics))))
            self.cycles += 1
            for topic in sorted(self.rng.sample(on, k)):
                self.off[topic] = None
                self.start_soon(self._toggle, topic)

    async def _toggle(self, topic: str) -> None:
        handles = self.workload.consumers.pop(topic, [])
        client_name = handles[0][0] if handles else None
        for name, hid in handles:
            self.cluster.events.emit(HandleClosed(client=name, topic=topic, handle=hid,
                                                  reason="consumer jitter"))
            await self.cluster.clients[name].close_handle(hid)
        await anyio.sleep(self.spec.off)
        if client_name is not None:
            client = self.cluster.clients[client_name]
            ids = client.create_handles([topic], HandleKind.CONSUMER, per_topic=self.per_topic)
            _record(self.workload.consumers, client_name, [topic], self.per_topic, ids)
        del self.off[topic]
