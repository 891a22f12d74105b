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
from collections.abc import Iterable, Sequence
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

    def cut(self, times: Sequence[float]) -> slice:
        """The indices of the sorted `times` that the scope holds."""
        start, end = self.start, self.end
        lo = bisect.bisect_left(times, start if start <= end else end)   # end < start: only t == end
        hi = (bisect.bisect_right if self.last else bisect.bisect_left)(times, end)
        return slice(lo, max(lo, hi))


def _defined(values: Iterable[float]) -> list[float]:
    """A column's values where the figure is defined (not NaN: `SampleFacts`' undefined)."""
    return [v for v in values if v == v]


def _next(ticks: Sequence[float], t: float, span: float) -> float:
    """The tick after `t` in the sorted `ticks` (the run's end after the last)."""
    i = bisect.bisect_right(ticks, t)
    return ticks[i] if i < len(ticks) else span


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


class _Facts:
    """What every scope reads, derived once from a timeline: ticks, usage per broker, outage islands."""

    def __init__(self, tl: Timeline, bound: float, minutes: float) -> None:
        self.tl = tl
        self.span = tl.span
        first = tl.sample_facts()      # a live timeline kept it as the samples came
        # SampleFacts' columns are read in place (float arrays; a day of `default` would take tens
        # of MiB as lists of tuples): the scopes cut them by bisection
        self.ticks = first.ticks
        self.series = list(first.usage.values())
        """Each broker's (times, usages) at its ticks, in time order."""
        self.columns = {name: getattr(first, name) for name in ("range", "mom", "std", "cv", "rate", "tput")}
        """Per tick (aligned with `ticks`): `SampleFacts`' figures, NaN where undefined."""
        # counters: each series' (kpi, sample times, increases), the increases not zero
        self.increases = [(kpi, times, incs) for (kpi, _), (times, incs) in first.counters.items()]
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
        bad = [t for t, r in zip(ticks, self.columns["range"]) if r >= bound]

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
        at = s.cut(self.ticks)
        col = {name: values[at] for name, values in self.columns.items()}
        k["balance_max_over_mean"] = _mean(_defined(col["mom"]))
        k["balance_range"] = _mean(col["range"])
        k["balance_range_max"] = max(col["range"], default=None)
        k["balance_std"] = _mean(col["std"])
        k["balance_cv"] = _mean(_defined(col["cv"]))
        k["msg_rate_max_min_ratio"] = _mean(_defined(col["rate"]))
        k["throughput_max_min_ratio"] = _mean(_defined(col["tput"]))

        series = [(times[at], usages[at]) for times, usages, at in
                  ((times, usages, s.cut(times)) for times, usages in self.series) if at.stop > at.start]
        norm = (max(max(u) for _, u in series) - min(min(u) for _, u in series)) if series else 1.0
        norm = norm or 1.0
        over: list[float] = []     # per broker, in no particular order: every use below is exact
        tdtvs: list[float] = []    # (fsum) or order-free (max, count)
        ticks, span, end, threshold = self.ticks, self.span, s.end, self.threshold
        for times, usages in series:
            over.append(math.fsum(max(0.0, min(_next(ticks, t, span), end) - t)
                                  for t, u in zip(times, usages) if u >= threshold))
            d = [b - a for a, b in zip(usages, usages[1:])]
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

