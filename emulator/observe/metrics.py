"""Pulsar's Prometheus metrics for one emulated cluster, in a registry of its own.

`ClusterMetrics(cluster)` owns one `prometheus_client.CollectorRegistry` (never the process-wide default,
so several clusters in one process do not clash) with a single custom collector. Levels (usages, rates,
topic counts, lookup counters) are read from the cluster's plain state when a scrape or a recorder
sample collects; what only events know (unloads, splits, bundle moves, reconnects, outages) is tallied by
a listener on `cluster.events`. Both are read on the event loop's thread (see `emulator.observe.http`), so
a collect sees one consistent instant of emulated time.

No prometheus-client metric objects are used: their `_created` samples carry wall-clock timestamps, which
would make two runs with the same seed record different samples. Every family is built at collect time.

Names, types, labels and units follow spec pulsar-metrics.md §A:

* `pulsar_lb_{cpu,memory,directMemory,bandwidth_in,bandwidth_out}_usage{cluster,broker,metric="loadBalancing"}`:
  percent, float32 as `ResourceUsage.percentUsage()`, from the broker's latest local data (refreshed on
  every load-report tick, as `updateLoadBalancingMetrics`);
* `pulsar_lb_unload_broker_total`, `pulsar_lb_unload_bundle_total` `{cluster,metric="bundleUnloading"}`
  and `pulsar_lb_bundles_split_total{cluster,metric="bundlesSplit"}`: typed **gauge**, exactly as
  Pulsar's `brk_*` → `pulsar_*` rendering does. Choice: one series per cluster summed over every leader
  of the run (Pulsar keeps one per leader process; the sum is what a dashboard adds up), so the values
  equal the decision log's `unload` / successful `split` counts;
* brokers whose load manager has `extensible_metrics()` (the Extensible one) export what
  `ExtensibleLoadManagerImpl.getMetrics()` renders (`emulator.observe.extensible_metrics`): their five
  usages come from their BrokerLoadData, and `pulsar_lb_resource_usage`, the unload / split / assign
  breakdowns and the `pulsar_sunit_state_chn_*` series are added per broker; the cluster-wide
  unload and split gauges above (a Modular leader's) are then left out;
* `pulsar_lb_load_rank`, `pulsar_lb_quota_pct_{cpu,memory,bandwidth_in,bandwidth_out}{cluster,broker}`:
  SimpleLoadManagerImpl's own, from each broker running it (its own row of its ranking);
* `pulsar_broker_lookup{cluster,broker}`: summary in ms (count and sum; no quantiles are computed),
  `pulsar_broker_lookup_{answers,redirects,failures}` counters (`_total` samples),
  `pulsar_broker_lookup_pending_requests` gauge. TooManyRequests rejections happen before
  `getBrokerServiceUrlAsync` in Pulsar, so they are not failures there: they are exported as
  `pulsar_lb_emulator_lookup_rejected_total`;
* `pulsar_broker_load_manager_bundle_assigment` (sic) summary in ms per deciding broker: a selection takes
  no emulated time, so the sum stays 0 and the count is the number of `selectBrokerForAssignment` calls;
* `pulsar_broker_{topics,producers,consumers}_count`, `pulsar_broker_rate_{in,out}` (msg/s),
  `pulsar_broker_throughput_{in,out}` (bytes/s) per broker (rates from the latest local data);
* `pulsar_topic_load_times{cluster,broker}` summary in ms: one observation per topic first attached on a
  broker; topic loads take no emulated time (no managed ledger), so the sum stays 0;
* opt-in `pulsar_bundle_{msg_rate_in,msg_rate_out,topics_count,consumer_count,producer_count,
  msg_throughput_in,msg_throughput_out}{cluster,broker,bundle,metric="bundle"}` when the conf's
  `exposeBundlesMetricsInPrometheus` is true.

The shared capacities (issue 27: ZooKeeper, bookies, broker executors) and
`pulsar_broker_topic_load_pending_requests`: `emulator.observe.capacity_metrics`.

Emulator additions (`pulsar_lb_emulator_*`): emulated time, the weighted max usage the load manager uses,
bundle counts, the leader, leader elections, bundle moves, reconnects and their latency, unavailable
topic-seconds, disconnected handles, client-side lookups and redirects per lookup, load-report age at
shedding time, actor crashes (emulator bugs), faults of a user's strategy or shedder; publish latency
(`emulator.observe.publish.publish_families`); on `--clock wall`, `pulsar_lb_emulator_wall_lag_seconds` (how
far the run is behind real time x speed; scraped, not recorded, so a recording depends on the seed alone);
`pulsar_lb_emulator_events_total{cluster,kind,name}`, the events a dashboard marks as annotations
(scraped, not recorded: `emulator.observe.event_marks`).
A dead broker exports nothing, as a dead process would.
"""

from __future__ import annotations

import bisect
import math
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, NamedTuple, Sequence

from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    SummaryMetricFamily,
)
from prometheus_client.exposition import generate_latest
from prometheus_client.utils import floatToGoString

