"""The Pulsar 3.0.0 load-manager table, measured: `python -m bench.pulsar3 --seeds 1,2,3 [--scenarios ...]`.

StreamNative measured ModularLoadManagerImpl and the Extensible load manager side by side on Pulsar 3.0.0
(apache/pulsar-site PR #652, `docs/concepts-broker-load-balancing-types.md`, removed by PR #655 and moved
to the blog "Introducing Extensible Load Balancer in Pulsar 3.0", Sep 2023). Each row of its Modular
column is a built-in scenario `pulsar3-*` (emulator/scenarios/); this tool runs each one with the
emulator's Python API (`start_scenario` on the virtual clock, invariant checker on, like
`emulator.runner.run_async`), extracts the row's figure from the cluster's events with a `Measure`
(each says in its docstring what it measures), and prints measured against published: mean and range
over the seeds, the ratio, and whether it lands within a factor of 2.

`--quick` runs the reduced versions (`reduced(name)`, the same the test suite runs): the figures are then
only proof that they can be measured, not comparable with the published ones.
"""

from __future__ import annotations

import argparse
import functools
import math
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import msgspec

from emulator.cluster.events import (
    BrokerStarted,
    BundleOwned,
    BundleSplit,
    Event,
    HandleDisconnected,
    HandleEvent,
    ScenarioEvent,
)

from .restart import _Connected

try:  # issue 19's publish-latency model; the summary's `publish` line is None without its accounting
    from emulator.observe.publish import publish_accounting
except ImportError:  # pragma: no cover - an emulator before the model
    publish_accounting = None  # type: ignore[assignment]

__all__ = ["LOAD_MANAGERS", "MEASURES", "PUBLISHED", "PUBLISHED_EXTENSIBLE", "Measure", "Published", "Run", "main",
           "measure", "publish_latency", "published", "reduced", "render", "SCENARIOS", "with_load_manager"]

SCENARIOS = ["pulsar3-scale-up", "pulsar3-scale-down", "pulsar3-split", "pulsar3-restart",
             "pulsar3-rolling-restart"]
QUIET = 300.0
"""Emulated seconds without any bundle changing owner after which the load manager counts as settled."""
FACTOR = 2.0
"""'Done' for issue 19: within a factor of 2 of the published figure."""


class Published(msgspec.Struct, frozen=True):
    """One Modular figure of the table: value in seconds, and what the row says."""

    value: float
    what: str
    unit: str = "min"          # how to print it: "min" or "ms"


PUBLISHED: dict[str, Published] = {
    "pulsar3-scale-up": Published(7 * 60.0, "5 -> 10 brokers, 10k topics in 100 bundles: time to balance "
                                  "(not balanced without further tuning)"),
    "pulsar3-scale-down": Published(5 * 60.0, "10 -> 5 brokers, same workload: time to balance"),
    "pulsar3-split": Published(15 * 60.0, "10k topics, split 1 -> 128 bundles and balance"),
    "pulsar3-restart": Published(20 * 60.0, "100 brokers / 65k bundles restarted within 2 min: "
                                 "time until 100k publishers are connected again"),
    "pulsar3-rolling-restart": Published(1.841, "10 brokers restarted one by one, 10k partitions in 1k "
                                         "bundles at 1k msg/s: P99.99 publish latency", unit="ms"),
}


PUBLISHED_EXTENSIBLE: dict[str, Published] = {
    "pulsar3-scale-up": Published(5 * 60.0, "5 -> 10 brokers: time to balance"),
    "pulsar3-scale-down": Published(3 * 60.0, "10 -> 5 brokers: time to balance"),
    "pulsar3-split": Published(13 * 60.0, "split 1 -> 128 bundles and balance"),
    "pulsar3-restart": Published(10 * 60.0, "100 brokers restarted: time until every publisher is back"),
    "pulsar3-rolling-restart": Published(1.228, "rolling restart: P99.99 publish latency", unit="ms"),
}
"""The same table's Extensible column (ExtensibleLoadManagerImpl with TransferShedder)."""

