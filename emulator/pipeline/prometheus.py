"""The roll-up of a real cluster: Pulsar's own series read from Prometheus, rolled up as a recording is.

    pulsar-lb-emulator rollup --prometheus http://prometheus:9090 --from now-6h --to now [--step 15s]

`query_range` (`prometheus_api.py`, chunked) fetches the series the KPIs need; `to_recording` turns
them into a recording folder (`OUT/prometheus/<run id>/`: run.json, samples.jsonl.gz,
decisions.jsonl.gz, events.jsonl.gz, the recorder's formats) and the roll-up of recordings reads that
folder: the same Spark job, the same KPI tables.

The mapping
-----------
Time: with the emulator's `pulsar_lb_emulator_time_seconds` in range (an emulated cluster), a point's
`t` is the emulated time of the scrape it came from (steps that saw the same scrape are kept once), so
an emulated run's Prometheus roll-up and its recording's speak of the same seconds; otherwise `t` is
seconds since `--from` (run.json's `source.from` is the unix time of t = 0).

Brokers: the `broker` label (Pulsar's load-balancing gauges carry it); a series without one (a real
broker's `pulsar_broker_rate_in{cluster}`) takes the broker of the load-balancing gauges scraped from
the same `instance`, else the instance itself.

Samples (the names the roll-up reads, `rollup.SAMPLE_NAMES`):
* usage `pulsar_lb_emulator_broker_max_usage`: the emulator's own when present; else Pulsar's
  getMaxResourceUsageWithWeight of the broker's `pulsar_lb_{cpu,directMemory,bandwidth_in,
  bandwidth_out}_usage` with the conf's weights (`--broker-conf` / `--set`, Pulsar's defaults 1.0);
* `pulsar_broker_{rate,throughput}_{in,out}` as they are;
* counters (`pulsar_broker_lookup_{answers,redirects,failures}_total` and the emulator's bundle moves,
  client lookups and unavailable topic-seconds): rebuilt per series as the running sum of its
  increases, a drop counting as a reset (Prometheus' increase()). A series that already has a value at
  `--from` starts from that value (its history before the range is not counted); one that appears
  later starts from 0, as in a recording.

Decisions and events, from the increases of counters (each at the time the increase was scraped):
one `unload` per increment of `pulsar_lb_unload_bundle_total`, one `split` (ok) per increment of
`pulsar_lb_bundles_split_total` (Pulsar types both gauge; they are counters per leader process), the
emulator's scenario events (`pulsar_lb_emulator_events_total{kind="scenario_event"}`) and its
reconnects (`pulsar_lb_emulator_reconnect_latency_seconds` count and sum: n reconnects of the mean
latency of that scrape, so the count and the mean are the recording's, the quantiles are not).

What Prometheus cannot give is null, with its reason (`UNAVAILABLE` below, in the output's
`kpis_unavailable.json` and printed): per-bundle and per-topic facts exist only in a recording's
decisions and events, and a real cluster has no emulator series.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import sys
import time
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import msgspec

from emulator.model.config import ServiceConfig
from emulator.model.errors import UsageError
from emulator.observe import recording_files as files
from emulator.pipeline.prometheus_api import Fetch, Series, http_post, query_range
from emulator.pipeline.options import RollupOptions
from emulator.pipeline.recording import RUN_FILE, load_runs
from emulator.pipeline.rollup import COUNTERS, RATE, THROUGHPUT, USAGE, RollupResult, input_bytes, rollup_runs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["EMULATOR_ONLY", "EXTRA_COUNTERS", "NEVER", "QUERIES", "Staged", "fetch_series",
           "rollup_prometheus", "run_id", "to_recording", "unavailable_kpis"]

TIME = "pulsar_lb_emulator_time_seconds"
USAGES = ("pulsar_lb_cpu_usage", "pulsar_lb_directMemory_usage", "pulsar_lb_bandwidth_in_usage",
          "pulsar_lb_bandwidth_out_usage")
"""The four gauges getMaxResourceUsageWithWeight weighs (cpu, direct memory, bandwidth in, out)."""
UNLOADS = "pulsar_lb_unload_bundle_total"
SPLITS = "pulsar_lb_bundles_split_total"
RECONNECT_COUNT = "pulsar_lb_emulator_reconnect_latency_seconds_count"
RECONNECT_SUM = "pulsar_lb_emulator_reconnect_latency_seconds_sum"
UNAVAILABLE_SECONDS = "pulsar_lb_emulator_unavailable_topic_seconds_total"
EVENTS = 'pulsar_lb_emulator_events_total{kind="scenario_event"}'
EXTRA_COUNTERS = {"unavailable_topic_seconds": UNAVAILABLE_SECONDS}
"""KPIs a recording computes from events that the emulator also exports as a counter."""

QUERIES: tuple[str, ...] = (TIME, USAGE, *USAGES, *RATE, *THROUGHPUT, *COUNTERS.values(), UNLOADS, SPLITS,
                            RECONNECT_COUNT, RECONNECT_SUM, UNAVAILABLE_SECONDS, EVENTS)
"""One range query each (a plain selector: the series as scraped)."""

NEVER: Mapping[str, str] = {
    "repeat_unloads": "needs each unload's bundle (a recording's decisions); Prometheus has only the count "
                      f"{UNLOADS}",
    "bundles_unloaded": "every bundle closed for any reason is in a recording's decisions only; Pulsar "
                        f"counts the shedder's unloads ({UNLOADS}: unloads)",
    "bundles_split": "every bundle split for any reason is in a recording's decisions only; Pulsar counts "
                     f"the load manager's splits ({SPLITS}: splits)",
    "reconnect_latency_p50": "exact quantiles need each reconnect (a recording's events); the emulator's "
                             "histogram gives the count and the mean",
    "reconnect_latency_p99": "exact quantiles need each reconnect (a recording's events); the emulator's "
                             "histogram gives the count and the mean",
    "reconnect_latency_max": "needs each reconnect (a recording's events); the emulator's histogram gives "
                             "the count and the mean",
    "unavailable_topics": "per-topic outages are in a recording's events only",
    "unavailable_topic_seconds_p50": "per-topic outages are in a recording's events only",
    "unavailable_topic_seconds_p99": "per-topic outages are in a recording's events only",
    "unavailable_topic_seconds_max": "per-topic outages are in a recording's events only",
}
"""KPIs no Prometheus series gives: per-bundle, per-topic and per-handle facts."""

EMULATOR_ONLY: Mapping[str, str] = {
    "bundle_moves": "Pulsar exports no ownership changes (the emulator's pulsar_lb_emulator_bundle_moves_total)",
    "client_lookups": "client-side counts are not Pulsar broker metrics (pulsar_lb_emulator_client_lookups_total)",
    "client_lookup_redirects": "client-side counts are not Pulsar broker metrics "
                               "(pulsar_lb_emulator_client_lookup_redirects_total)",
    "client_lookup_failures": "client-side counts are not Pulsar broker metrics "
                              "(pulsar_lb_emulator_client_lookup_failures_total)",
    "reconnects": "Pulsar brokers export no client reconnects (the emulator's "
                  "pulsar_lb_emulator_reconnect_latency_seconds)",
    "reconnect_latency_mean": "Pulsar brokers export no client reconnects (the emulator's "
                              "pulsar_lb_emulator_reconnect_latency_seconds)",
    "unavailable_topic_seconds": "Pulsar exports no client outages (the emulator's "
                                 f"{UNAVAILABLE_SECONDS})",
    "scenario_events": "a real cluster has no scenario events (the emulator's pulsar_lb_emulator_events_total)",
    "time_to_balance_mean": "measured from scenario events, which a real cluster does not have",
    "time_to_balance_max": "measured from scenario events, which a real cluster does not have",
    "events_never_balanced": "counted over scenario events, which a real cluster does not have",
}
"""KPIs only the emulator's own series give, each with the series it reads."""
_EMULATOR_SOURCE = {
    "bundle_moves": COUNTERS["bundle_moves"], "client_lookups": COUNTERS["client_lookups"],
    "client_lookup_redirects": COUNTERS["client_lookup_redirects"],
    "client_lookup_failures": COUNTERS["client_lookup_failures"], "reconnects": RECONNECT_COUNT,
    "reconnect_latency_mean": RECONNECT_COUNT, "unavailable_topic_seconds": UNAVAILABLE_SECONDS,
    "scenario_events": EVENTS, "time_to_balance_mean": EVENTS, "time_to_balance_max": EVENTS,
    "events_never_balanced": EVENTS,
}


