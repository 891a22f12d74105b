"""The run recorder: one folder per run, every file valid JSON lines at any moment.

Files (the contract with the Spark roll-up, /tmp/prompts/interfaces.md "Recording folder"):

* `run.json`: what ran (scenario, seed, effective config, placement, shedder, sweep grid, clock, versions,
  start/end, `actor_failures`: crashes, emulator bugs, each also an `actor_failed` line in events.jsonl).
  Written at start with `"complete": false`, rewritten by `close()`; always replaced
  atomically (temp file + rename), so a reader never sees half of it.
* `samples.jsonl.gz`: `{"t", "name", "labels", "value"}` per sample, one block every `interval` emulated
  seconds (on multiples of the interval), taken from the metrics registry itself, so a recording and a
  scrape never disagree. `close(complete=True)` adds a last block at the end time if it is not already there.
* `decisions.jsonl.gz`: the decision log's records (`{"kind", "t", ..., "decision"}`, same fields as
  `DecisionLog`) at the recording's `decisions` level (`decision_log.LEVELS`): every
  `emulator.cluster.events.Decision` whole ("full"), one line each with its selection trace cut to a
  summary ("decisions", the default), or no file at all ("off").
* `events.jsonl.gz`: `{"kind", "t", ...}` (keys sorted) for the event types of `RECORDED_EVENTS`: scenario
  events, broker lifecycle, leader changes and client disconnects/reconnects/failures.
* `publish.jsonl.gz`: one line for the cluster (`topic` "") then one per topic: publish latency P50 /
  P99 / P99.9 / P99.99 and failed sends (`emulator.observe.publish.PublishLine`), appended at close
  (before run.json is rewritten). It is the run's end-of-run table: a killed run's is empty (its
  cluster figures up to the last flush are in the samples, `pulsar_lb_emulator_publish_*`).
  Recordings made before it was compressed have `publish.jsonl`; readers take either (`files.find`).

The four line files are gzip-compressed JSON lines (`recording_files.py`; `compress=False` writes
plain `.jsonl` files, as recordings did before). Each starts as one empty gzip member, so it is valid
gzip from its creation; lines are buffered in memory and appended as one whole gzip member per flush
with one `os.write`: at every sample block (and at least every emulated minute when the interval is
longer), when the buffer passes 1 MiB, and on close. A process killed at any point therefore leaves
every file readable up to its last flush, and `run.json` says `"complete": false` unless
`close(complete=True)` ran.

`close()` is safe from a signal handler: if the signal interrupted a write in progress, run.json gets
its end (incomplete) and the publish table at once and that write finishes closing the files when it
resumes (lines still buffered in memory are lost if the process exits first; every file stays whole
lines). `abort()` is for a handler about to end the process (a second Ctrl-C): it flushes what it
safely can and marks run.json incomplete, without the publish table. Installing the handler with
`loop.add_signal_handler` (so close runs on the loop) is still preferred.

Determinism: nothing in the samples or decisions reads the wall clock, and the gzip members carry no
time stamp; the same seed gives the same bytes.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import math
import os
import platform
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from emulator.cluster import events as ev
from emulator.cluster.events import Decision, Event, to_builtins
from emulator.observe import recording_files as files
from emulator.observe.decision_log import DEFAULT_LEVEL, check_level, decision_record

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster
    from emulator.observe.metrics import ClusterMetrics, SeriesKey

__all__ = ["RECORDED_EVENTS", "Recorder", "FLUSH_EVERY", "versions"]

RECORDED_EVENTS: frozenset[type[Event]] = frozenset({
    ev.ScenarioEvent, ev.BrokerStarted, ev.BrokerCrashed, ev.BrokerStopping, ev.BrokerStopped,
    ev.LeaderElected, ev.LeaderStarted, ev.HandleDisconnected, ev.HandleReconnected, ev.HandleFailed,
    ev.HandleClosed,
    ev.AdminUnload, ev.AdminSplit, ev.IsolationPolicySet, ev.IsolationPolicyDeleted,
    ev.FailureDomainSet, ev.FailureDomainDeleted, ev.AntiAffinityGroupSet, ev.ConfigChanged,
    ev.ActorFailed, ev.PlacementFailed, ev.SheddingFailed, ev.BrokerStartFailed, ev.InitialState,
    ev.WarmStarted, ev.LoadManagerChanged, ev.LoadManagerCreateFailed, ev.LoadManagerSwitchUnsupported,
})
"""Event types copied to events.jsonl besides the decisions (HandleConnected, LoadReportWritten and
the like are too many)."""

FLUSH_EVERY = 60.0
"""Emulated seconds between flushes at most, whatever the sample interval."""

_MAX_BUFFER = 1 << 20
_VERSION_PACKAGES = (("pulsar_lb_emulator", "pulsar-lb-emulator"), ("anyio", "anyio"),
                     ("msgspec", "msgspec"), ("prometheus_client", "prometheus-client"),
                     ("structlog", "structlog"), ("numpy", "numpy"))


class Sample(msgspec.Struct):
    """One line of samples.jsonl: the schema. `Recorder.sample` writes exactly this Struct's JSON
    encoding, assembled from cached parts (tests/observe check the two agree byte for byte)."""

    t: float
    name: str
    labels: dict[str, str]
    value: float


def versions() -> dict[str, str]:
    """Versions of Python and the packages a recording depends on."""
    out = {"python": platform.python_version()}
    for key, dist in _VERSION_PACKAGES:
        try:
            out[key] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[key] = "unknown"
    return out


def _wall_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _publish_table(cluster: "Cluster", now: float) -> bytes:
    """The publish table's lines (cluster line first, then every topic); none without accounting."""
    acc = getattr(cluster, "publish_accounting", None)
    if acc is None:
        return b""
    encode = msgspec.json.Encoder().encode
    return b"".join(encode(line) + b"\n" for line in (acc.stats(now, exact=True).cluster, *acc.per_topic(now)))


