"""PulsarClient actor: many producers/consumers, binary-protocol lookups, reconnects with backoff.

Follows pulsar-protocol.md §1.5 and §7 (client part):
* a lookup starts at a broker of the service URL list (round robin from a seeded random start, as
  PulsarServiceNameResolver), non-authoritative; each Redirect is followed with the authoritative flag it carries,
  at most `max_lookup_redirects` (20) times; Connect ends it; Failed fails it (no retry inside the lookup);
  concurrent lookups of one topic share one (BinaryProtoLookupService.lookupInProgress);
* a producer/consumer then attaches to the answered broker; any failure re-runs the whole lookup after
  `backoff.next()` (100 ms doubling to 60 s, 10 % jitter, a producer's mandatory stop at sendTimeout - 100 ms);
  creation gives up after lookupTimeoutMs (= operationTimeoutMs, 30 s), a created handle retries forever. Sends
  during a reconnect (HandleDisconnected..HandleReconnected) wait in the pending queue and fail by sendTimeout:
  emulator/observe/publish.py counts them;
* ServiceNotReady in a lookup answer closes the connection it came over (ClientCnx.checkServerError): a broker's own
  connection, so every handle attached there reconnects, or, for a "service" client's first hop, its pooled
  connection to the service name only; TooManyRequests, or a lookup that timed out (PR #11688), closes it at the
  51st within 60 s. An attach error (CommandError) fails that attach and closes nothing (ClientCnx.handleError);
* a connection sends `concurrentLookupRequest` lookups at once, queues more up to `maxLookupRequest`, fails the rest
  in the client with TooManyRequests (ClientCnx.newLookup; connection_pool.py);
* a broker-initiated close (unload) or a dropped connection (crash) reconnects after `backoff.next()`.

Each handle's way to a broker is the state machine `Phase` (below), moved by callbacks in the order of Pulsar's
ConnectionHandler: `_grab_cnx` (grabCnx), `_on_broker` and `_attach` (getConnection, then connectionOpened),
`_connection_failed` (connectionFailed, then reconnectLater) and `_connection_lost` (connectionClosed). The client's
connections (which brokers it holds one to, the service-name connection, TooManyRequests counts) are its
`ConnectionPool` (connection_pool.py); each handle's backoff is a `Backoff` (backoff.py)."""

from __future__ import annotations

import itertools
from enum import Enum
from typing import Any

import msgspec

from emulator.runtime import Actor, ActorDead, ActorSystem, AskTimeout, Reply

from .events import ClusterEvents, HandleConnected, HandleDisconnected, HandleFailed, HandleReconnected
from .backoff import Backoff, LockstepJitter
from .connection_pool import REJECTED, SEND, SERVICE, ConnectionPool, LookupPermits
from .capacity import Capacity
from .client_stats import ClientStats, LookupRecord
from .latency import Latencies, LatencySampler
from .lookup_retry import LookupRetry, retryable
from .messages import (Attach, AttachResult, CloseHandle, TopicFenced, ConnectionClosed, CreateHandles, Detach,
                       HandleKind, LookupTopic, LookupTopicResponse, LookupType, SendError, ServerError)
from .network import Network


class ClientSettings(msgspec.Struct, frozen=True, kw_only=True):
    """ClientConfigurationData defaults that matter to load balancing."""

    operation_timeout: float = 30.0          # operationTimeoutMs: a request's answer (lookup, attach)
    lookup_timeout: float | None = None      # lookupTimeoutMs (-1: None) = operationTimeoutMs: creation deadline
    initial_backoff: float = 0.1             # initialBackoffIntervalNanos
    max_backoff: float = 60.0                # maxBackoffIntervalNanos
    max_lookup_redirects: int = 20           # maxLookupRedirects
    send_timeout: float = 30.0               # producer mandatory stop = max(100 ms, sendTimeout - 100 ms)
    max_rejected_per_connection: int = 50    # maxNumberOfRejectedRequestPerConnection
    rejected_reset: float = 60.0             # rejectedRequestResetTimeSec
    record_lookups: bool = False             # keep every lookup's hops (tests, debugging)
    lookup_retry: bool = False               # the C++ client's retry inside a lookup (lookup_retry.py)
    lockstep_jitter: bool = False            # the C++ client's per-second jitter (backoff.LockstepJitter)
    service_url: str = "list"
    """How the client's serviceUrl resolves to a broker for each new lookup connection.
    "list": `pulsar://b1,b2,...` naming the brokers live when the client was made, taken round robin
    from a seeded start (PulsarServiceNameResolver.resolveHost): a removed broker stays in the list and
    costs a refused connection and a backoff each time its turn comes. "service": one name in front of
    the ready brokers (a Kubernetes Service, a DNS record or a TCP load balancer, as the Pulsar Helm
    chart deploys it): each lookup connection goes to a broker that is listening, picked at random
    with the client's seeded RNG (kube-proxy's random endpoint choice)."""


