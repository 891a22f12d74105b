"""The metadata store: ZooKeeper as Pulsar's metadata layer sees it, as one actor.

Two parts:

* `MetadataTree` (`metadata_tree.py`, re-exported here): the znodes, versions, sessions and their
  ephemeral nodes. Pure: no clock (times come in as arguments), no I/O. Every mutation returns the
  notifications it causes, in order.
* `MetadataStore` (this module): the actor. It owns a tree, keeps session deadlines with ONE reaper
  task, delivers replies and notifications (optionally after an emulated latency) and counts ops.

Choices where Pulsar/ZooKeeper leave a question open (or where we simplify):

* Parents are created implicitly on create/put, with empty data, as Pulsar's ZKMetadataStore does
  (asyncCreateFullPathOptimistic). ZooKeeper makes them CONTAINER nodes, which its ContainerManager
  deletes about a minute after they become empty; here they are plain persistent nodes and stay.
* Notifications follow Pulsar's ZKMetadataStore (one persistent recursive watch on "/"):
  Created(path) then ChildrenChanged(parent) on create, Modified(path) on set, Deleted(path) then
  ChildrenChanged(parent) on delete. A top-level node has no parent notification (Pulsar's
  `parent("/a")` is null). Implicitly created parents notify too, top-down.
* A versioned put on a missing node fails with BadVersion, as Pulsar maps ZooKeeper's NoNode; the
  error (`BadVersionNoNode`) is also a `NotFound`.
* A node under an ephemeral node cannot be created (ZooKeeper's NoChildrenForEphemerals).
* Session end (close, timeout or fault) deletes all the session's ephemeral nodes in one batch,
  in their creation order, at one emulated instant.
* Latency: writes apply at once, in arrival order; the reply and the notifications leave after the
  op's latency through one FIFO outbox, so (like a single ZooKeeper server's pipeline) replies and
  watch events leave in the order the ops were applied. A random `latency_fn` therefore also
  models head-of-line blocking. With zero latency and an empty outbox the reply is immediate.
* Capacity (issue 27, `MetadataStoreCapacity`; unlimited = everything above, unchanged): ops are still
  decided at once, but their answers wait for the ensemble (`metadata_ensemble.py`: the leader
  serialises writes, each session's server serves its reads, Pulsar's batching makes one multi of
  many ops). A write's reply and notifications leave through the outbox at max(commit + latency,
  the outbox's last); a read's at max(served + latency, the session's last reply), so each session's
  answers stay in order. A session's end (close, expiry) is one closeSession write. Heartbeats wait
  too: a beat counts when its ping would be answered (`MetadataEnsemble.ping`), so a storm that keeps
  a session's pings queued longer than the timeout expires it, with its ephemeral nodes.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

import anyio

from emulator.cluster.metadata_messages import (
    CloseSession,
    Create,
    Delete,
    DeleteRecursive,
    Dump,
    Exists,
    ExpireSession,
    Get,
    GetChildren,
    Heartbeat,
    MetadataStoreError,
    Notification,
    OpenSession,
    SessionEvent,
    Set,
    Watch,
)
from emulator.cluster.metadata_checks import (
    check_data,
    check_session_id,
    check_version,
    require_session_id,
)
from emulator.cluster.metadata_tree import MetadataTree, parent_path, validate_path
from emulator.cluster.metadata_watches import Watches
from emulator.runtime import Actor, ActorDead, ActorSystem, Reply

from .capacity_metadata import MetadataStoreCapacity
from .metadata_ensemble import MetadataBatching, MetadataEnsemble

__all__ = ["MetadataStore", "MetadataTree", "metadata_session_timeout", "validate_path", "parent_path"]

DEFAULT_SESSION_TIMEOUT = 30.0
"""metadataStoreSessionTimeoutMillis = 30000 (zooKeeperSessionTimeoutMillis in older versions)."""


def metadata_session_timeout(conf: Any) -> float:
    """The session timeout in seconds as Pulsar's ServiceConfiguration.getMetadataStoreSessionTimeoutMillis
    reads it: the deprecated zooKeeperSessionTimeoutMillis when > 0 (Pulsar 3.x ships it as -1),
    else metadataStoreSessionTimeoutMillis."""
    legacy = conf.zoo_keeper_session_timeout_millis
    millis = legacy if legacy > 0 else conf.metadata_store_session_timeout_millis
    return millis / 1000.0

DEFAULT_STORE_NAME = "metadata-store"


# ---------------------------------------------------------------------------------------------
# MetadataStore: the actor
# ---------------------------------------------------------------------------------------------

_Outgoing = tuple[float, Reply | None, Any, bool, list[Notification]]
"""(due time, reply, value or exception, is_error, notifications) waiting in the outbox."""

_EPSILON = 1e-9
"""Seconds under which a deadline counts as reached: sleeping `deadline - now` can land one float
step short of `deadline`, and a sub-ulp sleep would not move the virtual clock."""


class MetadataStore(Actor):
    """The cluster's ZooKeeper: znodes, sessions with expiry, persistent recursive watches.

    `session_timeout` is metadataStoreSessionTimeoutMillis in seconds. Each asked op is delayed by
    `latency_fn(self.rng)` if given, else by `op_latency` (emulated seconds; negative draws count
    as 0). `stats` counts ops by message type name plus "notifications", "sessions_expired" and
    "sessions_closed", for metrics.
    """

    def __init__(
        self,
        name: str,
        system: ActorSystem,
        *,
        session_timeout: float = DEFAULT_SESSION_TIMEOUT,
        op_latency: float = 0.0,
        latency_fn: Callable[[random.Random], float] | None = None,
        capacity: MetadataStoreCapacity | None = None,
        batching: MetadataBatching | None = None,
    ) -> None:
        if isinstance(session_timeout, bool) or not isinstance(session_timeout, (int, float)):
            raise TypeError(f"session_timeout must be seconds (a number), got {session_timeout!r}")
        if not 0 < session_timeout < float("inf"):
            raise ValueError(
                f"session_timeout = {session_timeout!r}: must be > 0 and finite seconds"
            )
        if isinstance(op_latency, bool) or not isinstance(op_latency, (int, float)):
            raise TypeError(f"op_latency must be seconds (a number), got {op_latency!r}")
        if not 0 <= op_latency < float("inf"):
            raise ValueError(f"op_latency = {op_latency!r}: must be >= 0 and finite seconds")
        if latency_fn is not None and not callable(latency_fn):
            raise TypeError(
                f"latency_fn must be a function (random.Random) -> seconds, got {latency_fn!r}"
            )
        super().__init__(name, system)
        self.tree = MetadataTree()
        self.stats: Counter[str] = Counter()
        self._session_timeout = float(session_timeout)
        self._op_latency = float(op_latency)
        self._latency_fn = latency_fn
        self._deadlines: dict[int, float] = {}  # live session -> expiry time (emulated s), but for
        # the heartbeats recorded by `heartbeat` (below): session -> [last, the one before] beat time
        self._beats: dict[int, list[float]] = {}
        self._reaper_running = False
        self._session_listeners: dict[int, str] = {}  # session -> owner told of SessionLost
        self.watches = Watches()   # who watches what (metadata_watches.py)
        self._outbox: deque[_Outgoing] = deque()
        self._outbox_last_due = 0.0
        self._pump_running = False
        # finite capacity (None: unlimited, the behaviour before issue 27, byte for byte)
        self.ensemble: MetadataEnsemble | None = None
        if capacity is not None and not capacity.is_unlimited:
            self.ensemble = MetadataEnsemble(capacity, batching or MetadataBatching(), self.system.now,
                                             self.call_later, self._written, self._read)
        self._pings: dict[int, deque[float]] = {}   # session -> when its queued pings are answered
        self._last_due: dict[int | None, float] = {}  # session -> due time of its last reply
        self._handlers: dict[type, Callable[[Any], tuple[Any, list[Notification]]]] = {
            Create: self._on_create,
            Get: self._on_get,
            Exists: self._on_exists,
            Set: self._on_set,
            Delete: self._on_delete,
            GetChildren: self._on_get_children,
            DeleteRecursive: self._on_delete_recursive,
            OpenSession: self._on_open_session,
            CloseSession: self._on_close_session,
            ExpireSession: self._on_expire_session,
            Watch: self._on_watch,
            Dump: self._on_dump,
        }

    @property
    def session_timeout(self) -> float:
        """Seconds without a heartbeat after which a session expires; clients beat every third."""
        return self._session_timeout

    def peek(self, path: str) -> bytes | None:
        """A node's data read directly, without a message: for observers and invariant checks,
        which must not perturb the run (no latency, no op counted)."""
        result = self.tree.get(path)
        return None if result is None else result.data

    def peek_children(self, path: str) -> list[str]:
        """Sorted child names of `path` ([] if absent), read directly; see `peek`."""
        return self.tree.children(path)

    def peek_prefix(self, prefix: str) -> list[tuple[str, bytes]]:
        """(path, data) of every node whose path starts with `prefix`, sorted; see `peek`."""
        return self.tree.peek_prefix(prefix)

    def ephemeral_owner(self, path: str) -> int | None:
        """Session id holding the ephemeral node at `path` (None: absent or persistent); see `peek`."""
        stat = self.tree.stat(path)
        return None if stat is None else stat.ephemeral_owner

    def session_alive(self, session_id: int) -> bool:
        """True while the session has neither expired nor been closed; see `peek`."""
        return self.tree.session_owner(session_id) is not None

    def dump_json(self) -> str:
        """The whole tree as indented JSON (see `MetadataTree.dump`)."""
        return json.dumps(self.tree.dump(), indent=2)

    # -- message loop -----------------------------------------------------------------------

    async def receive(self, msg: Any, reply: Reply) -> None:
        kind = type(msg)
        if kind is Heartbeat:
            self._on_heartbeat(msg)
            return
        handler = self._handlers.get(kind)
        if handler is None:
            known = ", ".join(t.__name__ for t in (Heartbeat, *self._handlers))
            error = TypeError(f"MetadataStore does not handle {msg!r}; send one of: {known}")
            if not reply.expects:
                self.log.warning("unexpected message told to the metadata store", error=str(error))
            reply.error(error)
            return
        self.stats[kind.__name__] += 1
        try:
            value, notes = handler(msg)
        except (MetadataStoreError, ValueError, TypeError) as exc:
            if self.ensemble is not None:
                self._route(msg, reply, exc, True, [])
                return
            self._respond(reply, exc, True, [])
            return
        if self.ensemble is not None:
            self._route(msg, reply, value, False, notes)
            return
        self._respond(reply, value, False, notes)

    # -- handlers: (msg) -> (reply value, notifications) -------------------------------------

    def _on_create(self, msg: Create) -> tuple[Any, list[Notification]]:
        path = validate_path(msg.path)
        data = check_data(msg.data)
        session_id = check_session_id(msg.session_id)
        self.tree.check_session(session_id)
        if msg.ephemeral and session_id is None:
            raise ValueError(
                f"Create({path!r}, ephemeral=True) needs the session_id of an open session"
            )
        return self.tree.create(path, data, session_id if msg.ephemeral else None, self._now_ms())

    def _on_get(self, msg: Get) -> tuple[Any, list[Notification]]:
        path = validate_path(msg.path)
        self.tree.check_session(check_session_id(msg.session_id))
        return self.tree.get(path), []

    def _on_exists(self, msg: Exists) -> tuple[Any, list[Notification]]:
        path = validate_path(msg.path)
        self.tree.check_session(check_session_id(msg.session_id))
        return self.tree.stat(path), []

    def _on_set(self, msg: Set) -> tuple[Any, list[Notification]]:
        path = validate_path(msg.path)
        data = check_data(msg.data)
        expected = check_version(msg.expected_version)
        self.tree.check_session(check_session_id(msg.session_id))
        return self.tree.set(path, data, expected, self._now_ms())

    def _on_delete(self, msg: Delete) -> tuple[Any, list[Notification]]:
        path = validate_path(msg.path)
        expected = check_version(msg.expected_version)
        self.tree.check_session(check_session_id(msg.session_id))
        return None, self.tree.delete(path, expected)

    def _on_get_children(self, msg: GetChildren) -> tuple[Any, list[Notification]]:
        path = validate_path(msg.path)
        self.tree.check_session(check_session_id(msg.session_id))
        return (self.tree.children_set(path) if msg.as_set else self.tree.children(path)), []

    def _on_delete_recursive(self, msg: DeleteRecursive) -> tuple[Any, list[Notification]]:
        return None, self.tree.delete_recursive(validate_path(msg.path))

    def _on_open_session(self, msg: OpenSession) -> tuple[Any, list[Notification]]:
        if not isinstance(msg.owner, str) or not msg.owner:
            raise TypeError(
                f"OpenSession(owner): owner must be an actor name (str), got {msg.owner!r}"
            )
        session_id = self.tree.open_session(msg.owner)
        self._deadlines[session_id] = self.now + self._session_timeout
        if msg.session_events:
            self._session_listeners[session_id] = msg.owner
        if not self._reaper_running:
            self._reaper_running = True
            self.start_soon(self._reap, name="session-reaper")
        return session_id, []

    def _on_heartbeat(self, msg: Heartbeat) -> None:
        """A heartbeat for an ended session is ignored: ZooKeeper does not revive a session."""
        self.stats["Heartbeat"] += 1
        if msg.session_id in self._deadlines:
            if self.ensemble is not None:
                self._ping(msg.session_id)
                return
            self._deadlines[msg.session_id] = self.now + self._session_timeout

    def heartbeat(self, session_id: int) -> None:
        """A client's heartbeat, recorded at once instead of told (MetadataClient's heartbeats).

        A `Heartbeat` told has no reply and no latency, and its only effect is the session's deadline,
        which only the reaper reads; told, it cost a mailbox round of this actor for every broker
        every few seconds. Recorded here, the reaper computes the deadline from it: the last beat
        *before* the reaper's instant plus the timeout, as a beat told at that very instant would
        have been handled after the reaper's check (its timer and the reaper's both fire in the
        instant's first round; the told message needed one more). So every deadline the reaper
        sees, and every expiry, is the same as with told heartbeats."""
        self.stats["Heartbeat"] += 1
        if session_id in self._deadlines:
            if self.ensemble is not None:
                self._ping(session_id)
                return
            beats = self._beats.get(session_id)
            if beats is None:
                self._beats[session_id] = [self.now, -math.inf]
            else:
                beats[1] = beats[0]
                beats[0] = self.now

    def _ping(self, session_id: int) -> None:
        """With finite capacity: the beat counts when its ping is answered (MetadataEnsemble.ping);
        those times never decrease for a session (its server's queue and its writes only grow)."""
        assert self.ensemble is not None
        answered = self.ensemble.ping(session_id)
        pings = self._pings.get(session_id)
        if pings is None:
            self._pings[session_id] = deque((answered,))
        elif not pings or pings[-1] <= answered:
            pings.append(answered)

    def _deadline(self, session_id: int, deadline: float, now: float) -> float:
        """The session's deadline as the reaper sees it at `now` (see `heartbeat`)."""
        if self.ensemble is not None:
            # a ping answered before `now` moves the deadline, as a beat before the instant does below
            pings = self._pings.get(session_id)
            while pings and pings[0] < now:
                beat_deadline = pings.popleft() + self._session_timeout
                if beat_deadline > deadline:
                    deadline = self._deadlines[session_id] = beat_deadline
            return deadline
        beats = self._beats.get(session_id)
        if beats is None:
            return deadline
        last = beats[0] if beats[0] < now else beats[1]
        beat_deadline = last + self._session_timeout
        return beat_deadline if beat_deadline > deadline else deadline

    def _on_close_session(self, msg: CloseSession) -> tuple[Any, list[Notification]]:
        session_id = require_session_id(msg.session_id, "CloseSession(session_id)")
        live = self._deadlines.pop(session_id, None) is not None
        self._beats.pop(session_id, None)
        self._pings.pop(session_id, None)
        self._session_listeners.pop(session_id, None)
        if live:
            self.stats["sessions_closed"] += 1
        return None, self.tree.end_session(session_id)

    def _on_expire_session(self, msg: ExpireSession) -> tuple[Any, list[Notification]]:
        session_id = require_session_id(msg.session_id, "ExpireSession(session_id)")
        live = session_id in self._deadlines
        return live, self._expire(session_id) if live else []

    def _on_watch(self, msg: Watch) -> tuple[Any, list[Notification]]:
        prefix = validate_path(msg.prefix, "prefix")
        if not isinstance(msg.subscriber, str) or self.system.get(msg.subscriber) is None:
            raise ValueError(
                f"Watch(subscriber={msg.subscriber!r}): no running actor has this name"
            )
        self.watches.add(msg.subscriber, self.system.get(msg.subscriber), prefix,
                         frozenset(msg.kinds) if msg.kinds else None)
        # as ZooKeeper's getChildren(path, watch): the watch is set and the children come back
        return self.tree.children(prefix), []

    def _on_dump(self, msg: Dump) -> tuple[Any, list[Notification]]:
        return self.tree.dump(), []

    # -- sessions ---------------------------------------------------------------------------

    def _expire(self, session_id: int) -> list[Notification]:
        """End a live session as ZooKeeper's expiry does, and tell its owner SessionLost."""
        owner = self.tree.session_owner(session_id)
        self._deadlines.pop(session_id, None)
        self._beats.pop(session_id, None)
        self._pings.pop(session_id, None)
        self.stats["sessions_expired"] += 1
        notes = self.tree.end_session(session_id)
        self.log.info("metadata session expired", session_id=session_id, owner=owner,
                      ephemeral_nodes_deleted=sum(n.type == "Deleted" for n in notes))
        listener = self._session_listeners.pop(session_id, None)
        target = None if listener is None else self.system.get(listener)
        if target is not None:
            try:
                target.tell(SessionEvent("SessionLost", session_id))
            except ActorDead:
                pass
        return notes

    async def _reap(self) -> None:
        """The one timer for all sessions: sleep until the earliest deadline, expire what is due.

        Deadlines only move later (heartbeats) and new sessions end later than existing ones
        (one timeout for all), so sleeping until the earliest known deadline never oversleeps.
        """
        try:
            while self._deadlines:
                now = self.now
                deadlines = {sid: self._deadline(sid, d, now) for sid, d in self._deadlines.items()}
                earliest = min(deadlines.values())
                if earliest - now > _EPSILON:
                    await anyio.sleep(earliest - now)
                    continue
                due = [sid for sid, deadline in deadlines.items() if deadline - now <= _EPSILON]
                if self.ensemble is not None:   # each expiry is one closeSession through the leader
                    for session_id in due:
                        self._route(ExpireSession(session_id), None, True, False, self._expire(session_id))
                    continue
                notes: list[Notification] = []
                for session_id in due:
                    notes.extend(self._expire(session_id))
                self._respond(None, None, False, notes)
        finally:
            self._reaper_running = False

    # -- finite capacity: through the ensemble's queues --------------------------------------

    def _route(self, msg: Any, reply: Reply | None, value: Any, is_error: bool,
               notes: list[Notification]) -> None:
        """Hand a decided op to the ensemble as Pulsar's ZKMetadataStore sends it (see the module
        docstring of metadata_ensemble)."""
        ensemble = self.ensemble
        assert ensemble is not None
        kind = type(msg)
        entry = (reply, value, is_error, notes)
        session = getattr(msg, "session_id", None)
        if not isinstance(session, int) or isinstance(session, bool):
            session = None
        if kind is Create or kind is Set:
            size = len(msg.path) + (len(msg.data) if isinstance(msg.data, bytes) else 0)
            ensemble.write(session, entry, size=size)
        elif kind is Delete:
            ensemble.write(session, entry, size=len(msg.path))
        elif kind is Get or kind is GetChildren:
            ensemble.read(session, entry)
        elif kind is OpenSession:   # createSession: a txn of the leader
            if not is_error:
                session = value
                ensemble.opened(value)
            ensemble.write(session, entry, batched=False)
        elif kind is CloseSession or kind is ExpireSession or kind is DeleteRecursive:
            # one txn deleting every node (closeSession: DataTree.killSession; Pulsar's deleteRecursive
            # is one delete per node, counted here as one multi)
            deleted = sum(1 for n in notes if n.type == "Deleted")
            ensemble.write(session, entry, batched=False, ops=max(1, deleted))
            if session is not None and kind is not DeleteRecursive:
                ensemble.closed(session)
        else:   # Exists (not batched by Pulsar), Watch (addWatch), Dump
            ensemble.read(session, entry, batched=False)

    def _written(self, finish: float, session: int | None, entries: list[Any]) -> None:
        """Writes committed at `finish`: their replies and notifications leave in commit order, one
        round trip later (one latency draw per request, a multi being one request)."""
        due = finish + self._latency()
        if due < self._outbox_last_due:
            due = self._outbox_last_due
        last = self._last_due.get(session)
        if last is not None and due < last:
            due = last
        self._last_due[session] = due
        now = self.now
        if due <= now and not self._outbox:
            for reply, value, is_error, notes in entries:
                self._deliver(reply, value, is_error, notes)
            return
        self._outbox_last_due = due
        for reply, value, is_error, notes in entries:
            self._outbox.append((due, reply, value, is_error, notes))
        if not self._pump_running:
            self._pump_running = True
            self.start_soon(self._pump, name="outbox")

    def _read(self, ready: float, session: int | None, entries: list[Any]) -> None:
        """Reads served at `ready`: their replies leave one round trip later, after the session's
        earlier replies."""
        due = ready + self._latency()
        last = self._last_due.get(session)
        if last is not None and due < last:
            due = last
        self._last_due[session] = due
        self.call_later(due - self.now, self._deliver_all, entries)

    def _deliver_all(self, entries: list[Any]) -> None:
        for reply, value, is_error, notes in entries:
            self._deliver(reply, value, is_error, notes)

    # -- replies and notifications ----------------------------------------------------------

    def _latency(self) -> float:
        if self._latency_fn is not None:
            return max(0.0, float(self._latency_fn(self.rng)))
        return self._op_latency

    def _respond(self, reply: Reply | None, value: Any, is_error: bool,
              notes: list[Notification]) -> None:
        """Reply, then notify; through the FIFO outbox when a latency applies or it is busy."""
        delay = self._latency()
        if delay <= 0.0 and not self._outbox:
            self._deliver(reply, value, is_error, notes)
            return
        due = max(self.now + delay, self._outbox_last_due)
        self._outbox_last_due = due
        self._outbox.append((due, reply, value, is_error, notes))
        if not self._pump_running:
            self._pump_running = True
            self.start_soon(self._pump, name="outbox")

    async def _pump(self) -> None:
        """Drain the outbox in order; due times never decrease, so the head is always next."""
        try:
            while self._outbox:
                wait = self._outbox[0][0] - self.now
                if wait > _EPSILON:
                    await anyio.sleep(wait)
                    continue
                _, reply, value, is_error, notes = self._outbox.popleft()
                self._deliver(reply, value, is_error, notes)
        finally:
            self._pump_running = False

    def _deliver(self, reply: Reply | None, value: Any, is_error: bool,
                 notes: list[Notification]) -> None:
        if reply is not None:
            if is_error:
                reply.error(value)
            else:
                reply.ok(value)
        if notes and self.watches:
            self._notify(notes)

    def _notify(self, notes: list[Notification]) -> None:
        """Tell each watcher, in change order, the notifications under its prefixes; a watcher
        that is no longer running loses its watches silently."""
        gone: list[str] = []
        for subscriber, wanted_notes in self.watches.targets(notes):
            target = self.system.get(subscriber)
            if target is None:
                gone.append(subscriber)
                continue
            try:
                for note in wanted_notes:
                    target.tell(note)
                    self.stats["notifications"] += 1
            except ActorDead:
                gone.append(subscriber)
        for subscriber in gone:
            self.watches.drop(subscriber)

    def _now_ms(self) -> int:
        return self.system.clock.now_ms()

