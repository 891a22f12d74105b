"""Pulsar's metric families with their types and labels; counters agree with the decision log."""

from __future__ import annotations

import math
from typing import Any

import anyio
import prometheus_client
import pytest

from emulator.cluster.events import HandleReconnected
from emulator.cluster.load_source import FlatLoad
from emulator.model.config import ServiceConfig
from emulator.observe.metrics import SCRAPE_ONLY, ClusterMetrics
from emulator.testing import emulated_cluster

NS = "public/default"
HOT = "broker-5:8080"

B = {"cluster", "broker"}
LB = {"cluster", "broker", "metric"}
C = {"cluster"}
EXPECTED = {
    # name: (type, labels of every sample apart from quantile/le)
    "pulsar_lb_cpu_usage": ("gauge", LB),
    "pulsar_lb_memory_usage": ("gauge", LB),
    "pulsar_lb_directMemory_usage": ("gauge", LB),
    "pulsar_lb_bandwidth_in_usage": ("gauge", LB),
    "pulsar_lb_bandwidth_out_usage": ("gauge", LB),
    "pulsar_lb_unload_broker_total": ("gauge", {"cluster", "metric"}),   # Pulsar types them gauge
    "pulsar_lb_unload_bundle_total": ("gauge", {"cluster", "metric"}),
    "pulsar_lb_bundles_split_total": ("gauge", {"cluster", "metric"}),
    "pulsar_broker_lookup": ("summary", B),
    "pulsar_broker_lookup_answers": ("counter", B),
    "pulsar_broker_lookup_redirects": ("counter", B),
    "pulsar_broker_lookup_failures": ("counter", B),
    "pulsar_broker_lookup_pending_requests": ("gauge", B),
    "pulsar_broker_load_manager_bundle_assigment": ("summary", B),
    "pulsar_broker_topics_count": ("gauge", B),
    "pulsar_broker_producers_count": ("gauge", B),
    "pulsar_broker_consumers_count": ("gauge", B),
    "pulsar_broker_rate_in": ("gauge", B),
    "pulsar_broker_rate_out": ("gauge", B),
    "pulsar_broker_throughput_in": ("gauge", B),
    "pulsar_broker_throughput_out": ("gauge", B),
    "pulsar_topic_load_times": ("summary", B),
    "pulsar_lb_emulator_time_seconds": ("gauge", C),
    "pulsar_lb_emulator_broker_max_usage": ("gauge", B),
    "pulsar_lb_emulator_bundles_count": ("gauge", B),
    "pulsar_lb_emulator_is_leader": ("gauge", B),
    "pulsar_lb_emulator_lookup_rejected": ("counter", B),
    "pulsar_lb_emulator_leader_changes": ("counter", C),
    "pulsar_lb_emulator_bundle_moves": ("counter", C),
    "pulsar_lb_emulator_reconnects": ("counter", C),
    "pulsar_lb_emulator_disconnects": ("counter", C),
    "pulsar_lb_emulator_unavailable_topic_seconds": ("counter", C),
    "pulsar_lb_emulator_disconnected_handles": ("gauge", C),
    "pulsar_lb_emulator_actor_failures": ("counter", C),
    "pulsar_lb_emulator_placement_failures": ("counter", C),
    "pulsar_lb_emulator_shedding_failures": ("counter", C),
    "pulsar_lb_emulator_client_lookups": ("counter", C),
    "pulsar_lb_emulator_client_lookup_redirects": ("counter", C),
    "pulsar_lb_emulator_client_lookup_failures": ("counter", C),
    "pulsar_lb_emulator_redirects_per_lookup": ("gauge", C),
    "pulsar_lb_emulator_reconnect_latency_seconds": ("histogram", C),
    "pulsar_lb_emulator_load_report_age_seconds": ("histogram", C),
}
BUNDLE_FAMILIES = ("pulsar_bundle_msg_rate_in", "pulsar_bundle_msg_rate_out", "pulsar_bundle_topics_count",
                   "pulsar_bundle_consumer_count", "pulsar_bundle_producer_count",
                   "pulsar_bundle_msg_throughput_in", "pulsar_bundle_msg_throughput_out")
