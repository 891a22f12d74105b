"""The roll-up's KPIs recomputed in plain Python, straight from the definitions in rollup.py's docstring.

Deliberately independent of the pipeline's code (no import from emulator.pipeline): if the Spark job and
this file agree to 1e-9 on varied recordings, both implement the written definitions.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

USAGE = "pulsar_lb_emulator_broker_max_usage"
RATE = ("pulsar_broker_rate_in", "pulsar_broker_rate_out")
THROUGHPUT = ("pulsar_broker_throughput_in", "pulsar_broker_throughput_out")
COUNTERS = {"pulsar_lb_emulator_bundle_moves_total": "bundle_moves",
            "pulsar_broker_lookup_answers_total": "lookups",
            "pulsar_broker_lookup_redirects_total": "lookup_redirects",
            "pulsar_broker_lookup_failures_total": "lookup_failures",
            "pulsar_lb_emulator_client_lookups_total": "client_lookups",
            "pulsar_lb_emulator_client_lookup_redirects_total": "client_lookup_redirects",
            "pulsar_lb_emulator_client_lookup_failures_total": "client_lookup_failures"}


def _lines(path: Path) -> list[dict[str, Any]]:
    """A recording's JSON lines: `path` + ".gz" (what the recorder writes) or `path` (older ones)."""
    packed = path.with_name(path.name + ".gz")
    if packed.exists():
        text = gzip.decompress(packed.read_bytes()).decode()
    elif path.exists():
        text = path.read_text()
    else:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _pct(values: list[float], p: float) -> float | None:
    xs = sorted(values)
    if not xs:
        return None
    pos = p * (len(xs) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] if lo == hi else (hi - pos) * xs[lo] + (pos - lo) * xs[hi]


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _tdtv(up: float, down: float) -> float:
    lo, hi = min(up, down), max(up, down)
    if lo == 0:
        return 0.0
    a = (lo / hi) ** 0.8
    return a * (up + down) + (1 - a) * lo


