"""The Java client's limits on its lookups and sends: the `[capacity.client]` table of a scenario (issue 27).

Every field is one default with its source in its docstring; `unlimited()` is the cost-free version
the cluster tests use (the behaviour before finite capacity).
"""

from __future__ import annotations

import msgspec

__all__ = ["ClientCapacity"]


class ClientCapacity(msgspec.Struct, frozen=True, kw_only=True):
    """The Java client's limits on its lookups and sends. Seconds for times; counts for servers and limits (0: unlimited)."""

    @classmethod
    def unlimited(cls) -> "ClientCapacity":
        """No capacity limit anywhere in this part (the cost-free cluster)."""
        return cls()
