"""Publish latency: the fluid model's quantiles, send-timeout failures, the queue limit, and the
accounting fed by client events (ISSUE 19 item 5, "Publish latency")."""

from __future__ import annotations

import gzip
import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from emulator.cluster.events import (
    ClusterEvents,
    HandleClosed,
    HandleConnected,
    HandleDisconnected,
    HandleEvent,
    HandleReconnected,
)
from emulator.cluster.load_source import FlatLoad
from emulator.cluster.messages import HandleKind
from emulator.model.publish_latency import (
    QUANTILES,
    BaseLatency,
    PendingQueue,
    WaitBins,
    grouped_quantiles,
    mixture_quantiles,
    outage_outcome,
)
from emulator.observe.publish import PublishAccounting

TOPIC = "persistent://public/default/t0"


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t


def _fake_cluster(rate: float = 1000.0, msg_size: int = 1024, send_timeout: float = 30.0,
                  kinds: dict[int, HandleKind] | None = None) -> SimpleNamespace:
    """Just what the accounting reads: events, the clock, the load source, the clients' handles."""
    clock = _Clock()
    kinds = kinds or {1: HandleKind.PRODUCER}
    handles = {hid: SimpleNamespace(kind=kind) for hid, kind in kinds.items()}
    client = SimpleNamespace(handles=handles, settings=SimpleNamespace(send_timeout=send_timeout))
    return SimpleNamespace(events=ClusterEvents(clock, now=clock.now), system=SimpleNamespace(clock=clock),
                           load_source=FlatLoad(rate=rate, msg_size=msg_size), clients={"c": client},
                           clock=clock)


def _emit(cluster: SimpleNamespace, t: float, kind: type[HandleEvent], handle: int = 1,
          **fields: Any) -> None:
    cluster.clock.t = t
    cluster.events.emit(kind(client="c", topic=fields.pop("topic", TOPIC), handle=handle, **fields))


def _outage(cluster: SimpleNamespace, start: float, length: float, handle: int = 1) -> None:
    _emit(cluster, start, HandleDisconnected, handle, reason="closed by broker")
    _emit(cluster, start + length, HandleReconnected, handle, broker="b1", unavailable=length)


def test_a_two_second_outage_at_1000_msg_s_puts_p9999_past_1_9_s_and_leaves_p50_at_the_base():
    cluster = _fake_cluster(rate=1000.0)
    acc = PublishAccounting(cluster)
    _emit(cluster, 0.0, HandleConnected, broker="b1")
    _outage(cluster, 100.0, 2.0)
    cluster.clock.t = 600.0
    base = acc.base
    for line in (acc.stats(600.0).cluster, acc.per_topic(600.0)[0]):
        assert line.p9999 >= 1.9
        assert line.p50 == pytest.approx(base.quantile(0.5), rel=0.01)
        assert line.messages == pytest.approx(600_000.0)
        assert line.failed == 0.0
    [line] = acc.per_topic(600.0)
    assert line.topic == TOPIC


def test_without_an_outage_every_quantile_is_the_base_latency():
    cluster = _fake_cluster(rate=1000.0)
    acc = PublishAccounting(cluster)
    _emit(cluster, 0.0, HandleConnected, broker="b1")
    line = acc.stats(60.0).cluster
    assert [line.p50, line.p99, line.p999, line.p9999] == pytest.approx(
        [acc.base.quantile(p) for p in QUANTILES], rel=1e-6)


def test_sends_past_send_timeout_fail_in_batches_of_the_whole_queue():
    # ProducerImpl.run fails every pending message once the oldest passes sendTimeoutMs: a 70 s outage
    # at 1,000 msg/s fails what was sent in [0, 30) and [30, 60); the last 10 s wait for the reconnect
    cluster = _fake_cluster(rate=1000.0, send_timeout=30.0)
    acc = PublishAccounting(cluster)
    _emit(cluster, 0.0, HandleConnected, broker="b1")
    _outage(cluster, 100.0, 70.0)
    line = acc.stats(400.0).cluster
    assert line.failed_timeout == pytest.approx(60_000.0)
    assert line.failed_queue_full == 0.0
    assert line.messages == pytest.approx(400_000.0 - 60_000.0)
    assert 9.5 <= line.p9999 <= 10.1     # no acknowledged message waited more than the last 10 s
    assert acc.per_topic(400.0)[0].failed_timeout == pytest.approx(60_000.0)


