"""A run's time-stamped observations in memory: what the KPIs of `kpis.py` are computed from.

The same facts a recording holds (recorder.py), kept only where a KPI reads them:

* samples: `(t, name, labels, value)` of the metric series the KPIs use (broker usage, message rates
  and throughput, the lookup and bundle-move counters, publish counts and failures), taken from the
  metrics registry on the recorder's schedule: once when sampling starts, then on every multiple of
  `interval`, and a last block at the end; so a timeline and a recording of the same run hold the same
  sample instants and values. They are reduced as they come to what the KPIs read of them
  (`SampleFacts`: per-tick figures, per-broker usage, counter increases), not kept, so a day's
  timeline stays a few MiB and a long run's memory flat;
* decisions: the decision log's `unload`, `split`, `bundle_unloaded` and `bundle_split` records, and
  the Extensible load manager's `extensible_unload` and `extensible_split`;
* events: `handle_disconnected` / `handle_reconnected` / `handle_failed` / `handle_closed` (outages)
  and `scenario_event`;
* publish: the cluster's exact publish-latency line at the end (`PublishLine`), when the cluster has
  publish accounting.

`LiveTimeline` fills one while a run goes; `Timeline.from_recording` reads a recording folder into one,
so expectations can be checked on a recording after the fact with the same code.
"""

from __future__ import annotations

import json
import math
from array import array
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from emulator.cluster.events import (
    BundleSplit,
    BundleUnloaded,
    Event,
    ExtensibleSplitDecision,
    ExtensibleUnloadDecision,
    HandleClosed,
    HandleDisconnected,
    HandleFailed,
    HandleReconnected,
    ScenarioEvent,
    Split,
    Unload,
)
from emulator.observe import recording_files as files
from emulator.observe.decision_kinds import is_load_manager_split, is_load_manager_unload
from emulator.observe.publish import PublishLine

if TYPE_CHECKING:
    from .recorder import Recorder
    from emulator.cluster.cluster import Cluster
    from emulator.observe.metrics import ClusterMetrics

__all__ = ["COUNTERS", "LiveTimeline", "SAMPLED", "SampleFacts", "Timeline", "USAGE", "RATE", "THROUGHPUT",
           "is_load_manager_split", "is_load_manager_unload"]

USAGE = "pulsar_lb_emulator_broker_max_usage"
RATE = ("pulsar_broker_rate_in", "pulsar_broker_rate_out")
THROUGHPUT = ("pulsar_broker_throughput_in", "pulsar_broker_throughput_out")
COUNTERS: dict[str, str] = {
    # KPI name -> sample name (the roll-up's COUNTERS are these without the publish counters)
    "bundle_moves": "pulsar_lb_emulator_bundle_moves_total",
    "lookups": "pulsar_broker_lookup_answers_total",
    "lookup_redirects": "pulsar_broker_lookup_redirects_total",
    "lookup_failures": "pulsar_broker_lookup_failures_total",
    "client_lookups": "pulsar_lb_emulator_client_lookups_total",
    "client_lookup_redirects": "pulsar_lb_emulator_client_lookup_redirects_total",
    "client_lookup_failures": "pulsar_lb_emulator_client_lookup_failures_total",
    "publish_messages": "pulsar_lb_emulator_publish_latency_seconds_count",
    "publish_failed": "pulsar_lb_emulator_publish_failed_total",
}
SAMPLED = frozenset({USAGE, *RATE, *THROUGHPUT, *COUNTERS.values()})
"""Sample names a timeline keeps (every other series of the registry is dropped)."""
_KEPT_DECISIONS = (Unload, Split, BundleUnloaded, BundleSplit, ExtensibleUnloadDecision, ExtensibleSplitDecision)
_KEPT_EVENTS = (HandleDisconnected, HandleReconnected, HandleFailed, HandleClosed, ScenarioEvent)
DECISIONS = frozenset(t.decision for t in _KEPT_DECISIONS)
"""Decision names a timeline keeps (a recording's records are told apart by name)."""
EVENTS = frozenset(t.kind for t in _KEPT_EVENTS)


Labels = tuple[tuple[str, str], ...]

_COUNTER_KPI = {sample: kpi for kpi, sample in COUNTERS.items()}
_USAGE, _RATE, _THROUGHPUT = 1, 2, 3
SAME_TICK = 1e-6
"""Seconds within which two sample instants are one tick (the samplers' grid tolerance, recorder.py)."""
_NONE = math.nan
"""An undefined per-tick figure (a ratio over a zero mean or no rate) in `SampleFacts`' columns."""


def _kind(name: str) -> int:
    """Which per-broker table of `SampleFacts` a sample name adds to (0: none)."""
    return _USAGE if name == USAGE else _RATE if name in RATE else _THROUGHPUT if name in THROUGHPUT else 0


