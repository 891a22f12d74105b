"""Operation latencies: topic-load queueing at maxConcurrentTopicLoadRequest, seeded draws, the model."""

from __future__ import annotations

import msgspec
import pytest

from emulator.cluster.cluster import ClusterSettings
from emulator.cluster.latency import Constant, Latencies, LatencySampler, LogNormal, Uniform
from emulator.model.config import ServiceConfig
from emulator.testing import emulated_cluster
from emulator.cluster.events import HandleConnected, HandleReconnected

NS = "public/default"
LOAD = 1.0   # seconds per topic load in these tests: large, so the waves are plain to see


def topics(n: int) -> list[str]:
    return [f"persistent://{NS}/t-{i}" for i in range(n)]


def settings(**changes: object) -> ClusterSettings:
    return ClusterSettings(latency=msgspec.structs.replace(Latencies.zero(), **changes))


async def connect_and_unload(limit: int, n: int = 6, *, topic_load: object = Constant(LOAD),
                             seed: int = 3) -> tuple[list[float], list[float]]:
    """n producers on one broker's one bundle; returns (first connect times, unavailable times after
    the bundle is unloaded and loaded again)."""
    conf = ServiceConfig(max_concurrent_topic_load_request=limit)
    async with emulated_cluster(1, seed=seed, namespaces={NS: 1}, conf=conf,
                                settings=settings(topic_load=topic_load)) as cluster:
        connected: list[float] = []
        downs: list[float] = []
        cluster.events.subscribe(lambda e: connected.append(e.t) if isinstance(e, HandleConnected)
                                 else downs.append(e.unavailable) if isinstance(e, HandleReconnected)
                                 else None)
        client = cluster.add_client()
        start = cluster.system.clock.now()
        client.create_handles(topics(n))
        await cluster.wait_until(lambda: client.connected_count() == n, timeout=60)
        (bundle,) = cluster.ownership()
        assert (await cluster.unload_bundle(bundle)).ok
        await cluster.wait_until(lambda: len(downs) == n, timeout=60)
        return [t - start for t in connected], downs


@pytest.mark.asyncio
async def test_topic_loads_beyond_max_concurrent_topic_load_request_wait_for_a_permit():
    connected, downs = await connect_and_unload(limit=2)
    # 2 permits, 6 topics of 1 s each: three waves, 1 s apart (pendingTopicLoadingQueue, FIFO)
    waves = sorted(round(t) for t in connected)
    assert waves == [1, 1, 2, 2, 3, 3]
    # after the unload the new owner loads them again, in the same waves: outages grow with the queue
    assert sorted(round(d) for d in downs) == [1, 1, 2, 2, 3, 3]

    unqueued_connected, unqueued_downs = await connect_and_unload(limit=5000)
    assert all(round(t) == 1 for t in unqueued_connected)
    assert max(unqueued_downs) < 1.5 and max(downs) > 2 * max(unqueued_downs)


@pytest.mark.asyncio
async def test_producers_of_a_loading_topic_share_its_load():
    conf = ServiceConfig(max_concurrent_topic_load_request=1)
    async with emulated_cluster(1, seed=4, namespaces={NS: 1}, conf=conf,
                                settings=settings(topic_load=Constant(LOAD))) as cluster:
        client = cluster.add_client()
        start = cluster.system.clock.now()
        client.create_handles(topics(1), per_topic=3)
        await cluster.wait_until(lambda: client.connected_count() == 3, timeout=60)
        assert cluster.system.clock.now() - start == pytest.approx(LOAD, abs=0.15)
        broker = next(iter(cluster.brokers.values()))
        assert broker.topic_loader.queued_total == 0 and broker.topic_loader.active == 0


@pytest.mark.asyncio
async def test_zero_latency_serves_every_attach_at_once():
    async with emulated_cluster(1, seed=5, namespaces={NS: 1},
                                conf=ServiceConfig(max_concurrent_topic_load_request=1)) as cluster:
        client = cluster.add_client()
        start = cluster.system.clock.now()
        client.create_handles(topics(20))
        await cluster.wait_until(lambda: client.connected_count() == 20, poll=0.001)
        assert cluster.system.clock.now() - start < 0.01


