"""KPIs of one run over any window of emulated time, from its time-stamped observations (`timeline.py`).

One registry, `KPIS` (`emulator/model/kpi_registry.py`): the roll-up's KPI columns by the same names
and with the same definitions (emulator/pipeline/rollup.py's docstring; tests/pipeline/reference.py
recomputes both), computed in plain Python for a scope [start, end] instead of the roll-up's fixed
windows, plus the publish KPIs.
A KPI over a window is computed from what was observed inside it, never from end totals:

* balance and overload figures from the sample ticks in the window (overload time cut at its end);
* unloads, splits and repeat unloads from the decision log records in it (a repeat looks back over the
  whole run, as the roll-up's does);
* counters (bundle_moves, lookups, lookup_redirects, lookup_failures, publish_messages,
  publish_failed) as the sum of their increases at the samples in the window (a drop is a reset);
* reconnects and unavailable topic-seconds from the outage intervals (`emulator/model/outages.py`),
  cut to the window;
* time to balance of the scenario events in the window (the hold may run past its end).

A row at time t is in the scope when start <= t < end, or t == end when end is the run's end (as the
roll-up's last window). `publish_p50` ... `publish_p9999` are the quantiles of the exact latency
mixture over the whole run (PublishAccounting keeps no per-window mixture): whole-run only.

Undefined values (a ratio over no tick, a percentile of nothing) are None.
"""

from __future__ import annotations

import bisect
import math
from typing import Any

import msgspec

from emulator.model.kpi_registry import KPIS, WHOLE_RUN_ONLY, Kpi
from emulator.model.outages import TopicOutages, union_length
from emulator.model.stats import percentile, tdtv

from .timeline import COUNTERS, Timeline, is_load_manager_split, is_load_manager_unload

__all__ = ["BALANCE_BOUND", "BALANCE_MINUTES", "KPIS", "WHOLE_RUN_ONLY", "Kpi", "Scope", "compute", "facts"]

BALANCE_BOUND = 10.0
"""Time to balance: usage range below this many percentage points (the roll-up's --balance-bound)."""
BALANCE_MINUTES = 5.0
"""... held this many minutes (the roll-up's --balance-minutes)."""


class Scope(msgspec.Struct, frozen=True):
    """[start, end] in emulated seconds (absolute clock times); `last`: end is the run's end, so a row
    at exactly `end` is inside."""

    start: float
    end: float
    last: bool

    def holds(self, t: float) -> bool:
        return self.start <= t < self.end or (self.last and t == self.end)

    def cut(self, times: list[float]) -> slice:
        """The indices of the sorted `times` that the scope holds."""
        start, end = self.start, self.end
        lo = bisect.bisect_left(times, start if start <= end else end)   # end < start: only t == end
        hi = (bisect.bisect_right if self.last else bisect.bisect_left)(times, end)
        return slice(lo, max(lo, hi))


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


