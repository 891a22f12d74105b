"""Plain-text tables for the console: the runs' headline KPIs and the comparison across configurations.

Pure formatting of row dicts (as collected from the roll-up), so the CLI, the sweep and the HTML report
show the same columns.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

# (column, header): the headline KPIs; the full set is in the CSV/Parquet tables.
HEADLINE: tuple[tuple[str, str], ...] = (
    ("balance_max_over_mean", "max/mean"),
    ("balance_range", "range"),
    ("balance_cv", "cv"),
    ("overloaded_broker_seconds", "overload s"),
    ("unloads_per_hour", "unloads/h"),
    ("repeat_unloads", "repeats"),
    ("bundle_moves", "moves"),
    ("lookup_failures", "lookup fail"),
    ("unavailable_topic_seconds", "unavail s"),
    ("unavailable_topic_seconds_p99", "unavail p99"),
    ("time_to_balance_mean", "to balance s"),
    ("thrashing_tdtv_pct", "tdtv %"),
)


def fmt(value: Any) -> str:
    """A number in at most ~6 characters of precision; '-' for undefined."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if value == int(value) and abs(value) < 1e9:
            return f"{int(value):,}"
        return f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell; the first column left-aligned, the others right-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def format_runs(rows: Sequence[Mapping[str, Any]]) -> str:
    """One line per run; the run id (a long folder name) only when config and seed do not tell runs
    apart."""
    keys = [(r.get("config"), r.get("seed")) for r in rows]
    with_id = len(set(keys)) < len(keys)
    headers = [*(["run"] if with_id else []), "config", "seed", *(h for _, h in HEADLINE)]
    body = [[*([str(r["run_id"])] if with_id else []), str(r.get("config", "")), fmt(r.get("seed")),
             *(fmt(r.get(k)) for k, _ in HEADLINE)] for r in rows]
    return format_table(headers, body)


def mean_ci(mean: Any, ci: Any) -> str:
    if mean is None:
        return "-"
    return fmt(mean) if ci is None else f"{fmt(mean)} ± {fmt(ci)}"


def format_comparison(rows: Sequence[Mapping[str, Any]]) -> str:
    """One row per configuration: mean ± 95 % CI half-width over seeds."""
    headers = ["config", "runs", *(h for _, h in HEADLINE)]
    body = [[str(r["config"]), fmt(r.get("runs")),
             *(mean_ci(r.get(f"{k}_mean"), r.get(f"{k}_ci95")) for k, _ in HEADLINE)] for r in rows]
    return format_table(headers, body)