def reference(run_dir: str | Path, window: float, bound: float, minutes: float) -> dict[str, Any]:
    """{'scopes': {scope: {kpi: value}}, 'brokers': {broker: {...}}, 'events': [...], 'topics': {...}}.

    scope -1 is the whole run, k >= 0 the k-th window."""
    run_dir = Path(run_dir)
    info = json.loads((run_dir / "run.json").read_text())
    samples = _lines(run_dir / "samples.jsonl")
    decisions = _lines(run_dir / "decisions.jsonl")
    events = _lines(run_dir / "events.jsonl")
    config = info.get("config", {})
    threshold = float(config.get("loadBalancerBrokerOverloadedThresholdPercentage", 85))
    grace = float(config.get("loadBalancerSheddingGracePeriodMinutes", 30)) * 60
    all_t = [r["t"] for r in samples + decisions + events]
    t0 = info.get("emulated_start") or 0.0
    span = info["emulated_end"] if info.get("emulated_end") is not None else max(all_t, default=t0)
    n_win = max(1, math.ceil((span - t0) / window))
    bounds = {-1: (t0, span),
              **{k: (t0 + k * window, min(t0 + (k + 1) * window, span)) for k in range(n_win)}}

    def scopes_of(t: float) -> tuple[int, int]:
        return (-1, max(0, min(math.floor((t - t0) / window), n_win - 1)))

    k: dict[int, dict[str, Any]] = {s: {} for s in bounds}

    # ---- per tick
    usage: dict[tuple[float, str], float] = {}
    rate: dict[tuple[float, str], float] = {}
    tput: dict[tuple[float, str], float] = {}
    for s in samples:
        b = s["labels"].get("broker")
        if b is None:
            continue
        key = (s["t"], b)
        if s["name"] == USAGE:
            usage[key] = max(usage.get(key, -math.inf), s["value"])
        elif s["name"] in RATE:
            rate[key] = rate.get(key, 0.0) + s["value"]
        elif s["name"] in THROUGHPUT:
            tput[key] = tput.get(key, 0.0) + s["value"]
    ticks = sorted({t for t, _ in usage})
    tick_rows: dict[float, dict[str, Any]] = {}
    for t in ticks:
        vals = [v for (tt, _), v in usage.items() if tt == t]
        mean = sum(vals) / len(vals)
        std = math.sqrt(sum((v - mean) ** 2 for v in vals) / len(vals))
        row = {"range": max(vals) - min(vals), "mom": max(vals) / mean if mean > 0 else None,
               "std": std, "cv": std / mean if mean > 0 else None}
        for name, table in (("rate", rate), ("tput", tput)):
            xs = [v for (tt, _), v in table.items() if tt == t]
            row[name] = max(xs) / min(xs) if xs and min(xs) > 0 else None
        tick_rows[t] = row
    for s in bounds:
        rows = [tick_rows[t] for t in ticks if s in scopes_of(t)]
        k[s]["ticks"] = len(rows)
        k[s]["balance_max_over_mean"] = _mean([r["mom"] for r in rows if r["mom"] is not None])
        k[s]["balance_range"] = _mean([r["range"] for r in rows])
        k[s]["balance_range_max"] = max((r["range"] for r in rows), default=None)
        k[s]["balance_std"] = _mean([r["std"] for r in rows])
        k[s]["balance_cv"] = _mean([r["cv"] for r in rows if r["cv"] is not None])
        k[s]["msg_rate_max_min_ratio"] = _mean([r["rate"] for r in rows if r["rate"] is not None])
        k[s]["throughput_max_min_ratio"] = _mean([r["tput"] for r in rows if r["tput"] is not None])

    # ---- per broker: overload and thrashing
    next_tick = {t: (ticks[i + 1] if i + 1 < len(ticks) else span) for i, t in enumerate(ticks)}
    brokers_out: dict[str, dict[str, Any]] = {}
    for s, (_start, end) in bounds.items():
        series: dict[str, list[tuple[float, float]]] = {}
        for (t, b), u in usage.items():
            if s in scopes_of(t):
                series.setdefault(b, []).append((t, u))
        allv = [u for pts in series.values() for _, u in pts]
        norm = (max(allv) - min(allv)) if allv else 1.0
        norm = norm or 1.0
        over: dict[str, float] = {}
        tdtvs: dict[str, float] = {}
        pcts: dict[str, float] = {}
        for b, pts in series.items():
            pts.sort()
            over[b] = sum(max(0.0, min(next_tick[t], end) - t) for t, u in pts if u >= threshold)
            d = [pts[i][1] - pts[i - 1][1] for i in range(1, len(pts))]
            up = sum(x for x in d if x >= 0)
            dn = sum(-x for x in d if x < 0)
            runs = 1 + sum(1 for i in range(1, len(d)) if (d[i] >= 0) != (d[i - 1] >= 0))
            tdtvs[b] = _tdtv(up, dn)
            pcts[b] = 100 * tdtvs[b] / norm
            if s == -1:
                brokers_out[b] = {"overloaded_seconds": over[b], "uptv": up, "dntv": dn, "runs": runs,
                                  "tdtv": tdtvs[b], "tdtv_pct": pcts[b],
                                  "usage_mean": sum(u for _, u in pts) / len(pts),
                                  "usage_max": max(u for _, u in pts)}
        k[s]["brokers"] = len(series)
        k[s]["overloaded_broker_seconds"] = sum(over.values())
        k[s]["overloaded_seconds_max"] = max(over.values(), default=0.0)
        k[s]["overloaded_brokers"] = sum(1 for v in over.values() if v > 0)
        k[s]["thrashing_tdtv_pct"] = _mean(list(pcts.values()))
        k[s]["thrashing_tdtv"] = sum(tdtvs.values()) if tdtvs else None

    # ---- decisions
    for s in bounds:
        k[s].update(unloads=0, repeat_unloads=0, splits=0, bundles_unloaded=0, bundles_split=0)
    last_unload: dict[str, float] = {}
    def extensible(d: dict) -> bool:   # an Extensible decision that went through, not an admin's
        return d.get("label") == "Success" and d.get("reason") != "Admin"

    for d in sorted((d for d in decisions if d["decision"] == "unload"
                     or (d["decision"] == "extensible_unload" and extensible(d))), key=lambda d: d["t"]):
        repeat = d["bundle"] in last_unload and d["t"] - last_unload[d["bundle"]] <= grace
        last_unload[d["bundle"]] = d["t"]
        for s in scopes_of(d["t"]):
            k[s]["unloads"] += 1
            k[s]["repeat_unloads"] += int(repeat)
    for d in decisions:
        if (d["decision"] == "split" and d.get("ok") is not False) or (
                d["decision"] == "extensible_split" and extensible(d)):
            for s in scopes_of(d["t"]):
                k[s]["splits"] += 1
        if d["decision"] in ("bundle_unloaded", "bundle_split"):
            for s in scopes_of(d["t"]):
                k[s]["bundles_unloaded" if d["decision"] == "bundle_unloaded" else "bundles_split"] += 1
    for s, (start, end) in bounds.items():
        hours = (end - start) / 3600
        k[s]["unloads_per_hour"] = k[s]["unloads"] / hours if hours > 0 else None
        k[s]["splits_per_hour"] = k[s]["splits"] / hours if hours > 0 else None

    # ---- counters
    for s in bounds:
        k[s].update({kpi: 0.0 for kpi in COUNTERS.values()})
    series_samples: dict[tuple[str, tuple], list[tuple[float, float]]] = {}
    for smp in samples:
        if smp["name"] in COUNTERS:
            series_samples.setdefault((smp["name"], tuple(sorted(smp["labels"].items()))), []).append(
                (smp["t"], smp["value"]))
    for (name, _), pts in series_samples.items():
        prev = None
        for t, v in sorted(pts):
            inc = v if prev is None or v < prev else v - prev
            prev = v
            for s in scopes_of(t):
                k[s][COUNTERS[name]] += inc

    # ---- reconnects
    reco = [e for e in events if e["kind"] == "handle_reconnected" and e.get("unavailable") is not None]
    for s in bounds:
        lat = [e["unavailable"] for e in reco if s in scopes_of(e["t"])]
        k[s].update(reconnects=len(lat), reconnect_latency_mean=_mean(lat),
                    reconnect_latency_p50=_pct(lat, 0.5), reconnect_latency_p99=_pct(lat, 0.99),
                    reconnect_latency_max=max(lat, default=None))

    # ---- unavailable topic-seconds
    # a handle is down from a disconnect (or a failed creation's `since`) to its next reconnect or
    # close, or the end; a topic is down while any of its handles is
    intervals: dict[str, list[tuple[float, float]]] = {}
    per_handle: dict[tuple, list[dict[str, Any]]] = {}
    for e in events:   # file order breaks ties in time
        if e["kind"] in ("handle_disconnected", "handle_failed", "handle_reconnected", "handle_closed") \
                and e.get("topic") is not None:
            per_handle.setdefault((e.get("client"), str(e.get("handle"))), []).append(e)
    for evs in per_handle.values():
        evs = sorted(evs, key=lambda e: e["t"])
        for i, e in enumerate(evs):
            if e["kind"] == "handle_disconnected":
                s0 = e["t"]
            elif e["kind"] == "handle_failed":
                s0 = e.get("since", e["t"])
            else:
                continue
            ends = [x["t"] for x in evs[i + 1:] if x["kind"] in ("handle_reconnected", "handle_closed")]
            intervals.setdefault(e["topic"], []).append((s0, max(s0, ends[0]) if ends else max(s0, span)))
    islands: dict[str, list[list[float]]] = {}
    for topic, ivs in intervals.items():
        merged: list[list[float]] = []
        for a, b in sorted(ivs):
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        islands[topic] = merged
    topics_out: dict[str, float] = {}
    for s, (start, end) in bounds.items():
        per_topic = {}
        for topic, merged in islands.items():
            secs = sum(max(0.0, min(b, end) - max(a, start)) for a, b in merged)
            if secs > 0:
                per_topic[topic] = secs
        if s == -1:
            topics_out = per_topic
        xs = list(per_topic.values())
        k[s].update(unavailable_topics=len(xs), unavailable_topic_seconds=float(sum(xs)),
                    unavailable_topic_seconds_p50=_pct(xs, 0.5),
                    unavailable_topic_seconds_p99=_pct(xs, 0.99),
                    unavailable_topic_seconds_max=max(xs, default=None))

    # ---- time to balance
    hold = 60 * minutes
    last_tick = ticks[-1] if ticks else None

    def qualifies(t: float) -> bool:
        if last_tick is None or last_tick < t + hold:
            return False
        return all(tick_rows[x]["range"] < bound for x in ticks if t <= x <= t + hold)

    scenario = sorted((e for e in events if e["kind"] == "scenario_event"), key=lambda e: e["t"])
    events_out = []
    for e in scenario:
        at = next((t for t in ticks if t >= e["t"] and qualifies(t)), None)
        events_out.append({"t": e["t"], "event": e.get("event"), "balanced_at": at,
                           "time_to_balance": None if at is None else at - e["t"]})
    for s in bounds:
        mine = [e for e in events_out if s in scopes_of(e["t"])]
        ttb = [e["time_to_balance"] for e in mine if e["time_to_balance"] is not None]
        k[s].update(scenario_events=len(mine), time_to_balance_mean=_mean(ttb),
                    time_to_balance_max=max(ttb, default=None),
                    events_never_balanced=sum(1 for e in mine if e["balanced_at"] is None))
    return {"span": span, "scopes": k, "brokers": brokers_out, "events": events_out, "topics": topics_out,
            "bounds": bounds}