from emulator.runtime import DEFAULT_START_EPOCH_MS
from emulator.cluster.events import (
    Assignment,
    AssignmentRepeated,
    BrokerCrashed,
    BrokerStopped,
    BundleOwned,
    BundleUnloaded,
    Event,
    HandleConnected,
    HandleDisconnected,
    HandleClosed,
    HandleFailed,
    HandleReconnected,
    SheddingPlan,
    Split,
    Unload,
)
from emulator.model.outages import TopicOutages
from emulator.observe.capacity_metrics import capacity_families, capacity_values
from emulator.observe.event_marks import EventMarks
from emulator.observe.loaded_topics import LoadedTopics
from emulator.observe.extensible_metrics import DOCS as EXTENSIBLE_DOCS
from emulator.observe.extensible_metrics import (
    ExtensibleMetricsSource,
    extensible_series,
    group_by_name,
    load_data_percents,
)
from emulator.observe.publish import publish_accounting, publish_families, publish_values

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster

__all__ = ["ClusterMetrics", "RECONNECT_BUCKETS", "REPORT_AGE_BUCKETS", "Rows", "SCRAPE_ONLY"]

SCRAPE_ONLY = frozenset({"pulsar_lb_emulator_wall_lag_seconds", "pulsar_lb_emulator_events_total"})
"""Sample names a scrape collects and a recording leaves out (`rows()`): the wall lag, the event marks."""

RECONNECT_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
"""Seconds from a producer/consumer's disconnect to its reconnect (backoff starts at 100 ms)."""

REPORT_AGE_BUCKETS = (1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0)
"""Seconds; a report is rewritten at least every loadBalancerReportUpdateMaxIntervalMinutes (15)."""

_USAGES = (
    ("pulsar_lb_cpu_usage", "cpu", "CPU usage, percent"),
    ("pulsar_lb_memory_usage", "memory", "JVM heap memory usage, percent"),
    ("pulsar_lb_directMemory_usage", "direct_memory", "JVM direct memory usage, percent"),
    ("pulsar_lb_bandwidth_in_usage", "bandwidth_in", "Inbound NIC bandwidth usage, percent"),
    ("pulsar_lb_bandwidth_out_usage", "bandwidth_out", "Outbound NIC bandwidth usage, percent"),
)

_USAGE_NAMES = frozenset(metric_name for metric_name, _, _ in _USAGES)

_SIMPLE_GAUGES = (
    ("load_rank", "SimpleLoadManagerImpl: the broker's final rank in its own ranking"),
    ("quota_pct_cpu", "SimpleLoadManagerImpl: allocated quota CPU, percent of the limit"),
    ("quota_pct_memory", "SimpleLoadManagerImpl: allocated quota memory, percent of the limit"),
    ("quota_pct_bandwidth_in", "SimpleLoadManagerImpl: allocated quota bandwidth in, percent of the limit"),
    ("quota_pct_bandwidth_out", "SimpleLoadManagerImpl: allocated quota bandwidth out, percent of the limit"),
)

_BUNDLE_GAUGES = (
    ("pulsar_bundle_msg_rate_in", "msg_rate_in", "Bundle inbound message rate, msg/s"),
    ("pulsar_bundle_msg_rate_out", "msg_rate_out", "Bundle outbound message rate, msg/s"),
    ("pulsar_bundle_topics_count", "topics", "Topics in the bundle"),
    ("pulsar_bundle_consumer_count", "consumer_count", "Consumers on the bundle's topics"),
    ("pulsar_bundle_producer_count", "producer_count", "Producers on the bundle's topics"),
    ("pulsar_bundle_msg_throughput_in", "msg_throughput_in", "Bundle inbound throughput, bytes/s"),
    ("pulsar_bundle_msg_throughput_out", "msg_throughput_out", "Bundle outbound throughput, bytes/s"),
)