def unavailable_kpis(present: Iterable[str]) -> dict[str, str]:
    """{KPI: reason} of the KPIs null for this source: NEVER, and EMULATOR_ONLY where the series it
    reads was not in range (`present`: the queries that returned a series)."""
    have = set(present)
    out = dict(NEVER)
    for kpi, reason in EMULATOR_ONLY.items():
        if _EMULATOR_SOURCE[kpi] not in have:
            out[kpi] = reason
    return out


class Staged(msgspec.Struct, kw_only=True):
    """A recording folder written from Prometheus: where, its line counts, the null KPIs."""

    path: str
    samples: int
    decisions: int
    events: int
    emulated: bool                  # t is the emulator's time (else seconds since --from)
    unavailable: dict[str, str]


# ====================================================================== fetching


def fetch_series(url: str, start: float, end: float, step: float, *,
                 fetch: Fetch = http_post) -> dict[str, list[Series]]:
    """query -> its series over [start, end] at `step`, for every query of QUERIES."""
    return {q: query_range(url, q, start, end, step, fetch=fetch) for q in QUERIES}


# ====================================================================== mapping


def _clock(series: Sequence[Series]) -> dict[float, float] | None:
    """Scrape instant -> emulated seconds from pulsar_lb_emulator_time_seconds: the first instant of
    each scrape (a value seen again is the same scrape); None without the series."""
    if not series:
        return None
    if len(series) > 1:
        clusters = sorted({s.labels.get("cluster", "?") for s in series})
        raise UsageError(f"{TIME}: {len(series)} emulated clusters in range (cluster={', '.join(clusters)}); "
                         "give --from/--to of one run")
    out: dict[float, float] = {}
    last: float | None = None
    for ts, value in series[0].points:
        if not math.isfinite(value):
            continue
        if last is not None and value < last:
            raise UsageError(f"{TIME} goes back from {last:g} to {value:g} s at unix time {ts:g}: two "
                             "emulator runs in range; give --from/--to of one run")
        if value != last:
            out[ts] = value
            last = value
    return out