def test_an_outage_still_running_counts_its_timed_out_batches_only():
    cluster = _fake_cluster(rate=100.0)
    acc = PublishAccounting(cluster)
    _emit(cluster, 0.0, HandleConnected, broker="b1")
    _emit(cluster, 10.0, HandleDisconnected, reason="connection dropped")
    line = acc.stats(45.0).cluster
    assert line.failed_timeout == pytest.approx(3000.0)     # [10, 40) failed at 40; [40, 45) pending
    assert line.messages == pytest.approx(1000.0)           # only what was acked before the outage


def test_a_full_queue_refuses_sends_at_once():
    queue = PendingQueue(max_pending_messages=500)
    out = outage_outcome(2.0, 2000.0, 1024.0, queue)
    assert out.delivered == 500.0 and out.failed_queue_full == 1500.0
    assert (out.wait_lo, out.wait_hi) == pytest.approx((1.5, 2.0))  # the first 500 sent waited longest
    # 64 MiB of 1 MiB messages: 64 fit
    big = outage_outcome(10.0, 1000.0, 1024.0 * 1024, PendingQueue())
    assert big.delivered == pytest.approx(64.0) and big.failed_queue_full == pytest.approx(936.0)


def test_a_producer_closed_while_disconnected_fails_its_pending_messages():
    cluster = _fake_cluster(rate=100.0)
    acc = PublishAccounting(cluster)
    _emit(cluster, 0.0, HandleConnected, broker="b1")
    _emit(cluster, 10.0, HandleDisconnected, reason="closed by broker")
    _emit(cluster, 15.0, HandleClosed, reason="application")
    line = acc.stats(20.0).cluster
    assert line.failed_closed == pytest.approx(500.0)
    assert line.messages == pytest.approx(1000.0)           # nothing published after the close


def test_consumers_publish_nothing_and_producers_share_their_topic():
    cluster = _fake_cluster(rate=1000.0, kinds={1: HandleKind.PRODUCER, 2: HandleKind.PRODUCER,
                                                3: HandleKind.CONSUMER})
    acc = PublishAccounting(cluster)
    for hid in (1, 2, 3):
        _emit(cluster, 0.0, HandleConnected, hid, broker="b1")
    _emit(cluster, 50.0, HandleDisconnected, 3, reason="closed by broker")   # a consumer: no effect
    _outage(cluster, 100.0, 70.0, handle=1)   # half the topic's messages wait
    line = acc.stats(200.0).cluster
    assert line.failed_timeout == pytest.approx(30_000.0)
    assert line.messages == pytest.approx(200_000.0 - 30_000.0)


def test_the_exact_mixture_matches_a_monte_carlo_sample():
    base = BaseLatency()
    rng = np.random.default_rng(7)
    direct = 200_000
    lat = np.concatenate([rng.lognormal(base.mu, base.sigma, direct),
                          rng.lognormal(base.mu, base.sigma, 4000) + rng.uniform(0.0, 2.0, 4000)])
    exact = mixture_quantiles(QUANTILES, base, float(direct), np.array([4000.0]), np.zeros(1), np.array([2.0]))
    assert exact == pytest.approx(np.quantile(lat, QUANTILES), rel=0.05)


def test_grouped_quantiles_equal_one_mixture_at_a_time():
    base = BaseLatency()
    direct = np.array([10_000.0, 500.0, 0.0])
    group = np.array([0, 0, 1, 2])
    n, lo, hi = np.array([100.0, 50.0, 10.0, 5.0]), np.array([0.0, 0.0, 0.5, 0.0]), np.array([2.0, 0.3, 1.0, 4.0])
    together = grouped_quantiles(QUANTILES, base, direct, group, n, lo, hi)
    for g in range(3):
        k = group == g
        alone = mixture_quantiles(QUANTILES, base, direct[g], n[k], lo[k], hi[k])
        assert together[g] == pytest.approx(alone, rel=1e-9, abs=1e-12)


