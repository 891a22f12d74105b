"""Synthetic recordings in the recorder's exact folder format, for tests and pipeline dry runs.

The roll-up must be checked against numbers computed independently, and a sweep must be testable without
running the emulator; both need run folders whose content is known and covers the awkward cases: a broker
that disappears for a while, a counter that resets, idle brokers (msg rate 0), repeat unloads inside the
grace period, failed splits, overlapping outages of one topic's handles, an outage still open at the end,
`_created` series beside counters, and scenario events. Everything derives from a seeded
`random.Random`, so a (seed, overrides) pair always gives the same files.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from pathlib import Path
from typing import Any, Mapping

from emulator.pipeline.recording import DECISIONS_FILE, EVENTS_FILE, RUN_FILE, SAMPLES_FILE

CLUSTER = "standalone"
_GAUGES = ("pulsar_lb_cpu_usage", "pulsar_lb_memory_usage", "pulsar_lb_directMemory_usage",
           "pulsar_lb_bandwidth_in_usage", "pulsar_lb_bandwidth_out_usage")
_COUNTERS = ("pulsar_broker_lookup_answers_total", "pulsar_broker_lookup_redirects_total",
             "pulsar_broker_lookup_failures_total", "pulsar_lb_emulator_bundle_moves_total",
             "pulsar_lb_emulator_reconnects_total", "pulsar_lb_emulator_unavailable_topic_seconds_total",
             "pulsar_lb_unload_bundle_total", "pulsar_lb_bundles_split_total")


def _line(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":")) + "\n"


def write_synthetic_run(run_dir: str | Path, *, scenario: str = "synthetic", seed: int = 1,
                        overrides: Mapping[str, str] | None = None, duration: float = 3600.0,
                        brokers: int = 4, record_interval: float = 10.0) -> str:
    """Write one complete synthetic run into `run_dir` (created); returns its path."""
    if brokers < 2:
        raise ValueError(f"brokers = {brokers!r}: a synthetic run needs at least 2 brokers")
    if duration <= 0 or record_interval <= 0:
        raise ValueError(f"duration = {duration!r}, record_interval = {record_interval!r}: must be > 0")
    overrides = dict(overrides or {})
    rng = random.Random(f"{seed}|{sorted(overrides.items())}|{scenario}")
    calm = 0.3 + 0.7 * rng.random()  # configurations differ in how much load moves
    out = Path(run_dir)
    out.mkdir(parents=True, exist_ok=True)
    names = [f"broker-{i}" for i in range(brokers)]
    n_ticks = int(math.floor(duration / record_interval)) + 1
    ticks = [round(i * record_interval, 6) for i in range(n_ticks)]
    gone = (ticks[n_ticks // 3], ticks[n_ticks // 2])  # the last broker is away in between
    usage = {b: 20.0 + 60.0 * rng.random() for b in names}
    counters = {(c, b): 0.0 for c in _COUNTERS for b in names}
    client_lookups = 0.0
    bundles = [f"public/default/0x{i * 0x10000000:08x}_0x{(i + 1) * 0x10000000:08x}" for i in range(6)]
    config = {"loadBalancerBrokerOverloadedThresholdPercentage": "80",
              "loadBalancerSheddingGracePeriodMinutes": "5", **overrides}

    samples: list[str] = []
    for k, t in enumerate(ticks):
        present = [b for b in names if not (b == names[-1] and gone[0] <= t < gone[1])]
        settled = 0.55 * duration <= t < 0.75 * duration  # a balanced stretch: time-to-balance ends
        for b in present:
            if settled:
                u = 0.5 * usage[b] + 25.0 + rng.gauss(0.0, 1.0)
            else:
                u = usage[b] + rng.gauss(0.0, 8.0 * calm) + 0.05 * (50.0 - usage[b])
            usage[b] = min(100.0, max(0.0, u))
            labels = {"cluster": CLUSTER, "broker": b}
            for g in _GAUGES:
                samples.append(_line({"t": t, "name": g, "labels": labels,
                                      "value": max(0.0, usage[b] - 10.0 * rng.random())}))
            samples.append(_line({"t": t, "name": "pulsar_lb_emulator_broker_max_usage",
                                  "labels": labels, "value": usage[b]}))
            idle = b == names[0] and k % 7 == 0
            for name in ("pulsar_broker_rate_in", "pulsar_broker_rate_out"):
                samples.append(_line({"t": t, "name": name, "labels": labels,
                                      "value": 0.0 if idle else 10.0 * usage[b] * (0.5 + rng.random())}))
            for name in ("pulsar_broker_throughput_in", "pulsar_broker_throughput_out"):
                samples.append(_line({"t": t, "name": name, "labels": labels,
                                      "value": 0.0 if idle else 1e4 * usage[b] * (0.5 + rng.random())}))
            samples.append(_line({"t": t, "name": "pulsar_broker_topics_count", "labels": labels,
                                  "value": float(rng.randint(10, 200))}))
            for c in _COUNTERS:
                if b == names[1] and c.startswith("pulsar_broker_lookup") and k == n_ticks * 2 // 3:
                    counters[(c, b)] = 0.0  # the broker restarted: its counter series starts again
                counters[(c, b)] += float(rng.choice((0, 0, 1, 2, 5)))
                # only after a first increment does prometheus-client show a labelled child
                if counters[(c, b)] > 0 or k > 3:
                    samples.append(_line({"t": t, "name": c, "labels": labels, "value": counters[(c, b)]}))
                    samples.append(_line({"t": t, "name": c.removesuffix("_total") + "_created",
                                          "labels": labels, "value": 1.7e9}))
        samples.append(_line({"t": t, "name": "pulsar_lb_emulator_time_seconds",
                              "labels": {"cluster": CLUSTER}, "value": t}))
        client_lookups += float(rng.choice((0, 1, 3)))
        samples.append(_line({"t": t, "name": "pulsar_lb_emulator_client_lookups_total",
                              "labels": {"cluster": CLUSTER}, "value": client_lookups}))

    decisions: list[str] = []
    t = 0.0
    while True:
        t += rng.expovariate(1.0 / (120.0 * calm))
        if t >= duration:
            break
        t = round(t, 3)
        r = rng.random()
        bundle = rng.choice(bundles)
        if r < 0.45:
            decisions.append(_line({"t": t, "decision": "shedding_plan", "shedder": "ThresholdShedder",
                                    "plan": [[rng.choice(names), bundle]]}))
            decisions.append(_line({"t": t, "decision": "unload", "broker": rng.choice(names),
                                    "bundle": bundle, "destination": rng.choice(names),
                                    "shedder": "ThresholdShedder", "bundle_data": {"topics": 3}}))
            decisions.append(_line({"t": t, "decision": "bundle_unloaded", "broker": rng.choice(names),
                                    "bundle": bundle, "topics": 3, "duration": 0.2}))
        elif r < 0.6:
            decisions.append(_line({"t": t, "decision": "unload_skipped", "broker": rng.choice(names),
                                    "bundle": bundle, "reason": "no destination broker"}))
        elif r < 0.75:
            ok = rng.random() < 0.7
            decisions.append(_line({"t": t, "decision": "split", "bundle": bundle,
                                    "broker": rng.choice(names), "ok": ok, "unload": True}))
            if ok:
                decisions.append(_line({"t": t, "decision": "bundle_split", "bundle": bundle,
                                        "broker": rng.choice(names), "children": [bundle + "a"],
                                        "algorithm": "range_equally_divide"}))
        else:
            decisions.append(_line({"t": t, "decision": "assignment", "bundle": bundle,
                                    "broker": rng.choice(names), "trace": {"candidates": names}}))

    events: list[tuple[float, str]] = []   # (time, line), sorted by time below
    for k, te in enumerate(sorted([rng.uniform(0.05, 0.5) * duration, rng.uniform(0.05, 0.5) * duration,
                                   rng.uniform(0.8, 0.9) * duration])):
        verb = ("kill_broker", "add_brokers", "set_config")[k % 3]
        events.append((te, _line({"t": round(te, 3), "kind": "scenario_event", "event": verb,
                                  "broker": names[k % brokers], "count": k + 1})))
    events.append((gone[0], _line({"t": gone[0], "kind": "broker_crashed", "broker": names[-1],
                                   "bundles": 3})))
    events.append((gone[1], _line({"t": gone[1], "kind": "broker_started", "broker": names[-1]})))
    topics = [f"persistent://public/default/topic-{i}" for i in range(8)]
    handle = 0
    for topic in topics:
        for _ in range(rng.randint(1, 3)):  # handles of one topic
            handle += 1
            client = f"client-{handle % 3}"
            down = rng.uniform(0.0, duration * 0.9)
            for _ in range(rng.randint(1, 3)):
                gap = round(rng.expovariate(1 / 20.0), 3)
                up = round(down, 3) + gap
                if up >= duration:
                    break
                events.append((down, _line({"t": round(down, 3), "kind": "handle_disconnected",
                                            "client": client, "topic": topic, "handle": handle,
                                            "reason": "bundle unloaded"})))
                events.append((up, _line({"t": up, "kind": "handle_reconnected",
                                          "client": client, "topic": topic, "handle": handle,
                                          "broker": rng.choice(names), "unavailable": gap})))
                down = up + rng.uniform(1.0, duration * 0.05)
                if down >= duration:
                    break
    # one handle loses its broker near the end and is still reconnecting when the run ends
    handle += 1
    events.append((duration * 0.97, _line({"t": round(duration * 0.97, 3), "kind": "handle_disconnected",
                                           "client": "client-0", "topic": topics[0], "handle": handle,
                                           "reason": "broker crashed"})))
    events.append((duration * 0.5, _line({"t": round(duration * 0.5, 3), "kind": "handle_failed",
                                          "client": "client-1", "topic": topics[1], "handle": handle + 1,
                                          "reason": "lookup failed",
                                          "since": round(duration * 0.5 - 30.0, 3)})))
    # one handle is closed by its application while it is down: its outage ends there
    events.append((duration * 0.3, _line({"t": round(duration * 0.3, 3), "kind": "handle_disconnected",
                                          "client": "client-2", "topic": topics[2], "handle": handle + 2,
                                          "reason": "bundle unloaded"})))
    events.append((duration * 0.32, _line({"t": round(duration * 0.32, 3), "kind": "handle_closed",
                                           "client": "client-2", "topic": topics[2], "handle": handle + 2,
                                           "reason": "consumer jitter"})))
    events.sort(key=lambda e: e[0])

    (out / SAMPLES_FILE).write_text("".join(samples))
    (out / DECISIONS_FILE).write_text("".join(decisions))
    (out / EVENTS_FILE).write_text("".join(line for _, line in events))
    run = {"scenario": scenario, "scenario_file": None, "seed": seed, "config": config,
           "placement": overrides.get("placement", "LeastLongTermMessageRate"),
           "shedder": overrides.get("shedder", "ThresholdShedder"), "grid": overrides,
           "clock": "virtual", "speed": 0.0, "duration": duration, "emulated_end": duration,
           "started_at": "2025-01-01T00:00:00+00:00", "ended_at": "2025-01-01T00:00:01+00:00",
           "complete": True, "versions": {"pulsar_lb_emulator": "synthetic"},
           "record_interval": record_interval}
    (out / RUN_FILE).write_text(json.dumps(run, indent=2))
    return str(out)


def run_recorded(scenario: str, overrides: dict[str, str], seed: int, out_dir: str,
                 duration: float | None = None) -> str:
    """Stand-in for `emulator.runner.run_recorded` with its signature: a synthetic run in a NEW folder."""
    digest = hashlib.sha1(json.dumps(sorted(overrides.items())).encode()).hexdigest()[:8]
    folder = Path(out_dir) / f"{Path(scenario).stem}-{digest}-seed{seed}"
    if folder.exists():
        raise FileExistsError(f"{folder} exists; run_recorded always records into a new folder")
    return write_synthetic_run(folder, scenario=scenario, seed=seed, overrides=overrides,
                               duration=duration or 1800.0)