class SampleFacts:
    """The first pass of the KPIs over a timeline's samples, kept as the samples come, in columns
    whose size follows the number of sample instants, not of samples (a day of `default` is a few
    MiB, not the 200 MiB the samples themselves took): the raw samples are not kept.

    * `ticks`: the instants that have a broker usage, in order; per tick, the columns `range`, `mom`,
      `std`, `cv` of the brokers' max usages and `rate` / `tput`, the max/min ratio of the brokers'
      message rate / throughput in + out (`_NONE`, NaN, where undefined);
    * `usage[broker]`: its (times, max usage at each) at the ticks it has one;
    * `counters[(kpi, labels)]`: each counter series' (times, increases) at the samples whose
      increase is not zero (the first sample counts whole, a drop is a reset); a zero adds nothing to
      a window's sum, so it is not kept.

    A tick is closed (its columns computed) when a sample of a later instant comes, or by `close()`.
    Samples come in time order, as a recording holds them and a live run takes them; one older than
    the open tick is refused (ValueError): its tick is already summed."""

    __slots__ = ("ticks", "range", "mom", "std", "cv", "rate", "tput", "usage", "counters", "count",
                 "_t", "_closed", "_usage", "_rate", "_tput", "_last")

    def __init__(self) -> None:
        self.ticks = array("d")
        self.range, self.mom, self.std, self.cv = array("d"), array("d"), array("d"), array("d")
        self.rate, self.tput = array("d"), array("d")
        self.usage: dict[str, tuple[array[float], array[float]]] = {}
        self.counters: dict[tuple[str, Labels], tuple[array[float], array[float]]] = {}
        self.count = 0
        """Samples added."""
        self._t: float | None = None
        """The open tick's instant; its brokers' usage, rate and throughput so far below."""
        self._closed = False
        """The tick at `_t` is closed: a sample there again is refused, as an older one is."""
        self._usage: dict[str, float] = {}
        self._rate: dict[str, float] = {}
        self._tput: dict[str, float] = {}
        self._last: dict[tuple[str, Labels], float] = {}
        """Each counter series' last value (the next sample's increase is from it)."""

    @classmethod
    def of(cls, samples: list[tuple[float, str, Labels, float]]) -> "SampleFacts":
        facts = cls()
        for t, name, labels, value in samples:
            facts.add(t, name, labels, value)
        return facts.close()

    @property
    def last_t(self) -> float | None:
        """The latest instant of any sample added (None before the first)."""
        return self._t

    def add(self, t: float, name: str, labels: Labels, value: float) -> None:
        t = self._at(t)
        self.count += 1
        kpi = _COUNTER_KPI.get(name)
        if kpi is not None:
            self._point((kpi, labels), t, value)
        else:
            self._broker(_kind(name), dict(labels).get("broker"), value)

    def add_block(self, t: float, values: list[float], points: list[tuple[int, tuple[str, Labels]]],
                  brokers: list[tuple[int, int, str]]) -> None:
        """`add` of each of `values` stamped `t` (a `_Plan`'s block): the same points and tables,
        added in the same order, for the values that add to them."""
        t = self._at(t)
        self.count += len(values)
        point = self._point
        for at, series in points:
            point(series, t, values[at])
        broker = self._broker
        for at, kind, name in brokers:
            broker(kind, name, values[at])

    def close(self) -> "SampleFacts":
        """Close the open tick (the end of the samples; more may come at later instants)."""
        t, usage = self._t, self._usage
        if t is not None and usage:
            for broker, u in usage.items():
                got = self.usage.get(broker)
                if got is None:
                    got = self.usage[broker] = (array("d"), array("d"))
                got[0].append(t)
                got[1].append(u)
            vals = list(usage.values())
            mean = math.fsum(vals) / len(vals)
            std = math.sqrt(math.fsum((v - mean) ** 2 for v in vals) / len(vals))
            self.ticks.append(t)
            self.range.append(max(vals) - min(vals))
            self.mom.append(max(vals) / mean if mean > 0 else _NONE)
            self.std.append(std)
            self.cv.append(std / mean if mean > 0 else _NONE)
            for column, table in ((self.rate, self._rate), (self.tput, self._tput)):
                xs = list(table.values())
                column.append(max(xs) / min(xs) if xs and min(xs) > 0 else _NONE)
        self._usage, self._rate, self._tput = {}, {}, {}
        self._closed = t is not None
        return self

    def _at(self, t: float) -> float:
        """A sample at `t`: close the open tick if `t` is later (see the class docstring); the instant
        it counts at. A sample a float step (< `SAME_TICK`) before the open tick is that tick's: the
        samplers stamp a block with the grid instant the clock is a hair short of, and a run that ends
        at that instant takes its last block there (as a recording made before the end's guard holds)."""
        if t != self._t or self._closed:
            if self._t is not None and t < self._t and self._t - t < SAME_TICK and not self._closed:
                return self._t
            if self._t is not None and (t < self._t or (t == self._t and self._closed)):
                raise ValueError(f"a sample at t={t!r} after the tick at t={self._t!r} was summed: "
                                 "samples come in time order")
            self.close()
            self._t, self._closed = t, False
        return t

    def _point(self, series: tuple[str, Labels], t: float, value: float) -> None:
        prev = self._last.get(series)
        self._last[series] = value
        increase = value if prev is None or value < prev else value - prev
        if increase != 0:
            got = self.counters.get(series)
            if got is None:
                got = self.counters[series] = (array("d"), array("d"))
            got[0].append(t)
            got[1].append(increase)

    def _broker(self, kind: int, broker: str | None, value: float) -> None:
        if broker is None or not kind:
            return
        if kind == _USAGE:
            usage = self._usage
            usage[broker] = max(usage.get(broker, -math.inf), value)
        else:
            table = self._rate if kind == _RATE else self._tput
            table[broker] = table.get(broker, 0.0) + value