class Phase(Enum):
    """Where a producer or consumer is on its way to a broker: ConnectionHandler's attempt and the
    handler's HandlerState in one (pulsar-client/src/main/java/org/apache/pulsar/client/impl/
    ConnectionHandler.java: grabCnx, handleConnectionError, reconnectLater, connectionClosed; and
    ProducerImpl/ConsumerImpl's connectionOpened and connectionFailed). Every transition, and the
    method of Pulsar's that makes it:

        (created)      -> BACKING_OFF   the first grabCnx, after 0 s
        BACKING_OFF    -> LOOKING_UP    grabCnx: the topic's lookup (one per topic, shared)
        LOOKING_UP     -> REDIRECTED    the lookup followed a Redirect (again and again)
        LOOKING_UP,
        REDIRECTED     -> CONNECTING    the lookup answered Connect: open the connection to the owner
                                        and send CommandProducer / CommandSubscribe
        CONNECTING     -> ATTACHED      connectionOpened: the broker accepted it (HandlerState Ready)
        LOOKING_UP, REDIRECTED,
        CONNECTING     -> BACKING_OFF   connectionFailed, then reconnectLater: after backoff.next()
                       -> FAILED        connectionFailed when the handle was never created and its
                                        operation timeout has passed (creation gives up)
        ATTACHED       -> BACKING_OFF   connectionClosed (an unload, a closed or dropped connection)
        any            -> CLOSED        the application closed it

    A handle closed while an attempt is under way stays CLOSED: the attempt's steps still run to
    their end (the broker may see the attach) but move it no more, except that a creation that then
    times out fails it, as ProducerImpl.connectionFailed fails the creation future of any state.
    `Handle.state` gives the four states observers read (HandlerState's Connecting, Ready, Failed,
    Closed)."""

    BACKING_OFF = "backing off"
    LOOKING_UP = "looking up"
    REDIRECTED = "redirected"
    CONNECTING = "connecting"
    ATTACHED = "attached"
    FAILED = "failed"
    CLOSED = "closed"


_STATE = {Phase.BACKING_OFF: "connecting", Phase.LOOKING_UP: "connecting", Phase.REDIRECTED: "connecting",
          Phase.CONNECTING: "connecting", Phase.ATTACHED: "connected", Phase.FAILED: "failed",
          Phase.CLOSED: "closed"}
_ENDED = (Phase.FAILED, Phase.CLOSED)
"""Phases an attempt still under way does not leave (see `PulsarClient._enter`)."""


class Handle:
    """A producer or consumer: its `phase` (see `Phase`), backoff and creation deadline."""

    __slots__ = ("id", "topic", "kind", "phase", "broker_id", "backoff", "created", "deadline",
                 "down_since")

    def __init__(self, hid: int, topic: str, kind: HandleKind, backoff: Backoff, deadline: float) -> None:
        self.id = hid
        self.topic = topic
        self.kind = kind
        self.phase = Phase.BACKING_OFF
        self.broker_id: str | None = None   # set while ATTACHED
        self.backoff = backoff
        self.created = False                # attached once: the creation succeeded
        self.deadline = deadline            # the creation fails past this (operation timeout)
        self.down_since: float | None = None

    @property
    def state(self) -> str:
        """connecting | connected | failed | closed."""
        return _STATE[self.phase]


def _transport_failure(error: BaseException, request: str) -> str:
    """The failure reason of a request the broker never answered: refused (the broker is gone) or
    timed out. Any other error is a bug and propagates (it crashes the client)."""
    if isinstance(error, ActorDead):
        return "connection refused"
    if isinstance(error, AskTimeout):
        return f"{request} timed out"
    raise error


