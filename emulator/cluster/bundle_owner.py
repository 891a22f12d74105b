"""BundleOwner: one actor per bundle a broker owns, holding its topics and their producers/consumers.

Pulsar's OwnedBundle + the topics of that bundle in BrokerService. The ephemeral ownership lock
(`/namespace/<bundle>`) is held by the broker's metadata session; this actor lives exactly as long as the
broker considers the bundle its own. Attach and detach are plain method calls from the broker (one
process, as ServerCnx calls into the topic): done in the broker's message order, so an attach can
never land behind an unload's close in this actor's mailbox. The actor's own messages are CloseTopics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emulator.model.bundles import parse_bundle, topic_hash
from emulator.runtime import Actor, ActorSystem, Reply

from .load_source import TopicLoad, TopicTable
from .messages import Attach, CloseHandle, CloseTopics, Detach, HandleKind, SendError, TopicFenced

if TYPE_CHECKING:  # pragma: no cover
    from .bookkeeper import Bookies
    from .latency import LatencySampler
    from .network import Network


class BundleOwner(Actor):
    def __init__(self, name: str, system: ActorSystem, *, bundle: str, broker_id: str,
                 network: "Network | None" = None, close_time: float = 0.0,
                 close_time_per_topic: float = 0.0,
                 latency: "LatencySampler | None" = None, bookies: "Bookies | None" = None) -> None:
        super().__init__(name, system)
        self.bundle = bundle
        self.broker_id = broker_id
        self.network = network
        self.close_time = close_time
        self.close_time_per_topic = close_time_per_topic
        self.latency = latency   # when given, bundle_close / topic_close draws replace the two above
        self.bookies = bookies   # the cluster's bookies: a closed topic closes its ledger there
        # versioned: every change below bumps topics.version (the load source caches per version)
        self.topics = TopicTable()
        # (client, handle id) per topic, so a duplicate attach after a reconnect is idempotent
        self._handles: dict[str, set[tuple[str, int, HandleKind]]] = {}
        self._closed = False   # its topics were closed (an unload, or a transfer's first phase)

    async def receive(self, msg: Any, reply: Reply) -> None:
        if type(msg) is CloseTopics:
            reply.ok(await self.close_topics())
            return
        raise TypeError(f"{self.name}: unexpected message {type(msg).__name__}")

    def attach(self, msg: Attach) -> None:
        handles = self._handles.setdefault(msg.topic, set())
        load = self.topics.get(msg.topic)
        if load is None:
            load = self.topics[msg.topic] = TopicLoad()
            self.topics.version += 1
        key = (msg.client, msg.handle_id, msg.kind)
        if key in handles:
            return
        handles.add(key)
        self.topics.version += 1
        if msg.kind is HandleKind.PRODUCER:
            load.producers += 1
        else:
            load.consumers += 1

    def detach(self, msg: Detach) -> None:
        handles = self._handles.get(msg.topic)
        key = (msg.client, msg.handle_id, msg.kind)
        if not handles or key not in handles:
            return
        handles.discard(key)
        self.topics.version += 1
        load = self.topics[msg.topic]
        if msg.kind is HandleKind.PRODUCER:
            load.producers -= 1
        else:
            load.consumers -= 1

    async def close_topics(self, *, disconnect: bool = True, assigned_broker: str | None = None) -> int:
        """topic.close(closeWithoutWaitingClientDisconnect=true): CloseProducer/CloseConsumer to every
        client first, without waiting for their answer; then the managed ledgers close, and only then
        are the topics gone from this broker (PersistentTopic.close sends the disconnects, then
        `ledger.asyncClose` -> `disposeTopic` completes the close future that unloadServiceUnit, and so
        the ownership release, waits for). Clients therefore start reconnecting while the bundle is
        still owned here, inactive.

        Closing costs emulated time (ledgers closed, cursors persisted). With a latency sampler:
        `bundle_close` plus the slowest of the topics' `topic_close` draws, as
        BrokerService.unloadServiceUnit closes them concurrently and waits for all
        (FutureUtil.waitForAll); the unload's ask gives up after namespaceBundleUnloadingTimeoutMs.
        Without: `close_time` plus `close_time_per_topic` per topic (ClusterSettings knobs).

        The Extensible load manager's two-phase transfer (PIP-307) closes in two calls:
        `disconnect=False` closes the topics and keeps the clients attached (their sends are ignored:
        each is told `TopicFenced`), then, once the destination owns the bundle, `disconnect=True`
        with `assigned_broker` tells them where to go (CloseProducer's `assignedBrokerServiceUrl`);
        the second call closes nothing more, its topics are already gone."""
        closed = self._closed
        n = 0 if closed else len(self.topics)
        if closed:
            delay = 0.0
        elif self.latency is not None:
            delay = self.latency("bundle_close") + self.latency.max_of("topic_close", n)
        else:
            delay = self.close_time + self.close_time_per_topic * n
        network = self.network
        for topic, client, hid, kind in self.handles():
            actor = network.client(client) if network is not None else None
            if actor is not None:
                actor.tell(CloseHandle(topic, hid, kind, assigned_broker) if disconnect
                           else TopicFenced(topic, hid, kind))
        if disconnect:
            self._handles.clear()
        self._closed = True
        if delay > 0:
            import anyio

            await anyio.sleep(delay)
        if not closed:
            bookies = self.bookies
            if bookies is not None:   # ManagedLedgerImpl.asyncClose: the ledger is CLOSED, no recovery due
                for topic in self.topics:
                    bookies.closed(topic, self.broker_id)
            self.topics.clear()
            self.topics.version += 1
        return n

    def fence_topic(self, topic: str) -> int:
        """PersistentTopic.addFailed(ManagedLedgerFencedException) -> close(): another broker's open
        fenced this topic's ledger. Every producer and consumer of the topic is told CloseHandle (they
        reconnect after a backoff and resend what is pending) and the topic leaves this broker at once
        (its ledger is not closed: the fencer recovers it). The failed add also completes its publish
        callback with the error, so each producing client gets a SendError, and the Java client closes
        that whole connection (ClientCnx.handleSendError): its other producers and consumers on this
        broker reconnect too. Choice: every producer counts as having a send in flight (the traffic is
        continuous). Returns the handles of the topic disconnected."""
        handles = self._handles.pop(topic, set())
        network = self.network
        producing: set[str] = set()
        for client, hid, kind in sorted(handles):
            actor = network.client(client) if network is not None else None
            if actor is not None:
                actor.tell(CloseHandle(topic, hid, kind))
                if kind is HandleKind.PRODUCER:
                    producing.add(client)
        for client in sorted(producing):
            actor = network.client(client) if network is not None else None
            if actor is not None:
                actor.tell(SendError(self.broker_id, "PersistenceError: ledger fenced"))
        if self.topics.pop(topic, None) is not None:
            self.topics.version += 1
        return len(handles)

    def hand_over(self, child: "BundleOwner", contains: Any) -> None:
        """Split: topics whose hash falls in the child's range move to it, with their producers and
        consumers still attached (BrokerService.refreshTopicToStatsMaps)."""
        for topic in [t for t in self.topics if contains(t)]:
            child.topics[topic] = self.topics.pop(topic)
            child._handles[topic] = self._handles.pop(topic, set())
        self.topics.version += 1
        child.topics.version += 1

    def hand_over_range(self, child: "BundleOwner") -> None:
        """`hand_over` of the topics whose hash lies in `child`'s bundle range (its upper bound
        included for the last bundle, 0xffffffff, as Pulsar's NamespaceBundle.includes)."""
        _, lo, up = parse_bundle(child.bundle)
        last = up == 0xFFFFFFFF
        self.hand_over(child, lambda t: lo <= topic_hash(t) < up or (last and topic_hash(t) == up))

    def handles(self) -> list[tuple[str, str, int, HandleKind]]:
        """(topic, client, handle id, kind) of everything attached, in a stable order."""
        return sorted((t, c, h, k) for t, hs in self._handles.items() for (c, h, k) in hs)