class _LineFile:
    """Append-only JSON-lines file written in whole lines (own buffer, unbuffered fd); `compress`:
    each flush is one gzip member."""

    def __init__(self, path: Path, compress: bool = False) -> None:
        self.path = path
        self.compress = compress
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._lines: list[bytes] = []
        self._size = 0
        if compress and os.fstat(self._fd).st_size == 0:
            _write_all(self._fd, files.compress(b""))   # valid gzip before the first flush

    def add(self, line: bytes) -> None:
        self._lines.append(line)
        self._size += len(line)

    def add_block(self, lines: bytes) -> None:
        """Whole lines in one bytes (a sample block)."""
        self._lines.append(lines)
        self._size += len(lines)

    @property
    def buffered(self) -> int:
        return self._size

    def flush(self) -> None:
        if not self._lines or self._fd < 0:
            return
        data = b"".join(self._lines)
        self._lines.clear()
        self._size = 0
        if self.compress:
            data = files.compress(data)
        _write_all(self._fd, data)

    def close(self) -> None:
        self.flush()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class Recorder:
    """Records one run of `cluster` into `out_dir` (created if missing; must not hold a recording).

    `run_info` supplies the run.json fields only the caller knows (scenario, scenario_file, seed, config,
    placement, shedder, grid, clock, speed, duration); missing ones are filled from the cluster. Call
    `await recorder.run()` in a task for the periodic samples (`emulator.observe.attach.observe` does).
    """

    def __init__(self, cluster: "Cluster", metrics: "ClusterMetrics", out_dir: str | os.PathLike[str], *,
                 run_info: dict[str, Any], interval: float = 10.0, decisions: str = DEFAULT_LEVEL,
                 compress: bool = True) -> None:
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) \
                or not (interval > 0 and math.isfinite(interval)):
            raise ValueError(f"interval = {interval!r}: must be a finite number of emulated seconds > 0")
        if not isinstance(run_info, dict):
            raise TypeError(f"run_info = {run_info!r}: expected a dict of run.json fields")
        self.decision_level = check_level(decisions)
        self.compress = bool(compress)
        self.cluster = cluster
        self.metrics = metrics
        self.interval = float(interval)
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        if (self.dir / "run.json").exists():
            raise ValueError(f"out_dir = {str(self.dir)!r}: already holds a recording (run.json); "
                             "give a new folder per run")
        self._encoder = msgspec.json.Encoder()
        # events.jsonl lines: keys sorted at every level, as `to_builtins` then encode gives, in one pass
        # (an event record is builtins already; one line per disconnect and reconnect of every producer)
        self._sorted_encoder = msgspec.json.Encoder(order="sorted")
        self._series: dict[SeriesKey, bytes] = {}   # encoded name and labels of each series
        self._last_keys: list[SeriesKey] = []
        self._last_middles: list[bytes] = []
        self._clock = cluster.system.clock
        self._last_t = self._now() or 0.0
        self._last_sample_t: float | None = None
        self.row_listeners: list[Callable[[float, list[Any]], None]] = []
        """Called with (t, rows) on every sample block: a timeline of the same run takes the recorder's
        rows instead of collecting the metrics a second time at the same instant."""
        self._last_flush_t = self._last_t
        self._closed = False
        self._writing = False
        self._pending_close: bool | None = None
        self.info = self._initial_info(run_info)
        self._write_run_json()
        suffix = files.COMPRESSED if self.compress else ""
        self.samples = _LineFile(self.dir / (files.SAMPLES + suffix), self.compress)
        self.decisions: _LineFile | None = (
            None if self.decision_level == "off" else _LineFile(self.dir / (files.DECISIONS + suffix), self.compress))
        self.events = _LineFile(self.dir / (files.EVENTS + suffix), self.compress)
        self.publish = _LineFile(self.dir / (files.PUBLISH + suffix), self.compress)
        self._publish_written = False
        self._unsubscribe = cluster.events.subscribe(self._on_event)

    # ------------------------------------------------------------------ run.json

    def _initial_info(self, given: dict[str, Any]) -> dict[str, Any]:
        cluster = self.cluster
        clock = self._clock
        settings = cluster.settings
        conf = cluster.conf
        info: dict[str, Any] = {
            "scenario": "",
            "scenario_file": None,
            "seed": cluster.system.seed,
            "config": conf.to_properties(),
            "placement": settings.placement or conf.load_balancer_load_placement_strategy,
            "shedder": settings.shedder or conf.load_balancer_load_shedding_strategy,
            "grid": {},
            "clock": getattr(clock, "kind", "virtual"),
            "speed": float(getattr(clock, "speed", 0.0)),   # 0.0: virtual, as fast as possible
            "duration": None,
        }
        info.update(given)
        info.update({
            "emulated_start": self._last_t,
            "emulated_end": None,
            "started_at": _wall_now(),
            "ended_at": None,
            "complete": False,
            "versions": versions(),
            "record_interval": self.interval,
            "record_decisions": self.decision_level,
            "encoding": "gzip" if self.compress else "plain",
        })
        return info

    def _write_run_json(self) -> None:
        tmp = self.dir / "run.json.tmp"
        tmp.write_bytes(msgspec.json.format(msgspec.json.encode(to_builtins(self.info)), indent=2) + b"\n")
        os.replace(tmp, self.dir / "run.json")

    # ------------------------------------------------------------------ time

    def _now(self) -> float | None:
        try:
            return self._clock.now()
        except RuntimeError:   # no running loop (closing after the run)
            return None

    # ------------------------------------------------------------------ events and decisions

    def _on_event(self, event: Event) -> None:
        self._last_t = event.t
        if isinstance(event, Decision):
            decisions = self.decisions
            if decisions is None:
                return
            decisions.add(self._encoder.encode(decision_record(event, self.decision_level)) + b"\n")
            if decisions.buffered > _MAX_BUFFER:
                self.flush()
        elif type(event) in RECORDED_EVENTS:
            self.events.add(self._sorted_encoder.encode(event.record()) + b"\n")
            if self.events.buffered > _MAX_BUFFER:
                self.flush()

    @property
    def last_sample_t(self) -> float | None:
        """The time stamp of the last sample block written, None before the first."""
        return self._last_sample_t

    # ------------------------------------------------------------------ samples

    def sample(self, t: float | None = None) -> int:
        """Append one block of samples stamped `t` (default: now); returns the number of lines."""
        if self._closed:
            return 0
        if t is None:
            t = self._now()
            if t is None:
                raise RuntimeError("Recorder.sample() without t must run inside the cluster's event loop")
        # A line is the Sample struct's encoding, put together from parts: '{"t":<t>' once per block,
        # ',"name":<name>,"labels":{...},"value":' once per series (cached), then '<value>}\n'.
        encode = self._encoder.encode
        rows = self.metrics.rows()
        for listener in self.row_listeners:
            listener(t, rows)
        n = len(rows)
        self._last_sample_t = self._last_t = t
        if not n:
            return 0
        keys = [key for key, _ in rows]
        if keys == self._last_keys:             # the same series as the last block: the usual case
            middles = self._last_middles
        else:
            series = self._series
            if len(series) > 4 * n + 1024:      # series that have gone (bundles, brokers)
                series.clear()
            middles = []
            for key in keys:
                middle = series.get(key)
                if middle is None:
                    name, label_names, label_values = key
                    middle = series[key] = (b',"name":' + encode(name) + b',"labels":'
                                            + encode(dict(zip(label_names, label_values))) + b',"value":')
                middles.append(middle)
            self._last_keys, self._last_middles = keys, middles
        values = [value for _, value in rows]
        encoded = encode(values)[1:-1].split(b",")
        if len(encoded) != n:                   # a value with a comma in it: one at a time
            encoded = [encode(value) for value in values]
        head = b'{"t":' + encode(t)
        parts = [b"}\n" + head] * (3 * n)       # middle, value, end of line + next line's head
        parts[0::3] = middles
        parts[1::3] = encoded
        parts[-1] = b"}\n"
        self.samples.add_block(head + b"".join(parts))
        return n

    async def run(self) -> None:
        """Sample on multiples of `interval` (emulated), flushing at least every `FLUSH_EVERY` s."""
        interval = self.interval
        now = self._clock.now()
        self.sample(now)
        self.flush(now)
        k = math.floor(now / interval + 1e-9) + 1          # next sample at k * interval
        while not self._closed:
            next_sample = k * interval
            wake = min(next_sample, self._last_flush_t + FLUSH_EVERY)
            await anyio.sleep(max(0.0, wake - self._clock.now()))
            now = self._clock.now()
            if now >= next_sample - 1e-6:
                # the virtual clock lands on the deadline give or take a float step: stamp the grid
                self.sample(next_sample if now - next_sample < 1e-6 else now)
                k = max(k + 1, math.floor(now / interval + 1e-9) + 1)
            self.flush(now)

    # ------------------------------------------------------------------ flush and close

    def flush(self, now: float | None = None) -> None:
        """Append every buffered line to its file (whole lines only)."""
        if self._writing or self._closed:
            return
        self._flush_files()
        self._last_flush_t = now if now is not None else self._last_t
        pending, self._pending_close = self._pending_close, None
        if pending is not None:
            self.close(complete=pending)

    def close(self, complete: bool = True) -> bool:
        """Flush everything and rewrite run.json with the end; idempotent. Returns True once closed.

        `complete=False` is for interrupted runs (SIGINT/SIGTERM): run.json stays marked incomplete."""
        if self._closed:
            return True
        now = self._now()
        if self._writing:
            # a signal arrived in the middle of a write: mark the end in run.json now (the process may
            # exit right after the handler) and let that write finish closing the line files; the
            # publish table is a file no flush writes: write it now too
            self._pending_close = bool(complete)
            self._write_publish(now)
            self._mark_end(now, complete=False)
            return False
        if complete and now is not None and (self._last_sample_t is None or now - self._last_sample_t > 1e-6):
            self.sample(now)   # the end's block, unless the last one is at the end (or a float step past it)
        self._unsubscribe()
        self._writing = True
        try:
            for f in self._files():
                f.close()
            self._write_publish(now)
            self.publish.close()
        finally:
            self._writing = False
        self._closed = True
        self._mark_end(now, complete=complete)
        return True

    def abort(self) -> None:
        """End the recording now, from a signal handler that ends the process next: the buffered lines
        flushed unless a write is in progress, run.json marked incomplete; no publish table (it costs
        a pass over every topic), so publish.jsonl.gz stays as it was, valid and empty."""
        if self._closed:
            return
        if not self._writing:
            self._flush_files()
        self._mark_end(self._now(), complete=False)

    def _flush_files(self) -> None:
        """Every table's buffered lines to its file, marked as a write in progress (a signal handler
        arriving meanwhile leaves the files to this write)."""
        self._writing = True
        try:
            for f in self._files():
                f.flush()
        finally:
            self._writing = False

    def _write_publish(self, now: float | None) -> None:
        if self._publish_written:
            return
        self._publish_written = True
        table = _publish_table(self.cluster, now if now is not None else self._last_t)
        if table:
            self.publish.add_block(table)
            self.publish.flush()

    def _files(self) -> list[_LineFile]:
        return [f for f in (self.samples, self.decisions, self.events) if f is not None]

    def _mark_end(self, now: float | None, *, complete: bool) -> None:
        end = now if now is not None else self._last_t
        self.info.update({"emulated_end": end, "ended_at": _wall_now(), "complete": bool(complete),
                          "actor_failures": len(self.cluster.system.failures)})
        self._write_run_json()

    @property
    def closed(self) -> bool:
        return self._closed