LOAD_MANAGERS = {"modular": "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl",
                 "extensible": "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"}
TRANSFER_SHEDDER = "org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder"


def published(scenario: str, load_manager: str = "modular") -> Published:
    """The published figure of `scenario` in `load_manager`'s column."""
    return (PUBLISHED_EXTENSIBLE if load_manager == "extensible" else PUBLISHED)[scenario]


def with_load_manager(scenario: Any, load_manager: str) -> Any:
    """`scenario` under `load_manager` ("modular" as written; "extensible": loadManagerClassName and
    loadBalancerLoadSheddingStrategy as Pulsar's docs configure the Extensible load manager, which is
    how its column was measured)."""
    if load_manager == "modular":
        return scenario
    if load_manager != "extensible":
        raise ValueError(f"load manager = {load_manager!r}; expected one of {', '.join(LOAD_MANAGERS)}")
    settings = {**scenario.settings, "loadManagerClassName": LOAD_MANAGERS["extensible"],
                "loadBalancerLoadSheddingStrategy": TRANSFER_SHEDDER}
    cluster = msgspec.structs.replace(scenario.cluster, shedder=None)   # [cluster] shedder outranks [settings]
    return msgspec.structs.replace(scenario, settings=settings, cluster=cluster)


class Run(msgspec.Struct, kw_only=True):
    """One run of one scenario with one seed."""

    scenario: str
    seed: int
    load_manager: str = "modular"
    figure: float | None
    """Seconds (None: not measurable in this run, `note` says why)."""
    note: str = ""
    details: dict[str, Any] = {}
    wall_s: float = 0.0
    emulated_s: float = 0.0
    violations: int = 0


# --------------------------------------------------------------------------- measures


def _handles(scenario: Any) -> int:
    """Producers and consumers the scenario creates (every partition counts)."""
    return sum(g.count * max(g.partitions, 1) * (g.producers + g.consumers) for g in scenario.topics)


def _first_quiet(times: list[float], quiet: float, end: float) -> tuple[float | None, int]:
    """The first of `times` (sorted) followed by `quiet` seconds without another one before `end`,
    and how many come after it (moves that started again later)."""
    for i, t in enumerate(times):
        nxt = times[i + 1] if i + 1 < len(times) else math.inf
        if nxt - t >= quiet and t + quiet <= end:
            return t, len(times) - i - 1
    return None, 0


class Measure:
    """Listens to one run's cluster events from its start; `result(summary, end)` gives the figure."""

    keep_decisions = True

    def __init__(self, run: Any, quiet: float = QUIET) -> None:
        self.run = run
        self.cluster = run.cluster
        self.quiet = quiet
        self.t0 = run.t0
        self.event_t: float | None = None
        self.acquired: list[float] = []
        self.connected = _Connected(_handles(run.scenario))
        self.cluster.events.subscribe(self._on_event)

    def _on_event(self, e: Event) -> None:
        if isinstance(e, BundleOwned):
            self.acquired.append(e.t)
        elif isinstance(e, ScenarioEvent):
            if self.event_t is None:
                self.event_t = e.t
        elif isinstance(e, HandleEvent):
            self.connected(e)
        self.on_event(e)

    def on_event(self, e: Event) -> None:
        """Extra events a measure wants (default none)."""

    def settle(self, since: float, end: float) -> tuple[float | None, int, int]:
        """(seconds from `since` until bundles stop changing owner, moves after `since`, moves after
        the settle point): the first bundle acquisition after `since` followed by `quiet` seconds
        without another one."""
        moves = [t for t in self.acquired if t > since]
        at, later = _first_quiet(moves, self.quiet, end)
        return (None if at is None else at - since), len(moves), later

    def spread(self) -> dict[str, Any]:
        """Bundles per live broker at the end (brokers without any count as 0)."""
        owners = Counter(self.cluster.ownership().values())
        per = [owners.get(b, 0) for b in self.cluster.live_brokers()]
        return {"bundles_max": max(per, default=0), "bundles_min": min(per, default=0)}

    def all_connected_after(self, since: float, settled_at: float | None = None) -> float | None:
        """Seconds from `since` until every handle was connected again once the disruption was over
        (at or after `settled_at`, default `since`); None if not all are connected at the end."""
        c = self.connected
        if c.now != c.total or c.full_at is None:
            return None
        back = c.first_full_since(since if settled_at is None else settled_at)
        return None if back is None else max(0.0, back - since)

    def result(self, summary: Any, end: float) -> Run:
        raise NotImplementedError