class _Facts:
    """What every scope reads, derived once from a timeline: ticks, usage per broker, outage islands."""

    def __init__(self, tl: Timeline, bound: float, minutes: float) -> None:
        self.tl = tl
        self.span = tl.span
        first = tl.sample_facts()      # a live timeline kept it as the samples came
        usage, rate, tput, counters = first.usage, first.rate, first.tput, first.counters
        self.usage = usage
        self.ticks = sorted({t for t, _ in usage})
        # each broker's (t, usage) points sorted by t, for the scopes to cut by bisection
        series: dict[str, list[tuple[float, float]]] = {}
        for (t, b), u in usage.items():
            series.setdefault(b, []).append((t, u))
        self.series: list[tuple[list[tuple[float, float]], list[float]]] = []
        for pts in series.values():
            pts.sort()
            self.series.append((pts, [t for t, _ in pts]))
        by_tick: dict[float, list[float]] = {}
        for (t, _), v in usage.items():
            by_tick.setdefault(t, []).append(v)
        rate_by: dict[float, list[float]] = {}
        for (t, _), v in rate.items():
            rate_by.setdefault(t, []).append(v)
        tput_by: dict[float, list[float]] = {}
        for (t, _), v in tput.items():
            tput_by.setdefault(t, []).append(v)
        self.rows: dict[float, dict[str, Any]] = {}
        for t in self.ticks:
            vals = by_tick[t]
            mean = math.fsum(vals) / len(vals)
            std = math.sqrt(math.fsum((v - mean) ** 2 for v in vals) / len(vals))
            row: dict[str, Any] = {"range": max(vals) - min(vals), "mom": max(vals) / mean if mean > 0 else None,
                                   "std": std, "cv": std / mean if mean > 0 else None}
            for name, table in (("rate", rate_by), ("tput", tput_by)):
                xs = table.get(t, [])
                row[name] = max(xs) / min(xs) if xs and min(xs) > 0 else None
            self.rows[t] = row
        self.next_tick = {t: (self.ticks[i + 1] if i + 1 < len(self.ticks) else self.span)
                          for i, t in enumerate(self.ticks)}
        # counters: each sample's increase (the first sample counts whole, a drop is a reset), per
        # series in order: (kpi, sample times, increases)
        self.increases: list[tuple[str, list[float], list[float]]] = []
        for (kpi, _), pts in counters.items():
            prev: float | None = None
            times, incs = [], []
            for t, v in sorted(pts):
                times.append(t)
                incs.append(v if prev is None or v < prev else v - prev)
                prev = v
            self.increases.append((kpi, times, incs))
        # unloads with their repeat flag (looking back over the whole run)
        grace = 60.0 * tl.setting("loadBalancerSheddingGracePeriodMinutes", 30.0)
        last: dict[str | None, float] = {}
        self.unloads: list[tuple[float, bool]] = []
        for d in sorted((d for d in tl.decisions if is_load_manager_unload(d)), key=lambda d: d["t"]):
            repeat = d.get("bundle") in last and d["t"] - last[d["bundle"]] <= grace
            last[d.get("bundle")] = d["t"]
            self.unloads.append((d["t"], repeat))
        self.splits = [d["t"] for d in tl.decisions if is_load_manager_split(d)]
        self.bundles_unloaded = [d["t"] for d in tl.decisions if d["decision"] == "bundle_unloaded"]
        self.bundles_split = [d["t"] for d in tl.decisions if d["decision"] == "bundle_split"]
        self.threshold = tl.setting("loadBalancerBrokerOverloadedThresholdPercentage", 85.0)
        self._outages()
        self._balance_times(bound, minutes)

    def _outages(self) -> None:
        """Down intervals per topic, by `emulator/model/outages.py`'s definition (events in order)."""
        events = self.tl.events
        self.reconnects = [e for e in events if e["kind"] == "handle_reconnected" and e.get("unavailable") is not None]
        outages = TopicOutages()
        handles: set[tuple] = set()
        for e in sorted((e for e in events if e["kind"].startswith("handle_")), key=lambda e: e["t"]):
            if e.get("topic") is None:
                continue
            key = (e.get("client"), None if e.get("handle") is None else str(e["handle"]))
            handles.add(key)
            if e["kind"] == "handle_disconnected":
                outages.down(key, e["topic"], e["t"])
            elif e["kind"] == "handle_failed":
                outages.down(key, e["topic"], e.get("since", e["t"]))
            elif e["kind"] in ("handle_reconnected", "handle_closed"):
                outages.up(key, e["t"])
        for key in sorted(handles, key=repr):   # still down at the end: down until the run's end
            outages.up(key, self.span)
        self.islands: dict[str, list[tuple[float, float]]] = outages.closed

    def _balance_times(self, bound: float, minutes: float) -> None:
        hold = 60.0 * minutes
        ticks = self.ticks
        last_tick = ticks[-1] if ticks else None
        bad = [t for t in ticks if self.rows[t]["range"] >= bound]

        def qualifies(t: float) -> bool:
            if last_tick is None or last_tick < t + hold:
                return False
            return not any(t <= x <= t + hold for x in bad)

        self.balance: list[tuple[float, float | None]] = []   # (event time, time to balance)
        for e in sorted((e for e in self.tl.events if e["kind"] == "scenario_event"), key=lambda e: e["t"]):
            at = next((t for t in ticks if t >= e["t"] and qualifies(t)), None)
            self.balance.append((e["t"], None if at is None else at - e["t"]))

    # ------------------------------------------------------------------ one scope

    def scope(self, s: Scope) -> dict[str, Any]:
        k: dict[str, Any] = {}
        ticks = self.ticks[s.cut(self.ticks)]
        rows = [self.rows[t] for t in ticks]
        k["balance_max_over_mean"] = _mean([r["mom"] for r in rows if r["mom"] is not None])
        k["balance_range"] = _mean([r["range"] for r in rows])
        k["balance_range_max"] = max((r["range"] for r in rows), default=None)
        k["balance_std"] = _mean([r["std"] for r in rows])
        k["balance_cv"] = _mean([r["cv"] for r in rows if r["cv"] is not None])
        k["msg_rate_max_min_ratio"] = _mean([r["rate"] for r in rows if r["rate"] is not None])
        k["throughput_max_min_ratio"] = _mean([r["tput"] for r in rows if r["tput"] is not None])

        series = [cut for cut in (pts[s.cut(times)] for pts, times in self.series) if cut]
        allv = [u for pts in series for _, u in pts]
        norm = (max(allv) - min(allv)) if allv else 1.0
        norm = norm or 1.0
        over: list[float] = []     # per broker, in no particular order: every use below is exact
        tdtvs: list[float] = []    # (fsum) or order-free (max, count)
        for pts in series:
            over.append(math.fsum(max(0.0, min(self.next_tick[t], s.end) - t)
                                  for t, u in pts if u >= self.threshold))
            d = [pts[i][1] - pts[i - 1][1] for i in range(1, len(pts))]
            tdtvs.append(tdtv(math.fsum(x for x in d if x >= 0), math.fsum(-x for x in d if x < 0)))
        k["overloaded_broker_seconds"] = math.fsum(over)
        k["overloaded_seconds_max"] = max(over, default=0.0)
        k["overloaded_brokers"] = sum(1 for v in over if v > 0)
        k["thrashing_tdtv_pct"] = _mean([100 * v / norm for v in tdtvs])
        k["thrashing_tdtv"] = math.fsum(tdtvs) if tdtvs else None

        mine = [rep for t, rep in self.unloads if s.holds(t)]
        k["unloads"] = len(mine)
        k["repeat_unloads"] = sum(mine)
        k["splits"] = sum(1 for t in self.splits if s.holds(t))
        k["bundles_unloaded"] = sum(1 for t in self.bundles_unloaded if s.holds(t))
        k["bundles_split"] = sum(1 for t in self.bundles_split if s.holds(t))
        hours = (s.end - s.start) / 3600.0
        k["unloads_per_hour"] = k["unloads"] / hours if hours > 0 else None
        k["splits_per_hour"] = k["splits"] / hours if hours > 0 else None

        for kpi in COUNTERS:
            k[kpi] = 0.0
        for kpi, times, incs in self.increases:   # series by series, in time order: the same sums
            total = k[kpi]
            for inc in incs[s.cut(times)]:
                total += inc
            k[kpi] = total

        lat = [e["unavailable"] for e in self.reconnects if s.holds(e["t"])]
        k.update(reconnects=len(lat), reconnect_latency_mean=_mean(lat), reconnect_latency_p50=percentile(lat, 0.5),
                 reconnect_latency_p99=percentile(lat, 0.99), reconnect_latency_max=max(lat, default=None))
        per_topic = []
        for intervals in self.islands.values():
            secs = union_length(intervals, s.start, s.end)
            if secs > 0:
                per_topic.append(secs)
        k.update(unavailable_topics=len(per_topic), unavailable_topic_seconds=math.fsum(per_topic),
                 unavailable_topic_seconds_p50=percentile(per_topic, 0.5),
                 unavailable_topic_seconds_p99=percentile(per_topic, 0.99),
                 unavailable_topic_seconds_max=max(per_topic, default=None))

        events = [ttb for t, ttb in self.balance if s.holds(t)]
        done = [x for x in events if x is not None]
        k.update(scenario_events=len(events), time_to_balance_mean=_mean(done),
                 time_to_balance_max=max(done, default=None),
                 events_never_balanced=sum(1 for x in events if x is None))

        p = self.tl.publish
        whole = s.start <= self.tl.t0 and s.last
        for name, attr in (("publish_p50", "p50"), ("publish_p99", "p99"), ("publish_p999", "p999"),
                           ("publish_p9999", "p9999")):
            k[name] = getattr(p, attr) if p is not None and whole else None
        return k


def facts(tl: Timeline, *, bound: float = BALANCE_BOUND, minutes: float = BALANCE_MINUTES) -> _Facts:
    """What every scope of `tl` reads, derived once: pass it to several `compute` calls on the same
    finished timeline (the runner's [[expect]] check and its whole-run KPIs) instead of deriving it
    again for each (about a second for a day of `default`)."""
    return _Facts(tl, bound, minutes)


def compute(tl: Timeline, scopes: list[Scope], *, bound: float = BALANCE_BOUND,
            minutes: float = BALANCE_MINUTES, derived: _Facts | None = None) -> list[dict[str, Any]]:
    """Every KPI of `KPIS` for each scope, in order. `derived`: `facts(tl, bound=, minutes=)` made
    before, for the same timeline, unchanged since."""
    if derived is None:
        derived = _Facts(tl, bound, minutes)
    elif derived.tl is not tl:
        raise ValueError("compute(): `derived` was made from another timeline")
    return [derived.scope(s) for s in scopes]