@pytest.mark.asyncio
async def test_latency_draws_are_deterministic_per_seed():
    spread = LogNormal(0.2, 2.0)
    a = await connect_and_unload(limit=2, topic_load=spread, seed=11)
    b = await connect_and_unload(limit=2, topic_load=spread, seed=11)
    c = await connect_and_unload(limit=2, topic_load=spread, seed=12)
    # same seed: the same draws (times relative to each run's start: the runs share this test's loop,
    # so their absolute times differ and the differences may round in the last bit); another seed:
    # other draws
    assert a[0] == pytest.approx(b[0], abs=1e-9) and a[1] == pytest.approx(b[1], abs=1e-9)
    assert a[0] != pytest.approx(c[0], abs=1e-3)


def test_sampler_streams_are_per_seed_and_name():
    lat = Latencies()
    draws = [LatencySampler(lat, seed, name) for seed, name in ((1, "x"), (1, "x"), (2, "x"), (1, "y"))]
    seqs = [[s("topic_load") for _ in range(5)] for s in draws]
    assert seqs[0] == seqs[1] and seqs[0] != seqs[2] and seqs[0] != seqs[3]


def test_lognormal_has_its_median_and_p99():
    s = LatencySampler(msgspec.structs.replace(Latencies(), topic_load=LogNormal(0.02, 0.2)), 7, "t")
    xs = sorted(s("topic_load") for _ in range(20000))
    assert xs[10000] == pytest.approx(0.02, rel=0.05)
    assert xs[19800] == pytest.approx(0.2, rel=0.1)


def test_max_of_concurrent_draws_is_the_slowest_one():
    s = LatencySampler(Latencies(), 7, "close")
    d = LogNormal(0.01, 0.1)
    one = sorted(d.max_of(1, s.rng) for _ in range(4000))
    many = sorted(d.max_of(1000, s.rng) for _ in range(4000))
    assert one[2000] == pytest.approx(0.01, rel=0.1)
    assert many[2000] > 0.1      # the median of 1000 draws' maximum is beyond the p99 of one
    assert Constant(0.5).max_of(1000, s.rng) == 0.5 and Constant(0.5).max_of(0, s.rng) == 0.0
    assert 0.9 < Uniform(0.0, 1.0).max_of(100, s.rng) <= 1.0


def test_every_default_is_nonzero_and_zero_is_zero():
    for name in msgspec.structs.fields(Latencies):
        assert not getattr(Latencies(), name.name).is_zero, name.name
    z = Latencies.zero()
    assert all(getattr(z, f.name) == Constant(0.0) for f in msgspec.structs.fields(Latencies))


@pytest.mark.asyncio
async def test_load_report_ticks_keep_a_fixed_rate_whatever_the_write_costs():
    """LoadReportUpdaterTask runs at a fixed rate (scheduleAtFixedRate): with a 0.4 s metadata write
    every tick still falls on start + k x 5 s; a fixed delay after each write would drift 0.4 s per
    cycle (and every broker by its own latency). A max interval of 0 makes every tick write."""
    conf = ServiceConfig(load_balancer_report_update_max_interval_minutes=0)
    async with emulated_cluster(2, seed=5, namespaces={NS: 2}, conf=conf,
                                settings=settings(metadata_op=Constant(0.4))) as cluster:
        ticks: dict[str, list[float]] = {b: [] for b in cluster.live_brokers()}
        written: dict[str, list[float]] = {b: [] for b in cluster.live_brokers()}
        for b, broker in cluster.brokers.items():
            lm = broker.load_manager
            tick = lm.report_tick   # the load manager's tick (broker.py's report ticks call it)
            report_written = lm._report_written

            def spy(then, b: str = b, tick=tick) -> None:   # type: ignore[no-untyped-def]
                ticks[b].append(cluster.system.clock.now())
                tick(then)

            def on_written(stat, b: str = b, report_written=report_written) -> None:  # type: ignore[no-untyped-def]
                written[b].append(cluster.system.clock.now())
                report_written(stat)

            lm.report_tick = spy
            lm._report_written = on_written
        await cluster.wait_until(lambda: all(len(t) >= 13 for t in ticks.values()), timeout=120)
    for b, t in ticks.items():
        gaps = [later - earlier for earlier, later in zip(t, t[1:])]
        assert gaps == pytest.approx([5.0] * len(gaps), abs=1e-6), (b, gaps)
        # every tick wrote, each 0.4 s after its tick
        lags = [w - x for w, x in zip(written[b], t)]
        assert len(lags) >= 12 and lags == pytest.approx([0.4] * len(lags), abs=1e-6), (b, lags)