class _Lookup:
    """One lookup in flight: where it is in its redirects, and the handles waiting for it."""

    __slots__ = ("topic", "rid", "record", "address", "authoritative", "redirects", "waiters",
                 "broker", "cnx", "permits", "retry")

    def __init__(self, topic: str, rid: int, record: LookupRecord, address: str,
                 first: Handle) -> None:
        self.topic = topic
        self.rid = rid
        self.record = record
        self.address = address
        self.authoritative = False
        self.redirects = 0
        self.waiters = [first]
        # the hop under way: the broker asked, the connection (pool key), its permits (None: unlimited)
        self.broker: Actor | None = None
        self.cnx = ""
        self.permits: LookupPermits | None = None
        self.retry: LookupRetry | None = None   # ClientSettings.lookup_retry: its retries so far


class PulsarClient(Actor):
    def __init__(self, name: str, system: ActorSystem, *, network: Network, service_urls: list[str],
                 events: ClusterEvents, settings: ClientSettings | None = None,
                 latencies: Latencies | None = None, capacity: Capacity | None = None) -> None:
        super().__init__(name, system)
        # the client's limits (capacity_client.py); without them, unlimited
        self.capacity = capacity or Capacity.unlimited()
        # tcp_connect, lookup, producer_create, subscribe draws (latency.py); none: instantaneous
        self.latency = LatencySampler(latencies or Latencies.zero(), system.seed, name)
        if not service_urls:
            raise ValueError(f"client {name}: service_urls is empty; give at least one broker address")
        self.network = network
        self.events = events
        self.settings = settings or ClientSettings()
        self.service_urls = list(service_urls)
        self.stats = ClientStats()
        # its connections to brokers and to the service name (connection_pool.py)
        s = self.settings
        limits = self.capacity.client
        self.pool = ConnectionPool(self.service_urls, self.rng, network=network, latency=self.latency,
                                   service=s.service_url == "service",
                                   max_rejected=s.max_rejected_per_connection,
                                   rejected_reset=s.rejected_reset,
                                   concurrent_lookups=limits.concurrent_lookup_request,
                                   max_lookups=limits.max_lookup_request,
                                   on_dropped=self._lookups_dropped)
        self.handles: dict[int, Handle] = {}
        self._ids = itertools.count(1)
        self._request_ids = itertools.count(1)
        self._lookups: dict[str, _Lookup] = {}
        self.in_flight: dict[int, LookupRecord] = {}
        self.records: list[LookupRecord] = []
        self._connected = 0   # handles in state "connected": counted, not scanned (waits poll it)
        # broker id -> ids of the handles attached there since the last scan (a superset: checked on
        # close), so that a connection's close does not walk every handle (100 brokers x 1,000 handles)
        self._attached_at: dict[str, set[int]] = {}
        self._lockstep = LockstepJitter(self.rng) if self.settings.lockstep_jitter else None

    async def on_start(self) -> None:
        self.network.register_client(self.name, self)

    @property
    def _lookup_timeout(self) -> float:   # ClientConfigurationData.getLookupTimeoutMs
        t = self.settings.lookup_timeout
        return self.settings.operation_timeout if t is None or t < 0 else t

    # ------------------------------------------------------------------ messages

    async def receive(self, msg: Any, reply: Reply) -> None:
        kind = type(msg)
        if kind is CreateHandles:
            reply.ok(self.create_handles(msg.topics, msg.kind, msg.per_topic))
        elif kind is CloseHandle:
            h = self.handles.get(msg.handle_id)
            if h is not None and h.phase is Phase.ATTACHED:
                if msg.assigned_broker is not None:
                    self._connection_transferred(h, msg.assigned_broker)
                else:
                    self._connection_lost(h, reason="closed by broker")
        elif kind is TopicFenced:
            h = self.handles.get(msg.handle_id)
            if h is not None and h.phase is Phase.ATTACHED and h.down_since is None:
                # still attached, but the broker ignores its sends from now on (PIP-307's first phase)
                h.down_since = self.now
                self.events.emit(HandleDisconnected(client=self.name, topic=h.topic, handle=h.id,
                                                    reason="topic fenced for transfer"))
        elif kind is ConnectionClosed:
            self.close_connection(msg.broker_id, reason="connection dropped")
        elif kind is SendError:   # ClientCnx.handleSendError: any other error closes the connection
            self.close_connection(msg.broker_id, reason="send error: " + msg.error)
        else:
            raise TypeError(f"{self.name}: unexpected message {kind.__name__}")

    def create_handles(self, topics: tuple[str, ...] | list[str], kind: HandleKind = HandleKind.PRODUCER,
                       per_topic: int = 1) -> list[int]:
        s = self.settings
        mandatory_stop = max(100, int(s.send_timeout * 1000) - 100) if kind is HandleKind.PRODUCER else 0
        ids = []
        for topic in topics:
            for _ in range(per_topic):
                hid = next(self._ids)
                backoff = Backoff(int(s.initial_backoff * 1000), int(s.max_backoff * 1000), mandatory_stop,
                                  self._lockstep.stream(int(self.system.clock.now_ms()) // 1000)
                                  if self._lockstep is not None else self.rng)
                h = Handle(hid, topic, kind, backoff, self.now + self._lookup_timeout)
                self.handles[hid] = h
                ids.append(hid)
                self.call_later(0.0, self._grab_cnx, h)   # BACKING_OFF for no time: the first grabCnx
        return ids

    async def close_handle(self, hid: int) -> None:
        h = self.handles.get(hid)
        if h is None:
            return
        if h.phase is Phase.ATTACHED:
            self._connected -= 1
        broker_id, h.phase = h.broker_id, Phase.CLOSED
        if broker_id is not None:
            try:
                await self.network.broker(broker_id).ask(
                    Detach(h.topic, hid, self.name, h.kind), timeout=self.settings.operation_timeout)
            except (ActorDead, AskTimeout):
                pass

    # ------------------------------------------------------------------ the connect path (Phase)

    # Connecting is written as callbacks (Actor.call_later / ask_then), not as a task per handle: a
    # storm holds every producer's attempt at once (100,000 after a cluster restart), and a task per
    # producer was most of the client's cost. Each step below is one transition of `Phase`, in order.

    def _grab_cnx(self, h: Handle) -> None:
        """grabCnx, when the backoff has passed: BACKING_OFF -> LOOKING_UP (the topic's lookup, which
        ends in `_on_broker`). A handle closed or failed meanwhile stays so: the attempt ends here."""
        if h.phase is Phase.BACKING_OFF:
            self._get_broker(h)

    def _on_broker(self, h: Handle, broker_id: str | None, error: str | None) -> None:
        """The lookup's answer: LOOKING_UP / REDIRECTED -> CONNECTING, or connectionFailed.

        Attaching costs a connection to the owner if the client has none (`tcp_connect`) and the
        CommandProducer / CommandSubscribe round trip (`producer_create` / `subscribe`), the topic's load
        at the owner the broker's (topic_loader.py); a broker not listening refuses the TCP connect
        after a round trip, before any command (ClientConnection / ConnectionPool: the handle fails)."""
        if broker_id is None:
            self._connection_failed(h, error or "lookup failed")
            return
        self._enter(h, Phase.CONNECTING)
        delay = 2 * self.network.latency
        if self.network.is_listening(broker_id):
            delay += self.pool.connect_time(broker_id) + self.latency(
                "producer_create" if h.kind is HandleKind.PRODUCER else "subscribe")
        if delay > 0:
            self.call_later(delay, self._attach, h, broker_id)
        else:
            self._attach(h, broker_id)

    def _attach(self, h: Handle, broker_id: str) -> None:
        try:
            self.network.broker(broker_id).ask_then(
                Attach(h.topic, h.id, self.name, h.kind), self._on_attach_result, h, broker_id,
                asker=self, timeout=self.settings.operation_timeout)
        except ActorDead:
            self._connection_failed(h, "connection refused")

    def _on_attach_result(self, h: Handle, broker_id: str, result: AttachResult | None,
                          error: BaseException | None) -> None:
        if error is not None:
            reason: str | None = _transport_failure(error, "attach")
        else:
            assert result is not None
            reason = self._attached(h, broker_id, result)
        if reason is not None:
            self._connection_failed(h, reason)

    def _attached(self, h: Handle, broker_id: str, result: AttachResult) -> str | None:
        """connectionOpened: CONNECTING -> ATTACHED, or the failure reason. A handle closed meanwhile
        ends its attempt here (None)."""
        if h.phase is not Phase.CONNECTING:
            return None
        if not result.ok:
            # ClientCnx.handleError completes the request exceptionally and keeps the connection:
            # checkServerError (which closes it on ServiceNotReady) runs for lookup and
            # partitioned-metadata answers only
            self.stats.attach_failures += 1
            if result.connection_refused:
                self.pool.discard(broker_id)   # the next try opens (and pays for) a new connection
            return f"attach failed: {result.error.value if result.error else ''}"
        self.network.connect(self.name, broker_id)
        h.phase = Phase.ATTACHED
        self._connected += 1
        h.broker_id = broker_id
        attached = self._attached_at.get(broker_id)
        if attached is None:
            attached = self._attached_at[broker_id] = set()
        attached.add(h.id)
        h.created = True
        h.backoff.reset()
        if h.down_since is not None:
            self.events.emit(HandleReconnected(client=self.name, topic=h.topic, handle=h.id,
                                               broker=broker_id, unavailable=self.now - h.down_since))
            h.down_since = None
        else:
            self.events.emit(HandleConnected(client=self.name, topic=h.topic, handle=h.id,
                                             broker=broker_id))
        return None

    def _connection_failed(self, h: Handle, reason: str) -> None:
        """connectionFailed: -> FAILED when the creation is past its deadline, otherwise reconnectLater:
        -> BACKING_OFF, grabCnx after backoff.next()."""
        if not h.created and self.now > h.deadline:
            h.phase = Phase.FAILED
            self.events.emit(HandleFailed(client=self.name, topic=h.topic, handle=h.id, reason=reason,
                                          since=h.deadline - self._lookup_timeout))
            return
        delay = h.backoff.next(self.system.clock.now_ms()) / 1000.0
        self._enter(h, Phase.BACKING_OFF)
        self.call_later(delay, self._grab_cnx, h)

    def _connection_lost(self, h: Handle, reason: str) -> None:
        """connectionClosed: ATTACHED -> BACKING_OFF, grabCnx after backoff.next()."""
        self._connected -= 1
        h.phase = Phase.BACKING_OFF
        self._detached(h)
        self.stats.reconnects += 1
        if h.down_since is None:   # not already down since a fence (TopicFenced)
            h.down_since = self.now
            self.events.emit(HandleDisconnected(client=self.name, topic=h.topic, handle=h.id, reason=reason))
        self.call_later(h.backoff.next(self.system.clock.now_ms()) / 1000.0, self._grab_cnx, h)

    def _connection_transferred(self, h: Handle, broker_id: str) -> None:
        """connectionClosed(cnx, initialConnectionDelayMs = 0, hostUrl = the assigned broker) (PIP-307):
        ATTACHED -> CONNECTING to that broker at once, no lookup, no backoff step. If it does not serve
        the topic yet, the attach fails and the handle backs off and looks up as after any failure."""
        self._connected -= 1
        h.phase = Phase.BACKING_OFF
        self._detached(h)
        self.stats.reconnects += 1
        self.stats.transfers += 1
        if h.down_since is None:
            h.down_since = self.now
            self.events.emit(HandleDisconnected(client=self.name, topic=h.topic, handle=h.id,
                                                reason="closed by broker, assigned " + broker_id))
        self._on_broker(h, broker_id, None)

    def _detached(self, h: Handle) -> None:
        """`h` leaves its broker: out of that broker's attached ids too."""
        if h.broker_id is not None:
            attached = self._attached_at.get(h.broker_id)
            if attached is not None:
                attached.discard(h.id)
            h.broker_id = None

    def close_connection(self, broker_id: str, reason: str) -> None:
        """Every handle attached through this connection reconnects (ClientCnx closed)."""
        self.stats.connection_closes += 1
        self.pool.discard(broker_id)
        self.network.disconnect(self.name, broker_id)
        attached = self._attached_at.pop(broker_id, None)
        if not attached:
            return
        handles = self.handles
        # in handle-id order, which is `self.handles`' order (ids grow, no handle is ever removed)
        for hid in sorted(attached):
            h = handles[hid]
            if h.phase is Phase.ATTACHED and h.broker_id == broker_id:
                self._connection_lost(h, reason)

    @staticmethod
    def _enter(h: Handle, phase: Phase) -> None:
        """Move `h` to `phase` unless it is FAILED or CLOSED: an attempt under way ends there."""
        if h.phase not in _ENDED:
            h.phase = phase

    # ------------------------------------------------------------------ lookups

    def _get_broker(self, h: Handle) -> None:
        """BinaryProtoLookupService.getBroker: lookups of a topic in flight are shared
        (lookupInProgress); the answer goes to every handle waiting on it (`_on_broker`)."""
        lookup = self._lookups.get(h.topic)
        if lookup is not None:
            h.phase = Phase.REDIRECTED if lookup.redirects else Phase.LOOKING_UP
            lookup.waiters.append(h)
            return
        h.phase = Phase.LOOKING_UP
        topic = h.topic
        self.stats.lookups += 1
        rid = next(self._request_ids)
        record = LookupRecord(topic=topic, start=self.now)
        self.in_flight[rid] = record
        lookup = self._lookups[topic] = _Lookup(topic, rid, record, self.pool.next_service_url(), h)
        self._lookup_send(lookup)

    def _lookup_send(self, lookup: _Lookup) -> None:
        """One hop: ask `lookup.address`, with the authoritative flag the last redirect carried."""
        s = self.settings
        if s.max_lookup_redirects > 0 and lookup.redirects > s.max_lookup_redirects:
            self._lookup_failed(lookup, f"Too many redirects: {lookup.redirects}")
            return
        try:
            broker = self.network.broker(lookup.address)
        except ActorDead:
            self._lookup_failed(lookup, "connection refused")
            return
        # the first hop of a "service" client goes over its service-name connection
        cnx = SERVICE + broker.name if self._over_service(lookup) else broker.name
        lookup.broker, lookup.cnx = broker, cnx
        # ClientCnx.newLookup: a permit of the connection, or its waiting queue, or TooManyRequests
        verdict, lookup.permits = self.pool.acquire_lookup(cnx, lookup)
        if verdict == SEND:
            self._lookup_go(lookup)
        elif verdict == REJECTED:
            self._lookup_failed(lookup, "TooManyRequests: Requests number out of config: There are "
                                        f"{self.pool.max_waiting} requests pending")

    def _lookup_go(self, lookup: _Lookup) -> None:
        """Send the hop: a round trip, the broker's handling (`lookup`), a connection if none."""
        delay = 2 * self.network.latency + self.pool.connect_time(lookup.cnx) + self.latency("lookup")
        if delay > 0:
            self.call_later(delay, self._lookup_ask, lookup, lookup.broker)
        else:
            self._lookup_ask(lookup, lookup.broker)

    def _lookup_ask(self, lookup: _Lookup, broker: Actor | None) -> None:
        try:
            if broker is None:   # never: `_lookup_send` sets it before a hop goes
                raise ActorDead(lookup.address, "no broker")
            broker.ask_then(LookupTopic(lookup.topic, lookup.authoritative, lookup.rid,
                                        f"{self.name}/{lookup.cnx}"),
                            self._on_lookup_response, lookup, broker, asker=self,
                            timeout=self.settings.operation_timeout)
        except ActorDead:
            self._release_permit(lookup)
            self._lookup_failed(lookup, "connection refused")

    def _release_permit(self, lookup: _Lookup) -> None:
        """getAndRemovePendingLookupRequest: the permit goes to the next waiting lookup, or back."""
        permits, lookup.permits = lookup.permits, None
        if permits is not None:
            following = permits.release()
            if following is not None:
                self._lookup_go(following)

    def _lookups_dropped(self, lookups: list[_Lookup]) -> None:
        """ClientCnx.channelInactive: the lookups waiting in a closed connection fail."""
        for lookup in lookups:
            lookup.permits = None
            self._lookup_failed(lookup, "Disconnected from server")

    def _on_lookup_response(self, lookup: _Lookup, broker: Actor, resp: LookupTopicResponse | None,
                            error: BaseException | None) -> None:
        if error is not None:
            reason = _transport_failure(error, "lookup")
            if isinstance(error, AskTimeout):
                # checkRequestTimeout: the permit is not given back (see LookupPermits), and a
                # timed-out lookup counts as a rejected request (PR #11688)
                if lookup.permits is not None:
                    lookup.permits.leaked += 1
                    lookup.permits = None
                if self.pool.rejected(lookup.cnx, self.now):
                    self._close(broker.name, lookup.cnx.startswith(SERVICE), "lookup timeouts")
            else:
                self._release_permit(lookup)
            self._lookup_failed(lookup, reason)
            return
        self._release_permit(lookup)
        assert resp is not None
        lookup.record.hops.append((broker.name, lookup.authoritative, resp.response.value))
        if resp.response is LookupType.CONNECT:
            lookup.record.outcome = f"Connect:{resp.broker_id}"
            self._lookup_ended(lookup, resp.broker_id, None)
        elif resp.response is LookupType.REDIRECT:
            self.stats.lookup_redirects += 1
            lookup.redirects += 1
            for h in lookup.waiters:
                self._enter(h, Phase.REDIRECTED)
            lookup.address = resp.broker_id
            lookup.authoritative = resp.authoritative
            self._lookup_send(lookup)
        else:
            self._on_server_error(broker.name, resp.error, service=self._over_service(lookup))
            self._lookup_failed(
                lookup, f"{resp.error.value if resp.error else 'Failed'}: {resp.message}")

    def _over_service(self, lookup: _Lookup) -> bool:
        """True for a lookup's first hop of a "service" client (its service-name connection)."""
        return lookup.redirects == 0 and self.settings.service_url == "service"

    def _lookup_failed(self, lookup: _Lookup, reason: str) -> None:
        if self.settings.lookup_retry and retryable(reason) and self._lookup_retried(lookup):
            return
        self.stats.lookups_failed += 1
        lookup.record.outcome = f"Failed:{reason}"
        self._lookup_ended(lookup, None, reason)

    def _lookup_retried(self, lookup: _Lookup) -> bool:
        """RetryableOperation.runImpl: the lookup again from a service-URL host after its own backoff,
        the waiting handles still waiting (lookup_retry.py); False once its operation timeout passed."""
        if lookup.retry is None:
            lookup.retry = LookupRetry(lookup.record.start, self.settings.operation_timeout, self.rng)
        delay = lookup.retry.delay(self.now, self.system.clock.now_ms())
        if delay is None:
            return False
        lookup.address, lookup.redirects, lookup.authoritative = self.pool.next_service_url(), 0, False
        self.call_later(delay, self._lookup_send, lookup)
        return True

    def _lookup_ended(self, lookup: _Lookup, broker_id: str | None, reason: str | None) -> None:
        record = lookup.record
        record.end = self.now
        del self.in_flight[lookup.rid]
        del self._lookups[lookup.topic]
        if self.settings.record_lookups:
            self.records.append(record)
        for h in lookup.waiters:
            self._on_broker(h, broker_id, reason)

    def _on_server_error(self, broker_id: str, error: ServerError | None, *,
                         service: bool = False) -> None:
        """ClientCnx.checkServerError on the connection the lookup answer came over: the broker's own
        (every handle attached there reconnects) or, with `service`, the pooled connection to the
        service name (only that one closes). ServiceNotReady closes it at once, TooManyRequests after
        `max_rejected_per_connection` within `rejected_reset` seconds."""
        if error is ServerError.SERVICE_NOT_READY:
            self._close(broker_id, service, "ServiceNotReady")
        elif error is ServerError.TOO_MANY_REQUESTS:
            if self.pool.rejected(SERVICE + broker_id if service else broker_id, self.now):
                self._close(broker_id, service, "TooManyRequests")

    def _close(self, broker_id: str, service: bool, reason: str) -> None:
        if service:
            if self.pool.close_service_connection(broker_id):
                self.stats.connection_closes += 1
        else:
            self.close_connection(broker_id, reason=reason)

    # ------------------------------------------------------------------ views

    def connected_count(self) -> int:
        return self._connected
