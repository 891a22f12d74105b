"""A scenario's [[expect]] tables checked against a run: one result and one line per expectation.

The window of an expectation, in emulated offsets from the run start: the whole run; [from, to] (either
end defaulting to the run's); or, with `after_event`, from that event's time (`at`) for `within` (default:
to the run's end). A window is clipped to the run: a run cut short (`--duration`, Ctrl-C) measures what it
ran, and an expectation whose window (over the scenario's duration) ends after the run's end is skipped
(said so, not failed): a run cut short by --duration or a signal checks only the windows it completed.
The KPI is computed over the window from the run's observations (`kpis.py`); an undefined value
(no tick in the window for a ratio, ...) fails the expectation, saying so.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from .kpis import Scope, compute
from .timeline import Timeline

__all__ = ["ExpectResult", "evaluate", "format_result"]


class ExpectResult(msgspec.Struct, frozen=True, kw_only=True):
    """One expectation after the run (run.json `expectations`, the summary's lines)."""

    index: int
    kpi: str
    min: float | None
    max: float | None
    window: str
    """"whole run", "10m..1h", "8m after events[0] (add_brokers at 30m)"."""
    start: float
    """Window start, emulated seconds from the run start."""
    end: float
    value: float | None
    passed: bool
    skipped: bool = False
    """The run was cut short (--duration, a signal) before the window's end: not checked, not failed."""


def _dur(seconds: float) -> str:
    from emulator.model.durations import format_duration

    return format_duration(seconds)


def _window(x: Any, scenario: Any, length: float) -> tuple[float, float, str]:
    """(start, end, text) of an expectation's window, offsets from the run start, end clipped to it."""
    if x.after_event is not None:
        ev = scenario.events[x.after_event]
        from emulator.workload.schema import verb_of

        start = float(ev.at)
        end = start + float(x.within) if x.within is not None else length
        head = f"{_dur(x.within)} after" if x.within is not None else "after"
        return start, min(end, length), f"{head} events[{x.after_event}] ({verb_of(ev)} at {_dur(start)})"
    if x.from_ is None and x.to is None:
        return 0.0, length, "whole run"
    start = float(x.from_) if x.from_ is not None else 0.0
    end = float(x.to) if x.to is not None else length
    return start, min(end, length), f"{_dur(start)}..{_dur(end) if x.to is not None else 'end'}"


_SAME_INSTANT = 1e-9
"""Seconds within which the event loop counts two instants as one (the virtual loop's clock resolution,
asyncio's `clock_resolution`): a scenario event at a window's end offset may fire up to this much before
`t0 + offset` (a timer due then runs with the one an ulp earlier), so a window that ends at an offset
ends that much earlier: what the event at its end starts is outside it, as the scenario means."""


def evaluate(scenario: Any, timeline: Timeline, derived: Any = None) -> list[ExpectResult]:
    """Check every [[expect]] of `scenario` on `timeline` (a finished run; `derived`: its
    `kpis.facts`, if made)."""
    if not scenario.expect:
        return []
    t0, span = timeline.t0, timeline.span
    length = span - t0
    nominal = float(scenario.duration)
    cut = length < nominal - 1e-6           # ended early: --duration or a signal
    windows = [_window(x, scenario, length) for x in scenario.expect]
    full = [_window(x, scenario, nominal)[1] for x in scenario.expect]
    scopes = [Scope(t0 + s, t0 + max(s, e - _SAME_INSTANT) if e < length else t0 + max(s, e), e >= length)
              for s, e, _ in windows]
    values = compute(timeline, scopes, derived=derived)
    out = []
    for i, (x, (start, end, text), kpis) in enumerate(zip(scenario.expect, windows, values)):
        if cut and full[i] > length + 1e-6:     # the run ended before the window did: not measurable
            out.append(ExpectResult(index=i, kpi=x.kpi, min=x.min, max=x.max, window=text, start=start,
                                    end=end, value=None, passed=True, skipped=True))
            continue
        value = kpis[x.kpi]
        value = None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
        passed = value is not None and (x.min is None or value >= x.min) and (x.max is None or value <= x.max)
        out.append(ExpectResult(index=i, kpi=x.kpi, min=x.min, max=x.max, window=text, start=start,
                                end=end, value=value, passed=passed))
    return out


def _num(x: float) -> str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.6g}"


def format_result(r: ExpectResult) -> str:
    """One line: `expect[0] passed: unloads = 2 (max 3; whole run)` or `expect[1] FAILED: ...`."""
    bounds = "; ".join(part for part in (f"min {_num(r.min)}" if r.min is not None else "",
                                          f"max {_num(r.max)}" if r.max is not None else "") if part)
    if r.skipped:
        return (f"expect[{r.index}] skipped: {r.kpi} ({bounds}; {r.window}): the run ended before the "
                "window did")
    measured = "undefined (nothing measured in the window)" if r.value is None else _num(r.value)
    verdict = "passed" if r.passed else "FAILED"
    return f"expect[{r.index}] {verdict}: {r.kpi} = {measured} ({bounds}; {r.window})"
