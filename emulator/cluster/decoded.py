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

    __slots__ = ("_entries", "hits", "misses")

    def __init__(self) -> None:
        self._entries: dict[str, tuple[bytes, Any]] = {}
        self.hits = 0
        self.misses = 0

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
