"""One real client's TCP connection to one emulated broker: Pulsar's ServerCnx for the binary protocol.

The connection is also a client actor the cluster knows (registered in `Network` under its name), so a
bundle owner's `CloseHandle` / `TopicFenced`, a broker's `SendError` and the network's
`ConnectionClosed` reach it as they reach an emulated client, and are translated into
CLOSE_PRODUCER / CLOSE_CONSUMER (with PIP-307's `assignedBrokerServiceUrl`), ignored sends, or a
closed socket. Lookups, producers and consumers go through the broker actor with the emulated
messages (`LookupTopic`, `Attach`, `Detach`), so ownership is checked exactly as for emulated clients.

Commands follow ServerCnx.java: handleConnect (protocol version min(client's, ours)), handleLookup,
handlePartitionMetadataRequest, handleProducer, handleSend (a send for a producer that is not there
closes the connection; a checksum mismatch answers SendError ChecksumError), handleSubscribe,
handleFlow, handleAck, handleRedeliverUnacknowledged, handleCloseProducer/Consumer, handleGetSchema,
handleGetOrCreateSchema, and the keep-alive of PulsarHandler (a PING every `keepAliveIntervalSeconds`;
no frame from the client for a whole interval closes the connection). A frame that cannot be read,
or a command the emulator does not serve, is answered with CommandError and the connection is
closed (PulsarDecoder: an exception closes the channel); the broker is never touched.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from emulator.cluster.messages import (
    Attach,
    AttachResult,
    CloseHandle,
    ConnectionClosed,
    Detach,
    HandleKind,
    LookupTopic,
    LookupTopicResponse,
    LookupType,
    SendError,
    TopicFenced,
)
from emulator.cluster.cluster import DEFAULT_NAMESPACE
from emulator.cluster.metadata_messages import MetadataStoreError
from emulator.model.bundles import full_topic_name, parse_topic
from emulator.runtime import Actor, ActorDead, ActorSystem, AskTimeout, Reply

from . import PulsarApi_pb2 as pb
from .ledger_write import LedgerWrites, PendingWrite, WriteLatency, arrival
from .codec import MAX_MESSAGE_SIZE, FrameDecoder, FrameError, encode, encode_payload, split_entry

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.network import Network

    from .meter import RateMeter
    from .topic_log import TopicLogs

__all__ = ["PROTOCOL_VERSION", "WireConnection"]

PROTOCOL_VERSION = 20
"""The newest ProtocolVersion of our PulsarApi.proto (v20: topic migration)."""
SERVER_VERSION = "Pulsar Server (pulsar-lb-emulator)"
ASK_TIMEOUT = 120.0
_T = pb.BaseCommand

log = structlog.get_logger("wire")


@dataclass(slots=True)
class _Producer:
    topic: str
    name: str
    fenced: bool = False
    writes: LedgerWrites = field(default_factory=LedgerWrites)
    """Its SENDs being persisted (ledger_write.py)."""


@dataclass(slots=True)
class _Consumer:
    topic: str
    subscription: str
    exclusive: bool
    permits: int = 0
    fenced: bool = False


class ConnectionHost(Protocol):
    """What a connection needs of its server (server.py's WireServer)."""

    @property
    def network(self) -> "Network": ...
    @property
    def logs(self) -> "TopicLogs": ...
    @property
    def meter(self) -> "RateMeter": ...
    @property
    def write_latency(self) -> "WriteLatency": ...

    def url_of(self, broker_id: str) -> str: ...
    def broker_actor(self, broker_id: str) -> Actor: ...
    def partitions_of(self, topic: str) -> int: ...
    def producer_name(self, broker_id: str) -> str: ...
    def forget(self, conn: "WireConnection") -> None: ...
    def add_consumer(self, topic: str, conn: "WireConnection", consumer_id: int) -> None: ...
    def remove_consumer(self, topic: str, conn: "WireConnection", consumer_id: int) -> None: ...
    def has_other_consumer(self, topic: str, subscription: str, conn: "WireConnection",
                           consumer_id: int) -> bool: ...
    def dispatch_topic(self, topic: str) -> None: ...
    async def ensure_default_namespace(self) -> None: ...


class WireConnection(Actor):
    def __init__(self, name: str, system: ActorSystem, *, server: ConnectionHost, broker_id: str,
                 reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        super().__init__(name, system)
        self.server = server
        self.broker_id = broker_id
        self.reader = reader
        self.writer = writer
        self.decoder = FrameDecoder()
        self.connected = False
        self.producers: dict[int, _Producer] = {}
        self.consumers: dict[int, _Consumer] = {}
        self.recently_closed: set[int] = set()
        """Producers the broker closed (an unload): their sends still in flight are ignored, not a reason
        to close the connection (ServerCnx.handleSend's recentlyClosedProducers)."""
        # consumers closed by the broker: an ACK already on its way still counts (the cursor is the
        # cluster's, topic_log.py), so what the application acknowledged is not redelivered
        self.closed_consumers: dict[int, _Consumer] = {}
        self.received_since_ping = True
        self.closed = False
        self._request_ids = 0

    # ------------------------------------------------------------------ messages from the cluster
    async def receive(self, msg: Any, reply: Reply) -> None:
        kind = type(msg)
        if kind is CloseHandle:
            self._broker_closed(msg)
        elif kind is TopicFenced:
            handle = (self.producers if msg.kind is HandleKind.PRODUCER else self.consumers).get(msg.handle_id)
            if handle is not None and handle.topic == msg.topic:
                handle.fenced = True
        elif kind is ConnectionClosed:
            if msg.broker_id == self.broker_id:
                self.close("the broker closed the connection")
        elif kind is SendError:   # a fenced ledger (PersistentTopic.addFailed): the client reconnects
            self.close(f"send error {msg.error}")
        reply.ok(None)

    def _broker_closed(self, msg: CloseHandle) -> None:
        """Broker-initiated close (an unload or a transfer): CommandCloseProducer / CommandCloseConsumer."""
        url = self.server.url_of(msg.assigned_broker) if msg.assigned_broker else None
        self._request_ids += 1
        if msg.kind is HandleKind.PRODUCER:
            p = self.producers.get(msg.handle_id)
            if p is None or p.topic != msg.topic:
                return
            del self.producers[msg.handle_id]
            self.recently_closed.add(msg.handle_id)
            close_p = pb.CommandCloseProducer(producer_id=msg.handle_id, request_id=self._request_ids)
            if url:
                close_p.assignedBrokerServiceUrl = url
            self.send(pb.BaseCommand(type=_T.CLOSE_PRODUCER, close_producer=close_p))
        else:
            c = self.consumers.get(msg.handle_id)
            if c is None or c.topic != msg.topic:
                return
            self._drop_consumer(msg.handle_id)
            close_c = pb.CommandCloseConsumer(consumer_id=msg.handle_id, request_id=self._request_ids)
            if url:
                close_c.assignedBrokerServiceUrl = url
            self.send(pb.BaseCommand(type=_T.CLOSE_CONSUMER, close_consumer=close_c))

    # ------------------------------------------------------------------ the socket
    def send(self, cmd: pb.BaseCommand, entry: bytes | None = None) -> None:
        if self.closed:
            return
        self.writer.write(encode(cmd) if entry is None else encode_payload(cmd, entry))

    async def serve(self) -> None:
        """Read frames until the client goes or the connection is closed; never raises."""
        try:
            while not self.closed:
                data = await self.reader.read(65536)
                if not data:
                    break
                self.received_since_ping = True
                bad: FrameError | None = None
                try:
                    frames = self.decoder.feed(data)
                except FrameError as e:
                    frames, bad = e.frames, e
                for frame in frames:
                    if self.closed:
                        break
                    try:
                        self._dispatch(frame.command, frame.entry)
                    except FrameError as e:
                        self._refuse(f"malformed frame: {e}")
                if bad is not None:
                    self._refuse(f"malformed frame: {bad}")
                    break
                await self._drain()
        except (ConnectionError, OSError) as e:
            log.debug("connection lost", connection=self.name, error=str(e))
        except Exception as e:   # a bug here must not reach the broker or the run
            log.info("closing a connection after an error", connection=self.name, error=repr(e))
        finally:
            self.close("client gone")

    async def _drain(self) -> None:
        if not self.closed:
            try:
                await self.writer.drain()
            except (ConnectionError, OSError):
                self.close("write failed")

    async def keep_alive(self, interval: float) -> None:
        """PulsarHandler.handleKeepAliveTimeout: PING each interval; silence for one closes."""
        while not self.closed:
            await asyncio.sleep(interval)
            if self.closed:
                return
            if not self.received_since_ping:
                self.close("keep-alive timeout")
                return
            self.received_since_ping = False
            self.send(pb.BaseCommand(type=_T.PING, ping=pb.CommandPing()))

    def close(self, why: str) -> None:
        """Close the socket and let the broker forget this client's producers and consumers."""
        if self.closed:
            return
        self.closed = True
        log.debug("connection closed", connection=self.name, broker=self.broker_id, why=why)
        for pid, p in list(self.producers.items()):
            self._detach(p.topic, pid, HandleKind.PRODUCER)
        for cid in list(self.consumers):
            topic = self.consumers[cid].topic
            self._drop_consumer(cid)
            self._detach(topic, cid, HandleKind.CONSUMER)
        self.producers.clear()
        self.server.network.disconnect(self.name, self.broker_id)
        self.server.network.unregister_client(self.name)
        try:
            self.writer.close()
        except Exception:  # pragma: no cover - a socket already gone
            pass
        self.server.forget(self)
        self.kill()

    def _detach(self, topic: str, handle_id: int, kind: HandleKind) -> None:
        try:
            self.server.broker_actor(self.broker_id).tell(Detach(topic, handle_id, self.name, kind))
        except ActorDead:
            pass

    def _refuse(self, message: str, request_id: int = 0,
                error: int = pb.UnknownError) -> None:
        """CommandError, then close (PulsarDecoder / ServerCnx.exceptionCaught)."""
        log.info("closing a connection: bad input", connection=self.name, reason=message)
        self.send(pb.BaseCommand(type=_T.ERROR, error=pb.CommandError(
            request_id=request_id, error=error, message=message)))
        self.close(message)

    # ------------------------------------------------------------------ commands
    def _dispatch(self, cmd: pb.BaseCommand, entry: bytes | None) -> None:
        t = cmd.type
        if not self.connected and t != _T.CONNECT:
            self._refuse(f"{_T.Type.Name(t)} before CONNECT")
            return
        handler = _HANDLERS.get(t)
        if handler is None:
            self._refuse(f"command {_T.Type.Name(t)} is not supported by the emulated broker")
            return
        handler(self, cmd, entry)

    def _on_connect(self, cmd: pb.BaseCommand, entry: bytes | None) -> None:
        if self.connected:
            self._refuse("CONNECT on a connected connection")
            return
        self.connected = True
        version = min(cmd.connect.protocol_version, PROTOCOL_VERSION)
        self.send(pb.BaseCommand(type=_T.CONNECTED, connected=pb.CommandConnected(
            server_version=SERVER_VERSION, protocol_version=version, max_message_size=MAX_MESSAGE_SIZE,
            feature_flags=pb.FeatureFlags(supports_auth_refresh=True))))

    def _on_ping(self, cmd: pb.BaseCommand, entry: bytes | None) -> None:
        self.send(pb.BaseCommand(type=_T.PONG, pong=pb.CommandPong()))

    def _on_pong(self, cmd: pb.BaseCommand, entry: bytes | None) -> None:
        pass

    def _on_partitioned_metadata(self, cmd: pb.BaseCommand, entry: bytes | None) -> None:
        m = cmd.partitionMetadata
        try:
            topic = full_topic_name(m.topic)
        except ValueError as e:
            self.send(pb.BaseCommand(type=_T.PARTITIONED_METADATA_RESPONSE,
                                     partitionMetadataResponse=pb.CommandPartitionedTopicMetadataResponse(
                                         request_id=m.request_id, response=1, error=pb.InvalidTopicName,
                                         message=str(e))))
            return
        self.send(pb.BaseCommand(type=_T.PARTITIONED_METADATA_RESPONSE,
                                 partitionMetadataResponse=pb.CommandPartitionedTopicMetadataResponse(
                                     request_id=m.request_id, response=0,
                                     partitions=self.server.partitions_of(topic))))

    def _on_lookup(self, cmd: pb.BaseCommand, entry: bytes | None) -> None:
        self.start_soon(self._lookup, cmd.lookupTopic.topic, cmd.lookupTopic.request_id,
                        cmd.lookupTopic.authoritative)

    async def _lookup(self, topic: str, request_id: int, authoritative: bool) -> None:
        """The emulated lookup path, as an emulated client's hop (`LookupTopic` to this broker).
        A topic of `public/default` first makes that namespace, which Pulsar's cluster initialisation
        creates and the emulator writes on first use (`Cluster.ensure_default_namespace`)."""
        answer = pb.CommandLookupTopicResponse(request_id=request_id)
        if _in_default_namespace(topic):
            try:
                await self.server.ensure_default_namespace()
            except MetadataStoreError as e:    # the store is down or slow: the lookup fails, as Pulsar's
                answer.response = answer.Failed
                answer.error = pb.MetadataError
                answer.message = str(e)
                self.send(pb.BaseCommand(type=_T.LOOKUP_RESPONSE, lookupTopicResponse=answer))
                return
        try:
            r: LookupTopicResponse = await self.server.broker_actor(self.broker_id).ask(
                LookupTopic(topic, authoritative, request_id, self.name), timeout=ASK_TIMEOUT)
        except (ActorDead, AskTimeout) as e:
            answer.response = answer.Failed
            answer.error = pb.ServiceNotReady
            answer.message = str(e)
        else:
            if r.response is LookupType.FAILED:
                answer.response = answer.Failed
                answer.error = pb.ServerError.Value(r.error.value) if r.error else pb.UnknownError
                answer.message = r.message
            else:
                answer.response = answer.Redirect if r.response is LookupType.REDIRECT else answer.Connect
                answer.brokerServiceUrl = self.server.url_of(r.broker_id)
                answer.authoritative = r.authoritative
        self.send(pb.BaseCommand(type=_T.LOOKUP_RESPONSE, lookupTopicResponse=answer))

    async def _attach(self, topic: str, handle_id: int, kind: HandleKind) -> AttachResult:
        try:
            result: AttachResult = await self.server.broker_actor(self.broker_id).ask(
                Attach(topic, handle_id, self.name, kind), timeout=ASK_TIMEOUT)
        except (ActorDead, AskTimeout) as e:
            return AttachResult(False, None, str(e), connection_refused=True)
        return result

    def _error(self, request_id: int, result: AttachResult) -> None:
        code = pb.ServerError.Value(result.error.value) if result.error else pb.ServiceNotReady
        self.send(pb.BaseCommand(type=_T.ERROR, error=pb.CommandError(
            request_id=request_id, error=code, message=result.message)))
        if result.connection_refused:
            self.close(result.message)

    def _on_producer(self, cmd: pb.BaseCommand, entry: bytes | None) -> None:
        self.start_soon(self._producer, cmd.producer)

    async def _producer(self, p: pb.CommandProducer) -> None:
        try:
            topic = full_topic_name(p.topic)
        except ValueError as e:
            self._error(p.request_id, AttachResult(False, None, str(e)))
            return
        if p.producer_id in self.producers:   # a retried create: ServerCnx answers the existing one
            existing = self.producers[p.producer_id]
            self._producer_success(p.request_id, existing.name, existing.topic)
            return
        result = await self._attach(topic, p.producer_id, HandleKind.PRODUCER)
        if self.closed:
            return
        if not result.ok:
            self._error(p.request_id, result)
            return
        name = p.producer_name if p.HasField("producer_name") and p.producer_name else \
            self.server.producer_name(self.broker_id)
        self.producers[p.producer_id] = _Producer(topic, name)
        self.server.network.connect(self.name, self.broker_id)
        self.recently_closed.discard(p.producer_id)
        self._producer_success(p.request_id, name, topic)

    def _producer_success(self, request_id: int, name: str, topic: str) -> None:
        """PRODUCER_SUCCESS with the producer's last stored sequence id (Producer.getLastSequenceId: -1
        unless deduplication keeps one), so a producer re-created by name continues after it."""
        last = self.server.logs.get(topic).last_sequence.get(name, (-1, 0))[0]
        self.send(pb.BaseCommand(type=_T.PRODUCER_SUCCESS, producer_success=pb.CommandProducerSuccess(
            request_id=request_id, producer_name=name, last_sequence_id=last, schema_version=b"")))
        self.start_soon(self._drain)

    def _on_send(self, cmd: pb.BaseCommand, entry: bytes | None) -> None:
        s = cmd.send
        producer = self.producers.get(s.producer_id)
        if producer is None and s.producer_id in self.recently_closed:
            return   # "We expect these messages because we recently closed the producer" (ServerCnx)
        if producer is None:
            self._refuse(f"send for producer {s.producer_id}, which is not ready")
            return
        if producer.fenced:   # the topic is closed (a transfer's first phase): the send is ignored
            return
        if entry is None:
            self._refuse("SEND without a payload")
            return
        meta, payload, ok = split_entry(entry)
        if not ok:
            self.send(pb.BaseCommand(type=_T.SEND_ERROR, send_error=pb.CommandSendError(
                producer_id=s.producer_id, sequence_id=s.sequence_id, error=pb.ChecksumError,
                message="Checksum failed on the broker")))
            return
        messages = max(s.num_messages, meta.num_messages_in_batch, 1)
        writes = producer.writes
        writes.add(arrival(self.now), self.server.write_latency.draw(), PendingWrite(
            0.0, s.producer_id, s.sequence_id, s.highest_sequence_id if s.HasField("highest_sequence_id") else None,
            entry, messages, len(payload)))
        if not writes.running:
            writes.running = True
            self.start_soon(self._persist, producer)

    async def _persist(self, producer: _Producer) -> None:
        """The producer's writes as they complete (ledger_write.py), each then stored, receipted and
        dispatched; dropped when the producer or the connection is gone (the client resends)."""
        writes = producer.writes
        try:
            while writes.queue:
                wait = writes.queue[0].done - self.now
                if wait > 0:
                    await asyncio.sleep(wait)
                w = writes.queue.popleft()
                if self.closed or self.producers.get(w.producer_id) is not producer or producer.fenced:
                    writes.queue.clear()
                    return
                self._persisted(producer, w)
        finally:
            writes.running = False

    def _persisted(self, producer: _Producer, w: PendingWrite) -> None:
        log_ = self.server.logs.get(producer.topic)
        eid, _stored = log_.append(producer.name, w.sequence_id, w.highest_sequence_id or w.sequence_id,
                                   w.entry, w.messages)
        if _stored:
            self.server.meter.published(producer.topic, self.now, w.messages, w.payload_bytes)
        receipt = pb.CommandSendReceipt(producer_id=w.producer_id, sequence_id=w.sequence_id,
                                        message_id=pb.MessageIdData(ledgerId=log_.ledger_id, entryId=eid))
        if w.highest_sequence_id is not None:
            receipt.highest_sequence_id = w.highest_sequence_id
        self.send(pb.BaseCommand(type=_T.SEND_RECEIPT, send_receipt=receipt))
        if _stored:
            self.server.dispatch_topic(producer.topic)

    def _on_close_producer(self, cmd: pb.BaseCommand, entry: bytes | None) -> None:
        c = cmd.close_producer
        p = self.producers.pop(c.producer_id, None)
        if p is not None:
            self._detach(p.topic, c.producer_id, HandleKind.PRODUCER)
        self._success(c.request_id)

    def _success(self, request_id: int) -> None:
        self.send(pb.BaseCommand(type=_T.SUCCESS, success=pb.CommandSuccess(request_id=request_id)))

    # consumers
    def _on_subscribe(self, cmd: pb.BaseCommand, entry: bytes | None) -> None:
        self.start_soon(self._subscribe, cmd.subscribe)

    async def _subscribe(self, s: pb.CommandSubscribe) -> None:
        try:
            topic = full_topic_name(s.topic)
        except ValueError as e:
            self._error(s.request_id, AttachResult(False, None, str(e)))
            return
        if s.consumer_id in self.consumers:
            self._success(s.request_id)
            return
        exclusive = s.subType == pb.CommandSubscribe.Exclusive
        if exclusive and self.server.has_other_consumer(topic, s.subscription, self, s.consumer_id):
            self.send(pb.BaseCommand(type=_T.ERROR, error=pb.CommandError(
                request_id=s.request_id, error=pb.ConsumerBusy, message="Exclusive consumer is already connected")))
            return
        result = await self._attach(topic, s.consumer_id, HandleKind.CONSUMER)
        if self.closed:
            return
        if not result.ok:
            self._error(s.request_id, result)
            return
        earliest = s.initialPosition == pb.CommandSubscribe.Earliest
        self.server.logs.get(topic).subscribe(s.subscription, earliest)
        self.consumers[s.consumer_id] = _Consumer(topic, s.subscription, exclusive)
        self.server.add_consumer(topic, self, s.consumer_id)
        self.server.network.connect(self.name, self.broker_id)
        self._success(s.request_id)
        self.start_soon(self._drain)

    def _drop_consumer(self, consumer_id: int) -> None:
        c = self.consumers.pop(consumer_id, None)
        if c is None:
            return
        self.closed_consumers[consumer_id] = c
        self.server.remove_consumer(c.topic, self, consumer_id)
        sub = self.server.logs.get(c.topic).subscriptions.get(c.subscription)
        if sub is not None and sub.release(self.name, consumer_id):
            self.server.dispatch_topic(c.topic)

    def _on_flow(self, cmd: pb.BaseCommand, entry: bytes | None) -> None:
        c = self.consumers.get(cmd.flow.consumer_id)
        if c is None:
            return
        c.permits += cmd.flow.messagePermits
        self.dispatch(cmd.flow.consumer_id)

    def dispatch(self, consumer_id: int) -> int:
        """Send what the consumer's permits allow (a batch entry takes as many as it holds)."""
        c = self.consumers.get(consumer_id)
        if c is None or c.fenced or self.closed or not self.alive:
            return 0
        log_ = self.server.logs.get(c.topic)
        sub = log_.subscriptions.get(c.subscription)
        n = 0
        while sub is not None and c.permits > 0:
            e = log_.next_for(sub)
            if e is None:
                break
            sub.pending[e.entry_id] = (self.name, consumer_id)
            c.permits -= e.messages
            msg = pb.CommandMessage(consumer_id=consumer_id, message_id=pb.MessageIdData(
                ledgerId=log_.ledger_id, entryId=e.entry_id), redelivery_count=sub.redelivery_count.get(
                    e.entry_id, 0))
            self.send(pb.BaseCommand(type=_T.MESSAGE, message=msg), e.data)
            self.server.meter.delivered(c.topic, self.now, e.messages, len(e.data))
            n += 1
        if n:
            self.start_soon(self._drain)
        return n

    def _on_ack(self, cmd: pb.BaseCommand, entry: bytes | None) -> None:
        a = cmd.ack
        c = self.consumers.get(a.consumer_id) or self.closed_consumers.get(a.consumer_id)
        if c is not None:
            sub = self.server.logs.get(c.topic).subscriptions.get(c.subscription)
            if sub is not None:
                for mid in a.message_id:
                    if a.ack_type == pb.CommandAck.Cumulative:
                        sub.ack_cumulative(mid.entryId)
                    else:
                        sub.ack(mid.entryId)
        if a.HasField("request_id"):
            self.send(pb.BaseCommand(type=_T.ACK_RESPONSE, ackResponse=pb.CommandAckResponse(
                consumer_id=a.consumer_id, request_id=a.request_id)))

    def _on_redeliver(self, cmd: pb.BaseCommand, entry: bytes | None) -> None:
        r = cmd.redeliverUnacknowledgedMessages
        c = self.consumers.get(r.consumer_id)
        if c is None:
            return
        sub = self.server.logs.get(c.topic).subscriptions.get(c.subscription)
        if sub is None:
            return
        entries = {m.entryId for m in r.message_ids} if len(r.message_ids) else None
        if sub.release(self.name, r.consumer_id, entries):
            self.server.dispatch_topic(c.topic)

    def _on_close_consumer(self, cmd: pb.BaseCommand, entry: bytes | None) -> None:
        c = cmd.close_consumer
        consumer = self.consumers.get(c.consumer_id)
        if consumer is not None:
            self._drop_consumer(c.consumer_id)
            self._detach(consumer.topic, c.consumer_id, HandleKind.CONSUMER)
        self._success(c.request_id)

    def _on_unsubscribe(self, cmd: pb.BaseCommand, entry: bytes | None) -> None:
        u = cmd.unsubscribe
        consumer = self.consumers.get(u.consumer_id)
        if consumer is not None:
            self._drop_consumer(u.consumer_id)
            self._detach(consumer.topic, u.consumer_id, HandleKind.CONSUMER)
            self.server.logs.get(consumer.topic).subscriptions.pop(consumer.subscription, None)
        self._success(u.request_id)

    def _on_get_last_message_id(self, cmd: pb.BaseCommand, entry: bytes | None) -> None:
        g = cmd.getLastMessageId
        c = self.consumers.get(g.consumer_id)
        log_ = self.server.logs.get(c.topic) if c is not None else None
        last = (log_.next_entry - 1) if log_ is not None else -1
        self.send(pb.BaseCommand(type=_T.GET_LAST_MESSAGE_ID_RESPONSE,
                                 getLastMessageIdResponse=pb.CommandGetLastMessageIdResponse(
                                     request_id=g.request_id, last_message_id=pb.MessageIdData(
                                         ledgerId=log_.ledger_id if log_ else 0,
                                         entryId=last if last >= 0 else 2**64 - 1))))

    def _on_get_schema(self, cmd: pb.BaseCommand, entry: bytes | None) -> None:
        """The bytes schema is no schema: TopicNotFound ("Topic not found or no-schema"), as
        ServerCnx.handleGetSchema answers a topic without one."""
        self.send(pb.BaseCommand(type=_T.GET_SCHEMA_RESPONSE, getSchemaResponse=pb.CommandGetSchemaResponse(
            request_id=cmd.getSchema.request_id, error_code=pb.TopicNotFound,
            error_message="Topic not found or no-schema")))

    def _on_get_or_create_schema(self, cmd: pb.BaseCommand, entry: bytes | None) -> None:
        g = cmd.getOrCreateSchema
        answer = pb.CommandGetOrCreateSchemaResponse(request_id=g.request_id)
        if g.schema.type == 0:   # Schema.Type None: bytes
            answer.schema_version = b""
        else:
            answer.error_code = pb.IncompatibleSchema
            answer.error_message = "the emulated broker keeps only the bytes schema"
        self.send(pb.BaseCommand(type=_T.GET_OR_CREATE_SCHEMA_RESPONSE, getOrCreateSchemaResponse=answer))

    def _on_get_topics(self, cmd: pb.BaseCommand, entry: bytes | None) -> None:
        g = cmd.getTopicsOfNamespace
        prefix = f"persistent://{g.namespace}/"
        topics = sorted(t for t in self.server.logs.topics if t.startswith(prefix))
        self.send(pb.BaseCommand(type=_T.GET_TOPICS_OF_NAMESPACE_RESPONSE,
                                 getTopicsOfNamespaceResponse=pb.CommandGetTopicsOfNamespaceResponse(
                                     request_id=g.request_id, topics=topics)))


_HANDLERS = {
    _T.CONNECT: WireConnection._on_connect,
    _T.PING: WireConnection._on_ping,
    _T.PONG: WireConnection._on_pong,
    _T.PARTITIONED_METADATA: WireConnection._on_partitioned_metadata,
    _T.LOOKUP: WireConnection._on_lookup,
    _T.PRODUCER: WireConnection._on_producer,
    _T.SEND: WireConnection._on_send,
    _T.CLOSE_PRODUCER: WireConnection._on_close_producer,
    _T.SUBSCRIBE: WireConnection._on_subscribe,
    _T.FLOW: WireConnection._on_flow,
    _T.ACK: WireConnection._on_ack,
    _T.REDELIVER_UNACKNOWLEDGED_MESSAGES: WireConnection._on_redeliver,
    _T.CLOSE_CONSUMER: WireConnection._on_close_consumer,
    _T.UNSUBSCRIBE: WireConnection._on_unsubscribe,
    _T.GET_LAST_MESSAGE_ID: WireConnection._on_get_last_message_id,
    _T.GET_SCHEMA: WireConnection._on_get_schema,
    _T.GET_OR_CREATE_SCHEMA: WireConnection._on_get_or_create_schema,
    _T.GET_TOPICS_OF_NAMESPACE: WireConnection._on_get_topics,
}


def _in_default_namespace(topic: str) -> bool:
    try:
        return parse_topic(full_topic_name(topic))[1] == DEFAULT_NAMESPACE
    except ValueError:
        return False