def _brokers_by_instance(series: Mapping[str, Sequence[Series]]) -> dict[str, str]:
    """instance -> broker, from the load-balancing gauges (an instance serving one broker only)."""
    seen: dict[str, set[str]] = {}
    for q in (USAGE, *USAGES):
        for s in series.get(q, ()):
            inst, broker = s.labels.get("instance"), s.labels.get("broker")
            if inst and broker:
                seen.setdefault(inst, set()).add(broker)
    return {inst: next(iter(b)) for inst, b in seen.items() if len(b) == 1}


def _broker(labels: Mapping[str, str], by_instance: Mapping[str, str]) -> str:
    inst = labels.get("instance", "")
    return labels.get("broker") or by_instance.get(inst) or inst


def _increases(points: Sequence[tuple[float, float]], baseline: bool) -> list[tuple[float, float]]:
    """(t, increase) per point: value - previous, the value itself after a drop (a reset) and for the
    first point of a series that starts in range; 0 for the first point of one that was there before."""
    out: list[tuple[float, float]] = []
    prev: float | None = None
    for t, v in points:
        if prev is None:
            inc = 0.0 if baseline else v
        else:
            inc = v - prev if v >= prev else v
        out.append((t, inc))
        prev = v
    return out


class _Writer:
    """The recording's three JSON-lines files, gzip-compressed as the recorder writes them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.lines: dict[str, list[bytes]] = {files.SAMPLES: [], files.DECISIONS: [], files.EVENTS: []}
        self._enc = msgspec.json.Encoder()

    def add(self, file: str, record: Mapping[str, Any]) -> None:
        self.lines[file].append(self._enc.encode(record))

    def close(self) -> dict[str, int]:
        counts = {}
        for name, lines in self.lines.items():
            data = b"".join(line + b"\n" for line in lines)
            (self.folder / (name + files.COMPRESSED)).write_bytes(files.compress(data))
            counts[name] = len(lines)
        return counts


def to_recording(series: Mapping[str, Sequence[Series]], folder: str | Path, *, url: str, start: float,
                 end: float, step: float, conf: ServiceConfig | None = None) -> Staged:
    """Write `series` (query -> series, `fetch_series`) as a recording folder; see the module docstring."""
    conf = conf or ServiceConfig()
    out = Path(folder)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    clock = _clock(series.get(TIME, ()))
    by_instance = _brokers_by_instance(series)
    first_instant = start + step / 2    # a point at or before it: the series was there at --from

    def timed(s: Series) -> list[tuple[float, float]]:
        """The series' points on the run's time axis, non-finite values left out."""
        if clock is None:
            return [(ts - start, v) for ts, v in s.points if math.isfinite(v)]
        return [(clock[ts], v) for ts, v in s.points if ts in clock and math.isfinite(v)]

    def there_at_start(s: Series) -> bool:
        return bool(s.points) and s.points[0][0] <= first_instant

    w = _Writer(out)

    def sample(t: float, name: str, labels: Mapping[str, str], value: float) -> None:
        w.add(files.SAMPLES, {"t": t, "name": name, "labels": labels, "value": value})

    # ---- gauges: usage, rates, throughput
    def broker_labels(s: Series) -> dict[str, str]:
        return {"cluster": s.labels.get("cluster", ""), "broker": _broker(s.labels, by_instance)}

    if series.get(USAGE):
        for s in series[USAGE]:
            labels = broker_labels(s)
            for t, v in timed(s):
                sample(t, USAGE, labels, v)
    else:
        weighted: dict[tuple[float, str, str], float] = {}
        for name, weight in zip(USAGES, conf.resource_weights):
            for s in series.get(name, ()):
                labels = broker_labels(s)
                for t, v in timed(s):
                    key = (t, labels["cluster"], labels["broker"])
                    if v * weight > weighted.get(key, -math.inf):
                        weighted[key] = v * weight
        for (t, cluster, broker), v in sorted(weighted.items()):
            sample(t, USAGE, {"cluster": cluster, "broker": broker}, v)
    for name in (*RATE, *THROUGHPUT):
        for s in series.get(name, ()):
            labels = broker_labels(s)
            for t, v in timed(s):
                sample(t, name, labels, v)

    # ---- counters, rebuilt from their increases
    for name in (*COUNTERS.values(), UNAVAILABLE_SECONDS):
        for s in series.get(name, ()):
            labels = {k: v for k, v in s.labels.items() if k != "__name__"}
            if "broker" not in labels and labels.get("instance") in by_instance:   # a real broker's own
                labels["broker"] = by_instance[labels["instance"]]
            total = 0.0
            for t, inc in _increases(timed(s), there_at_start(s)):
                total += inc
                sample(t, name, labels, total)

    # ---- decisions and events, one line per increment
    def each_increment(query: str) -> Iterable[tuple[float, int, Series]]:
        for s in series.get(query, ()):
            for t, inc in _increases(timed(s), there_at_start(s)):
                n = int(round(inc))
                if n > 0:
                    yield t, n, s

    for t, n, _ in each_increment(UNLOADS):
        for _ in range(n):
            w.add(files.DECISIONS, {"t": t, "decision": "unload"})
    for t, n, _ in each_increment(SPLITS):
        for _ in range(n):
            w.add(files.DECISIONS, {"t": t, "decision": "split", "ok": True})
    for t, n, s in each_increment(EVENTS):
        for _ in range(n):
            w.add(files.EVENTS, {"t": t, "kind": "scenario_event", "event": s.labels.get("name", "")})
    sums = {tuple(sorted((k, v) for k, v in s.labels.items() if k != "__name__")): s
            for s in series.get(RECONNECT_SUM, ())}
    for count in series.get(RECONNECT_COUNT, ()):
        seconds = sums.get(tuple(sorted((k, v) for k, v in count.labels.items() if k != "__name__")))
        latency = dict(_increases(timed(seconds), there_at_start(seconds))) if seconds is not None else {}
        for t, inc in _increases(timed(count), there_at_start(count)):
            n = int(round(inc))
            if n > 0 and t in latency:
                mean = latency[t] / n
                for _ in range(n):
                    w.add(files.EVENTS, {"t": t, "kind": "handle_reconnected", "unavailable": mean})

    counts = w.close()
    present = [q for q, s in series.items() if s]
    unavailable = unavailable_kpis(present)
    info = {
        "scenario": "prometheus", "seed": 0, "config": conf.to_properties(), "placement": "", "shedder": "",
        "grid": {"prometheus": url}, "clock": "wall", "emulated_start": 0.0,
        "emulated_end": None if clock is not None else end - start,
        "complete": True, "record_interval": step,
        "source": {"prometheus": url, "from": start, "to": end, "step": step,
                   "time": TIME if clock is not None else "seconds since from",
                   "series": {q: len(s) for q, s in series.items()}},
        "kpis_unavailable": unavailable,
    }
    (out / RUN_FILE).write_text(json.dumps(info, indent=1) + "\n")
    return Staged(path=str(out), samples=counts[files.SAMPLES], decisions=counts[files.DECISIONS],
                  events=counts[files.EVENTS], emulated=clock is not None, unavailable=unavailable)


def run_id(url: str, start: float) -> str:
    """`prometheus-<host_port>-<from, UTC>`: a folder name, the run's id in the tables."""
    host = urllib.parse.urlsplit(url).netloc or "prometheus"
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(start))
    return re.sub(r"[^A-Za-z0-9._-]+", "_", f"prometheus-{host}-{stamp}")