# the sample names the Spark roll-up reads (interfaces.md "Metric families the roll-up relies on")
ROLLUP_SAMPLES = (
    "pulsar_lb_cpu_usage", "pulsar_lb_memory_usage", "pulsar_lb_directMemory_usage",
    "pulsar_lb_bandwidth_in_usage", "pulsar_lb_bandwidth_out_usage", "pulsar_broker_rate_in",
    "pulsar_broker_rate_out", "pulsar_broker_throughput_in", "pulsar_broker_throughput_out",
    "pulsar_broker_topics_count", "pulsar_lb_emulator_broker_max_usage", "pulsar_lb_unload_bundle_total",
    "pulsar_lb_bundles_split_total", "pulsar_broker_lookup_answers_total", "pulsar_broker_lookup_redirects_total",
    "pulsar_broker_lookup_failures_total", "pulsar_lb_emulator_unavailable_topic_seconds_total",
    "pulsar_lb_emulator_bundle_moves_total", "pulsar_lb_emulator_reconnects_total",
    "pulsar_lb_emulator_time_seconds",
)


def topics(n: int, prefix: str = "t") -> list[str]:
    return [f"persistent://{NS}/{prefix}-{i}" for i in range(n)]


def families(metrics: ClusterMetrics) -> dict[str, object]:
    return {f.name: f for f in metrics.registry.collect()}


def total(metrics: ClusterMetrics, name: str) -> float:
    return sum(v for n, _, v in metrics.samples() if n == name)


@pytest.mark.asyncio
async def test_every_family_appears_with_pulsars_type_and_labels():
    conf = ServiceConfig(expose_bundles_metrics_in_prometheus=True)
    async with emulated_cluster(3, seed=3, namespaces={NS: 8}, conf=conf) as cluster:
        metrics = ClusterMetrics(cluster)
        client = cluster.add_client()
        client.create_handles(topics(40))
        await cluster.wait_until(lambda: client.connected_count() == 40)
        await anyio.sleep(70)   # the bundles reach the reports at the first stats update (60 s)
        found = families(metrics)
        live = set(cluster.live_brokers())
        for name, (kind, labels) in EXPECTED.items():
            family = found.get(name)
            assert family is not None, f"{name} missing"
            assert family.type == kind, f"{name}: type {family.type}, expected {kind}"
            assert family.samples, f"{name} has no sample"
            for s in family.samples:
                assert set(s.labels) - {"quantile", "le"} == labels, f"{name}: labels {s.labels}"
                assert s.labels["cluster"] == cluster.name
            if "broker" in labels and name != "pulsar_broker_load_manager_bundle_assigment":
                assert {s.labels["broker"] for s in family.samples} == live, name
        for name in BUNDLE_FAMILIES:
            family = found[name]
            assert family.type == "gauge"
            bundles = {s.labels["bundle"] for s in family.samples}
            assert bundles == set(cluster.ownership()), name
            assert all(s.labels["metric"] == "bundle" for s in family.samples)
        names = {n for n, _, _ in metrics.samples()}
        assert set(ROLLUP_SAMPLES) <= names, set(ROLLUP_SAMPLES) - names
        assert not any(n.endswith("_created") for n in names), "wall-clock _created samples leak in"
        # usages are Pulsar's float32 percentages of the broker's latest local data
        b = cluster.brokers["broker-2:8080"]
        assert metrics.value("pulsar_lb_cpu_usage", broker="broker-2:8080") == b.local_data.cpu.percent_usage()
        assert metrics.value("pulsar_lb_emulator_broker_max_usage", broker="broker-2:8080") == pytest.approx(
            b.local_data.weighted_max_usage(cluster.conf) * 100)
        assert total(metrics, "pulsar_broker_topics_count") == 40
        assert total(metrics, "pulsar_lb_emulator_bundles_count") == 8
        assert total(metrics, "pulsar_lb_emulator_is_leader") == 1
        assert metrics.value("pulsar_lb_emulator_is_leader", broker=cluster.leader()) == 1
        assert metrics.value("pulsar_lb_emulator_time_seconds") == cluster.system.clock.now()
        # the exposition carries Pulsar's names (counters as <name>_total, the misspelt summary)
        text = metrics.exposition().decode()
        assert "# TYPE pulsar_lb_unload_bundle_total gauge" in text
        assert "counter" in next(line for line in text.splitlines()
                                 if line.startswith("# TYPE pulsar_broker_lookup_answers"))
        assert "\npulsar_broker_lookup_answers_total{" in text
        assert "pulsar_broker_load_manager_bundle_assigment_count{" in text
        metrics.close()


