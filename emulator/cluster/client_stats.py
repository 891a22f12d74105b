"""What a client keeps of its connecting: its counters (`ClientStats`) and, when asked
(`ClientSettings.record_lookups`), each lookup hop by hop (`LookupRecord`)."""

from __future__ import annotations

import msgspec

__all__ = ["ClientStats", "LookupRecord"]


class LookupRecord(msgspec.Struct):
    """One client lookup, hop by hop: (broker asked, authoritative flag sent, answer type)."""

    topic: str
    start: float
    hops: list[tuple[str, bool, str]] = []
    end: float | None = None
    outcome: str = ""          # "Connect:<broker>" or "Failed:<reason>"


class ClientStats:
    """What the metrics, the summary and the tests read of a client's connecting."""

    __slots__ = ("lookups", "lookups_failed", "lookup_redirects", "attach_failures", "reconnects",
                 "connection_closes", "transfers")

    def __init__(self) -> None:
        self.lookups = self.lookups_failed = self.lookup_redirects = 0
        self.attach_failures = self.reconnects = self.connection_closes = 0
        self.transfers = 0   # reconnects straight to an assigned broker (PIP-307), no lookup