class _Plan:
    """What a block of rows of one layout adds: `rows` (the sampled rows' indices, in order), then,
    by position among them, the counter `points` (position, series) and the per-broker values
    `brokers` (position, kind, broker) the KPIs' first pass keeps (`SampleFacts.add_block`). A block
    is then a C-level pass and a loop over those two."""

    __slots__ = ("rows", "points", "brokers")

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.points: list[tuple[int, tuple[str, Labels]]] = []
        self.brokers: list[tuple[int, int, str]] = []


class Timeline:
    """Observations of one run; `t0` is the run start, `end` its last instant (None while running)."""

    def __init__(self, *, t0: float, config: dict[str, str] | None = None) -> None:
        self.t0 = float(t0)
        self.end: float | None = None
        self.config: dict[str, str] = dict(config or {})
        self.facts = SampleFacts()
        """The KPIs' first pass over the samples, kept as they come (the samples are not kept)."""
        self.decisions: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.publish: PublishLine | None = None

    @property
    def span(self) -> float:
        """The run's end, or the last observed time while it runs."""
        if self.end is not None:
            return self.end
        last = self.facts.last_t
        times = ([] if last is None else [last]) + [d["t"] for d in self.decisions[-1:]] + \
            [e["t"] for e in self.events[-1:]]
        return max(times, default=self.t0)

    def sample_facts(self) -> SampleFacts:
        """The first pass of the KPIs over the samples so far (see `SampleFacts`), its last tick closed."""
        return self.facts.close()

    def setting(self, key: str, default: float) -> float:
        """A numeric ServiceConfig key as the run had it (run.json's `config`)."""
        try:
            return float(self.config.get(key, default))
        except (TypeError, ValueError):
            return default

    # ------------------------------------------------------------------ adding

    def add_sample(self, t: float, name: str, labels: dict[str, str], value: float) -> None:
        if name in SAMPLED:
            self.facts.add(float(t), name, tuple(sorted(labels.items())), float(value))

    def add_record(self, record: dict[str, Any]) -> None:
        """A decision-log record or an event line (as in decisions.jsonl / events.jsonl)."""
        if record.get("decision") in DECISIONS:
            self.decisions.append(record)
        elif record.get("kind") in EVENTS:
            self.events.append(record)

    # ------------------------------------------------------------------ a recording

    @classmethod
    def from_recording(cls, folder: str | Path) -> "Timeline":
        """A recording folder (recorder.py) read back: the same observations a live run had."""
        folder = Path(folder)
        info = json.loads((folder / "run.json").read_text())
        tl = cls(t0=float(info.get("emulated_start") or 0.0), config=info.get("config") or {})
        for line in _lines(folder, files.SAMPLES):
            if line.get("name") in SAMPLED:
                tl.add_sample(line["t"], line["name"], line.get("labels") or {}, line["value"])
        for line in _lines(folder, files.DECISIONS):
            tl.add_record(line)
        for line in _lines(folder, files.EVENTS):
            tl.add_record(line)
        for line in _lines(folder, files.PUBLISH):
            if line.get("topic") == "":
                tl.publish = msgspec.convert(line, PublishLine)
        if info.get("emulated_end") is not None:
            tl.end = float(info["emulated_end"])
        else:
            tl.end = tl.span
        return tl


def _lines(folder: Path, name: str) -> list[dict[str, Any]]:
    """The JSON lines of a recording file, compressed or plain (recording_files.py)."""
    out = []
    for text in files.iter_lines(folder, name):
        try:
            out.append(json.loads(text))
        except json.JSONDecodeError:   # a line cut by a kill: the files are whole lines otherwise
            continue
    return out


