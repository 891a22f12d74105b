"""Messages, replies and errors of the metadata store (the ZooKeeper-like `MetadataStore` actor).

The store speaks Pulsar's `MetadataStoreExtended` API (put/get/delete/getChildren with versions,
ephemeral nodes per session, notifications) over actor messages. Requests are asked (`await
store.ask(Create(...))`), `Heartbeat` is told; notifications are told to watchers.

Errors mirror `org.apache.pulsar.metadata.api.MetadataStoreException` and its subclasses. They are
raised by `ask()` in the caller (the store replies with `Reply.error`) and never crash the store.
"""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = [
    "BadVersion",
    "BadVersionNoNode",
    "CloseSession",
    "Create",
    "Delete",
    "DeleteRecursive",
    "Dump",
    "Exists",
    "ExpireSession",
    "Get",
    "GetChildren",
    "GetResult",
    "Heartbeat",
    "LockBusy",
    "MetadataStoreError",
    "NodeExists",
    "NotEmpty",
    "NotFound",
    "Notification",
    "NotificationType",
    "OpenSession",
    "SessionEvent",
    "SessionExpired",
    "Set",
    "Stat",
    "Watch",
]

# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


class MetadataStoreError(Exception):
    """Base of every metadata store failure (Pulsar's MetadataStoreException)."""


class NotFound(MetadataStoreError):
    """The node does not exist (Pulsar's NotFoundException, ZooKeeper's NoNode)."""


class BadVersion(MetadataStoreError):
    """The expected version did not match (Pulsar's BadVersionException).

    Pulsar also uses it for "create, but the node exists" (put with expectedVersion=-1), which
    is why `NodeExists` is a subclass: lock code catches `BadVersion` as Pulsar's does.
    """


class NodeExists(BadVersion):
    """Create of a node that already exists; a `BadVersion`, as Pulsar reports it."""


class BadVersionNoNode(BadVersion, NotFound):
    """A versioned write (expected_version >= 0) to a missing node.

    ZooKeeper answers NoNode; Pulsar's ZKMetadataStore and LocalMemoryMetadataStore turn it into
    BadVersionException. Being both lets callers catch either `BadVersion` (Pulsar) or `NotFound`.
    """


class NotEmpty(MetadataStoreError):
    """Delete of a node that still has children (ZooKeeper's NotEmpty)."""


class SessionExpired(MetadataStoreError):
    """The session is expired or closed; it can no longer own ephemeral nodes or issue ops."""


class LockBusy(MetadataStoreError):
    """The resource lock is held by another session (Pulsar's LockBusyException)."""


# ---------------------------------------------------------------------------------------------
# Replies and notifications
# ---------------------------------------------------------------------------------------------

NotificationType = Literal["Created", "Modified", "Deleted", "ChildrenChanged"]


class Stat(msgspec.Struct, frozen=True):
    """A node's metadata, as Pulsar's `Stat` plus the session that owns an ephemeral node.

    `owner` is the name given to `OpenSession` (the broker's name), so lock code can tell
    "my previous session" from "another broker". Timestamps are emulated milliseconds.
    """

    path: str
    version: int
    creation_timestamp: int
    modification_timestamp: int
    ephemeral_owner: int | None = None
    owner: str | None = None

    @property
    def ephemeral(self) -> bool:
        return self.ephemeral_owner is not None


class GetResult(msgspec.Struct, frozen=True):
    """Value and stat of a node (Pulsar's GetResult)."""

    data: bytes
    stat: Stat


class Notification(msgspec.Struct, frozen=True):
    """A change under a watched prefix (Pulsar's Notification); told to the watcher."""

    type: NotificationType
    path: str


class SessionEvent(msgspec.Struct, frozen=True):
    """Told to a session's owner actor (if it opened the session with session_events=True)
    when the store ends the session without being asked.

    Only "SessionLost" (Pulsar's SessionEvent.SessionLost) is sent: on timeout expiry or an
    `ExpireSession` fault. Re-establishing (a new session, lock revalidation) is the owner's job.
    """

    type: Literal["SessionLost"]
    session_id: int


# ---------------------------------------------------------------------------------------------
# Requests (asked; reply value in the docstring)
# ---------------------------------------------------------------------------------------------


class Create(msgspec.Struct, frozen=True):
    """-> Stat. Pulsar's put(path, data, expectedVersion=-1, [Ephemeral]).

    Raises NodeExists if present, SessionExpired if `session_id` is no longer live.
    An ephemeral node needs a live `session_id`.
    """

    path: str
    data: bytes
    ephemeral: bool = False
    session_id: int | None = None


class Get(msgspec.Struct, frozen=True):
    """-> GetResult | None (None when absent, as Pulsar's Optional.empty())."""

    path: str
    session_id: int | None = None


class Exists(msgspec.Struct, frozen=True):
    """-> Stat | None."""

    path: str
    session_id: int | None = None


class Set(msgspec.Struct, frozen=True):
    """-> Stat. expected_version -1 = unconditional (creates a persistent node if absent).

    Raises BadVersion on mismatch, BadVersionNoNode if absent and expected_version >= 0.
    """

    path: str
    data: bytes
    expected_version: int = -1
    session_id: int | None = None


class Delete(msgspec.Struct, frozen=True):
    """-> None. Raises NotFound, BadVersion (expected_version >= 0), NotEmpty."""

    path: str
    expected_version: int = -1
    session_id: int | None = None


class GetChildren(msgspec.Struct, frozen=True):
    """-> sorted child names (not full paths); [] for a missing node, as Pulsar. With `as_set`, the
    names as a frozenset shared by every reader until a child comes or goes (1,000 brokers list
    /loadbalance/brokers on every registration and keep the listing as a set)."""

    path: str
    session_id: int | None = None
    as_set: bool = False


class DeleteRecursive(msgspec.Struct, frozen=True):
    """-> None. Deletes the node and everything under it; a missing node is a no-op (Pulsar)."""

    path: str


class OpenSession(msgspec.Struct, frozen=True):
    """-> session id (int, 1, 2, ...). `owner` is the owning actor's name.

    With `session_events`, the owner is told `SessionEvent("SessionLost", id)` if the store ends
    the session (expiry or fault); off by default, since an actor must handle that message.
    """

    owner: str
    session_events: bool = False


class Heartbeat(msgspec.Struct, frozen=True):
    """Told (no reply): keeps the session alive for another session_timeout."""

    session_id: int


class CloseSession(msgspec.Struct, frozen=True):
    """-> None. Graceful close: the session's ephemeral nodes are deleted at once."""

    session_id: int


class ExpireSession(msgspec.Struct, frozen=True):
    """-> bool (was it live). Admin/fault op: the same as a timeout expiry, now."""

    session_id: int


class Watch(msgspec.Struct, frozen=True):
    """-> the prefix node's sorted children ([] if absent), as ZooKeeper's getChildren(path, watch).
    Persistent recursive watch: `subscriber` (an actor name) is told a Notification for every change
    at or under `prefix`."""

    prefix: str
    subscriber: str
    kinds: tuple[str, ...] = ()
    """The notification types the subscriber acts on (empty: all). The others are not sent: an actor
    that ignores them costs nothing when the store has 1,000 subscribers (every broker watches
    /loadbalance/brokers for registrations, not for the reports written there ~10,000 times an hour)."""


class Dump(msgspec.Struct, frozen=True):
    """-> {path: {"data", "version", "ephemeral_owner", "owner"}}, JSON-able, sorted by path."""