@pytest.mark.asyncio
async def test_bundle_metrics_are_opt_in():
    async with emulated_cluster(2, seed=4, namespaces={NS: 4}) as cluster:
        metrics = ClusterMetrics(cluster)
        client = cluster.add_client()
        client.create_handles(topics(10))
        await cluster.wait_until(lambda: client.connected_count() == 10)
        await anyio.sleep(10)
        assert not any(n.startswith("pulsar_bundle_") for n in families(metrics))
        cluster.set_config("exposeBundlesMetricsInPrometheus", True)   # dynamic, read at collect time
        assert "pulsar_bundle_msg_rate_in" in families(metrics)


@pytest.mark.asyncio
async def test_counters_match_the_decision_log():
    """A hot 1-core broker sheds; bundles with > 30 topics split; every counter agrees with the log."""
    conf = ServiceConfig(load_balancer_namespace_bundle_max_topics=30)
    load = FlatLoad(rate=800.0, msg_size=1024, cores=4, broker_cores={HOT: 1})
    async with emulated_cluster(5, seed=51, namespaces={NS: 16}, conf=conf, load_source=load) as cluster:
        metrics = ClusterMetrics(cluster)
        reconnected: list[HandleReconnected] = []
        cluster.events.subscribe(lambda e: reconnected.append(e) if isinstance(e, HandleReconnected) else None)
        client = cluster.add_client()
        client.create_handles(topics(400))
        await cluster.wait_until(lambda: client.connected_count() == 400, timeout=120)
        await anyio.sleep(20 * 60)
        await cluster.wait_until(lambda: client.connected_count() == 400, timeout=120)
        log = cluster.decision_log

        unloads = log.of("unload")
        assert unloads, "the hot broker never shed"
        assert metrics.value("pulsar_lb_unload_bundle_total") == len(unloads)
        per_cycle, cycle = 0, set()
        for e in log.entries:
            if e["decision"] == "shedding_plan":
                cycle = set()
            elif e["decision"] == "unload" and e["broker"] not in cycle:
                cycle.add(e["broker"])
                per_cycle += 1
        assert metrics.value("pulsar_lb_unload_broker_total") == per_cycle
        splits = [e for e in log.of("split") if e["ok"]]
        assert splits, "no bundle was split"
        assert metrics.value("pulsar_lb_bundles_split_total") == len(splits)
        # every selectBrokerForAssignment call: the decisions, and the calls a preallocation answered
        # (no decision-log record: one record per assignment)
        repeated = cluster.events.counts["assignment_repeated"]
        assert repeated > 0
        assert total(metrics, "pulsar_broker_load_manager_bundle_assigment_count") == len(
            [e for e in log.of("assignment") if not e.get("affinity")]) + repeated
        assert metrics.value("pulsar_lb_emulator_bundle_moves_total") >= len(unloads)

        assert metrics.value("pulsar_lb_emulator_reconnects_total") == len(reconnected) > 0
        assert metrics.value("pulsar_lb_emulator_disconnected_handles") == 0
        assert metrics.value("pulsar_lb_emulator_unavailable_topic_seconds_total") == pytest.approx(
            sum(e.unavailable for e in reconnected))
        assert metrics.value("pulsar_lb_emulator_reconnect_latency_seconds_count") == len(reconnected)
        plans = len(log.of("shedding_plan"))
        assert 0 < metrics.value("pulsar_lb_emulator_load_report_age_seconds_count") <= plans * 5

        counts = cluster.lookup_counts()
        assert total(metrics, "pulsar_broker_lookup_answers_total") == counts["answers"]
        assert total(metrics, "pulsar_broker_lookup_redirects_total") == counts["redirects"]
        assert total(metrics, "pulsar_broker_lookup_failures_total") == counts["failures"] - counts["too_many"]
        assert total(metrics, "pulsar_broker_lookup_count") == (
            counts["answers"] + counts["redirects"] + counts["failures"] - counts["too_many"])
        client_lookups = client.stats.lookups
        assert metrics.value("pulsar_lb_emulator_client_lookups_total") == client_lookups
        assert metrics.value("pulsar_lb_emulator_redirects_per_lookup") == pytest.approx(
            client.stats.lookup_redirects / client_lookups)
        assert total(metrics, "pulsar_topic_load_times_count") >= 400


