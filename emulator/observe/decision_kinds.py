"""Which decision records count as the load manager's own unloads and splits: the summary's, the KPIs'
and the roll-up's one definition (a module of its own, so the decision log can count them without
importing the timeline)."""

from __future__ import annotations

from typing import Any

from emulator.cluster.events import ExtensibleSplitDecision, ExtensibleUnloadDecision

__all__ = ["EXTENSIBLE_SPLIT", "EXTENSIBLE_UNLOAD", "is_load_manager_split", "is_load_manager_unload"]

EXTENSIBLE_UNLOAD = ExtensibleUnloadDecision.decision
EXTENSIBLE_SPLIT = ExtensibleSplitDecision.decision


def is_load_manager_unload(record: dict[str, Any]) -> bool:
    """A decision record the KPI `unloads` counts (the summary's, the roll-up's): Modular's leader
    `unload`, or an Extensible unload that went through and was not an admin's (an admin unload is
    scenario input, as under Modular)."""
    decision = record.get("decision")
    return decision == "unload" or (decision == EXTENSIBLE_UNLOAD and record.get("label") == "Success"
                                    and record.get("reason") != "Admin")


def is_load_manager_split(record: dict[str, Any]) -> bool:
    """A decision record the KPI `splits` counts: Modular's `split` whose `ok` is not false, or an
    Extensible split that went through and was not an admin's."""
    decision = record.get("decision")
    if decision == "split":
        return record.get("ok") is not False
    return decision == EXTENSIBLE_SPLIT and record.get("label") == "Success" and record.get("reason") != "Admin"
