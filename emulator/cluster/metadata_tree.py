"""The metadata store's znode tree: ZooKeeper's nodes, versions, sessions and ephemeral nodes.

Pure: no clock (times come in as arguments), no I/O. Every mutation returns the notifications it
causes, in order; the actor that owns the tree (`metadata_store.MetadataStore`) validates the
messages, delivers the replies and these notifications, and expires sessions. Its docstring lists the
choices both carry out where Pulsar/ZooKeeper leave a question open.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from emulator.cluster.metadata_messages import (
    BadVersion,
    BadVersionNoNode,
    GetResult,
    MetadataStoreError,
    NodeExists,
    NotEmpty,
    NotFound,
    Notification,
    SessionExpired,
    Stat,
)

__all__ = ["MetadataTree", "parent_path", "validate_path"]


# ---------------------------------------------------------------------------------------------
# Paths
# ---------------------------------------------------------------------------------------------


def validate_path(path: object, argument: str = "path") -> str:
    """Return `path` if it is a valid absolute node path, else raise TypeError/ValueError."""
    if not isinstance(path, str):
        raise TypeError(
            f"{argument} must be a str such as '/a/b', got {type(path).__name__}: {path!r}"
        )
    if path == "/":
        return path
    if not path.startswith("/") or path.endswith("/"):
        raise ValueError(f"{argument} = {path!r}: a path starts with '/' and does not end with '/'")
    # a part is empty ("//"), "." or ".." ("/./", "/../" once the path ends with "/"), or holds a NUL
    slashed = path + "/"
    if "//" in path or "/./" in slashed or "/../" in slashed or "\x00" in path:
        raise ValueError(f"{argument} = {path!r}: empty, '.' and '..' path parts are not allowed")
    return path


def parent_path(path: str) -> str | None:
    """Parent of a node path; None for "/" itself."""
    if path == "/":
        return None
    idx = path.rfind("/")
    return "/" if idx == 0 else path[:idx]


def _notified_parent(path: str) -> str | None:
    """Pulsar's AbstractMetadataStore.parent(): null for top-level nodes, so "/" never gets
    ChildrenChanged."""
    idx = path.rfind("/")
    return None if idx <= 0 else path[:idx]


def _join(parent: str, child: str) -> str:
    return "/" + child if parent == "/" else parent + "/" + child


def _top(path: str) -> str:
    """The top-level node a path is under: "namespace" for "/namespace/a/b" (and for "/namespace")."""
    end = path.find("/", 1)
    return path[1:] if end < 0 else path[1:end]


# ---------------------------------------------------------------------------------------------
# MetadataTree: pure znode state
# ---------------------------------------------------------------------------------------------


_NO_CHILDREN: frozenset[str] = frozenset()


class _ZNode:
    """One znode. Mutable and slotted: the store creates millions of them in the largest scenarios,
    most of them leaves, so a node's set of children is made with its first child (an empty set is
    216 bytes), and its sorted listing is kept until a child comes or goes (every broker lists
    /loadbalance/brokers on every registration: 1,000 brokers sorted a million times otherwise)."""

    __slots__ = ("data", "version", "ephemeral_owner", "ctime", "mtime", "children", "listing", "frozen")

    def __init__(self, data: bytes, ephemeral_owner: int | None, now_ms: int) -> None:
        self.data = data
        self.version = 0
        self.ephemeral_owner = ephemeral_owner
        self.ctime = now_ms
        self.mtime = now_ms
        self.children: set[str] | frozenset[str] = _NO_CHILDREN
        self.listing: list[str] | None = None
        self.frozen: frozenset[str] | None = None

    def add_child(self, name: str) -> None:
        if self.children is _NO_CHILDREN:
            self.children = set()
        self.children.add(name)  # type: ignore[union-attr]
        self.listing = None
        self.frozen = None

    def discard_child(self, name: str) -> None:
        if name in self.children:
            self.children.discard(name)  # type: ignore[union-attr]
            self.listing = None
            self.frozen = None

    def sorted_children(self) -> list[str]:
        """The children in name order (a new list: the caller may keep or change it)."""
        listing = self.listing
        if listing is None:
            listing = self.listing = sorted(self.children)
        return listing.copy()

    def children_set(self) -> frozenset[str]:
        """The children as a frozenset, made once per change of them (readers share it)."""
        frozen = self.frozen
        if frozen is None:
            frozen = self.frozen = frozenset(self.children)
        return frozen


class _Session:
    __slots__ = ("owner", "ephemerals")

    def __init__(self, owner: str) -> None:
        self.owner = owner
        # Insertion-ordered: session end deletes in creation order (deterministic).
        self.ephemerals: dict[str, None] = {}


class MetadataTree:
    """Znodes with ZooKeeper's version and ephemeral semantics, as Pulsar's store exposes them.

    Pure state: `now_ms` is passed in; mutations return the notifications they cause, in the
    order a ZooKeeper persistent recursive watch would see them. Arguments are assumed valid
    (the actor validates messages); session ids passed here must be live unless stated.
    """

    def __init__(self) -> None:
        self._nodes: dict[str, _ZNode] = {"/": _ZNode(b"", None, 0)}
        self._sessions: dict[int, _Session] = {}
        self._next_session_id = 1
        # node changes (create, set, delete) in all and under each top-level node, and the last
        # `peek_prefix` answer of each prefix with the count it was made at: the invariant checks
        # read two prefixes every few seconds, and they seldom change in between
        self._changes = 0
        self._changes_under: dict[str, int] = {}
        self._peeked: dict[str, tuple[int, list[tuple[str, bytes]]]] = {}

    # -- reads ------------------------------------------------------------------------------

    def __len__(self) -> int:
        """Number of nodes, root excluded."""
        return len(self._nodes) - 1

    def stat(self, path: str) -> Stat | None:
        node = self._nodes.get(path)
        return None if node is None else self._stat(path, node)

    def get(self, path: str) -> GetResult | None:
        node = self._nodes.get(path)
        return None if node is None else GetResult(node.data, self._stat(path, node))

    def children(self, path: str) -> list[str]:
        node = self._nodes.get(path)
        return [] if node is None else node.sorted_children()

    def children_set(self, path: str) -> frozenset[str]:
        node = self._nodes.get(path)
        return _NO_CHILDREN if node is None else node.children_set()

    def peek_prefix(self, prefix: str) -> list[tuple[str, bytes]]:
        """(path, data) of every node whose path starts with the string `prefix`, sorted; made again
        only when a node it could hold changed (see `_changed`)."""
        top = _top(prefix) if prefix.find("/", 1) > 0 else None   # "/a/...": only nodes under /a
        count = self._changes if top is None else self._changes_under.get(top, 0)
        cached = self._peeked.get(prefix)
        if cached is not None and cached[0] == count:
            return list(cached[1])
        matching = sorted(self._subtree_matching(prefix))
        found = [(path, self._nodes[path].data) for path in matching]
        self._peeked[prefix] = (count, found)
        return list(found)

    def _subtree_matching(self, prefix: str) -> list[str]:
        """The paths (not "/") starting with `prefix`, found by walking the subtree of the deepest
        whole-path ancestor every match shares ("/namespace" for "/namespace/"): the invariant checker
        peeks at the ownership nodes every emulated second, and a scan of every node cost a
        million-topic cluster ~3 % of its run (most nodes are managed ledgers)."""
        base = prefix[:prefix.rfind("/")] or "/"
        nodes = self._nodes
        if base not in nodes:
            return []
        out = [base] if base != "/" and base.startswith(prefix) else []
        stack = [base]
        while stack:
            parent = stack.pop()
            for name in nodes[parent].children:
                path = _join(parent, name)
                if path.startswith(prefix):
                    out.append(path)
                stack.append(path)
        return out

    def _changed(self, path: str) -> None:
        self._changes += 1
        top = _top(path)
        self._changes_under[top] = self._changes_under.get(top, 0) + 1

    def session_owner(self, session_id: int) -> str | None:
        """Owner name of a live session, None if the session is not live."""
        session = self._sessions.get(session_id)
        return None if session is None else session.owner

    def live_sessions(self) -> list[int]:
        return list(self._sessions)

    def check_session(self, session_id: int | None) -> None:
        if session_id is not None and session_id not in self._sessions:
            raise SessionExpired(f"session {session_id} is expired or closed")

    # -- writes -----------------------------------------------------------------------------

    def create(
        self, path: str, data: bytes, ephemeral_owner: int | None, now_ms: int
    ) -> tuple[Stat, list[Notification]]:
        """Pulsar's put(path, data, expectedVersion=-1): create, with missing parents."""
        if path == "/" or path in self._nodes:
            raise NodeExists(f"node {path} already exists")
        self.check_session(ephemeral_owner)
        missing = [path]
        ancestor = parent_path(path)
        while ancestor is not None and ancestor not in self._nodes:
            missing.append(ancestor)
            ancestor = parent_path(ancestor)
        assert ancestor is not None  # the root always exists
        if self._nodes[ancestor].ephemeral_owner is not None:
            raise MetadataStoreError(
                f"cannot create {path}: ephemeral node {ancestor} cannot have children"
            )
        notes: list[Notification] = []
        for node_path in reversed(missing):  # top-down
            is_target = node_path == path
            owner = ephemeral_owner if is_target else None
            node = _ZNode(data if is_target else b"", owner, now_ms)
            self._nodes[node_path] = node
            self._changed(node_path)
            parent = parent_path(node_path)
            assert parent is not None
            self._nodes[parent].add_child(node_path[len(parent) + (parent != "/") :])
            if owner is not None:
                self._sessions[owner].ephemerals[node_path] = None
            self._notify_created_or_deleted("Created", node_path, notes)
        return self._stat(path, self._nodes[path]), notes

    def set(
        self, path: str, data: bytes, expected_version: int, now_ms: int
    ) -> tuple[Stat, list[Notification]]:
        """Pulsar's put(path, data, expectedVersion): -1 = unconditional (create if absent)."""
        node = self._nodes.get(path)
        if node is None:
            if expected_version != -1:
                raise BadVersionNoNode(
                    f"node {path} does not exist (expected version {expected_version})"
                )
            return self.create(path, data, None, now_ms)
        if expected_version != -1 and expected_version != node.version:
            raise BadVersion(
                f"node {path} is at version {node.version}, expected {expected_version}"
            )
        node.data = data
        node.version += 1
        node.mtime = now_ms
        self._changed(path)
        return self._stat(path, node), [Notification("Modified", path)]

    def delete(self, path: str, expected_version: int) -> list[Notification]:
        """ZooKeeper delete: NotFound, then BadVersion, then NotEmpty (ZooKeeper's check order)."""
        if path == "/":
            raise ValueError("path = '/': the root node cannot be deleted")
        node = self._nodes.get(path)
        if node is None:
            raise NotFound(f"node {path} does not exist")
        if expected_version != -1 and expected_version != node.version:
            raise BadVersion(
                f"node {path} is at version {node.version}, expected {expected_version}"
            )
        if node.children:
            raise NotEmpty(f"node {path} has {len(node.children)} children")
        notes: list[Notification] = []
        self._remove(path, node, notes)
        return notes

    def delete_recursive(self, path: str) -> list[Notification]:
        """Pulsar's deleteRecursive: children first (sorted), then the node; absent = no-op."""
        notes: list[Notification] = []
        if path == "/":
            for child in sorted(self._nodes["/"].children):
                self._delete_subtree(_join("/", child), notes)
        elif path in self._nodes:
            self._delete_subtree(path, notes)
        return notes

    # -- sessions ---------------------------------------------------------------------------

    def open_session(self, owner: str) -> int:
        session_id = self._next_session_id
        self._next_session_id += 1
        self._sessions[session_id] = _Session(owner)
        return session_id

    def end_session(self, session_id: int) -> list[Notification]:
        """Close/expire: delete all the session's ephemeral nodes in one batch. Idempotent."""
        session = self._sessions.pop(session_id, None)
        notes: list[Notification] = []
        if session is None:
            return notes
        for path in list(session.ephemerals):
            node = self._nodes.get(path)
            if node is not None and node.ephemeral_owner == session_id:
                self._remove(path, node, notes)
        return notes

    # -- dump -------------------------------------------------------------------------------

    def dump(self) -> dict[str, dict[str, Any]]:
        """{path: {data, version, ephemeral_owner, owner}} sorted by path, root excluded.

        data is the decoded JSON when it is JSON, else the UTF-8 text, else {"base64": ...}.
        """
        out: dict[str, dict[str, Any]] = {}
        for path in sorted(self._nodes):
            if path == "/":
                continue
            node = self._nodes[path]
            owner = None
            if node.ephemeral_owner is not None:
                owner = self.session_owner(node.ephemeral_owner)
            out[path] = {
                "data": _decode_for_dump(node.data),
                "version": node.version,
                "ephemeral_owner": node.ephemeral_owner,
                "owner": owner,
            }
        return out

    # -- internals --------------------------------------------------------------------------

    def _stat(self, path: str, node: _ZNode) -> Stat:
        owner = None
        if node.ephemeral_owner is not None:
            session = self._sessions.get(node.ephemeral_owner)
            owner = None if session is None else session.owner
        return Stat(path, node.version, node.ctime, node.mtime, node.ephemeral_owner, owner)

    def _remove(self, path: str, node: _ZNode, notes: list[Notification]) -> None:
        del self._nodes[path]
        self._changed(path)
        parent = parent_path(path)
        assert parent is not None
        self._nodes[parent].discard_child(path[len(parent) + (parent != "/") :])
        if node.ephemeral_owner is not None:
            session = self._sessions.get(node.ephemeral_owner)
            if session is not None:
                session.ephemerals.pop(path, None)
        self._notify_created_or_deleted("Deleted", path, notes)

    def _delete_subtree(self, path: str, notes: list[Notification]) -> None:
        node = self._nodes[path]
        for child in sorted(node.children):
            self._delete_subtree(_join(path, child), notes)
        self._remove(path, node, notes)

    @staticmethod
    def _notify_created_or_deleted(kind: str, path: str, notes: list[Notification]) -> None:
        notes.append(Notification(kind, path))  # type: ignore[arg-type]
        parent = _notified_parent(path)
        if parent is not None:
            notes.append(Notification("ChildrenChanged", parent))


def _decode_for_dump(data: bytes) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}
    try:
        return json.loads(text)
    except ValueError:
        return text
