"""One emulated run, end to end: scenario + effective config + cluster + observers + summary.

The CLI's `run`, the Spark sweep's executors and the benchmarks call this module; it wires the layers
together and owns nothing else. Precedence of settings (readable in `--help`):

    built-in defaults < broker.conf < scenario [settings] < --set / --placement / --shedder

A run ends at its duration, or early on SIGINT/SIGTERM with the summary so far (the recording is then
marked incomplete); a signal before the cluster is ready cancels the start, and a second signal ends the
process at once (`_Endings`). Everything that decides anything uses emulated time; wall time is only
reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import os
import platform
import signal
import sys
import threading
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any, TextIO

import anyio
import msgspec

from emulator.cluster.load_manager import EXTENSIBLE
from emulator.model.config import ConfigError, ServiceConfig, mistyped_keys
from emulator.runtime import Clock, VirtualClock, WallClock, run as run_on_clock

PRECEDENCE = "built-in defaults < broker.conf < scenario [settings] < --set / --placement / --shedder"


class RunOptions(msgspec.Struct, kw_only=True):
    """What the user asked for (the CLI's flags, or a sweep task's parameters)."""

    scenario: str = "default"                  # a built-in name or a TOML path
    broker_conf: str | None = None             # path of a real Pulsar broker.conf
    overrides: dict[str, str] = {}             # --set key=value (Pulsar names) + placement / shedder
    seed: int | None = None
    duration: float | None = None              # emulated seconds; None = the scenario's
    clock: str = "virtual"                     # virtual | wall
    speed: float = 1.0                         # wall clock only
    record_dir: str | None = None              # parent folder: one sub-folder per run
    record_interval: float = 10.0
    record_decisions: str = "decisions"        # full | decisions | off (observe/decision_log.py)
    record_compress: bool = True               # gzip the line files (observe/recording_files.py)
    summary_json: str | None = None            # write the summary + every KPI as JSON here
    log_decisions: bool = False                # the decision log on stderr through structlog (info)
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    admin_token: str | None = None             # writes through the HTTP server need this Bearer token
    monitor_interval: float | None = None      # emulated seconds between monitor-brokers tables
    progress: bool = False                     # a progress bar on stderr (a plain line every 10 s off a tty)
    check_invariants: bool = True
    check_interval: float = 10.0               # emulated seconds between invariant checks (and one at the end)
    grid: dict[str, str] = {}                  # sweep parameters, recorded in run.json
    memory_check: bool = True                  # refuse a run the machine's memory cannot hold (preflight.py)
    pulsar_port: int | None = None             # the binary protocol for real clients (emulator/wire/)


class RunResult(msgspec.Struct, kw_only=True):
    summary: Any
    summary_text: str
    wall_seconds: float
    emulated_seconds: float
    record_path: str | None = None
    url: str | None = None
    interrupted: str | None = None             # "SIGINT" / "SIGTERM" when cut short
    violations: list[str] = []
    actor_failures: list[str] = []             # emulator bugs: "actor at t: error"; exit code 3
    expectations: list[Any] = []               # ExpectResult per [[expect]]; a failed one: exit code 1

    @property
    def expectations_failed(self) -> int:
        return sum(1 for r in self.expectations if not r.passed)


class RunError(ValueError):
    """Bad input found before the run starts: one line naming the file/flag, key and value."""


# --------------------------------------------------------------------------- preparation


def load_broker_conf(path: str, warn: TextIO | None = None) -> ServiceConfig:
    """A real broker.conf: bad bytes, bad values and unknown strategy classes are errors (one line);
    keys the emulator does not use are counted in one warning line and listed at --log-level debug
    (Pulsar's own conf/broker.conf has ~300 of them)."""
    import structlog

    from emulator.preflight import PreflightError, read_broker_conf

    try:
        text = read_broker_conf(path)
    except PreflightError as e:
        raise RunError(str(e)) from None
    try:
        conf, unknown = ServiceConfig.from_properties_with_unknown(text, source=path)
    except ConfigError as e:
        raise RunError(str(e)) from None
    _check_strategy_names(conf, path)
    if unknown and warn is not None:
        warn.write(f"warning: {path}: ignoring {len(unknown)} key(s) the emulator does not use "
                   f"(--log-level debug lists them){mistyped_keys(unknown)}\n")
        structlog.get_logger("broker_conf").debug("ignored keys", file=path, count=len(unknown),
                                                  keys=", ".join(unknown))
    return conf


def _check_strategy_names(conf: ServiceConfig, path: str) -> None:
    """The strategy and shedder class names of a broker.conf, resolved now as `--set` ones are."""
    import random

    import shedders
    import strategies

    from emulator.workload.loader import PLACEMENT_KEY, SHEDDER_KEY

    for key, value, registry in ((PLACEMENT_KEY, conf.load_balancer_load_placement_strategy, strategies),
                                 (SHEDDER_KEY, conf.load_balancer_load_shedding_strategy, shedders)):
        try:
            registry.create(value, rng=random.Random(0))
        except (ValueError, TypeError, ImportError) as e:
            reason = str(e.args[0]) if e.args else type(e).__name__
            raise RunError(f"{path}: {key} = {value!r}: {reason.splitlines()[0]}") from None


def load_scenario(name_or_path: str) -> Any:
    from emulator.workload.errors import ScenarioError
    from emulator.workload.library import load_scenario as load

    try:
        return load(name_or_path)
    except ScenarioError as e:
        raise RunError(str(e)) from None


def scenario_text(name_or_path: str) -> str | None:
    """The scenario's TOML text as run (a file's, or a built-in's), for run.json: a recording then
    holds what it ran."""
    from emulator.workload import library

    try:
        if name_or_path in library.names() and not Path(name_or_path).is_file():
            return library.source(name_or_path)
        return Path(name_or_path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def make_clock(opts: RunOptions) -> Clock:
    if opts.clock == "virtual":
        return VirtualClock()
    if opts.clock == "wall":
        if not opts.speed > 0 or math.isinf(opts.speed):
            raise RunError(f"--speed = {opts.speed!r}: must be a positive number")
        return WallClock(speed=opts.speed)
    raise RunError(f"--clock = {opts.clock!r}: expected virtual or wall")


def effective_config(scenario: Any, opts: RunOptions, base: ServiceConfig | None) -> ServiceConfig:
    """The ServiceConfig of the run, by the documented precedence (also validates the overrides).

    `base` is the broker.conf's config (or None for the built-in defaults)."""
    from emulator.workload.build import service_config
    from emulator.workload.errors import ScenarioError
    from emulator.workload.loader import check_strategies

    try:
        conf = service_config(scenario, base, opts.overrides)
    except (ConfigError, ScenarioError, ValueError) as e:
        raise RunError(str(e).splitlines()[0]) from None
    placement = conf.load_balancer_load_placement_strategy
    shedder = conf.load_balancer_load_shedding_strategy

    sources = (f"--broker-conf {opts.broker_conf} + " if opts.broker_conf else "") + f"scenario {scenario.name}"

    def fail(key: str, reason: str) -> Exception:  # the pair broker.conf, the scenario and the flags make
        value = placement if key.endswith("PlacementStrategy") else shedder
        return RunError(f"{sources}: {key} = {value!r}: {reason.splitlines()[0]}")

    check_strategies(placement, shedder, fail, extensible=conf.load_manager_class_name == EXTENSIBLE)
    return conf


def _versions() -> dict[str, str]:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for dist in ("pulsar-lb-emulator", "anyio", "msgspec", "structlog", "prometheus-client", "numpy"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "unknown"
    return out


def _iso_ms(ms: int) -> str:
    import datetime

    when = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _record_folder(parent: str, scenario: str, seed: int, grid: dict[str, str]) -> Path:
    """A fresh, deterministic folder name under `parent` for this run."""
    stem = Path(scenario).stem if scenario.endswith(".toml") else scenario
    tag = "".join(f"-{k}={v}" for k, v in sorted(grid.items())).replace("/", "_")
    base = Path(parent) / f"{stem}-seed{seed}{tag}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = Path(f"{base}-{n}")
    return path


# --------------------------------------------------------------------------- signals


class _Endings:
    """SIGINT and SIGTERM from `run()`'s first line to its last, before the loop exists as after it.

    The first signal calls the run's current `stop` on its loop: before the cluster is ready that
    cancels the start, after it it ends the run as its duration would (summary so far, recording
    marked incomplete). A second signal ends the process at once, the way a user pressing Ctrl-C again
    means: the summary so far on `out` (the final one if it is made, else the cluster read now), the
    recording's buffered lines flushed and run.json marked incomplete, exit 128 + signal (130, 143).
    Python-level handlers run between bytecodes, so no gzip member is ever cut by this exit."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err
        self.first: str | None = None
        self.summary: Callable[[], str] | None = None       # the summary text so far
        self.abort: Callable[[], None] | None = None        # the recording's emergency close
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: Callable[[], Any] | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> "_Endings":
        # only the main thread may install handlers (a sweep's executors run elsewhere)
        if threading.current_thread() is threading.main_thread() and sys.platform != "win32":
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def on_stop(self, stop: Callable[[], Any]) -> None:
        """From now on the first signal calls `stop` on the running loop (now, if one came already)."""
        self._loop, self._stop = asyncio.get_running_loop(), stop
        if self.first is not None:
            self._loop.call_soon(stop)

    def _handle(self, signum: int, frame: object) -> None:
        name = signal.Signals(signum).name
        if self.first is None:
            self.first = name
            loop, stop = self._loop, self._stop
            if loop is not None and stop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(stop)   # safe in a handler: the loop runs it, not the handler
            return
        self._end_now(signum, name)

    def _end_now(self, signum: int, name: str) -> None:
        text, why = "", "the cluster was not ready: no summary"
        if self.summary is not None:
            try:
                text, why = self.summary(), "the summary so far (no KPIs or expectations)"
            except Exception as e:   # noqa: BLE001 - the cluster was read mid-step; end anyway
                why = f"no summary: reading the cluster failed ({type(e).__name__}: {e})"
        try:
            if self.abort is not None:
                self.abort()
            if text:
                self.out.write(text.rstrip("\n") + "\n")
                self.out.flush()
            self.err.write(f"pulsar-lb-emulator: second signal ({name} after {self.first}): ended at once; "
                           f"{why}; a recording ends at its last flush, marked incomplete\n")
            self.err.flush()
        finally:
            os._exit(128 + signum)


# --------------------------------------------------------------------------- the run


async def run_async(opts: RunOptions, scenario: Any, base: ServiceConfig | None, clock: Clock, *,
                    out: TextIO, err: TextIO, endings: _Endings | None = None) -> RunResult:
    """Run the scenario on the running loop (which must be `clock`'s). `base` is the broker.conf
    config under the scenario's settings and the overrides (see `effective_config`); `endings` the
    signal handling `run()` installed (None: signals are not handled here)."""
    seed = scenario.seed if opts.seed is None else opts.seed
    duration = float(opts.duration if opts.duration is not None else scenario.duration)
    started_wall = time.perf_counter()
    endings = endings or _Endings(out, err)
    record_path = (_record_folder(opts.record_dir, opts.scenario, seed, opts.grid)
                   if opts.record_dir else None)
    starting = anyio.CancelScope()
    endings.on_stop(starting.cancel)   # a signal before the cluster is ready cancels the start
    with starting:
        return await _run_started(opts, scenario, base, clock, seed, duration, record_path, endings,
                                  out=out, err=err, started_wall=started_wall)
    # the start was cancelled: nothing ran, so no summary (the recording, if begun, is marked incomplete)
    err.write(f"pulsar-lb-emulator: {endings.first} before the cluster was ready: no summary\n")
    return RunResult(summary=None, summary_text="", wall_seconds=time.perf_counter() - started_wall,
                     emulated_seconds=0.0, record_path=str(record_path) if record_path else None,
                     interrupted=endings.first)


async def _run_started(opts: RunOptions, scenario: Any, base: ServiceConfig | None, clock: Clock, seed: int,
                       duration: float, record_path: Path | None, endings: _Endings, *, out: TextIO,
                       err: TextIO, started_wall: float) -> RunResult:
    """`run_async` once its signal handling is in place."""
    from emulator.cluster.cluster import Cluster
    from emulator.observe.attach import observe
    from emulator.observe.decision_log import DecisionLog
    from emulator.observe.event_marks import BootEvents
    from emulator.observe.expectations import evaluate
    from emulator.observe.kpis import facts as kpi_facts
    from emulator.observe.timeline import LiveTimeline
    from emulator.observe.monitor import (
        NoExtensibleBrokers,
        broker_rows,
        extensible_load_data,
        format_broker_table,
        format_extensions_tables,
    )
    from emulator.observe.publish import publish_accounting
    from emulator.observe.progress import ProgressBar, run_reading
    from emulator.observe.load_manager_warnings import LoadManagerWarnings
    from emulator.observe.logs import repeated_warnings
    from emulator.observe.summary import UnavailabilityTracker, format_summary, summarize
    from emulator.observe.summary_json import summary_object, whole_run_kpis, write_summary_json
    from emulator.testing import emulated_cluster
    from emulator.workload.schema import start_epoch_ms
    from emulator.workload.session import start_scenario

    folded = repeated_warnings()           # the summary lists this run's repeated warnings
    folded_mark = folded.mark() if folded is not None else {}
    out_of_memory: list[str] = []          # a MemoryError ended the run (exit 3, the summary so far)

    boot = BootEvents()   # broker starts and the first election, handed to the observers once attached
    wire: Any = None      # --pulsar-port: real clients' binary protocol (emulator/wire/), loaded only then
    if opts.pulsar_port is not None:
        from emulator.wire import serve as wire
        meter = wire.RateMeter()   # real clients' traffic, counted in the brokers' stats

    def start_cluster(*args: Any, **kwargs: Any) -> Any:
        kwargs["before_brokers"] = boot.before_brokers(kwargs.get("before_brokers"))
        if wire is not None:
            kwargs["load_source"] = wire.metered(kwargs["load_source"], meter)
        if opts.check_invariants:
            # every 10 s rather than the test harness's 1 s: a check walks every bundle and ownership
            # node, and only reads, so its interval changes no decision
            return emulated_cluster(*args, check_interval=opts.check_interval, strict=False, **kwargs)
        return Cluster.start(*args, **kwargs)

    async with start_scenario(scenario, seed=seed, base_conf=base, overrides=opts.overrides,
                              clock=clock, start=start_cluster) as run:
        cluster = run.cluster
        tracker = UnavailabilityTracker(cluster.events)
        lm_warnings = LoadManagerWarnings(cluster.events)
        publish_accounting(cluster)   # producers publish from here on (metrics, recording, summary)
        # the run's decision log: on stderr at --log-level info, counted for the summary (not kept: a
        # long run's memory stays flat), whole traces only when they are recorded whole
        if cluster.decision_log is not None:
            cluster.decision_log.close()
        cluster.decision_log = DecisionLog(
            cluster.events, keep=False, log=opts.log_decisions,
            level="full" if opts.record_decisions == "full" else "decisions")
        run_info = {
            "scenario": getattr(scenario, "name", opts.scenario),
            "scenario_file": opts.scenario if opts.scenario.endswith(".toml") else None,
            "seed": seed,
            "scenario_text": scenario_text(opts.scenario),
            "config": {k: str(v) for k, v in cluster.conf.to_properties().items()},
            "placement": cluster.conf.load_balancer_load_placement_strategy,
            "shedder": cluster.conf.load_balancer_load_shedding_strategy,
            "grid": dict(opts.grid), "clock": opts.clock,
            "speed": opts.speed if opts.clock == "wall" else 0.0,
            "duration": duration, "versions": _versions(), "record_interval": opts.record_interval,
            # the calendar time of t = 0: load reports' lastUpdate is it plus emulated time
            "start_epoch_ms": start_epoch_ms(scenario),
            "start": _iso_ms(start_epoch_ms(scenario)),
        }
        async with observe(cluster, metrics_port=opts.metrics_port, metrics_host=opts.metrics_host,
                           record_dir=record_path, record_interval=opts.record_interval,
                           run_info=run_info, record_decisions=opts.record_decisions,
                           record_compress=opts.record_compress, admin_token=opts.admin_token) as obs, \
                (wire.wire_protocol(cluster, opts.pulsar_port, opts.metrics_host, meter, wire.partitioned_topics(
                    scenario), out) if wire is not None else contextlib.nullcontext()):
            boot.replay(cluster.events)
            if opts.metrics_port is not None or record_path is not None:
                out.write(f"READY url={obs.url or '-'} record={record_path or '-'}\n")
                out.flush()
            # the observations [[expect]] is checked on, sampled as the recorder samples
            # also for the summary's KPIs (--summary-json, run.json)
            timeline = (LiveTimeline(cluster, obs.metrics, interval=opts.record_interval, t0=run.t0)
                        if getattr(scenario, "expect", None) or opts.summary_json or obs.recorder is not None
                        else None)
            async with _memory_fault(cluster, out_of_memory), anyio.create_task_group() as tg:
                done = anyio.Event()
                # ready: a first signal ends the run with its summary, a second prints the summary so far
                endings.on_stop(done.set)

                def summary_so_far() -> str:
                    return format_summary(summarize(
                        cluster, cluster.decision_log, tracker, scenario=run_info["scenario"], seed=seed,
                        event_errors=list(run.workload.errors), load_manager_warnings=lm_warnings,
                        admin_writes=obs.admin_writes))

                endings.summary = summary_so_far
                if obs.recorder is not None:
                    endings.abort = obs.recorder.abort
                if timeline is not None and obs.recorder is not None:
                    timeline.follow(obs.recorder)   # one collection of the metrics per sample
                elif timeline is not None:
                    tg.start_soon(timeline.run)

                async def until_duration() -> None:
                    await run.sleep_until(duration)
                    done.set()

                async def monitor() -> None:
                    assert opts.monitor_interval is not None
                    n = 1
                    while True:
                        await run.sleep_until(n * opts.monitor_interval)
                        out.write(f"--- t={run.elapsed:.0f}s ---\n")
                        try:   # brokers on the Extensible load manager: monitor-brokers --extensions
                            table = format_extensions_tables(extensible_load_data(cluster))
                        except NoExtensibleBrokers:
                            table = format_broker_table(broker_rows(cluster))
                        out.write(table + "\n")
                        out.flush()
                        n += 1

                tg.start_soon(until_duration)
                if opts.monitor_interval:
                    tg.start_soon(monitor)
                # read from the bar's thread: no timer on the loop, so a bar changes no decision
                # [clients] connect_over is the start-up, shown as a phase: no rate nor ETA from it
                loop, t0 = asyncio.get_running_loop(), run.t0
                connecting = min(duration, float(scenario.clients.connect_over))
                bar = ProgressBar(f"run {run_info['scenario']}", stream=err, unit="emulated s",
                                  poll=lambda: run_reading(loop.time() - t0, duration, connecting))
                with bar if opts.progress else contextlib.nullcontext():
                    await done.wait()
                tg.cancel_scope.cancel()
            summary = summarize(cluster, cluster.decision_log, tracker, scenario=run_info["scenario"],
                                seed=seed, event_errors=list(run.workload.errors),
                                load_manager_warnings=lm_warnings, admin_writes=obs.admin_writes)
            if folded is not None:
                summary = msgspec.structs.replace(summary, repeated_warnings=[
                    f"{w.total} x {w.message}" for w in folded.totals(since=folded_mark)])
            base_text = format_summary(summary)
            endings.summary = lambda: base_text   # a second signal from here prints this one
            expectations = []
            kpis = None
            if timeline is not None:
                timeline.finish()
                derived = kpi_facts(timeline)      # read by both: derived once
                expectations = evaluate(scenario, timeline, derived)
                summary = msgspec.structs.replace(summary, expectations=expectations)
                kpis = whole_run_kpis(timeline, derived)
                if obs.recorder is not None:    # written into run.json when the recording closes
                    obs.recorder.info["expectations"] = msgspec.to_builtins(expectations)
            summary_doc = summary_object(summary, kpis)
            if obs.recorder is not None:
                obs.recorder.info["summary"] = summary_doc
            if opts.summary_json:
                write_summary_json(opts.summary_json, summary_doc)
            checker = getattr(cluster, "invariants", None)
            violations = [str(v) for v in checker.violations] if checker is not None else []
            actor_failures = [f"{f.actor} at t={f.time:.1f} s: {f.error}" for f in cluster.system.failures]
            actor_failures += [line for line in out_of_memory if line.startswith("run ")]  # actors' are listed
            url = obs.url
            summary_text = format_summary(summary)
            endings.summary = lambda: summary_text
            if endings.first or out_of_memory:
                obs.close(complete=False)
        emulated = run.elapsed
    return RunResult(summary=summary, summary_text=summary_text,
                     wall_seconds=time.perf_counter() - started_wall, emulated_seconds=emulated,
                     record_path=str(record_path) if record_path else None, url=url,
                     interrupted=endings.first, violations=violations,
                     actor_failures=actor_failures, expectations=expectations)


@contextlib.asynccontextmanager
async def _memory_fault(cluster: Any, faults: list[str]) -> Any:
    """A MemoryError ends the run like any fault: in an actor (its failure is reported) or in the run's
    own tasks, the run stops at once and goes on to the summary so far (exit 3). Running on with the
    machine out of memory only ends later, in a kill or a segfault, with nothing written."""
    from emulator.cluster.events import ActorFailed, Event

    with anyio.CancelScope() as scope:
        def on_event(e: Event) -> None:
            if type(e) is ActorFailed and e.error.startswith("MemoryError"):
                faults.append(f"{e.actor} at t={e.t:.1f} s: {e.error}")
                scope.cancel()

        unsubscribe = cluster.events.subscribe(on_event)
        try:
            yield
        except* MemoryError as group:
            faults.append(f"run at t={cluster.system.clock.now():.1f} s: {group.exceptions[0]!r}")
        finally:
            unsubscribe()


def run(opts: RunOptions, *, out: TextIO | None = None, err: TextIO | None = None) -> RunResult:
    """Validate everything, then run on the chosen clock. Raises RunError for bad input."""
    out = out or sys.stdout
    err = err or sys.stderr
    scenario = load_scenario(opts.scenario)
    base = load_broker_conf(opts.broker_conf, err) if opts.broker_conf else None
    conf = effective_config(scenario, opts, base)      # validate before anything starts
    clock = make_clock(opts)
    source = "--pulsar-port"
    if opts.pulsar_port is None and scenario.serve.pulsar_port is not None:
        opts = msgspec.structs.replace(opts, pulsar_port=scenario.serve.pulsar_port)
        source = f"{opts.scenario}: [serve] pulsar_port"
    from emulator.wire.options import check_pulsar_port

    if (reason := check_pulsar_port(opts.pulsar_port, opts.clock, source, brokers=scenario.cluster.broker_count,
                                    host=opts.metrics_host, metrics_port=opts.metrics_port)) is not None:
        raise RunError(reason)
    if opts.duration is not None and (not opts.duration > 0 or math.isinf(opts.duration)):
        raise RunError(f"--duration = {opts.duration!r}: must be a positive, finite emulated time")
    for flag, value in (("--record-interval", opts.record_interval),
                        ("--monitor-interval", opts.monitor_interval)):
        if value is not None and (not value > 0 or math.isinf(value)):
            raise RunError(f"{flag} = {value!r}: must be a positive, finite emulated time")
    from emulator.observe.decision_log import LEVELS

    if opts.record_decisions not in LEVELS:
        raise RunError(f"--record-decisions = {opts.record_decisions!r}: expected one of {', '.join(LEVELS)}")
    if opts.summary_json is not None and not Path(opts.summary_json).resolve().parent.is_dir():
        raise RunError(f"--summary-json = {opts.summary_json!r}: its folder does not exist")
    _preflight(opts)
    if opts.memory_check:
        _memory_preflight(opts, scenario, conf)
    if not opts.check_interval > 0 or math.isinf(opts.check_interval):
        raise RunError(f"--check-interval = {opts.check_interval!r}: must be a positive number of "
                       "emulated seconds")
    with _Endings(out, err) as endings:
        result = run_on_clock(functools.partial(run_async, out=out, err=err, endings=endings), opts, scenario,
                              base, clock, clock=clock)
        if endings.first and result.interrupted is None:   # a signal after the loop ended
            result = msgspec.structs.replace(result, interrupted=endings.first)
    return result


def _preflight(opts: RunOptions) -> None:
    """Metrics address and record folder, checked before the cluster starts."""
    from emulator.preflight import PreflightError, check_metrics_address, check_record_dir

    try:
        if opts.metrics_port is not None:
            check_metrics_address(opts.metrics_host, opts.metrics_port)
        if opts.record_dir is not None:
            check_record_dir(opts.record_dir)
    except PreflightError as e:
        raise RunError(str(e)) from None


def _memory_preflight(opts: RunOptions, scenario: Any, conf: ServiceConfig) -> None:
    """The run's dimensions together against the machine's available memory (emulator/preflight.py)."""
    from emulator import preflight

    duration = float(opts.duration if opts.duration is not None else scenario.duration)
    timeline = bool(opts.record_dir or opts.summary_json or getattr(scenario, "expect", None))
    estimate = preflight.estimate_memory(scenario, duration=duration, record_interval=opts.record_interval,
                                         timeline=timeline,
                                         default_bundles=conf.default_number_of_namespace_bundles)
    try:
        preflight.check_memory(opts.scenario, estimate, preflight.available_memory())
    except preflight.PreflightError as e:
        raise RunError(str(e)) from None


def run_recorded(scenario: str, overrides: dict[str, str], seed: int, out_dir: str,
                 duration: float | None = None) -> str:
    """A sweep task: run a scenario with config overrides on the virtual clock, record it into a new
    folder under `out_dir` and return that folder's path."""
    return run_recorded_status(scenario, overrides, seed, out_dir, duration)[0]


def run_recorded_status(scenario: str, overrides: dict[str, str], seed: int, out_dir: str,
                        duration: float | None = None) -> tuple[str, int, str | None]:
    """`run_recorded` with the `run` command's exit code (0; 1 an invariant or [[expect]] failed; 3 an
    actor failed) and, when not 0, a one-line reason: a sweep keeps a failed run as a row."""
    from emulator.observe.logs import configure_logging

    os.makedirs(out_dir, exist_ok=True)
    configure_logging(VirtualClock(), level="warning", stream=sys.stderr)
    opts = RunOptions(scenario=scenario, overrides={k: str(v) for k, v in overrides.items()},
                      seed=seed, duration=duration, record_dir=out_dir, grid=dict(overrides))
    with open(os.devnull, "w") as out, open(os.devnull, "w") as err:
        result = run(opts, out=out, err=err)
    assert result.record_path is not None
    if result.actor_failures:
        return result.record_path, 3, f"{len(result.actor_failures)} actor failure(s): {result.actor_failures[0]}"
    if result.violations or result.expectations_failed:
        return result.record_path, 1, (f"{len(result.violations)} invariant violation(s): {result.violations[0]}"
                                       if result.violations else
                                       f"{result.expectations_failed} of {len(result.expectations)} "
                                       "[[expect]] failed")
    return result.record_path, 0, None