class LiveTimeline(Timeline):
    """A timeline fed by a running cluster: subscribe now, `await run()` in a task, `finish()` at the end.

    Sampling follows `Recorder.run` (a block at start, then on multiples of `interval` emulated seconds)
    so a recorded run and its timeline agree sample for sample."""

    def __init__(self, cluster: "Cluster", metrics: "ClusterMetrics", *, interval: float = 10.0,
                 t0: float | None = None) -> None:
        if not (interval > 0 and math.isfinite(interval)):
            raise ValueError(f"interval = {interval!r}: must be a finite number of emulated seconds > 0")
        clock = cluster.system.clock
        super().__init__(t0=clock.now() if t0 is None else t0, config=cluster.conf.to_properties())
        self.cluster = cluster
        self.metrics = metrics
        self.interval = float(interval)
        self._clock = clock
        self._last_sample_t: float | None = None
        self._labels: dict[Any, Labels] = {}
        """Each sampled series' sorted labels, made once: every block repeats the same series, and
        a day's samples then share a few hundred label tuples instead of holding one each."""
        self._plan_keys: list[Any] | None = None
        self._plan = _Plan()
        """For the rows of `_plan_keys` (`Rows.keys`): which rows are sampled and what each adds to
        the facts."""
        self._unsubscribe = cluster.events.subscribe(self._on_event)

    def _on_event(self, event: Event) -> None:
        if isinstance(event, _KEPT_DECISIONS):
            self.decisions.append(event.record())
        elif isinstance(event, _KEPT_EVENTS):
            self.events.append(event.record())

    def sample(self, t: float) -> None:
        self.take(t, self.metrics.rows())

    def take(self, t: float, rows: list[Any]) -> None:
        """One block of samples stamped `t` from the metrics' `rows()`: the timeline's own, or the
        recorder's when the run is recorded (a `Recorder.row_listeners` entry instead of `run()`).
        Blocks after `finish()` (the recorder's closing one) are not the run's: ignored."""
        if self.end is not None:
            return
        keys, values = getattr(rows, "keys", None), getattr(rows, "values", None)
        if keys is None or values is None:
            keys, values = [key for key, _ in rows], [value for _, value in rows]
        if keys is not self._plan_keys and keys != self._plan_keys:
            self._plan_keys, self._plan = keys, self._make_plan(keys)
        plan = self._plan
        picked = list(map(float, map(values.__getitem__, plan.rows)))
        self.facts.add_block(t, picked, plan.points, plan.brokers)
        self._last_sample_t = t

    def _make_plan(self, keys: list[Any]) -> _Plan:
        labels_of = self._labels
        if len(labels_of) > 4 * len(keys) + 1024:     # series that have gone (brokers)
            labels_of.clear()
        plan = _Plan()
        for i, key in enumerate(keys):
            name = key[0]
            if name in SAMPLED:
                labels = labels_of.get(key)
                if labels is None:
                    labels = labels_of[key] = tuple(sorted(zip(key[1], key[2])))
                kpi = _COUNTER_KPI.get(name)
                at = len(plan.rows)
                plan.rows.append(i)
                if kpi is not None:
                    plan.points.append((at, (kpi, labels)))
                else:
                    broker, kind = dict(labels).get("broker"), _kind(name)
                    if broker is not None and kind:
                        plan.brokers.append((at, kind, broker))
        return plan

    def follow(self, recorder: "Recorder") -> None:
        """Take the recorder's sample blocks instead of sampling (`run`): the same instants, one
        collection of the metrics each. A block the recorder already wrote is taken again here."""
        if recorder.last_sample_t is not None:
            self.sample(recorder.last_sample_t)
        recorder.row_listeners.append(self.take)

    async def run(self) -> None:
        interval = self.interval
        now = self._clock.now()
        self.sample(now)
        k = math.floor(now / interval + 1e-9) + 1
        while self.end is None:
            next_sample = k * interval
            await anyio.sleep(max(0.0, next_sample - self._clock.now()))
            now = self._clock.now()
            if now >= next_sample - 1e-6:
                self.sample(next_sample if now - next_sample < 1e-6 else now)
                k = max(k + 1, math.floor(now / interval + 1e-9) + 1)

    def finish(self, now: float | None = None) -> None:
        """The run ended at `now`: a last sample block there (as the recorder's close), the exact
        publish line, and no more events."""
        if self.end is not None:
            return
        now = self._clock.now() if now is None else now
        if self._last_sample_t is None or now - self._last_sample_t > SAME_TICK:
            self.sample(now)
        acc = getattr(self.cluster, "publish_accounting", None)
        if acc is not None:
            self.publish = acc.stats(now, exact=True).cluster
        self.end = now
        self._unsubscribe()
