"""Who watches what in the metadata store: persistent recursive watches by prefix and notification kind.

A change is told to the watchers of its path's ancestors (and of "/"), found through an index by
prefix, in the order the watchers first watched: 1,000 brokers watch the store, and visiting every
watcher for every change was a step per broker per change. A part of the store actor (metadata_store.py),
which tells the notifications and drops the watchers that are gone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from emulator.cluster.metadata_checks import wanted

if TYPE_CHECKING:
    from emulator.cluster.metadata_messages import Notification

__all__ = ["Watches"]


class Watches:
    """Each subscriber's prefixes (insertion order) and the kinds it wants there (None: all)."""

    __slots__ = ("by_subscriber", "_roots", "_by_prefix", "_seq", "_actor", "_next")

    def __init__(self) -> None:
        self.by_subscriber: dict[str, dict[str, frozenset[str] | None]] = {}
        self._roots: dict[str, int] = {}   # top-level node name -> prefixes under it ("" for "/")
        # prefix -> kind (None: every kind) -> the subscribers watching it there for that kind
        self._by_prefix: dict[str, dict[str | None, dict[str, None]]] = {}
        self._seq: dict[str, int] = {}   # subscriber -> when it first watched
        self._actor: dict[str, object] = {}   # subscriber -> the actor that watched under that name
        self._next = 0

    def __bool__(self) -> bool:
        return bool(self.by_subscriber)

    def add(self, subscriber: str, actor: object, prefix: str, kinds: frozenset[str] | None) -> None:
        """A watch on `prefix` (a second one on the same prefix widens its kinds); an actor watching
        under the name of an earlier one that is gone starts afresh."""
        if subscriber in self.by_subscriber and self._actor[subscriber] is not actor:
            self.drop(subscriber)
        if subscriber not in self.by_subscriber:
            self._seq[subscriber] = self._next
            self._next += 1
            self._actor[subscriber] = actor
        prefixes = self.by_subscriber.setdefault(subscriber, {})
        if prefix not in prefixes:
            prefixes[prefix] = kinds
            self._index(prefix, subscriber, kinds)
            root = _root(prefix)
            self._roots[root] = self._roots.get(root, 0) + 1
        else:
            known = prefixes[prefix]
            if known is not None:
                widened = None if kinds is None else known | kinds
                if widened != known:
                    self._unindex(prefix, subscriber, known)
                    self._index(prefix, subscriber, widened)
                    prefixes[prefix] = widened

    def _index(self, prefix: str, subscriber: str, kinds: frozenset[str] | None) -> None:
        by_kind = self._by_prefix.setdefault(prefix, {})
        for kind in (None,) if kinds is None else kinds:
            by_kind.setdefault(kind, {})[subscriber] = None

    def _unindex(self, prefix: str, subscriber: str, kinds: frozenset[str] | None) -> None:
        by_kind = self._by_prefix[prefix]
        for kind in (None,) if kinds is None else kinds:
            subscribers = by_kind[kind]
            del subscribers[subscriber]
            if not subscribers:
                del by_kind[kind]
        if not by_kind:
            del self._by_prefix[prefix]

    def targets(self, notes: list[Notification]) -> list[tuple[str, list[Notification]]]:
        """(subscriber, the notes it wants, in change order) for every subscriber that wants some,
        in the order they first watched. Subscribers are found by prefix and kind, so a report
        rewritten under /loadbalance/brokers visits none of the 1,000 brokers that watch there for
        Created and Deleted only."""
        roots = self._roots
        if "" not in roots:   # nobody watches "/": only notes under a watched top-level node can match
            notes = [n for n in notes if _root(n.path) in roots]
            if not notes:
                return []
        by_prefix = self._by_prefix
        visit: dict[str, None] = {}
        for note in notes:
            kind = note.type
            for ancestor in _ancestors(note.path):
                by_kind = by_prefix.get(ancestor)
                if by_kind:
                    every = by_kind.get(None)
                    if every:
                        visit.update(every)
                    this_kind = by_kind.get(kind)
                    if this_kind:
                        visit.update(this_kind)
        out = []
        for subscriber in sorted(visit, key=self._seq.__getitem__):
            prefixes = self.by_subscriber[subscriber]
            out.append((subscriber, [n for n in notes if wanted(n.path, n.type, prefixes)]))
        return out

    def drop(self, subscriber: str) -> None:
        """Forget every watch of `subscriber`."""
        for prefix, kinds in self.by_subscriber.pop(subscriber).items():
            root = _root(prefix)
            left = self._roots[root] - 1
            if left:
                self._roots[root] = left
            else:
                del self._roots[root]
            self._unindex(prefix, subscriber, kinds)
        del self._seq[subscriber]
        del self._actor[subscriber]


def _ancestors(path: str) -> list[str]:
    """"/", then every ancestor of `path` and `path` itself: the prefixes a watch on which sees it."""
    out = ["/"]
    if path != "/":
        at = path.find("/", 1)
        while at > 0:
            out.append(path[:at])
            at = path.find("/", at + 1)
        out.append(path)
    return out


def _root(path: str) -> str:
    """A path's top-level node name ("" for "/"): a prefix can only match paths under its own root."""
    return path[1:].split("/", 1)[0]
