"""Decoded metadata values shared by the brokers of one cluster.

Every broker reads the same bytes from the metadata store (load reports, local policies) and
decodes them into objects it only reads. In Pulsar each JVM has its own copies; here a hundred
brokers deciding locally during a leader's drain each held a decoded copy of every load report,
tens of gigabytes at 100 brokers x 65,000 bundles. One decode per distinct value, shared, gives the
same objects' contents without the copies. Callers must not mutate what they get.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["DecodeCache"]

T = TypeVar("T")


class DecodeCache:
    """The last decoded value per key, reused while the bytes are the same."""

    __slots__ = ("_entries", "hits", "misses", "_changes")

    def __init__(self) -> None:
        self._entries: dict[str, tuple[bytes, Any]] = {}
        self.hits = 0
        self.misses = 0
        self._changes: dict[tuple[int, int], tuple[frozenset[str], frozenset[str], frozenset[str], frozenset[str]]] = {}

    def listing_change(self, old: frozenset[str], new: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
        """(new - old, old - new), made once for every broker that goes from the one listing to the
        other (the store hands every reader the same frozenset: 1,000 brokers see each registration
        come or go). The last 64 changes are kept, with the listings, so their ids stay theirs."""
        key = (id(old), id(new))
        hit = self._changes.get(key)
        if hit is not None and hit[0] is old and hit[1] is new:
            return hit[2], hit[3]
        added, removed = new - old, old - new
        self._changes[key] = (old, new, added, removed)
        if len(self._changes) > 64:
            del self._changes[next(iter(self._changes))]
        return added, removed

    def get(self, key: str, data: bytes, make: Callable[[bytes], T]) -> T:
        """`make(data)`, or the value made for `key` from equal bytes last time."""
        hit = self._entries.get(key)
        if hit is not None and (hit[0] is data or hit[0] == data):
            self.hits += 1
            return hit[1]
        self.misses += 1
        value = make(data)
        self._entries[key] = (data, value)
        return value

    def __len__(self) -> int:
        return len(self._entries)
