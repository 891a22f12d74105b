"""The end-of-run summary: what load balancing did, what it cost the clients, how balanced it ended.

* decisions: unloads by the shedder, bundles unloaded for any reason (shedding, admin, broker drains),
  splits;
* lookups, redirects and failed lookups, counted by the clients (broker counters restart with a
  restarted broker, the clients' do not);
* unavailable topic-seconds: per topic, the sum over its producers and consumers of the time between a
  disconnect and the reconnect (`HandleReconnected.unavailable`), plus the time a handle is still down
  at the end, plus the life of a handle whose creation failed; total, p99 (nearest rank, over every
  topic with a handle) and max;
* actor failures first, when any (emulator bugs), and a line for a user's strategy or shedder that
  raised, when it did;
* publish latency P50 / P99 / P99.9 / P99.99 and failed sends, for the cluster and the topics with the
  highest P99.99 (`emulator.observe.publish`, when the cluster has publish accounting);
* the scenario's expectations, one line each, when it has [[expect]] tables;
* final balance over the live brokers: max, min and standard deviation of the broker max usage as the
  load manager weighs it (percent), and the max/min ratio of their message rates (in + out).

`format_summary` is deterministic: the same run (scenario, seed, config) prints the same bytes, on either
clock, but for the `wall clock` line (how far a `--clock wall` run fell behind real time).
`UnavailabilityTracker` is the listener that collects the unavailability while the run goes.
"""

from __future__ import annotations

import math
import statistics
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
from emulator.observe.expectations import ExpectResult, format_result
from emulator.observe.publish import PublishLine, format_publish, summary_lines

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster
    from emulator.model.config import ServiceConfig
    from emulator.model.loaddata import LocalBrokerData

__all__ = ["BrokerLine", "RunSummary", "UnavailabilityTracker", "broker_max_usage", "format_summary",
           "summarize"]


class UnavailabilityTracker:
    """Listens to `cluster.events`: per-topic unavailable seconds.

    A handle is down from its `HandleDisconnected` until its `HandleReconnected` (whose `unavailable`
    field is that time) or until it is closed by its application (`HandleClosed`, emitted by the
    workload's consumer jitter); handles still down count up to `now`. A handle whose creation failed
    (`HandleFailed`: the client gave up after the operation timeout; nothing creates it again) is down
    from its creation (`since`) until it is closed or the run ends: its topic never had it."""

    def __init__(self, events: ClusterEvents) -> None:
        self.totals: dict[str, float] = {}
        self.disconnects = 0
        self._down: dict[tuple[str, int], tuple[str, float]] = {}
        self._unsubscribe = events.subscribe(self._on_event)

    def close(self) -> None:
        self._unsubscribe()

    def _on_event(self, e: Event) -> None:
        match e:
            case HandleDisconnected():
                self.disconnects += 1
                self._down[(e.client, e.handle)] = (e.topic, e.t)
            case HandleReconnected():
                self._down.pop((e.client, e.handle), None)
                self.totals[e.topic] = self.totals.get(e.topic, 0.0) + e.unavailable
            case HandleFailed():   # creation gave up: down since it was created, for good
                self._down[(e.client, e.handle)] = (e.topic, e.since)
            case HandleClosed():
                down = self._down.pop((e.client, e.handle), None)
                if down is not None:
                    self.totals[down[0]] = self.totals.get(down[0], 0.0) + (e.t - down[1])

    def per_topic(self, now: float) -> dict[str, float]:
        """Unavailable seconds per topic that was ever down, up to `now`."""
        out = dict(self.totals)
        for topic, since in self._down.values():
            out[topic] = out.get(topic, 0.0) + max(0.0, now - since)
        return out

    def still_down(self) -> int:
        return len(self._down)


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


def broker_max_usage(local: "LocalBrokerData", conf: "ServiceConfig") -> float:
    """The max resource usage (percent) the placement and OverloadShedder compare (PIP-358 weights)."""
    if conf.emulator_unweighted_max_usage:
        return local.max_resource_usage() * 100.0
    return local.max_resource_usage_with_weight(*conf.resource_weights) * 100.0


def _p99(values: list[float]) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


def summarize(cluster: "Cluster", decision_log: Any = None,
              unavailable: UnavailabilityTracker | None = None, *, scenario: str = "",
              seed: int | None = None, event_errors: list[str] | None = None) -> RunSummary:
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
    downtime = [per_topic.get(t, 0.0) for t in sorted(topics)]
    unloads = len(decision_log.of("unload")) if decision_log is not None else 0
    publish, publish_worst = summary_lines(getattr(cluster, "publish_accounting", None), now)
    wall_lag = getattr(cluster.system.clock, "lag", None)   # a WallLag on --clock wall
    return RunSummary(
        scenario=scenario, seed=seed, emulated_seconds=now,
        brokers_live=len(lines), brokers_started=counts["broker_started"], leader=leader,
        leader_elections=counts["leader_elected"], bundles=len(cluster.ownership()),
        topics=len(topics), handles=len(handles),
        handles_connected=sum(1 for h in handles if h.state == "connected"),
        handles_failed=sum(1 for h in handles if h.state == "failed"),
        unloads=unloads, bundles_unloaded=counts["bundle_unloaded"], splits=counts["bundle_split"],
        lookups=sum(c.stats.lookups for c in clients),
        redirects=sum(c.stats.lookup_redirects for c in clients),
        lookup_failures=sum(c.stats.lookups_failed for c in clients),
        reconnects=sum(c.stats.reconnects for c in clients),
        unavailable_total=math.fsum(downtime), unavailable_p99=_p99(downtime),
        unavailable_max=max(downtime, default=0.0),
        topics_unavailable=sum(1 for d in downtime if d > 0),
        usage_max=max(usages, default=0.0), usage_min=min(usages, default=0.0),
        usage_std=statistics.pstdev(usages) if len(usages) > 1 else 0.0,
        msg_rate_max=rate_max, msg_rate_min=rate_min, msg_rate_ratio=ratio,
        brokers=lines, event_errors=list(event_errors or []),
        actor_failures=[f"{f.actor} at t={f.time:.1f} s: {f.error}" for f in cluster.system.failures],
        placement_failures=counts["placement_failed"], shedding_failures=counts["shedding_failed"],
        publish=publish, publish_worst=publish_worst,
        wall_lag_max=wall_lag.max if wall_lag is not None else None,
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
        f"  splits             {s.splits}",
        f"  lookups            {s.lookups}; redirects {s.redirects}; failures {s.lookup_failures}; "
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
