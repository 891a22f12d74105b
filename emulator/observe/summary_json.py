"""The run's summary as one JSON object a program can read: `run --summary-json FILE` and `run.json`'s
`summary`.

Every field of the printed summary (`summary.RunSummary`, the same names) plus `kpis`: every KPI of
`kpis.KPIS` over the whole run (the roll-up's names and definitions, `None` where undefined), and
`expectations` as checked. Non-finite numbers (a max/min ratio with an idle broker) are JSON null.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from emulator.cluster.events import to_builtins

from .kpis import Scope, compute

if TYPE_CHECKING:  # pragma: no cover
    from .summary import RunSummary
    from .timeline import Timeline

__all__ = ["summary_object", "whole_run_kpis", "write_summary_json"]


def whole_run_kpis(timeline: "Timeline", derived: Any = None) -> dict[str, Any]:
    """Every KPI over the whole run of a finished timeline (`derived`: its `kpis.facts`, if made)."""
    return compute(timeline, [Scope(timeline.t0, timeline.span, True)], derived=derived)[0]


def summary_object(summary: "RunSummary", kpis: dict[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = to_builtins(summary)
    out["kpis"] = to_builtins(kpis or {})
    return out


def write_summary_json(path: str | Path, obj: dict[str, Any]) -> None:
    """`obj` into `path` (indented, keys in the summary's order), replaced atomically."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(msgspec.json.format(msgspec.json.encode(obj), indent=2) + b"\n")
    tmp.replace(path)