class ScaleMeasure(Measure):
    """Scale-up and scale-down: emulated seconds from the scenario's broker event (add_brokers /
    remove_brokers, its `scenario_event`) until the load has landed where it will stay: the later of
    (a) the load manager has stopped moving bundles, i.e. the first bundle acquisition (`bundle_owned`)
    after the event that is followed by `quiet` seconds (5 min) without another, and (b) every producer
    and consumer is connected again at or after that acquisition (a bundle is owned at its first lookup;
    its load arrives with its clients; a move after the quiet period, and the blip of its clients, is
    counted in `moves_after_settle`, not in the figure). A run where bundles keep moving until the end,
    or a handle is still down at the end, has no figure. Beside it: both parts, moves in all, moves after
    the settle point, and the end spread (bundles per live broker, the summary's max/min msg-rate ratio)."""

    def result(self, summary: Any, end: float) -> Run:
        since = self.event_t if self.event_t is not None else self.t0
        settled, moves, later = self.settle(since, end)
        connected = self.all_connected_after(since, None if settled is None else since + settled)
        figure = None if settled is None or connected is None else max(settled, connected)
        details = {"moves_stopped_after_s": settled, "moves": moves, "moves_after_settle": later,
                   "all_connected_after_s": connected,
                   "msg_rate_ratio": getattr(summary, "msg_rate_ratio", None), **self.spread()}
        note = ("" if figure is not None else "no bundle moved" if not moves else
                "clients still down at the end" if connected is None else
                f"bundles still moving within {self.quiet:g} s of the end")
        return Run(scenario=self.run.scenario.name, seed=self.run.workload.seed, figure=figure,
                   note=note, details=details)


class SplitMeasure(Measure):
    """Split: emulated seconds from the run start until the namespace has
    `loadBalancerNamespaceMaximumBundles` bundles (128): its initial bundles plus len(children) - 1 per
    `bundle_split`. Beside it: the time until bundles stop changing owner after that (as ScaleMeasure),
    splits and the end spread, bundles and msg-rate max/min: "and balance" in the published row, which
    a quiet load manager does not mean by itself (ThresholdShedder can stop moving bundles on a
    cluster it leaves unbalanced, below `loadBalancerBundleUnloadMinThroughputThreshold`)."""

    def __init__(self, run: Any, quiet: float = QUIET) -> None:
        super().__init__(run, quiet)
        self.target = run.cluster.conf.load_balancer_namespace_maximum_bundles
        self.bundles = sum(ns.bundles or run.cluster.conf.default_number_of_namespace_bundles
                           for ns in run.scenario.namespaces)
        self.splits = 0
        self.reached: float | None = None

    def on_event(self, e: Event) -> None:
        if isinstance(e, BundleSplit):
            self.splits += 1
            self.bundles += len(e.children) - 1
            if self.reached is None and self.bundles >= self.target:
                self.reached = e.t

    def result(self, summary: Any, end: float) -> Run:
        figure = None if self.reached is None else self.reached - self.t0
        balanced, moves, later = self.settle(self.reached if self.reached is not None else self.t0, end)
        details = {"target_bundles": self.target, "bundles": self.bundles, "splits": self.splits,
                   "balanced_after_s": None if figure is None or balanced is None else figure + balanced,
                   "moves_after_target": moves,
                   "msg_rate_ratio": getattr(summary, "msg_rate_ratio", None), **self.spread()}
        note = "" if figure is not None else f"{self.bundles} of {self.target} bundles at the end"
        return Run(scenario=self.run.scenario.name, seed=self.run.workload.seed, figure=figure,
                   note=note, details=details)


