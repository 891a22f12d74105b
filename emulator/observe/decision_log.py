"""The decision log: every load-balancing decision as a structlog event with its inputs.

Subscribes to the cluster's events (assignments with their candidate sets and scores, shedding plans with
the shedder's numbers, unloads and their skips with reasons, splits) and logs each one through structlog
under the `decisions` logger, stamped with emulated time. It also keeps them in memory (`entries`) so a
summary, the recorder or a test can read the same records the log printed.
"""

from __future__ import annotations

from typing import Any

import msgspec
import structlog

from emulator.cluster.events import ClusterEvents, Event

DECISION_KINDS = ("assignment", "decision", "bundle_split", "bundle_unloaded", "split_skipped")


def to_builtins(value: Any) -> Any:
    """Structs (SelectionTrace, ...) and sets to plain JSON-able values; +inf stays a float."""
    return msgspec.to_builtins(value, builtin_types=(float,), str_keys=True, order="deterministic")


class DecisionLog:
    def __init__(self, events: ClusterEvents, *, keep: bool = True, log: bool = True) -> None:
        self.entries: list[dict[str, Any]] = []
        self._keep = keep
        self._log = structlog.get_logger("decisions") if log else None
        self._unsubscribe = events.subscribe(self._on_event)

    def close(self) -> None:
        self._unsubscribe()

    def _on_event(self, event: Event) -> None:
        kind = event.kind
        if kind not in DECISION_KINDS:
            return
        record = {k: to_builtins(v) for k, v in event.items()}
        name = record.pop("decision", None) or kind
        record["decision"] = name
        if self._keep:
            self.entries.append(record)
        if self._log is not None:
            fields = {k: v for k, v in record.items() if k not in ("kind", "decision")}
            self._log.info(name, **fields)

    def of(self, decision: str) -> list[dict[str, Any]]:
        return [e for e in self.entries if e["decision"] == decision]