@pytest.mark.asyncio
async def test_a_dead_broker_exports_nothing_and_the_new_leader_is_counted():
    async with emulated_cluster(3, seed=5, namespaces={NS: 6}) as cluster:
        metrics = ClusterMetrics(cluster)
        client = cluster.add_client()
        client.create_handles(topics(30))
        await cluster.wait_until(lambda: client.connected_count() == 30)
        assert metrics.value("pulsar_lb_emulator_leader_changes_total") == 1
        first = cluster.leader()
        cluster.kill_broker(first)
        await cluster.wait_until(lambda: cluster.leader() not in (None, first), timeout=120)
        await cluster.wait_until(lambda: client.connected_count() == 30, timeout=300)
        assert metrics.value("pulsar_lb_emulator_leader_changes_total") == 2
        assert metrics.value("pulsar_lb_cpu_usage", broker=first) is None
        assert {labels["broker"] for n, labels, _ in metrics.samples() if n == "pulsar_lb_cpu_usage"} == set(
            cluster.live_brokers())
        # every bundle of the dead broker moved, and its producers were unavailable for a while
        assert metrics.value("pulsar_lb_emulator_bundle_moves_total") >= 1
        assert metrics.value("pulsar_lb_emulator_unavailable_topic_seconds_total") > 0


@pytest.mark.asyncio
async def test_unavailable_seconds_grow_during_an_outage_and_never_decrease():
    async with emulated_cluster(2, seed=6, namespaces={NS: 2}) as cluster:
        metrics = ClusterMetrics(cluster)
        client = cluster.add_client()
        client.create_handles(topics(10))
        await cluster.wait_until(lambda: client.connected_count() == 10)
        victim = next(b for b in cluster.live_brokers() if b != cluster.leader()
                      and any(o == b for o in cluster.ownership().values()))
        cluster.kill_broker(victim)
        await cluster.wait_until(lambda: metrics.value("pulsar_lb_emulator_disconnected_handles") > 0, timeout=30)
        down = metrics.value("pulsar_lb_emulator_disconnected_handles")
        first = metrics.value("pulsar_lb_emulator_unavailable_topic_seconds_total")
        await anyio.sleep(2.0)
        second = metrics.value("pulsar_lb_emulator_unavailable_topic_seconds_total")
        assert metrics.value("pulsar_lb_emulator_disconnected_handles") == down   # nobody back yet
        assert second == pytest.approx(first + 2.0 * down)
        assert second > first
        await cluster.wait_until(lambda: client.connected_count() == 10, timeout=300)
        values = [metrics.value("pulsar_lb_emulator_unavailable_topic_seconds_total") for _ in range(3)]
        assert values == sorted(values) and values[0] >= second