class ReconnectMeasure(Measure):
    """Restart: emulated seconds from the first restart (the first `scenario_event`) until every
    producer is connected again once the last broker has started again (bench/restart.py's count of
    handle_connected / handle_reconnected / handle_disconnected). Beside it: the fewest connected
    during the restarts and the disconnects."""

    keep_decisions = False      # 100k assignment traces; nothing here reads them (as bench/restart.py)

    def __init__(self, run: Any, quiet: float = QUIET) -> None:
        super().__init__(run, quiet)
        self.fewest: int | None = None
        self.last_start: float | None = None

    def on_event(self, e: Event) -> None:
        if isinstance(e, BrokerStarted) and self.event_t is not None:
            self.last_start = e.t
        if isinstance(e, HandleDisconnected) and self.event_t is not None:
            n = self.connected.now
            self.fewest = n if self.fewest is None else min(self.fewest, n)

    def result(self, summary: Any, end: float) -> Run:
        since = self.event_t if self.event_t is not None else self.t0
        figure = self.all_connected_after(since, self.last_start)   # once the last broker is back
        details = {"producers": self.connected.total, "connected_at_end": self.connected.now,
                   "connected_to_the_end_after_s": self.all_connected_after(since, self.connected.full_at),
                   "fewest_connected": self.fewest,
                   "disconnects": self.cluster.events.counts.get("handle_disconnected", 0),
                   "broker_starts": self.cluster.events.counts.get("broker_started", 0)}
        note = "" if figure is not None else \
            f"{self.connected.now} of {self.connected.total} connected at the end"
        return Run(scenario=self.run.scenario.name, seed=self.run.workload.seed, figure=figure,
                   note=note, details=details)


_QUANTILES = [("P99.99", re.compile(r"99[._]?99")), ("P99.9", re.compile(r"99[._]?9(?![9\d])")),
              ("P99", re.compile(r"99(?![._]?9)")), ("P50", re.compile(r"(?<!\d)50(?!\d)"))]


