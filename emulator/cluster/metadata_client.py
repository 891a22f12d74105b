"""What a broker holds to talk to the metadata store: a session, plain ops, and resource locks.

`MetadataClient` is a helper object owned by an actor, not an actor: its asks run in the owner's
tasks and its heartbeat loop is a child task of the owner (`owner.start_soon`), so a killed or
crashed broker stops heartbeating and its session expires `session_timeout` later, exactly as a
crashed Pulsar broker's ZooKeeper session does (spec pulsar-protocol.md §6.3).

Every op carries the client's session id, so once the store has ended the session (expiry or a
fault) every op fails with `SessionExpired`, as on a ZooKeeper handle whose session expired. The
store then tells the owner `SessionEvent("SessionLost")`; re-establishing is the owner's choice
(Pulsar's default zookeeperSessionExpiredPolicy=reconnect: `open_session()` again and re-acquire
locks).

Store failures that are not the store's answer (the store actor is gone, or no reply within
`op_timeout`) are raised as `MetadataStoreError` with the runtime error as `__cause__`, the way
Pulsar wraps ZooKeeper's ConnectionLoss in a MetadataStoreException.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from emulator.cluster.metadata_messages import (
    BadVersion,
    CloseSession,
    Create,
    Delete,
    Exists,
    Get,
    GetChildren,
    GetResult,
    LockBusy,
    MetadataStoreError,
    NodeExists,
    NotFound,
    OpenSession,
    SessionExpired,
    Set,
    Stat,
    Watch,
)
from emulator.cluster.metadata_store import DEFAULT_SESSION_TIMEOUT, DEFAULT_STORE_NAME, MetadataStore
from emulator.runtime import Actor, ActorDead, AskTimeout
from emulator.runtime.wakeup import Wakeup

__all__ = [
    "BadVersion",
    "LockBusy",
    "MetadataClient",
    "MetadataStoreError",
    "NodeExists",
    "NotFound",
    "SessionExpired",
]


class MetadataClient:
    """Metadata store access for one actor (usually a broker): ops, one session, locks.

    Lock methods follow Pulsar's ResourceLockImpl (spec pulsar-protocol.md §2.5). The client
    remembers the version of each lock it holds, so `release_lock` deletes only the node version
    it acquired or last updated, as Pulsar's release() does.
    """

    def __init__(self, owner: Actor, store_name: str = DEFAULT_STORE_NAME,
                 op_timeout: float = 30.0) -> None:
        if not isinstance(owner, Actor):
            raise TypeError(f"MetadataClient(owner): owner must be the Actor that uses the client, "
                            f"got {owner!r}")
        if not isinstance(store_name, str) or not store_name:
            raise TypeError(
                f"store_name must be the metadata store actor's name, got {store_name!r}"
            )
        if isinstance(op_timeout, bool) or not isinstance(op_timeout, (int, float)):
            raise TypeError(f"op_timeout must be seconds (a number), got {op_timeout!r}")
        if not op_timeout > 0:
            raise ValueError(f"op_timeout = {op_timeout!r}: must be > 0 seconds")
        self.owner = owner
        self.store_name = store_name
        self.op_timeout = float(op_timeout)
        self.session_id: int | None = None
        self._locks: dict[str, int] = {}  # held lock path -> node version we last wrote

    def __repr__(self) -> str:
        return (f"<MetadataClient owner={self.owner.name!r} store={self.store_name!r} "
                f"session={self.session_id}>")

    # -- session ----------------------------------------------------------------------------

    async def open_session(self, *, session_events: bool = False) -> int:
        """Open a new session and heartbeat it every session_timeout/3 from the owner's tasks.

        With `session_events`, the owner is told `SessionEvent("SessionLost", id)` when the
        store ends the session on its own (expiry, fault); the owner's receive must handle it.

        Opening again (e.g. after SessionLost) abandons the previous session: its heartbeats
        stop, so if it is still live it expires one timeout later, like a discarded ZooKeeper
        handle. Held locks are kept on record; re-acquire them to move them to the new session.
        """
        session_id = await self._ask(OpenSession(self.owner.name, session_events))
        self.session_id = session_id
        store = self.owner.system.get(self.store_name)
        timeout = getattr(store, "session_timeout", DEFAULT_SESSION_TIMEOUT)
        self.owner.start_soon(self._heartbeat, session_id, timeout / 3.0,
                              name=f"metadata-heartbeat-{session_id}")
        return session_id

    async def close_session(self) -> None:
        """Graceful close: the store deletes this session's ephemeral nodes at once."""
        session_id = self.session_id
        if session_id is None:
            return
        self.session_id = None  # stops the heartbeat loop
        self._locks.clear()
        await self._ask(CloseSession(session_id))

    async def _heartbeat(self, session_id: int, interval: float) -> None:
        """Heartbeat the session every `interval` until it is no longer this client's.

        A `Wakeup` of the owner, not a sleeping task: this fires for every broker every few emulated
        seconds. The first step runs in the task `open_session` starts (where and when the loop of
        sleeps started before), the rest are plain callbacks at the same instants and in the same
        order; a dead owner's wake-up is cancelled, so its heartbeats stop with it. A beat is
        recorded in the store directly (`MetadataStore.heartbeat` says why that is the effect a
        told Heartbeat had). With a finite ensemble the store counts the beat when its ping would be
        answered, behind this session's queued requests (`MetadataEnsemble.ping`)."""
        wakeup: Wakeup | None = None

        def beat() -> None:
            if self.session_id != session_id:
                return
            store = self.owner.system.get(self.store_name)
            if isinstance(store, MetadataStore):   # else: restarting or gone; the session expires there
                store.heartbeat(session_id)   # the effect a told Heartbeat had, without its mailbox round
            assert wakeup is not None
            wakeup.after(interval)

        wakeup = self.owner.wakeup(beat)
        wakeup.after(interval)

    # -- plain ops --------------------------------------------------------------------------

    async def create(self, path: str, data: bytes, *, ephemeral: bool = False) -> Stat:
        """Create-if-absent (Pulsar put with expectedVersion=-1); NodeExists if present."""
        if ephemeral and self.session_id is None:
            raise ValueError(f"create({path!r}, ephemeral=True) needs a session: "
                             f"await client.open_session() first")
        return await self._ask(Create(path, data, ephemeral, self.session_id))

    async def get(self, path: str) -> GetResult | None:
        return await self._ask(Get(path, self.session_id))

    async def exists(self, path: str) -> Stat | None:
        return await self._ask(Exists(path, self.session_id))

    async def children(self, path: str) -> list[str]:
        """Sorted child names; [] for a missing node (Pulsar)."""
        return await self._ask(GetChildren(path, self.session_id))

    async def children_set(self, path: str) -> frozenset[str]:
        """`children` as a frozenset, the one every reader gets until a child comes or goes."""
        return await self._ask(GetChildren(path, self.session_id, as_set=True))

    async def set(self, path: str, data: bytes, *, expected_version: int = -1) -> Stat:
        """Write data; -1 = unconditional (creates a persistent node if absent)."""
        stat = await self._ask(Set(path, data, expected_version, self.session_id))
        if path in self._locks:
            self._locks[path] = stat.version
        return stat

    def set_then(self, path: str, data: bytes, then: Callable[[Stat | None, BaseException | None], Any],
                 *, expected_version: int = -1) -> None:
        """`set` for callback code (a `Wakeup`'s work): `then(stat, None)` once written, or
        `then(None, error)` with the error `set` would raise (MetadataStoreError for a store that is
        gone or silent), as a callback of the owner; at once if the store is not running, as `set`
        raises before it waits. The ask is the one `set` makes, at the same point: the store sees
        the same messages in the same order."""
        store = self.owner.system.get(self.store_name)
        msg = Set(path, data, expected_version, self.session_id)
        if store is None:
            then(None, MetadataStoreError(f"metadata store {self.store_name!r} is not running "
                                          f"(asked {type(msg).__name__})"))
            return
        try:
            store.ask_then(msg, self._set_answered, path, then, asker=self.owner,
                           timeout=self.op_timeout)
        except ActorDead as exc:
            error = MetadataStoreError(f"metadata store {self.store_name!r}: {exc}")
            error.__cause__ = exc
            then(None, error)

    def _set_answered(self, path: str, then: Callable[[Stat | None, BaseException | None], Any],
                      stat: Stat | None, error: BaseException | None) -> None:
        if error is not None:
            if isinstance(error, (ActorDead, AskTimeout)):
                wrapped = MetadataStoreError(f"metadata store {self.store_name!r}: {error}")
                wrapped.__cause__ = error
                error = wrapped
            then(None, error)
            return
        assert stat is not None
        if path in self._locks:
            self._locks[path] = stat.version
        then(stat, None)

    async def delete(self, path: str, *, expected_version: int = -1) -> None:
        await self._ask(Delete(path, expected_version, self.session_id))
        self._locks.pop(path, None)

    async def watch(self, prefix: str, kinds: tuple[str, ...] = ()) -> list[str]:
        """Notifications for changes at or under `prefix` arrive in the owner's mailbox (only those
        of `kinds`, if given); returns the prefix node's children at the moment the watch was set."""
        return await self._ask(Watch(prefix, self.owner.name, kinds))

    # -- resource locks (Pulsar's ResourceLockImpl) -----------------------------------------

    async def acquire_lock(self, path: str, data: bytes) -> Stat:
        """Create `path` as an ephemeral node of this session holding `data`.

        If the node exists (Pulsar's revalidate): same data, this session -> adopt it; same data,
        another session -> it is our stale lock from a previous session: delete and re-create;
        different data, this session -> delete and re-create; different data, another session
        -> LockBusy("Resource at X is already locked"); persistent node -> LockBusy.

        As in Pulsar, "ours" means equal value (the lock data carries the broker's URLs), not
        equal owner name. Other errors (a concurrent delete/update) propagate, as in Pulsar.
        """
        if self.session_id is None:
            raise ValueError(f"acquire_lock({path!r}) needs a session: "
                             f"await client.open_session() first")
        try:
            stat = await self.create(path, data, ephemeral=True)
        except NodeExists:
            stat = await self._revalidate(path, data)
        self._locks[path] = stat.version
        return stat

    async def update_lock(self, path: str, data: bytes) -> Stat:
        """Pulsar's ResourceLock.updateValue: overwrite a held lock at its known version; on a
        version conflict revalidate as `acquire_lock` does. Acquires the lock if not held."""
        version = self._locks.get(path)
        if version is None:
            return await self.acquire_lock(path, data)
        try:
            stat = await self._ask(Set(path, data, version, self.session_id))
        except BadVersion:
            stat = await self._revalidate(path, data)
        self._locks[path] = stat.version
        return stat

    async def release_lock(self, path: str) -> None:
        """Delete a held lock at the version we hold; NotFound counts as released. A lock not
        held by this client is already released (Pulsar: release() of a Released lock)."""
        version = self._locks.pop(path, None)
        if version is None:
            return
        try:
            await self._ask(Delete(path, version, self.session_id))
        except NotFound:
            pass

    def held_locks(self) -> list[str]:
        """Paths of the locks this client holds, in acquisition order."""
        return list(self._locks)

    async def _revalidate(self, path: str, data: bytes) -> Stat:
        existing = await self.get(path)
        if existing is None:  # vanished meanwhile: try to create it again, once
            return await self._create_lock(path, data)
        stat = existing.stat
        if not stat.ephemeral:
            raise LockBusy(f"Path {path} is already created as non-ephemeral")
        mine = stat.ephemeral_owner == self.session_id
        if existing.data == data and mine:
            return stat
        if existing.data != data and not mine:
            raise LockBusy(f"Resource at {path} is already locked")
        await self._ask(Delete(path, stat.version, self.session_id))
        return await self._create_lock(path, data)

    async def _create_lock(self, path: str, data: bytes) -> Stat:
        try:
            return await self.create(path, data, ephemeral=True)
        except NodeExists as exc:
            raise LockBusy(f"Resource at {path} is already locked") from exc

    # -- transport --------------------------------------------------------------------------

    async def _ask(self, msg: Any) -> Any:
        store = self.owner.system.get(self.store_name)
        if store is None:
            raise MetadataStoreError(f"metadata store {self.store_name!r} is not running "
                                     f"(asked {type(msg).__name__})")
        try:
            return await store.ask(msg, timeout=self.op_timeout)
        except (ActorDead, AskTimeout) as exc:
            raise MetadataStoreError(f"metadata store {self.store_name!r}: {exc}") from exc