@pytest.mark.asyncio
async def test_two_clusters_in_one_process_have_separate_registries():
    async with emulated_cluster(2, seed=7, namespaces={NS: 2}, name="east") as east, \
            emulated_cluster(3, seed=8, namespaces={NS: 2}, name="west") as west:
        m_east, m_west = ClusterMetrics(east), ClusterMetrics(west)
        assert m_east.registry is not m_west.registry
        assert m_east.registry is not prometheus_client.REGISTRY
        client = west.add_client()
        client.create_handles(topics(5))
        await west.wait_until(lambda: client.connected_count() == 5)
        east_brokers = {labels["broker"] for n, labels, _ in m_east.samples() if n == "pulsar_lb_cpu_usage"}
        west_brokers = {labels["broker"] for n, labels, _ in m_west.samples() if n == "pulsar_lb_cpu_usage"}
        assert len(east_brokers) == 2 and len(west_brokers) == 3
        assert {labels["cluster"] for _, labels, _ in m_east.samples()} == {"east"}
        assert {labels["cluster"] for _, labels, _ in m_west.samples()} == {"west"}
        assert total(m_west, "pulsar_broker_lookup_answers_total") > 0
        assert total(m_east, "pulsar_broker_lookup_answers_total") == 0
        # nothing was registered process-wide
        assert not any(m.name.startswith("pulsar_") for m in prometheus_client.REGISTRY.collect())


def test_recorder_rows_are_the_samples_prometheus_client_makes():
    """The recorder's light families give the same sample names, labels and values, in order."""
    from prometheus_client.core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
        SummaryMetricFamily,
    )

    from emulator.observe.metrics import _ROWS

    def same(real: Any, light: Any) -> None:
        want = [(s.name, s.labels, s.value) for s in real.samples]
        got = [(name, dict(zip(names, values)), v) for (name, names, values), v in light.rows]
        assert got == want

    for name in ("x", "x_total"):
        real, light = CounterMetricFamily(name, "d", labels=("a", "b")), _ROWS.counter(name, "d", labels=("a", "b"))
        for f in (real, light):
            f.add_metric(("1", "2"), 3.0)
            f.add_metric(("4", "5"), 6, created=7.0)
        same(real, light)
    real, light = GaugeMetricFamily("g", "d", labels=("a",)), _ROWS.gauge("g", "d", labels=("a",))
    for f in (real, light):
        f.add_metric(("1",), math.nan)
        f.add_metric(("2", "extra"), 1)       # zip: the shorter wins
    same(real, light)
    real, light = SummaryMetricFamily("s", "d", labels=("a",)), _ROWS.summary("s", "d", labels=("a",))
    for f in (real, light):
        f.add_metric(("1",), count_value=2, sum_value=0.5)
    same(real, light)
    for buckets, total_ in (([("0.5", 1.0), ("+Inf", 3.0)], 2.5), ([("0.5", 1.0), ("+Inf", 3.0)], None),
                            ([("-1.0", 1.0), ("+Inf", 3.0)], 2.5)):
        real, light = HistogramMetricFamily("h", "d", labels=("a",)), _ROWS.histogram("h", "d", labels=("a",))
        for f in (real, light):
            f.add_metric(("1",), buckets, total_)
        same(real, light)


@pytest.mark.asyncio
async def test_rows_equal_samples_on_a_live_cluster():
    conf = ServiceConfig(expose_bundles_metrics_in_prometheus=True, load_balancer_namespace_bundle_max_topics=30)
    load = FlatLoad(rate=800.0, msg_size=1024, cores=4, broker_cores={HOT: 1})
    async with emulated_cluster(5, seed=52, namespaces={NS: 16}, conf=conf, load_source=load) as cluster:
        metrics = ClusterMetrics(cluster)
        client = cluster.add_client()
        client.create_handles(topics(200))
        for _ in range(8):
            await anyio.sleep(60)
            rows = [(name, dict(zip(names, values)), v) for (name, names, values), v in metrics.rows()]
            samples = [s for s in metrics.samples() if s[0] not in SCRAPE_ONLY]   # rows leave those out
            assert rows == samples and any(n.endswith("_bucket") for n, _, _ in rows)
        metrics.close()