class _Histogram:
    """Fixed-bucket histogram kept as plain numbers (no prometheus-client object: no wall time)."""

    __slots__ = ("bounds", "counts", "total", "count")

    def __init__(self, bounds: Iterable[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.total = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1   # le: value <= bound
        self.total += value
        self.count += 1

    def cumulative(self) -> list[float]:
        """The values of `buckets()` without their labels."""
        out, running = [], 0
        for n in self.counts:
            running += n
            out.append(float(running))
        return out

    def buckets(self) -> list[tuple[str, float]]:
        out, running = [], 0
        for bound, n in zip(self.bounds + (math.inf,), self.counts):
            running += n
            out.append((floatToGoString(bound), float(running)))
        return out


class _Tally:
    """What only events tell: fed by a `cluster.events` listener, read at collect time.

    Counting starts when the metrics attach (right after `Cluster.start`), except leader elections, which
    `ClusterEvents.counts` has kept from the start. Bundle owners and loaded topics are seeded from the
    cluster's state at attach time."""

    def __init__(self, cluster: "Cluster") -> None:
        self.cluster = cluster
        self.unload_bundles = 0
        self.unload_brokers = 0
        self.splits = 0
        self.bundle_moves = 0
        self.reconnects = 0
        self.disconnects = 0
        self.outages = TopicOutages()                # unavailable topic-seconds, the summary's definition
        self.reconnect_latency = _Histogram(RECONNECT_BUCKETS)
        self.report_age = _Histogram(REPORT_AGE_BUCKETS)
        self.publish = publish_accounting(cluster)   # shared with the recorder and the summary
        self.assignments: dict[str, int] = {}        # deciding broker -> selectBrokerForAssignment calls
        self.topic_loads: dict[str, int] = {}        # broker -> topics loaded there so far
        self.down: dict[tuple[str, int], float] = {}  # (client, handle) -> disconnected since (s)
        self._cycle_brokers: set[str | None] = set()
        self._owner: dict[str, str] = dict(cluster.ownership())
        self._loaded = LoadedTopics()                 # broker -> topics currently loaded there
        for broker_id, broker in cluster.brokers.items():
            if broker.alive:
                self._loaded.seed(broker_id, (t for o in broker.owned.values() if o.actor is not None
                                              for t in o.actor.topics))
        self._handlers: dict[type[Event], Callable[[Any], None]] = {
            SheddingPlan: self._on_shedding_plan,
            Unload: self._on_unload,
            Split: self._on_split,
            Assignment: self._on_assignment,
            AssignmentRepeated: self._on_assignment,   # a call answered by the preallocation
            BundleOwned: self._on_bundle_owned,
            BundleUnloaded: self._on_bundle_unloaded,
            BrokerCrashed: self._on_broker_gone,
            BrokerStopped: self._on_broker_gone,
            HandleConnected: self._on_attached,
            HandleDisconnected: self._on_disconnected,
            HandleReconnected: self._on_reconnected,
            HandleFailed: self._on_failed,
            HandleClosed: self._on_closed,
        }
        self._unsubscribe = cluster.events.subscribe(self._on_event)
        self.marks = EventMarks(cluster)

    def close(self) -> None:
        self._unsubscribe()
        self.marks.close()

    def _on_event(self, event: Event) -> None:
        handler = self._handlers.get(type(event))
        if handler is not None:
            handler(event)

    # ------------------------------------------------------------------ leader decisions

    def _on_shedding_plan(self, event: SheddingPlan) -> None:
        """A new doLoadShedding cycle: unload_broker_total counts brokers once per cycle (Pulsar's
        `unloadBrokerCount += brokers unloaded from`); also the age of each report the shedder read."""
        self._cycle_brokers = set()
        now = event.t
        # lastUpdate is calendar time (runtime.epoch_ms)
        start = getattr(self.cluster.system.clock, "start_epoch_ms", DEFAULT_START_EPOCH_MS)
        for last_update in self._leader_report_times():
            self.report_age.observe(max(0.0, now - (last_update - start) / 1000.0))

    def _leader_report_times(self) -> list[int]:
        leader = self.cluster.leader()
        broker = self.cluster.brokers.get(leader) if leader else None
        view = broker.capabilities.leader_load_view if broker is not None else None
        load_data = view.leader_load_data() if view is not None else None
        if load_data is None:
            return []
        return [bd.local_data.last_update for _, bd in sorted(load_data.broker_data.items())]

    def _on_unload(self, event: Unload) -> None:
        self.unload_bundles += 1
        broker = event.broker
        if broker not in self._cycle_brokers:
            self._cycle_brokers.add(broker)
            self.unload_brokers += 1

    def _on_split(self, event: Split) -> None:
        if event.ok:
            self.splits += 1

    def _on_assignment(self, event: Assignment | AssignmentRepeated) -> None:
        if getattr(event, "affinity", False):   # the unload destination answered: no selectBrokerForAssignment
            return
        decider = event.leader
        self.assignments[decider] = self.assignments.get(decider, 0) + 1

    # ------------------------------------------------------------------ ownership

    def _on_bundle_owned(self, event: BundleOwned) -> None:
        bundle, broker = event.bundle, event.broker
        previous = self._owner.get(bundle)
        if previous is not None and previous != broker:
            self.bundle_moves += 1
        self._owner[bundle] = broker

    def _on_bundle_unloaded(self, event: BundleUnloaded) -> None:
        self._loaded.drop_bundle(event.broker, event.bundle)

    def _on_broker_gone(self, event: BrokerCrashed | BrokerStopped) -> None:
        self._loaded.drop_broker(event.broker)

    # ------------------------------------------------------------------ clients

    def _on_attached(self, event: HandleConnected | HandleReconnected) -> None:
        broker = event.broker
        if self._loaded.add(broker, event.topic):
            self.topic_loads[broker] = self.topic_loads.get(broker, 0) + 1

    def _on_disconnected(self, event: HandleDisconnected) -> None:
        self.disconnects += 1
        self.down[(event.client, event.handle)] = event.t
        self.outages.down((event.client, event.handle), event.topic, event.t)

    def _on_reconnected(self, event: HandleReconnected) -> None:
        self._on_attached(event)
        self.reconnects += 1
        unavailable = float(event.unavailable)
        self.reconnect_latency.observe(unavailable)
        self.down.pop((event.client, event.handle), None)
        self.outages.up((event.client, event.handle), event.t)

    def _on_failed(self, event: HandleFailed) -> None:
        """A handle whose creation failed never comes back: down from its creation on (as the summary)."""
        self.outages.down((event.client, event.handle), event.topic, float(event.since))

    def _on_closed(self, event: HandleClosed) -> None:
        self.down.pop((event.client, event.handle), None)
        self.outages.up((event.client, event.handle), event.t)

    def unavailable_seconds(self, now: float) -> float:
        """Unavailable topic-seconds up to `now` (`emulator/model/outages.py`: a topic is down while any
        of its producers or consumers is), the summary's and the roll-up's figure."""
        return self.outages.total(now)


class _Kinds(NamedTuple):
    """The family classes a collect builds with."""

    gauge: Any
    counter: Any
    summary: Any
    histogram: Any


SeriesKey = tuple[str, tuple[str, ...], tuple[str, ...]]
"""(sample name, label names, label values): one series, as the recorder files it."""


class Rows(list[tuple[SeriesKey, Any]]):
    """`ClusterMetrics.rows()`: a list of (series key, value). When the series are those of the last
    sample, `keys` is the very list of key objects that sample had (identity says "same series") and
    `values` the values in order; both None when the rows were built family by family."""

    keys: list[SeriesKey] | None = None
    values: list[Any] | None = None


class _GaugeRows:
    """The recorder's stand-in for GaugeMetricFamily: the samples prometheus_client would make, with
    the same names, label values and values in the same order, as `(SeriesKey, value)` rows: no
    Sample tuple or label dict per sample, since a recorder block is ~500 samples every 10 s."""

    __slots__ = ("name", "labelnames", "rows")

    def __init__(self, name: str, documentation: str, labels: Sequence[str] = ()) -> None:
        self.name = name
        self.labelnames = tuple(labels)
        self.rows: list[tuple[SeriesKey, Any]] = []

    def add_metric(self, labels: Sequence[str], value: Any) -> None:
        self.rows.append(((self.name, self.labelnames, tuple(labels)), value))


class _CounterRows(_GaugeRows):
    """CounterMetricFamily: the family name loses a `_total` suffix, its sample is `<name>_total`."""

    __slots__ = ()

    def __init__(self, name: str, documentation: str, labels: Sequence[str] = ()) -> None:
        super().__init__(name[:-6] if name.endswith("_total") else name, documentation, labels)

    def add_metric(self, labels: Sequence[str], value: Any, created: float | None = None) -> None:
        key_labels = tuple(labels)
        self.rows.append(((self.name + "_total", self.labelnames, key_labels), value))
        if created is not None:
            self.rows.append(((self.name + "_created", self.labelnames, key_labels), created))


class _SummaryRows(_GaugeRows):
    """SummaryMetricFamily without quantiles: `<name>_count` then `<name>_sum`."""

    __slots__ = ()

    def add_metric(self, labels: Sequence[str], count_value: Any, sum_value: Any) -> None:  # type: ignore[override]
        key_labels = tuple(labels)
        self.rows.append(((self.name + "_count", self.labelnames, key_labels), count_value))
        self.rows.append(((self.name + "_sum", self.labelnames, key_labels), sum_value))


class _HistogramRows(_GaugeRows):
    """HistogramMetricFamily: `<name>_bucket` per bucket (label `le` last), then `_count` (the +Inf
    bucket) and `_sum` unless a bucket bound is negative or there is no sum."""

    __slots__ = ()

    def add_metric(self, labels: Sequence[str], buckets: Sequence[tuple[str, float]],  # type: ignore[override]
                   sum_value: Any) -> None:
        key_labels = tuple(labels)
        # prometheus_client pairs the label names with the values (zip: the shorter wins), then adds le
        paired = key_labels[:len(self.labelnames)]
        names = self.labelnames[:len(paired)] + ("le",)
        for bucket, value in buckets:
            self.rows.append(((self.name + "_bucket", names, paired + (bucket,)), value))
        if float(buckets[0][0]) >= 0 and sum_value is not None:
            self.rows.append(((self.name + "_count", self.labelnames, key_labels), buckets[-1][1]))
            self.rows.append(((self.name + "_sum", self.labelnames, key_labels), sum_value))


_PROMETHEUS = _Kinds(GaugeMetricFamily, CounterMetricFamily, SummaryMetricFamily, HistogramMetricFamily)
_ROWS = _Kinds(_GaugeRows, _CounterRows, _SummaryRows, _HistogramRows)


class _ClusterCollector:
    """Builds every family from the cluster's state and the tally; see the module docstring."""

    def __init__(self, cluster: "Cluster", tally: _Tally) -> None:
        self.cluster = cluster
        self.tally = tally
        self._capacity_groups: dict[str, Any] = {}   # capacity_values' queue groups, per layout

    def collect(self) -> Iterator[Any]:
        return self.families(_PROMETHEUS)

    def families(self, k: "_Kinds") -> Iterator[Any]:
        """Every family, built with `k`'s classes: prometheus_client's for scrapes, `_ROWS` for the
        recorder (same samples, fewer objects)."""
        cluster, tally = self.cluster, self.tally
        name = cluster.name
        now = cluster.system.clock.now()
        conf = cluster.conf
        live = [(b, cluster.brokers[b]) for b in sorted(cluster.brokers) if cluster.brokers[b].alive]
        leader = cluster.leader()
        B = ("cluster", "broker")

        t = k.gauge("pulsar_lb_emulator_time_seconds", "Emulated time since the run started, s",
                    labels=("cluster",))
        t.add_metric((name,), now)
        yield t
        lag = getattr(cluster.system.clock, "lag", None)   # a WallLag on --clock wall
        if lag is not None and k is _PROMETHEUS:   # scrapes only: recordings stay the seed's alone
            g = k.gauge("pulsar_lb_emulator_wall_lag_seconds",
                        "--clock wall: emulated seconds the run was behind real time x speed when it "
                        "last reached a timer (0: on time)", labels=("cluster",))
            g.add_metric((name,), lag.current)
            yield g

        # --- load balancing (ModularLoadManagerImpl.updateLoadBalancingMetrics) -------------------
        extensible = self._extensible_sources(live)
        percents = []
        for broker_id, broker in live:
            source = extensible.get(broker_id)
            if source is None:
                percents.append((broker_id, broker.local_data.percent_usages()))
            elif source.broker_load_data is not None:   # Extensible: BrokerLoadData.toMetrics
                percents.append((broker_id, load_data_percents(source.broker_load_data)))
        for metric_name, attr, doc in _USAGES:
            g = k.gauge(metric_name, doc, labels=("cluster", "broker", "metric"))
            for broker_id, percent in percents:
                g.add_metric((name, broker_id, "loadBalancing"), percent[attr])
            yield g
        g = k.gauge("pulsar_lb_emulator_broker_max_usage",
                    "Weighted max resource usage the load manager uses "
                    "(getMaxResourceUsageWithWeight), percent", labels=B)
        weights = conf.resource_weights     # what weighted_max_usage(conf) reads, once per collect
        for broker_id, broker in live:
            g.add_metric((name, broker_id),
                         broker.local_data.max_resource_usage_with_weight(*weights) * 100.0)
        yield g
        yield from self._simple_families(k, name, live)

        if extensible:   # ExtensibleLoadManagerImpl.getMetrics() instead of Modular's leader counters
            yield from self._extensible_families(k, name, extensible)
        else:
            yield from self._modular_leader_families(k, name)

        if conf.expose_bundles_metrics_in_prometheus:
            yield from self._bundle_families(k, name, live)

        # --- broker totals (NamespaceStatsAggregator.printBrokerStats) ---------------------------
        for metric_name, doc, get in (
                ("pulsar_broker_topics_count", "Topics loaded on the broker",
                 lambda br: sum(len(o.actor.topics) for o in br.owned.values()
                                if o.active and o.actor is not None)),
                ("pulsar_broker_producers_count", "Producers on the broker", lambda br: br.local_data.num_producers),
                ("pulsar_broker_consumers_count", "Consumers on the broker", lambda br: br.local_data.num_consumers),
                ("pulsar_broker_rate_in", "Inbound message rate, msg/s", lambda br: br.local_data.msg_rate_in),
                ("pulsar_broker_rate_out", "Outbound message rate, msg/s", lambda br: br.local_data.msg_rate_out),
                ("pulsar_broker_throughput_in", "Inbound throughput, bytes/s",
                 lambda br: br.local_data.msg_throughput_in),
                ("pulsar_broker_throughput_out", "Outbound throughput, bytes/s",
                 lambda br: br.local_data.msg_throughput_out),
                ("pulsar_lb_emulator_bundles_count", "Bundles the broker owns (active)",
                 lambda br: sum(1 for o in br.owned.values() if o.active)),
                ("pulsar_lb_emulator_is_leader", "1 on the broker holding /loadbalance/leader",
                 lambda br: 1.0 if br.broker_id == leader else 0.0)):
            g = k.gauge(metric_name, doc, labels=B)
            for broker_id, broker in live:
                g.add_metric((name, broker_id), get(broker))
            yield g

        # --- lookups (NamespaceService, BrokerService) ------------------------------------------
        summary = k.summary("pulsar_broker_lookup", "Latency of lookups (getBrokerServiceUrlAsync), ms",
                            labels=B)
        answers = k.counter("pulsar_broker_lookup_answers", "Lookups answered with an owner", labels=B)
        redirects = k.counter("pulsar_broker_lookup_redirects", "Lookups answered with a redirect",
                              labels=B)
        failures = k.counter("pulsar_broker_lookup_failures", "Lookups that failed", labels=B)
        rejected = k.counter("pulsar_lb_emulator_lookup_rejected",
                             "Lookups refused with TooManyRequests (maxConcurrentLookupRequest)", labels=B)
        pending = k.gauge("pulsar_broker_lookup_pending_requests", "Lookups in flight", labels=B)
        for broker_id, broker in live:
            s = broker.stats
            failed = s.failures - s.too_many
            labels = (name, broker_id)
            summary.add_metric(labels, count_value=s.answers + s.redirects + failed,
                               sum_value=getattr(s, "lookup_seconds", 0.0) * 1000.0)
            answers.add_metric(labels, s.answers)
            redirects.add_metric(labels, s.redirects)
            failures.add_metric(labels, failed)
            rejected.add_metric(labels, s.too_many)
            pending.add_metric(labels, s.pending)
        yield from (summary, answers, redirects, failures, rejected, pending)

        assign = k.summary("pulsar_broker_load_manager_bundle_assigment",
                           "Latency of selectBrokerForAssignment, ms (Pulsar's spelling)", labels=B)
        for decider in sorted(tally.assignments):
            assign.add_metric((name, decider), count_value=tally.assignments[decider], sum_value=0.0)
        yield assign

        loads = k.summary("pulsar_topic_load_times", "Topic load latency, ms", labels=B)
        for broker_id, _ in live:
            loads.add_metric((name, broker_id), count_value=tally.topic_loads.get(broker_id, 0), sum_value=0.0)
        yield loads

        # --- shared capacities (issue 27): queues, topic-load permits, expiries, fencing --------
        yield from capacity_families(cluster, k, live, now)

        # --- emulator additions -----------------------------------------------------------------
        C = ("cluster",)
        for family, metric_name, doc, value in (
                (k.counter, "pulsar_lb_emulator_leader_changes",
                 "Leader elections won (the first one included)", cluster.events.counts["leader_elected"]),
                (k.counter, "pulsar_lb_emulator_bundle_moves",
                 "Bundles that became owned by a broker other than their previous owner", tally.bundle_moves),
                (k.counter, "pulsar_lb_emulator_reconnects",
                 "Producers/consumers reconnected after a disconnect", tally.reconnects),
                (k.counter, "pulsar_lb_emulator_disconnects",
                 "Producers/consumers disconnected by an unload, a close or a crash", tally.disconnects),
                (k.counter, "pulsar_lb_emulator_unavailable_topic_seconds",
                 "Seconds topics had a producer or consumer down (per topic, not summed over handles)",
                 tally.unavailable_seconds(now)),
                (k.gauge, "pulsar_lb_emulator_disconnected_handles",
                 "Producers/consumers currently waiting to reconnect", len(tally.down)),
                (k.counter, "pulsar_lb_emulator_actor_failures",
                 "Actors that crashed: emulator bugs (the run exits 3)", len(cluster.system.failures)),
                (k.counter, "pulsar_lb_emulator_placement_failures",
                 "Times a user's placement strategy raised (that lookup failed)",
                 cluster.events.counts["placement_failed"]),
                (k.counter, "pulsar_lb_emulator_shedding_failures",
                 "Times a user's shedder raised (that shedding cycle was skipped)",
                 cluster.events.counts["shedding_failed"])):
            f = family(metric_name, doc, labels=C)
            f.add_metric((name,), value)
            yield f

        lookups = redirected = lookup_failed = 0
        for client in cluster.clients.values():
            lookups += client.stats.lookups
            redirected += client.stats.lookup_redirects
            lookup_failed += client.stats.lookups_failed
        for metric_name, doc, value in (
                ("pulsar_lb_emulator_client_lookups", "Lookups started by clients", lookups),
                ("pulsar_lb_emulator_client_lookup_redirects", "Redirects followed by clients", redirected),
                ("pulsar_lb_emulator_client_lookup_failures", "Client lookups that failed", lookup_failed)):
            f = k.counter(metric_name, doc, labels=C)
            f.add_metric((name,), value)
            yield f
        ratio = k.gauge("pulsar_lb_emulator_redirects_per_lookup",
                        "Redirects followed per client lookup (NaN before the first)", labels=C)
        ratio.add_metric((name,), redirected / lookups if lookups else math.nan)
        yield ratio

        yield from publish_families(k, name, tally.publish, now)

        for metric_name, doc, hist in (
                ("pulsar_lb_emulator_reconnect_latency_seconds",
                 "Seconds from a producer/consumer's disconnect to its reconnect", tally.reconnect_latency),
                ("pulsar_lb_emulator_load_report_age_seconds",
                 "Age of each broker report the leader's shedder read, s", tally.report_age)):
            h = k.histogram(metric_name, doc, labels=C)
            h.add_metric((name,), hist.buckets(), sum_value=hist.total)
            yield h

        if k is _PROMETHEUS:   # scrapes only, as the wall lag: events.jsonl has these (event_marks.py)
            yield tally.marks.family(k.counter, name)

    def layout(self) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """What the recorder's series depend on: the live brokers and the deciding brokers of
        `pulsar_broker_load_manager_bundle_assigment`, sorted; None when bundles are exposed (their
        series follow every split and move) or when a broker's load manager exports its own series
        (its LoadBalancingMetrics or ExtensibleMetrics capability: Simple's, Extensible's)."""
        cluster = self.cluster
        if cluster.conf.expose_bundles_metrics_in_prometheus:
            return None
        brokers = cluster.brokers
        live = tuple(b for b in sorted(brokers) if brokers[b].alive)
        if any(caps.load_balancing_metrics is not None or caps.extensible_metrics is not None
               for caps in (brokers[b].capabilities for b in live)):
            return None   # a load manager with series of its own (Simple's, Extensible's): `families`
        return (live, tuple(sorted(self.tally.assignments)))

    def values(self, live_ids: tuple[str, ...]) -> list[Any]:
        """The values `families(_ROWS)` gives, in its order and with its types (int stays int), for
        the layout's live brokers. Keep in step with `families`: tests/observe/test_metrics.py
        compares the two on live clusters."""
        cluster, tally = self.cluster, self.tally
        brokers = cluster.brokers
        live = [brokers[b] for b in live_ids]
        now = cluster.system.clock.now()
        leader = cluster.leader()
        out: list[Any] = [now]
        extend = out.extend
        datas = [broker.local_data for broker in live]
        percents = [d.percent_usages() for d in datas]
        for _, attr, _ in _USAGES:
            extend([p[attr] for p in percents])
        weights = cluster.conf.resource_weights
        extend([d.max_resource_usage_with_weight(*weights) * 100.0 for d in datas])
        extend((tally.unload_brokers, tally.unload_bundles, tally.splits))
        topic_counts, bundle_counts = _owned_counts(live)
        extend(topic_counts)
        extend([d.num_producers for d in datas])
        extend([d.num_consumers for d in datas])
        extend([d.msg_rate_in for d in datas])
        extend([d.msg_rate_out for d in datas])
        extend([d.msg_throughput_in for d in datas])
        extend([d.msg_throughput_out for d in datas])
        extend(bundle_counts)
        extend([1.0 if br.broker_id == leader else 0.0 for br in live])
        stats = [br.stats for br in live]
        for s in stats:
            out.append(s.answers + s.redirects + (s.failures - s.too_many))
            out.append(getattr(s, "lookup_seconds", 0.0) * 1000.0)
        extend([s.answers for s in stats])
        extend([s.redirects for s in stats])
        extend([s.failures - s.too_many for s in stats])
        extend([s.too_many for s in stats])
        extend([s.pending for s in stats])
        for decider in sorted(tally.assignments):
            extend((tally.assignments[decider], 0.0))
        for broker_id in live_ids:
            extend((tally.topic_loads.get(broker_id, 0), 0.0))
        extend(capacity_values(cluster, list(zip(live_ids, live)), now, self._capacity_groups))
        counts = cluster.events.counts
        extend((counts["leader_elected"], tally.bundle_moves, tally.reconnects, tally.disconnects,
                tally.unavailable_seconds(now)))
        extend((len(tally.down), len(cluster.system.failures), counts["placement_failed"],
                counts["shedding_failed"]))
        lookups = redirected = lookup_failed = 0
        for client in cluster.clients.values():
            lookups += client.stats.lookups
            redirected += client.stats.lookup_redirects
            lookup_failed += client.stats.lookups_failed
        extend((lookups, redirected, lookup_failed, redirected / lookups if lookups else math.nan))
        extend(publish_values(tally.publish, now))
        for hist in (tally.reconnect_latency, tally.report_age):
            cumulative = hist.cumulative()
            extend(cumulative)
            extend((cumulative[-1], hist.total))
        return out
    def _modular_leader_families(self, k: "_Kinds", name: str) -> Iterator[Any]:
        """updateBundleUnloadingMetrics / updateBundleSplitMetrics, summed over the run's leaders."""
        tally = self.tally
        unload = ("cluster", "metric")
        value: float
        for metric_name, value, doc in (
                ("pulsar_lb_unload_broker_total", tally.unload_brokers,
                 "Brokers that had bundles unloaded, once per shedding cycle (Pulsar types it gauge)"),
                ("pulsar_lb_unload_bundle_total", tally.unload_bundles,
                 "Bundles unloaded by the shedding loop (Pulsar types it gauge)")):
            g = k.gauge(metric_name, doc, labels=unload)
            g.add_metric((name, "bundleUnloading"), value)
            yield g
        g = k.gauge("pulsar_lb_bundles_split_total",
                    "Bundles split by the leader's split check (Pulsar types it gauge)", labels=unload)
        g.add_metric((name, "bundlesSplit"), tally.splits)
        yield g

    @staticmethod
    def _extensible_sources(live: list[tuple[str, Any]]) -> dict[str, ExtensibleMetricsSource]:
        """Each live broker whose load manager has the ExtensibleMetrics capability (and answers), by id."""
        out: dict[str, ExtensibleMetricsSource] = {}
        for broker_id, broker in live:
            metrics = broker.capabilities.extensible_metrics
            source = metrics.extensible_metrics() if metrics is not None else None
            if source is not None:
                out[broker_id] = source
        return out

    def _extensible_families(self, k: "_Kinds", name: str,
                             sources: dict[str, ExtensibleMetricsSource]) -> Iterator[Any]:
        """ExtensibleLoadManagerImpl.getMetrics() of every Extensible broker but the five usages
        (already in their families above): one gauge family per name, `cluster` first. A cluster
        whose brokers run the Extensible load manager has no Modular leader: its cluster-wide
        unload and split counters are left out (their names are the Extensible ones, per broker)."""
        series = [s for broker_id in sorted(sources)
                  for s in extensible_series(broker_id, sources[broker_id])
                  if s.name not in _USAGE_NAMES]
        for metric_name, rows in group_by_name(series).items():
            g = k.gauge(metric_name, EXTENSIBLE_DOCS[metric_name],
                        labels=("cluster",) + tuple(key for key, _ in rows[0].labels))
            for row in rows:
                g.add_metric((name,) + tuple(v for _, v in row.labels), row.value)
            yield g

    def _simple_families(self, k: "_Kinds", name: str, live: list[tuple[str, Any]]) -> Iterator[Any]:
        """SimpleLoadManagerImpl.updateLoadBalancingMetrics: each broker's own rank and allocated-quota
        percentages `{cluster,broker}` (only brokers running it; nothing at all when none does)."""
        rows = []
        for broker_id, broker in live:
            metrics = broker.capabilities.load_balancing_metrics
            values = metrics.load_balancing_metrics() if metrics is not None else {}
            if values:
                rows.append((broker_id, values))
        if not rows:
            return
        for key, doc in _SIMPLE_GAUGES:
            g = k.gauge(f"pulsar_lb_{key}", doc, labels=("cluster", "broker"))
            for broker_id, values in rows:
                g.add_metric((name, broker_id), values[key])
            yield g

    def _bundle_families(self, k: "_Kinds", name: str, live: list[tuple[str, Any]]) -> Iterator[Any]:
        """updateLoadBalancingBundlesMetrics: one series set per bundle in the broker's latest stats."""
        for metric_name, attr, doc in _BUNDLE_GAUGES:
            g = k.gauge(metric_name, doc, labels=("cluster", "broker", "bundle", "metric"))
            for broker_id, broker in live:
                stats = broker.local_data.last_stats
                for bundle in sorted(stats):
                    g.add_metric((name, broker_id, bundle, "bundle"), getattr(stats[bundle], attr))
            yield g


def _owned_counts(live: list[Any]) -> tuple[list[int], list[int]]:
    """Per broker: topics loaded on its active bundles, and its active bundles (what
    `pulsar_broker_topics_count` and `pulsar_lb_emulator_bundles_count` read), in one walk of its
    bundles: a sample of the restart case walks 65,000 of them."""
    topics_out, bundles_out = [], []
    for br in live:
        topics = bundles = 0
        for o in br.owned.values():
            if o.active:
                bundles += 1
                actor = o.actor
                if actor is not None:
                    topics += len(actor.topics)
        topics_out.append(topics)
        bundles_out.append(bundles)
    return topics_out, bundles_out


class ClusterMetrics:
    """One cluster's metrics: `registry` for scrapes, `samples()` for the recorder, both the same data.

    Read on the event loop's thread (collecting walks live actor state)."""

    def __init__(self, cluster: "Cluster") -> None:
        self.cluster = cluster
        self.registry = CollectorRegistry(auto_describe=False)
        self.tally = _Tally(cluster)
        self._collector = _ClusterCollector(cluster, self.tally)
        self.registry.register(self._collector)
        self._layout: tuple[tuple[str, ...], tuple[str, ...]] | None = None
        self._keys: list[SeriesKey] = []

    def close(self) -> None:
        """Stop listening to the cluster's events (the registry stays readable)."""
        self.tally.close()

    def samples(self) -> Iterator[tuple[str, dict[str, str], float]]:
        """(sample name as exposed, labels, value) straight from `registry.collect()`."""
        for family in self.registry.collect():
            for sample in family.samples:
                yield sample.name, sample.labels, sample.value

    def rows(self) -> "Rows":
        """What `samples()` gives, in the same order, as (series key, value): for the recorder, which
        encodes each series' name and labels once; without the scrape-only families (the wall lag, the
        event marks). The registry holds this one collector only.

        The series of a sample change only with the live brokers and the brokers that decided an
        assignment, so their keys are built by `families` when those change and kept (the same key
        objects sample after sample, one `Rows.keys` list); each sample then computes the values
        alone (`_ClusterCollector.values`). A conf exposing bundle metrics has series per bundle:
        every sample goes through `families`."""
        collector = self._collector
        layout = collector.layout()
        if layout is None:
            return Rows([row for family in collector.families(_ROWS) for row in family.rows])
        if layout != self._layout:
            keys = [key for family in collector.families(_ROWS) for key, _ in family.rows]
            self._layout, self._keys = layout, keys
        values = collector.values(layout[0])
        keys = self._keys
        if len(values) != len(keys):    # a family the values do not know: a bug, caught by the tests
            raise AssertionError(f"metrics rows: {len(values)} values for {len(keys)} series")
        rows = Rows(zip(keys, values))
        rows.keys = keys
        rows.values = values
        return rows

    def exposition(self) -> bytes:
        """The Prometheus text format of the registry (what `/metrics` serves)."""
        return generate_latest(self.registry)

    def value(self, name: str, **labels: str) -> float | None:
        """One sample's value (first match on the given labels), for tests and summaries."""
        for sample_name, sample_labels, value in self.samples():
            if sample_name == name and all(sample_labels.get(k) == v for k, v in labels.items()):
                return value
        return None
