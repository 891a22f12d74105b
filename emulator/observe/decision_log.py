"""The decision log: every load-balancing decision as a structlog event with its inputs.

Subscribes to the cluster's events and keeps the `Decision` ones (assignments with their candidate
sets and scores, shedding plans with the shedder's numbers, unloads and their skips with reasons,
splits): each is logged through structlog under the `decisions` logger, stamped with emulated time,
and kept in memory (`entries`) as its recorded JSON object (`emulator.cluster.events.to_record`), so a
summary, the recorder or a test can read the same records the log printed.
"""

from __future__ import annotations

from typing import Any

import structlog

from emulator.cluster.events import ClusterEvents, Decision, Event, to_builtins

__all__ = ["DecisionLog", "to_builtins"]


class DecisionLog:
    def __init__(self, events: ClusterEvents, *, keep: bool = True, log: bool = True) -> None:
        self.entries: list[dict[str, Any]] = []
        self._keep = keep
        self._log = structlog.get_logger("decisions") if log else None
        self._unsubscribe = events.subscribe(self._on_event)

    def close(self) -> None:
        self._unsubscribe()

    def _on_event(self, event: Event) -> None:
        if not isinstance(event, Decision):
            return
        record = event.record()
        if self._keep:
            self.entries.append(record)
        if self._log is not None:
            fields = {k: v for k, v in record.items() if k not in ("kind", "decision")}
            self._log.info(event.decision, **fields)

    def of(self, decision: str) -> list[dict[str, Any]]:
        return [e for e in self.entries if e["decision"] == decision]