def _flatten(obj: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(obj, dict):
        out: list[tuple[str, Any]] = []
        for k, v in obj.items():
            out.extend(_flatten(v, f"{prefix}{k}."))
        return out
    return [(prefix.rstrip("."), obj)]


def publish_latency(summary: Any) -> dict[str, float]:
    """Cluster-wide publish-latency quantiles (seconds) and failed sends found in a run summary, by
    field name: any numeric field whose dotted name says "publish" and a quantile (p50, p99, p99_9,
    p99_99 in any spelling; values in seconds unless the name says ms). Per-broker and per-topic lists
    are skipped. Empty when the summary has none (the emulator before issue 19's publish model)."""
    try:
        data = msgspec.to_builtins(summary)
    except TypeError:
        return {}
    out: dict[str, float] = {}
    for key, value in _flatten(data):
        low = key.lower()
        if "publish" not in low or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if "fail" in low:
            out["failed"] = out.get("failed", 0.0) + float(value)    # failed_timeout + _queue_full + ...
            continue
        tail = low.rsplit(".", 1)[-1] if "." in low else low
        for label, pattern in _QUANTILES:
            if pattern.search(tail.replace("publish", "")):
                scale = 0.001 if re.search(r"(^|_)ms($|_)|millis", low) else 1.0
                out.setdefault(label, float(value) * scale)
                break
    return out


class PublishLatencyMeasure(Measure):
    """Rolling restart: the run summary's cluster-wide P99.99 publish latency (seconds), found by
    `publish_latency`. Without a publish-latency model in the emulator there is no figure; the note
    says so and the details carry the longest outage of one topic (`unavailable_max`), the time the
    unluckiest message would have waited in its producer's queue."""

    def result(self, summary: Any, end: float) -> Run:
        lat = publish_latency(summary)
        figure = lat.get("P99.99")
        details: dict[str, Any] = {f"publish_{k}": v for k, v in lat.items()}
        details.update(unavailable_max_s=getattr(summary, "unavailable_max", None),
                       unavailable_p99_s=getattr(summary, "unavailable_p99", None),
                       broker_starts=self.cluster.events.counts.get("broker_started", 0))
        note = "" if figure is not None else "the run summary has no publish P99.99 (no publish-latency model)"
        return Run(scenario=self.run.scenario.name, seed=self.run.workload.seed, figure=figure,
                   note=note, details=details)


MEASURES: dict[str, type[Measure]] = {
    "pulsar3-scale-up": ScaleMeasure,
    "pulsar3-scale-down": ScaleMeasure,
    "pulsar3-split": SplitMeasure,
    "pulsar3-restart": ReconnectMeasure,
    "pulsar3-rolling-restart": PublishLatencyMeasure,
}


# --------------------------------------------------------------------------- running


async def _run_async(scenario: Any, seed: int, check_interval: float, quiet: float) -> Run:
    from emulator.observe.summary import UnavailabilityTracker, summarize
    from emulator.testing import emulated_cluster
    from emulator.workload import start_scenario

    wall0 = time.perf_counter()
    start = functools.partial(emulated_cluster, check_interval=check_interval)
    async with start_scenario(scenario, seed=seed, start=start) as run:
        cluster = run.cluster
        m = MEASURES[scenario.name](run, quiet)
        if publish_accounting is not None:
            publish_accounting(cluster)    # made on first use (by the metrics in a CLI run): start it now
        if not m.keep_decisions and cluster.decision_log is not None:
            cluster.decision_log.close()
            cluster.decision_log = None
        tracker = UnavailabilityTracker(cluster.events)
        await run.sleep_until(scenario.duration)
        summary = summarize(cluster, cluster.decision_log, tracker, scenario=scenario.name, seed=seed,
                            event_errors=list(run.workload.errors))
        result = m.result(summary, cluster.system.clock.now())
        checker = getattr(cluster, "invariants", None)
        result.violations = len(checker.violations) if checker is not None else 0
        result.emulated_s = run.elapsed
        if run.workload.errors:
            result.details["event_errors"] = list(run.workload.errors)
    result.wall_s = time.perf_counter() - wall0
    return result


def measure(scenario: Any, seed: int, *, check_interval: float = 10.0, quiet: float = QUIET,
            load_manager: str = "modular") -> Run:
    """Run `scenario` (a Scenario named pulsar3-*) with `seed` on a fresh virtual clock and measure it,
    under `load_manager` ("modular" or "extensible")."""
    from emulator.runtime import VirtualClock, run

    if scenario.name not in MEASURES:
        raise ValueError(f"scenario = {scenario.name!r}: no measure; expected one of {', '.join(MEASURES)}")
    result: Run = run(_run_async, with_load_manager(scenario, load_manager), seed, check_interval, quiet,
                      clock=VirtualClock())
    result.load_manager = load_manager
    return result


# --------------------------------------------------------------------------- reduced sizes


def reduced(name: str) -> Any:
    """The scenario at a size the test suite runs in seconds: same shape, same measure, fewer brokers,
    topics and minutes (the scale-up keeps its per-broker usage with smaller brokers and a
    proportionally smaller minimum offload, so the shedder still moves load)."""
    from emulator.workload import library
    from emulator.workload.resources import BrokerCapacity
    from emulator.workload.schema import (
        AddBrokers,
        Duration,
        Offset,
        RemoveBrokers,
        RestartRolling,
    )

    s = library.load(name)
    rep = msgspec.structs.replace

    def topics(count: int, **kw: Any) -> list[Any]:
        return [rep(s.topics[0], count=count, **kw)]

    def info(minutes: float) -> Any:
        return rep(s.scenario, duration=minutes * 60.0)

    if name == "pulsar3-scale-up":
        # a twentieth of the traffic: the shedder's 10 MiB/s minimum offload becomes 0.5
        ns = [rep(s.namespaces[0], bundles=16)]
        settings = {**s.settings, "loadBalancerBundleUnloadMinThroughputThreshold": 0.5}
        # 30 minutes: ThresholdShedder's EMA starts from whichever reports have landed at its first
        # cycle, and with the shared capacities' timing the moves end 13-18 min after the add (seeds 1-3)
        return rep(s, scenario=info(30), cluster=rep(s.cluster, brokers=2, capacity=BrokerCapacity(cores=1)),
                   namespaces=ns, topics=topics(500), clients=rep(s.clients, count=4), settings=settings,
                   events=[AddBrokers(at=Offset(120.0), count=2)])
    if name == "pulsar3-scale-down":
        ns = [rep(s.namespaces[0], bundles=16)]
        return rep(s, scenario=info(10), cluster=rep(s.cluster, brokers=4), namespaces=ns,
                   topics=topics(400), clients=rep(s.clients, count=4),
                   events=[RemoveBrokers(at=Offset(120.0), count=2, mode="graceful", concurrent=False)])
    if name == "pulsar3-split":
        settings = {**s.settings, "loadBalancerNamespaceMaximumBundles": 16,
                    "loadBalancerNamespaceBundleMaxTopics": 10}
        return rep(s, scenario=info(25), cluster=rep(s.cluster, brokers=4), topics=topics(400),
                   clients=rep(s.clients, count=4), settings=settings)
    if name == "pulsar3-restart":
        n = 5
        ns = [rep(s.namespaces[i], bundles=40) for i in range(n)]
        groups = [rep(s.topics[i], count=100) for i in range(n)]
        events = [RestartRolling(at=Offset(60.0), every=Duration(1.2), mode="graceful")]
        return rep(s, scenario=info(5), cluster=rep(s.cluster, brokers=10), namespaces=ns, topics=groups,
                   clients=rep(s.clients, count=10, connect_over=10.0), events=events)
    if name == "pulsar3-rolling-restart":
        ns = [rep(s.namespaces[0], bundles=40)]
        return rep(s, scenario=info(6), cluster=rep(s.cluster, brokers=4), namespaces=ns,
                   topics=topics(1, partitions=400, rate=rep(s.topics[0].rate, rate=400)),
                   clients=rep(s.clients, count=4),
                   events=[rep(s.events[0], at=Offset(60.0), wait=30.0)])
    raise ValueError(f"scenario = {name!r}: no reduced version; expected one of {', '.join(SCENARIOS)}")


# --------------------------------------------------------------------------- the table


def _fmt(seconds: float | None, unit: str) -> str:
    if seconds is None:
        return "-"
    if unit == "ms":
        return f"{seconds * 1000:,.0f} ms"
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def render(runs: Sequence[Run]) -> str:
    """Measured against published, one line per scenario: mean and range over the seeds whose run had a
    figure, the ratio of the mean to the published figure and whether it is within a factor of 2."""
    head = ["scenario", "load manager", "published", "measured (mean)", "range", "ratio", f"within x{FACTOR:g}",
            "seeds", "note"]
    lines = [head]
    for name, lm in dict.fromkeys((r.scenario, r.load_manager) for r in runs):
        pub = published(name, lm)
        rs = [r for r in runs if r.scenario == name and r.load_manager == lm]
        vals = [r.figure for r in rs if r.figure is not None]
        notes = sorted({r.note for r in rs if r.note} | {f"{r.violations} invariant violations"
                                                         for r in rs if r.violations})
        if vals:
            mean = statistics.fmean(vals)
            ratio = mean / pub.value
            within = "yes" if 1 / FACTOR <= ratio <= FACTOR else "no"
            rng = f"{_fmt(min(vals), pub.unit)} .. {_fmt(max(vals), pub.unit)}"
            row = [name, lm, _fmt(pub.value, pub.unit), _fmt(mean, pub.unit), rng, f"{ratio:.2f}", within]
        else:
            row = [name, lm, _fmt(pub.value, pub.unit), "-", "-", "-", "n/a"]
        row += [f"{len(vals)}/{len(rs)}", "; ".join(notes)]
        lines.append(row)
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(head) - 1)]
    out = []
    for line in lines:
        cells = [str(c).ljust(w) for c, w in zip(line, widths)] + [str(line[-1])]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)