def test_wait_bins_keep_the_cluster_tail_within_two_percent():
    base = BaseLatency()
    rng = np.random.default_rng(3)
    lengths = rng.uniform(0.1, 5.0, 2000)
    bins = WaitBins()
    for length in lengths:
        bins.add(100.0, 0.0, float(length))
    exact = mixture_quantiles(QUANTILES, base, 5e6, np.full(2000, 100.0), np.zeros(2000), lengths)
    binned = mixture_quantiles(QUANTILES, base, 5e6, *bins.windows())
    assert binned == pytest.approx(exact, rel=0.02)


def test_the_base_latency_is_log_normal_with_the_cited_median_and_p99():
    base = BaseLatency()
    assert base.quantile(0.5) == pytest.approx(0.003)
    assert base.quantile(0.99) == pytest.approx(0.009)
    assert math.isclose(float(base.cdf(np.array([0.003]))[0]), 0.5, rel_tol=1e-6)
    with pytest.raises(ValueError, match="median"):
        BaseLatency(median=0.01, p99=0.005)


# ---------------------------------------------------------------------- on an emulated cluster

NS = "public/default"


@pytest.mark.asyncio
async def test_the_histogram_is_exported_with_pulsars_buckets_and_a_crash_shows_in_the_tail():
    import anyio
    from prometheus_client.parser import text_string_to_metric_families

    from emulator.model.publish_latency import PUBLISH_LATENCY_BUCKETS
    from emulator.observe.metrics import ClusterMetrics
    from emulator.testing import emulated_cluster

    async with emulated_cluster(2, seed=6, namespaces={NS: 2}, load_source=FlatLoad(rate=1000.0)) as cluster:
        metrics = ClusterMetrics(cluster)
        outages: list[float] = []
        cluster.events.subscribe(lambda e: outages.append(e.unavailable)
                                 if isinstance(e, HandleReconnected) else None)
        client = cluster.add_client()
        names = [f"persistent://{NS}/p-{i}" for i in range(10)]
        client.create_handles(names)
        await cluster.wait_until(lambda: client.connected_count() == 10)
        await anyio.sleep(60.0)
        victim = next(b for b in cluster.live_brokers() if b != cluster.leader()
                      and any(o == b for o in cluster.ownership().values()))
        cluster.kill_broker(victim)
        await cluster.wait_until(lambda: client.stats.reconnects > 0, timeout=30)
        await cluster.wait_until(lambda: client.connected_count() == 10, timeout=300)
        await anyio.sleep(30.0)
        text = metrics.exposition().decode()
        fams = {f.name: f for f in text_string_to_metric_families(text)}
        hist = fams["pulsar_lb_emulator_publish_latency_seconds"]
        assert hist.type == "histogram"
        les = [s.labels["le"] for s in hist.samples if s.name.endswith("_bucket")]
        assert les == [repr(b) if b < 1 else "1.0" for b in PUBLISH_LATENCY_BUCKETS] + ["+Inf"]
        count = next(s.value for s in hist.samples if s.name.endswith("_count"))
        acc = cluster.publish_accounting
        line = acc.stats(cluster.system.clock.now()).cluster
        assert count == pytest.approx(line.messages)
        assert line.messages > 0.9 * 10 * 1000.0 * 90      # every producer at 1,000 msg/s
        assert outages and max(outages) > 0.1
        quantiles = {s.labels["quantile"]: s.value
                     for s in fams["pulsar_lb_emulator_publish_latency_quantile_seconds"].samples}
        assert set(quantiles) == {"0.5", "0.99", "0.999", "0.9999"}
        assert quantiles["0.5"] == pytest.approx(acc.base.quantile(0.5), rel=0.05)
        # a crash outage lasts past sendTimeoutMs: whole 30 s batches fail, the rest waits for the reconnect
        longest_wait = max(d % 30.0 for d in outages)
        assert 0.5 * longest_wait <= quantiles["0.9999"] <= longest_wait + 0.1
        failed = {s.labels["reason"]: s.value for s in fams["pulsar_lb_emulator_publish_failed"].samples}
        assert set(failed) == {"timeout", "queue_full", "closed"}
        assert failed["timeout"] == pytest.approx(line.failed_timeout)
        assert (failed["timeout"] > 0) == any(d >= 30.0 for d in outages)
        per_topic = {p.topic: p for p in acc.per_topic(cluster.system.clock.now())}
        assert set(per_topic) == set(names)
        hit = [p for p in per_topic.values() if p.p9999 > 0.1]
        assert hit and all(p.p9999 <= longest_wait + 0.1 for p in hit)


