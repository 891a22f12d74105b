"""The end-of-run summary: what load balancing did, what it cost the clients, how balanced it ended.

* decisions: unloads by the shedder, bundles unloaded for any reason (shedding, admin, broker drains),
  splits by the load manager and bundles split for any reason (the Extensible load manager's
  successful non-admin unload and split decisions count as Modular's `unload` and `split`:
  `timeline.is_load_manager_unload` / `is_load_manager_split`, counted by the decision log);
* client lookups, redirects and failed lookups, counted by the clients (`client_lookups` ...: broker
  counters restart with a restarted broker, the clients' do not; the roll-up's `lookups` are the
  brokers' own counters, Pulsar's series);
* unavailable topic-seconds (`emulator/model/outages.py`, the one definition): per topic, the time at
  least one of its producers and consumers was down; total, p99 (linear interpolation over the topics
  that had an outage, as the roll-up) and max;
* actor failures first, when any (emulator bugs), and a line for a user's strategy or shedder that
  raised, when it did; a line per load-manager change Pulsar does not support (a live switch between
  Modular and Extensible: `emulator/observe/load_manager_warnings.py`);
* publish latency P50 / P99 / P99.9 / P99.99 and failed sends, for the cluster and the topics with the
  highest P99.99 (`emulator.observe.publish`, when the cluster has publish accounting);
* the scenario's expectations, one line each, when it has [[expect]] tables;
* final balance over the live brokers: max, min and standard deviation of the broker max usage as the
  load manager weighs it (percent), and the max/min ratio of their message rates (in + out).

`format_summary` is deterministic: the same run (scenario, seed, config) prints the same bytes, on either
clock, but for the `wall clock` line (how far a `--clock wall` run fell behind real time).
`UnavailabilityTracker` is the listener that collects the unavailability while the run goes.
`SUMMARY_KPIS` names the KPI (`emulator/model/kpi_registry.py`) each summary figure is: the roll-up of
the run's recording gives the same value (tests/pipeline/test_summary_equals_rollup.py).
"""

from __future__ import annotations

import math
import statistics
from typing import Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from emulator.cluster.events import (
    ClusterEvents,
    Event,
    HandleClosed,
    HandleDisconnected,
    HandleFailed,
    HandleReconnected,
)
from emulator.model.outages import TopicOutages
from emulator.model.stats import percentile
from emulator.observe.expectations import ExpectResult, format_result
from emulator.observe.publish import PublishLine, format_publish, summary_lines
from emulator.observe.write_guard import AdminWrite

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster
    from emulator.model.config import ServiceConfig
    from emulator.model.loaddata import LocalBrokerData
    from emulator.observe.load_manager_warnings import LoadManagerWarnings

__all__ = ["BrokerLine", "RunSummary", "SUMMARY_KPIS", "UnavailabilityTracker", "broker_max_usage",
           "format_summary", "summarize"]

SUMMARY_KPIS: Mapping[str, str] = {
    # RunSummary field -> the KPI it is (same name, definition and value in the roll-up)
    "unloads": "unloads", "bundles_unloaded": "bundles_unloaded", "splits": "splits",
    "bundles_split": "bundles_split", "lookups": "client_lookups", "redirects": "client_lookup_redirects",
    "lookup_failures": "client_lookup_failures", "reconnects": "reconnects",
    "unavailable_total": "unavailable_topic_seconds", "unavailable_p99": "unavailable_topic_seconds_p99",
    "unavailable_max": "unavailable_topic_seconds_max", "topics_unavailable": "unavailable_topics",
}


