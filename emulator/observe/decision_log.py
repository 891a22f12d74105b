"""The decision log: every load-balancing decision as a structlog event with its inputs.

Subscribes to the cluster's events and keeps the `Decision` ones (assignments with their candidate
sets and scores, shedding plans with the shedder's numbers, unloads and their skips with reasons,
splits): each is logged through structlog under the `decisions` logger at info, stamped with emulated
time, and kept in memory (`entries`) as its recorded JSON object (`emulator.cluster.events.to_record`),
so the recorder or a test can read the same records the log printed. A run (`keep=False`) keeps only
the counts its summary prints (`unloads`, `splits`): a long run's memory stays flat.

Levels (`run --record-decisions`, the recorder's and this log's `level`):

* `full`: the whole record, a selection's trace with every candidate list and score;
* `decisions` (the default of `run`): one line per decision, its trace cut to `trace_summary` (the
  selector, the chosen broker and its score, the number of candidates, and every fallback flag);
  a 100-broker cluster's full traces are ~10 KB per assignment, these ~200 bytes;
* `off`: nothing recorded (the in-memory log of a run still keeps `decisions` records: the summary
  counts them).
"""

from __future__ import annotations

from typing import Any

import msgspec
import structlog

from emulator.cluster.events import ClusterEvents, Decision, Event, SelectionTrace, to_builtins
from emulator.observe.decision_kinds import is_load_manager_split, is_load_manager_unload

__all__ = ["DEFAULT_LEVEL", "DecisionLog", "LEVELS", "check_level", "decision_record", "to_builtins", "trace_summary"]

LEVELS = ("full", "decisions", "off")
DEFAULT_LEVEL = "decisions"

_FLAGS = ("non_persistent", "preallocated", "overload_retry")
_REASONS = ("fallback", "filter_exception", "selector_fallback", "overload_selector_fallback")


def check_level(level: str) -> str:
    if level not in LEVELS:
        raise ValueError(f"decision level = {level!r}; expected one of {', '.join(LEVELS)}")
    return level


def trace_summary(trace: SelectionTrace) -> dict[str, Any]:
    """A selection's trace in one small object: who chose what among how many, and every fallback
    taken (flags only when set, as the full trace leaves defaults out)."""
    out: dict[str, Any] = {"selector": trace.selector, "chosen": trace.chosen,
                           "n_candidates": len(trace.candidates)}
    scores = trace.scores
    if scores is not None and trace.chosen in scores:
        out["score"] = scores[trace.chosen]
    for flag in _FLAGS:
        if getattr(trace, flag):
            out[flag] = True
    if trace.overload_candidates is not None:
        out["n_overload_candidates"] = len(trace.overload_candidates)
    for reason in _REASONS:
        value = getattr(trace, reason)
        if value is not None:
            out[reason] = value
    return out


def decision_record(event: Decision, level: str = "full") -> dict[str, Any]:
    """`event`'s recorded object at `level` ("full" or "decisions"; see the module docstring)."""
    trace = getattr(event, "trace", None)
    if level == "full" or trace is None:
        return event.record()
    record = msgspec.structs.replace(event, trace=None).record()
    record["trace"] = to_builtins(trace_summary(trace))
    return record


class DecisionLog:
    """`keep`: hold every record in `entries`; `log`: write each through structlog (info);
    `level`: "full" or "decisions" (what a record holds). `unloads` and `splits` count the load
    manager's own (the summary's figures, `timeline.is_load_manager_unload` / `_split`), kept or not."""

    def __init__(self, events: ClusterEvents, *, keep: bool = True, log: bool = True,
                 level: str = "full") -> None:
        if check_level(level) == "off":
            raise ValueError("DecisionLog level = 'off': give 'decisions' (the summary counts the records) "
                             "and record nothing instead")
        self.entries: list[dict[str, Any]] = []
        self.unloads = 0
        self.splits = 0
        self.level = level
        self._keep = keep
        self._log = structlog.get_logger("decisions") if log else None
        self._unsubscribe = events.subscribe(self._on_event)

    def close(self) -> None:
        self._unsubscribe()

    def _on_event(self, event: Event) -> None:
        if not isinstance(event, Decision):
            return
        record = decision_record(event, self.level)
        self.unloads += is_load_manager_unload(record)
        self.splits += is_load_manager_split(record)
        if self._keep:
            self.entries.append(record)
        if self._log is not None:
            fields = {k: v for k, v in record.items() if k not in ("kind", "decision")}
            self._log.info(event.decision, **fields)

    def of(self, decision: str) -> list[dict[str, Any]]:
        return [e for e in self.entries if e["decision"] == decision]