# ---------------------------------------------------------------------- a recorded run


def test_a_recorded_crash_run_puts_the_quantiles_in_the_summary_and_publish_jsonl(tmp_path):
    import io
    import json

    from emulator.observe.publish import PUBLISH_FILE
    from emulator.runner import RunOptions, run

    result = run(RunOptions(scenario="broker-crash", duration=720.0, record_dir=str(tmp_path),
                            check_interval=60.0), out=io.StringIO(), err=io.StringIO())
    assert result.violations == []
    s = result.summary
    assert s.publish is not None and s.publish.messages > 0
    assert s.publish.p9999 > s.publish.p50 > 0          # the crash's waits are in the tail
    assert s.publish_worst and s.publish_worst[0].p9999 >= s.publish.p9999 * 0.5
    text = result.summary_text
    assert "publish latency    p50 " in text and "p99.99 " in text and "failed sends" in text
    assert s.publish_worst[0].topic in text
    from emulator.observe.recording_files import iter_lines

    folder = next(tmp_path.glob("*/run.json")).parent
    lines = [json.loads(x) for x in iter_lines(folder, PUBLISH_FILE)]   # publish.jsonl.gz
    cluster, topics = lines[0], lines[1:]
    assert cluster["topic"] == "" and cluster["p9999"] == pytest.approx(s.publish.p9999)
    assert len(topics) == 600 and topics == sorted(topics, key=lambda x: x["topic"])
    assert {"p50", "p99", "p999", "p9999", "failed_timeout", "failed_queue_full", "failed_closed",
            "messages"} <= set(cluster)
    assert sum(t["messages"] for t in topics) == pytest.approx(cluster["messages"], rel=1e-3)
    assert sum(t["failed_timeout"] for t in topics) == pytest.approx(cluster["failed_timeout"])
    samples = gzip.decompress(next(tmp_path.glob("*/samples.jsonl.gz")).read_bytes()).decode()
    assert '"pulsar_lb_emulator_publish_latency_seconds_bucket"' in samples


def test_the_tabulated_mixture_gives_the_exact_quantiles_to_half_a_percent():
    from emulator.model.publish_latency import (
        PUBLISH_LATENCY_BUCKETS,
        TabulatedMixture,
        mixture_cdf,
    )

    base = BaseLatency()
    rng = np.random.default_rng(11)
    n, lo, hi = rng.uniform(10, 500, 300), np.zeros(300), rng.uniform(0.05, 28.0, 300)
    lo[:20] = hi[:20] * 0.5
    tab = TabulatedMixture(base, n, lo, hi, PUBLISH_LATENCY_BUCKETS)
    for direct in (1e4, 1e6, 1e8):
        exact = mixture_quantiles(QUANTILES, base, direct, n, lo, hi)
        assert tab.quantiles(QUANTILES, direct) == pytest.approx(exact, rel=0.005)
        total = direct + n.sum()
        counts = mixture_cdf(np.asarray(PUBLISH_LATENCY_BUCKETS), base, direct, n, lo, hi) * total
        assert tab.counts(direct) == pytest.approx(counts, rel=1e-9)