class UnavailabilityTracker:
    """Listens to `cluster.events`: per-topic unavailable seconds (`emulator/model/outages.py`).

    A handle is down from its `HandleDisconnected` until its `HandleReconnected` or until it is closed
    by its application (`HandleClosed`, emitted by the workload's consumer jitter); handles still down
    count up to `now`. A handle whose creation failed (`HandleFailed`: the client gave up after the
    operation timeout; nothing creates it again) is down from its creation (`since`) until it is closed
    or the run ends: its topic never had it. A topic is down while any of its handles is."""

    def __init__(self, events: ClusterEvents) -> None:
        self.outages = TopicOutages()
        self.disconnects = 0
        self._unsubscribe = events.subscribe(self._on_event)

    def close(self) -> None:
        self._unsubscribe()

    def _on_event(self, e: Event) -> None:
        match e:
            case HandleDisconnected():
                self.disconnects += 1
                self.outages.down((e.client, e.handle), e.topic, e.t)
            case HandleFailed():   # creation gave up: down since it was created, for good
                self.outages.down((e.client, e.handle), e.topic, e.since)
            case HandleReconnected() | HandleClosed():
                self.outages.up((e.client, e.handle), e.t)

    def per_topic(self, now: float) -> dict[str, float]:
        """Unavailable seconds per topic that was ever down, up to `now`."""
        return self.outages.per_topic(now)

    def still_down(self) -> int:
        return self.outages.still_down()


class BrokerLine(msgspec.Struct, frozen=True, kw_only=True):
    broker: str
    leader: bool
    bundles: int
    topics: int
    max_usage: float
    """Broker max usage as the load manager weighs it, percent."""
    msg_rate: float
    """msg/s in + out of its last report."""


class RunSummary(msgspec.Struct, frozen=True, kw_only=True):
    scenario: str
    seed: int | None
    emulated_seconds: float
    brokers_live: int
    brokers_started: int
    leader: str | None
    leader_elections: int
    bundles: int
    topics: int
    handles: int
    handles_connected: int
    handles_failed: int
    unloads: int
    bundles_unloaded: int
    splits: int
    """Splits the load manager made (its `split` decisions that went through), as the roll-up."""
    lookups: int
    redirects: int
    lookup_failures: int
    reconnects: int
    unavailable_total: float
    unavailable_p99: float
    unavailable_max: float
    topics_unavailable: int
    usage_max: float
    usage_min: float
    usage_std: float
    msg_rate_max: float
    msg_rate_min: float
    msg_rate_ratio: float
    brokers: list[BrokerLine]
    event_errors: list[str] = []
    actor_failures: list[str] = []
    """Actors that crashed ("actor at t: error"): emulator bugs, shown first."""
    placement_failures: int = 0
    """Times a user's placement strategy raised (each failed that lookup, as Pulsar's broker does)."""
    shedding_failures: int = 0
    """Times a user's shedder (or the placement picking a destination) raised: cycles skipped."""
    publish: PublishLine | None = None
    """Publish latency quantiles and failed sends of the cluster (None without publish accounting)."""
    publish_worst: list[PublishLine] = []
    """The topics with the highest P99.99."""
    wall_lag_max: float | None = None
    """--clock wall: the most emulated seconds the run fell behind real time x speed (None: virtual)."""
    expectations: list[ExpectResult] = []
    """The scenario's [[expect]] checked at the end (emulator.observe.expectations)."""
    bundles_split: int = 0
    """Bundles split for any reason (the load manager's, admin splits)."""
    load_manager_warnings: list[str] = []
    """Load-manager changes Pulsar does not support (emulator/observe/load_manager_warnings.py): a live
    switch between Modular/Simple and Extensible, a broker.conf class overridden by the dynamic one."""
    admin_writes: list[AdminWrite] = []
    """Writes the HTTP server accepted (emulator/observe/write_guard.py), each with its emulated time."""
    repeated_warnings: list[str] = []
    """Warnings logged more than once, each with its total: "N x message" (emulator/observe/logs.py
    folds them to one line per emulated minute)."""