def _details(r: Run) -> str:
    parts = []
    for k, v in r.details.items():
        if isinstance(v, float):
            parts.append(f"{k}={v:.3g}")
        elif v is not None:
            parts.append(f"{k}={v}")
    return ", ".join(parts)


def main(argv: list[str] | None = None, out: Any = None, err: Any = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    p = argparse.ArgumentParser(prog="python -m bench.pulsar3", description="Run the pulsar3-* scenarios and print "
                                "measured against published (Pulsar 3.0.0, Modular).")
    p.add_argument("--seeds", default="1,2,3", help="comma-separated seeds (default 1,2,3)")
    p.add_argument("--scenarios", default=",".join(SCENARIOS),
                   help="comma-separated pulsar3-* names (default all five)")
    p.add_argument("--quick", action="store_true", help="the reduced versions (what the tests run)")
    p.add_argument("--check-interval", type=float, default=None,
                   help="emulated seconds between invariant checks (default 10; 60 for pulsar3-restart)")
    p.add_argument("--quiet", type=float, default=QUIET,
                   help=f"emulated seconds without a bundle move that count as settled (default {QUIET:g})")
    p.add_argument("--json", default=None, help="also write every run as JSON to this file")
    p.add_argument("--load-managers", default="modular,extensible",
                   help="comma-separated columns to measure: modular, extensible (default both)")
    a = p.parse_args(argv)
    managers = [x.strip() for x in a.load_managers.split(",") if x.strip()]
    if not managers or any(m not in LOAD_MANAGERS for m in managers):
        err.write(f"--load-managers = {a.load_managers!r}: expected some of {', '.join(LOAD_MANAGERS)}\n")
        return 2
    try:
        seeds = [int(x) for x in a.seeds.split(",") if x.strip()]
    except ValueError:
        err.write(f"--seeds = {a.seeds!r}: expected comma-separated integers\n")
        return 2
    names = [x.strip() for x in a.scenarios.split(",") if x.strip()]
    unknown = [n for n in names if n not in MEASURES]
    if unknown or not names or not seeds:
        err.write(f"--scenarios = {a.scenarios!r}: expected some of {', '.join(SCENARIOS)}\n")
        return 2
    from emulator.workload import library

    from .harness import quiet_logs

    quiet_logs()
    runs: list[Run] = []
    for name in names:
        scenario = reduced(name) if a.quick else library.load(name)
        interval = a.check_interval or (60.0 if name == "pulsar3-restart" else 10.0)
        for lm, seed in [(lm, seed) for lm in managers for seed in seeds]:
            r = measure(scenario, seed, check_interval=interval, quiet=a.quiet, load_manager=lm)
            runs.append(r)
            err.write(f"{name} {lm} seed {seed}: {_fmt(r.figure, PUBLISHED[name].unit)}  "
                      f"({r.wall_s:.0f} s wall, {r.emulated_s:.0f} emulated s) {r.note}\n"
                      f"    {_details(r)}\n")
            err.flush()
    out.write(render(runs) + "\n")
    if a.json:
        with open(a.json, "wb") as f:
            f.write(msgspec.json.format(msgspec.json.encode(runs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
