"""The ZooKeeper ensemble behind the metadata store: the `[capacity.metadata]` table of a scenario (issue 27).

Every field is one default with its source in its docstring; `unlimited()` is the cost-free version
the cluster tests use (the behaviour before finite capacity).
"""

from __future__ import annotations

import msgspec

__all__ = ["MetadataStoreCapacity"]


class MetadataStoreCapacity(msgspec.Struct, frozen=True, kw_only=True):
    """The ZooKeeper ensemble behind the metadata store. Seconds for times; counts for servers and limits (0: unlimited)."""

    @classmethod
    def unlimited(cls) -> "MetadataStoreCapacity":
        """No capacity limit anywhere in this part (the cost-free cluster)."""
        return cls()