def broker_max_usage(local: "LocalBrokerData", conf: "ServiceConfig") -> float:
    """The max resource usage (percent) the placement and OverloadShedder compare (PIP-358 weights)."""
    if conf.emulator_unweighted_max_usage:
        return local.max_resource_usage() * 100.0
    return local.max_resource_usage_with_weight(*conf.resource_weights) * 100.0


def summarize(cluster: "Cluster", decision_log: Any = None,
              unavailable: UnavailabilityTracker | None = None, *, scenario: str = "",
              seed: int | None = None, event_errors: list[str] | None = None,
              load_manager_warnings: "LoadManagerWarnings | None" = None,
              admin_writes: list[AdminWrite] | None = None) -> RunSummary:
    """Read the cluster (and the decision log / tracker, when given) at the current emulated time."""
    now = cluster.system.clock.now()
    counts = cluster.events.counts
    leader = cluster.leader()
    lines: list[BrokerLine] = []
    for b in cluster.live_brokers():
        broker = cluster.brokers[b]
        owned_topics = sum(len(o.actor.topics) for o in broker.owned.values() if o.active and o.actor)
        local = broker.local_data
        lines.append(BrokerLine(broker=b, leader=b == leader, bundles=len(broker.owned_bundle_names()),
                                topics=owned_topics, max_usage=broker_max_usage(local, cluster.conf),
                                msg_rate=local.msg_rate_in + local.msg_rate_out))
    usages = [line.max_usage for line in lines]
    rates = [line.msg_rate for line in lines]
    rate_max = max(rates, default=0.0)
    rate_min = min(rates, default=0.0)
    ratio = rate_max / rate_min if rate_min > 0 else (math.inf if rate_max > 0 else 1.0)

    clients = [cluster.clients[n] for n in sorted(cluster.clients)]
    handles = [h for c in clients for h in c.handles.values() if h.state != "closed"]
    topics = {h.topic for c in clients for h in c.handles.values()}
    per_topic = unavailable.per_topic(now) if unavailable is not None else {}
    topics |= set(per_topic)
    downtime = [per_topic[t] for t in sorted(per_topic) if per_topic[t] > 0]
    unloads = decision_log.unloads if decision_log is not None else 0
    splits = decision_log.splits if decision_log is not None else 0
    publish, publish_worst = summary_lines(getattr(cluster, "publish_accounting", None), now)
    wall_lag = getattr(cluster.system.clock, "lag", None)   # a WallLag on --clock wall
    return RunSummary(
        scenario=scenario, seed=seed, emulated_seconds=now,
        brokers_live=len(lines), brokers_started=counts["broker_started"], leader=leader,
        leader_elections=counts["leader_elected"], bundles=len(cluster.ownership()),
        topics=len(topics), handles=len(handles),
        handles_connected=sum(1 for h in handles if h.state == "connected"),
        handles_failed=sum(1 for h in handles if h.state == "failed"),
        unloads=unloads, bundles_unloaded=counts["bundle_unloaded"], splits=splits,
        bundles_split=counts["bundle_split"],
        lookups=sum(c.stats.lookups for c in clients),
        redirects=sum(c.stats.lookup_redirects for c in clients),
        lookup_failures=sum(c.stats.lookups_failed for c in clients),
        reconnects=sum(c.stats.reconnects for c in clients),
        unavailable_total=math.fsum(downtime), unavailable_p99=percentile(downtime, 0.99) or 0.0,
        unavailable_max=max(downtime, default=0.0), topics_unavailable=len(downtime),
        usage_max=max(usages, default=0.0), usage_min=min(usages, default=0.0),
        usage_std=statistics.pstdev(usages) if len(usages) > 1 else 0.0,
        msg_rate_max=rate_max, msg_rate_min=rate_min, msg_rate_ratio=ratio,
        brokers=lines, event_errors=list(event_errors or []),
        actor_failures=[f"{f.actor} at t={f.time:.1f} s: {f.error}" for f in cluster.system.failures],
        placement_failures=counts["placement_failed"], shedding_failures=counts["shedding_failed"],
        publish=publish, publish_worst=publish_worst,
        wall_lag_max=wall_lag.max if wall_lag is not None else None,
        load_manager_warnings=list(load_manager_warnings.lines) if load_manager_warnings is not None else [],
        admin_writes=list(admin_writes or []),
    )