# ====================================================================== the roll-up


def rollup_prometheus(url: str, start: float, end: float, step: float, out_dir: str | Path, *,
                      master: str | None = None, spark: "SparkSession | None" = None,
                      options: RollupOptions | None = None, conf: Mapping[str, str] | None = None,
                      service_config: ServiceConfig | None = None, fetch: Fetch = http_post,
                      show: bool = True) -> RollupResult:
    """Fetch, stage as `OUT/prometheus/<run id>/`, roll up into `out_dir`; print the table and the
    null KPIs' reasons when `show`. Bad input or an unreachable server: UsageError before Spark starts;
    no Pulsar series in range likewise."""
    from emulator.pipeline.session import DEFAULT_MASTER

    if not end > start:
        raise UsageError(f"--from ({start:g}) must be before --to ({end:g})")
    series = fetch_series(url, start, end, step, fetch=fetch)
    if not any(series.get(q) for q in (USAGE, *USAGES)):
        raise UsageError(f"{url}: no pulsar_lb_*_usage series between {_iso(start)} and {_iso(end)}; is it "
                         "the Prometheus that scrapes the brokers, and was the load balancer running?")
    staged = to_recording(series, Path(out_dir) / "prometheus" / run_id(url, start), url=url, start=start,
                          end=end, step=step, conf=service_config)
    runs = load_runs([staged.path])
    result = rollup_runs(runs, out_dir, master=master if master is not None else DEFAULT_MASTER, spark=spark,
                         options=options, show=show, conf=conf, size=input_bytes(runs),
                         extra_counters=EXTRA_COUNTERS, unavailable=staged.unavailable)
    if show:
        print(f"\nnot available from Prometheus ({len(staged.unavailable)}; null in the tables, "
              "reasons in kpis_unavailable.json):")
        for kpi, reason in staged.unavailable.items():
            print(f"  {kpi}: {reason}")
        sys.stdout.flush()
    return result


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))