def _typed(rows: list[Any]) -> list[tuple[Any, Any, type]]:
    return [(key, value, type(value)) for key, value in rows]


@pytest.mark.asyncio
async def test_cached_rows_equal_the_families_value_and_type_across_layout_changes():
    """`rows()` keeps the series keys of a layout and computes the values alone: the same keys,
    values and value types (an int encodes as 3, a float as 3.0) as building every family, before
    and after a broker dies (a new layout), and the very same key list while the layout holds."""
    from emulator.observe.metrics import _ROWS

    async with emulated_cluster(4, seed=11, namespaces={NS: 8}) as cluster:
        metrics = ClusterMetrics(cluster)
        client = cluster.add_client()
        client.create_handles(topics(40))
        await cluster.wait_until(lambda: client.connected_count() == 40)
        key_lists = []
        for step in range(6):
            if step == 3:
                cluster.kill_broker(next(b for b in cluster.live_brokers() if b != cluster.leader()))
            await anyio.sleep(30)
            rows = metrics.rows()
            families = [row for family in metrics._collector.families(_ROWS) for row in family.rows]
            assert _typed(rows) == _typed(families)
            assert rows.keys is not None and rows.values == [v for _, v in families]
            key_lists.append(rows.keys)
        assert key_lists[1] is key_lists[0] and key_lists[5] is key_lists[4]
        assert len(key_lists[5]) < len(key_lists[0])      # the dead broker's series are gone
        metrics.close()


@pytest.mark.asyncio
async def test_capacity_queues_show_a_storm_and_the_fast_rows_equal_the_families():
    """With the calibrated capacities, a lookup storm fills the ZooKeeper leader's and the brokers'
    queues (pulsar_lb_emulator_capacity_*), the recorder's fast rows equal building every family, and
    reading them changes nothing: the same run unobserved ends in the same ownership."""
    from emulator.cluster.capacity import Capacity
    from emulator.cluster.cluster import ClusterSettings
    from emulator.observe.metrics import _ROWS

    async def storm(observe: bool) -> tuple[dict[str, str], float, float]:
        settings = ClusterSettings(capacity=Capacity())
        conf = ServiceConfig(metadata_store_batching_enabled=False)
        async with emulated_cluster(4, seed=13, namespaces={NS: 64}, settings=settings, conf=conf) as cluster:
            metrics = ClusterMetrics(cluster) if observe else None
            client = cluster.add_client()
            client.create_handles(topics(400))
            peak = jobs = 0.0
            for _ in range(40):
                await anyio.sleep(0.002)
                if metrics is not None:
                    rows = metrics.rows()
                    families = [row for family in metrics._collector.families(_ROWS) for row in family.rows]
                    assert _typed(rows) == _typed(families)
                    queued = {k[2]: v for k, v in rows if k[0] == "pulsar_lb_emulator_capacity_queued"}
                    peak = max(peak, queued[(cluster.name, "", "zookeeper-leader")])
            await cluster.wait_until(lambda: client.connected_count() == 400)
            if metrics is not None:
                jobs = metrics.value("pulsar_lb_emulator_capacity_jobs_total", cluster=cluster.name, broker="",
                                     queue="zookeeper-leader") or 0.0
                metrics.close()
            return dict(cluster.ownership()), peak, jobs

    owners, peak, jobs = await storm(observe=True)
    assert peak > 0 and jobs >= 64, "the leader's queue held writes during the storm"
    assert (await storm(observe=False))[0] == owners