def _ratio(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.2f}"


def format_summary(s: RunSummary) -> str:
    """A fixed-layout text block (byte-identical for identical runs)."""
    seed = f" (seed {s.seed})" if s.seed is not None else ""
    name = s.scenario or "run"
    out = []
    if s.actor_failures:  # first: every figure below comes from a cluster with a crashed actor
        out.append(f"EMULATOR BUG: {len(s.actor_failures)} actor failure(s); the figures below "
                   "are not trustworthy (tracebacks in the log)")
        out.extend(f"  actor crashed: {line}" for line in s.actor_failures)
    out += [
        f"summary of {name}{seed} at {s.emulated_seconds:.1f} s emulated",
        f"  brokers            {s.brokers_live} live, {s.brokers_started} started; "
        f"leader {s.leader or 'none'} ({s.leader_elections} elections)",
        f"  bundles            {s.bundles} owned; topics {s.topics}; handles {s.handles} "
        f"({s.handles_connected} connected, {s.handles_failed} failed)",
        f"  unloads            {s.unloads} by the shedder; {s.bundles_unloaded} bundles unloaded in all",
        f"  splits             {s.splits} by the load manager; {s.bundles_split} bundles split in all",
        f"  client lookups     {s.lookups}; redirects {s.redirects}; failures {s.lookup_failures}; "
        f"reconnects {s.reconnects}",
        f"  unavailable        {s.unavailable_total:.3f} topic-seconds in all; p99 {s.unavailable_p99:.3f} s;"
        f" max {s.unavailable_max:.3f} s; {s.topics_unavailable} topics affected",
        *format_publish(s.publish, s.publish_worst),
        f"  balance            max usage {s.usage_max:.2f} %, min {s.usage_min:.2f} %, "
        f"std {s.usage_std:.2f}; msg rate max/min {_ratio(s.msg_rate_ratio)} "
        f"({s.msg_rate_max:.1f} / {s.msg_rate_min:.1f} msg/s)",
        f"  {'BROKER':<24} {'BUNDLES':>8} {'TOPICS':>8} {'MAX %':>8} {'MSG/S':>12}",
    ]
    for b in s.brokers:
        name = b.broker + (" *" if b.leader else "")
        out.append(f"  {name:<24} {b.bundles:>8} {b.topics:>8} {b.max_usage:>8.2f} {b.msg_rate:>12.1f}")
    for line in s.event_errors:
        out.append(f"  event failed: {line}")
    for line in s.load_manager_warnings:
        out.append(f"  UNSUPPORTED: {line}")
    out.extend(f"  admin write        {w.line()}" for w in s.admin_writes)
    for line in s.repeated_warnings:
        out.append(f"  repeated warning   {line}")
    if s.placement_failures or s.shedding_failures:
        out.append(f"  user code raised   placement {s.placement_failures} times (lookups failed); "
                   f"shedder {s.shedding_failures} times (cycles skipped)")
    if s.wall_lag_max is not None:   # wall time, not the seed's: the one line that differs by clock
        out.append(f"  wall clock         max lag {s.wall_lag_max:.1f} emulated s behind real time x speed")
    if s.expectations:
        failed = sum(1 for r in s.expectations if not r.passed)
        skipped = sum(1 for r in s.expectations if r.skipped)
        out.append(f"  expectations       {len(s.expectations) - failed - skipped} passed, {failed} failed"
                   + (f", {skipped} skipped (the run ended before their window did)" if skipped else ""))
        out.extend(f"    {format_result(r)}" for r in s.expectations)
    return "\n".join(out)
