"""Pulsar's sampling clocks between traffic and the leader: stats periods, host-usage samples, and the
split check that runs on what they deliver (stats_window.py, broker.py, leader.py)."""

from __future__ import annotations

import math

import anyio
import numpy as np
import msgspec
import pytest

from emulator.cluster.load_source import FlatLoad, SystemUsage, TrafficCurves
from emulator.cluster.stats_window import BrokerWindows
from emulator.model.config import ServiceConfig
from emulator.model.loaddata import NamespaceBundleStats, ResourceUsage, default_bundle_stats
from emulator.runtime import DEFAULT_START_EPOCH_MS
from emulator.testing import emulated_cluster
from emulator.cluster.events import BundleSplit, LoadReportWritten

NS = "public/default"


def topics(n: int) -> list[str]:
    return [f"persistent://{NS}/t-{i}" for i in range(n)]


def _stats(rate: float, topics: int = 1, producers: int = 1) -> NamespaceBundleStats:
    return NamespaceBundleStats(rate, 2 * rate, 1000 * rate, 2000 * rate, 0, producers, topics)


class _CpuIsRateIn:
    """system_usage whose CPU is the broker's msg rate in and bandwidth its throughput in."""

    def bundle_stats(self, broker_id, now, bundles):  # pragma: no cover - not used
        raise AssertionError

    def system_usage(self, broker_id, now, stats) -> SystemUsage:
        rin = sum(s.msg_rate_in for s in stats.values())
        thr = sum(s.msg_throughput_in for s in stats.values())
        r = ResourceUsage
        return SystemUsage(cpu=r(usage=rin, limit=1e9), memory=r(usage=rin, limit=1e9),
                           direct_memory=r(usage=0.0, limit=1.0), bandwidth_in=r(usage=thr, limit=1e12),
                           bandwidth_out=r(usage=0.0, limit=1e12))


def test_a_period_publishes_time_means_counts_of_the_moment_and_the_present_bundles():
    w = BrokerWindows("b", _CpuIsRateIn(), now=0.0)
    w.sample(0.0, {"a": _stats(100.0)})
    w.update_stats(0.0)          # the update at start: what is there, at its rates of the moment
    w.sample_host(0.0)
    assert w.bundle_stats["a"].msg_rate_in == 100.0
    assert w.host_usage.bandwidth_in.usage == 0.0     # first host sample: no counters to diff
    # a step from 100 to 200 msg/s at t = 32.5 (between two 5 s ticks); bundle "b" arrives at 40 and
    # "gone" leaves at 50
    for t in range(5, 61, 5):
        snap = {"a": _stats(100.0 if t < 32.5 else 200.0, topics=3 if t < 60 else 4)}
        if t >= 40:
            snap["b"] = _stats(50.0)
        if t < 50:
            snap["gone"] = _stats(10.0)
        w.sample(float(t), snap)
        assert w.bundle_stats["a"].msg_rate_in == 100.0   # nothing published between updates
    out = w.update_stats(60.0)
    assert out["a"].msg_rate_in == pytest.approx(150.0)           # a real mean over the period
    assert out["a"].msg_throughput_out == pytest.approx(300_000.0)
    assert out["a"].topics == 4                                  # counts of the update's moment
    assert out["b"].msg_rate_in == pytest.approx(50.0)           # mean over its time here, undiluted
    assert "gone" not in out                                     # only what is loaded at the update
    host = w.sample_host(60.0)
    # CPU is the interval's mean: "a" 150 + "b" 50 x 25 s of 60 + "gone" 10 x 50 s of 60
    assert host.cpu.usage == pytest.approx(150.0 + 50.0 * 25 / 60 + 10.0 * 45 / 60)
    assert host.bandwidth_in.usage > 0.0
    # steady traffic: equal samples only extend the last one's weight, same numbers
    for t in range(65, 121, 5):
        w.sample(float(t), {"a": _stats(200.0, topics=4)})
    assert w.update_stats(120.0)["a"].msg_rate_in == pytest.approx(200.0)
    assert w.stats_version == 3 and w.host_version == 2


class _StepLoad(FlatLoad):
    """FlatLoad whose rates are multiplied by `factor` from `step_at` on."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.step_at = float("inf")
        self.factor = 10.0

    def bundle_stats(self, broker_id, now, bundles):
        out = super().bundle_stats(broker_id, now, bundles)
        if now >= self.step_at:
            f = self.factor
            for name, s in out.items():  # frozen stats: scaled copies
                out[name] = msgspec.structs.replace(
                    s, msg_rate_in=s.msg_rate_in * f, msg_rate_out=s.msg_rate_out * f,
                    msg_throughput_in=s.msg_throughput_in * f, msg_throughput_out=s.msg_throughput_out * f)
        return out


@pytest.mark.asyncio
async def test_a_traffic_step_reaches_the_leader_after_the_next_stats_update_and_the_report_after_it():
    load = _StepLoad(rate=100.0)
    async with emulated_cluster(2, seed=71, namespaces={NS: 2}, load_source=load) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(20))
        await cluster.wait_until(lambda: client.connected_count() == 20)
        await anyio.sleep(150)
        leader = cluster.brokers[cluster.leader()].leader_actor
        owners = sorted(set(cluster.ownership().values()))
        before = {b: leader.lm.load_data.broker_data[b].local_data.msg_rate_in for b in owners}
        assert all(v > 0 for v in before.values())
        now = cluster.system.clock.now()
        load.step_at = now + 17.3      # mid-period, between two report ticks
        # each owner's next stats update after the step
        next_update = {}
        for b in owners:
            w = cluster.brokers[b].windows
            period = cluster.conf.stats_update_frequency_in_secs
            u = w.stats_updated_at
            while u < load.step_at:
                u += period
            next_update[b] = u
        seen: dict[str, tuple[float, float]] = {}   # broker -> (time seen, report's lastUpdate)
        while len(seen) < len(owners):
            await anyio.sleep(0.5)
            t = cluster.system.clock.now()
            for b in owners:
                local = leader.lm.load_data.broker_data[b].local_data
                if b not in seen and local.msg_rate_in > 1.5 * before[b]:
                    # lastUpdate is calendar time: the run's start (default) plus emulated time
                    seen[b] = (t, (local.last_update - DEFAULT_START_EPOCH_MS) / 1000.0)
            assert t < load.step_at + 200, "the step never reached the leader"
        for b in owners:
            t_seen, written = seen[b]
            # no earlier than the next stats update, carried by the report written after it
            assert written >= next_update[b] - 1e-6
            assert t_seen >= next_update[b]
            assert written <= next_update[b] + cluster.settings.report_interval + 1e-6
            # the first update after the step carries the period's mean, not the new rate
            first = leader.lm.load_data.broker_data[b].local_data.msg_rate_in
            assert before[b] * 1.5 < first < before[b] * load.factor * 0.99
        await anyio.sleep(cluster.conf.stats_update_frequency_in_secs + 10)
        for b in owners:   # a full period later, the new rate itself
            assert leader.lm.load_data.broker_data[b].local_data.msg_rate_in == pytest.approx(
                before[b] * load.factor)


@pytest.mark.asyncio
async def test_cpu_in_the_report_changes_only_at_host_usage_samples():
    conf = ServiceConfig(load_balancer_host_usage_check_interval_minutes=2)
    load = _StepLoad(rate=1000.0)
    async with emulated_cluster(2, seed=72, namespaces={NS: 2}, conf=conf,
                                load_source=load) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(20))
        await cluster.wait_until(lambda: client.connected_count() == 20)
        await anyio.sleep(250)
        broker = cluster.brokers[sorted(set(cluster.ownership().values()))[0]]
        w = broker.windows
        w_first = w.host_sampled_at
        load.step_at = cluster.system.clock.now() + 3.0
        changes: list[tuple[float, float]] = []
        last = broker.local_data.cpu.usage
        for _ in range(int(300 / 0.5)):
            await anyio.sleep(0.5)
            cpu = broker.local_data.cpu.usage
            if cpu != last:
                changes.append((cluster.system.clock.now(), cpu, w.host_sampled_at))
                last = cpu
        assert len(changes) >= 2
        for t, _, sampled in changes:
            # every change follows a host sample by at most a report interval, and the samples are
            # 2 minutes apart from the first (at broker start)
            assert 0 <= t - sampled <= cluster.settings.report_interval + 1e-6
            assert sampled % 120 == pytest.approx(w_first % 120, abs=1e-6)
        samples = [s for _, _, s in changes]
        assert all(b - a >= 120 - 5.0 - 1e-6 for a, b in zip(samples, samples[1:]))
        # the first sample after the step averages the interval: between the old and the new CPU
        (t1, cpu1, _), (_, cpu2, _) = changes[0], changes[1]
        assert t1 > load.step_at
        assert cpu1 < cpu2


@pytest.mark.asyncio
async def test_a_hot_bundle_splits_at_the_first_check_that_sees_it_and_children_start_on_default_data():
    # ModularLoadManagerImpl has no split hit count (loadBalancerNamespaceBundleSplitConditionHit-
    # CountThreshold is Extensible-only): a high threshold changes nothing
    conf = ServiceConfig(load_balancer_namespace_bundle_max_topics=20,
                         load_balancer_namespace_bundle_split_condition_hit_count_threshold=50)
    async with emulated_cluster(3, seed=73, namespaces={NS: 1}, conf=conf,
                                load_source=FlatLoad(rate=100.0)) as cluster:
        events: list = []
        cluster.events.subscribe(lambda e: events.append(e)
                                 if isinstance(e, (LoadReportWritten, BundleSplit)) else None)
        client = cluster.add_client()
        client.create_handles(topics(30))
        await cluster.wait_until(lambda: client.connected_count() == 30)
        parent = f"{NS}/0x00000000_0xffffffff"
        owner = cluster.owner_of(parent)
        leader = cluster.brokers[cluster.leader()].leader_actor
        # poll the leader's view of the children from the split on
        await cluster.wait_until(lambda: any(isinstance(e, BundleSplit) for e in events), timeout=70)
        split = next(e for e in events if isinstance(e, BundleSplit))
        # the first report of the owner that lists 30 topics is the first the leader could act on;
        # the split follows it in the same updateAll, not after N more checks
        first_report = next(e for e in events if isinstance(e, LoadReportWritten) and e.broker == owner
                            and e.bundles >= 1)
        assert split.t - first_report.t < 1.0
        assert first_report.t >= cluster.brokers[owner].windows.stats_updated_at - 60.0
        children = split.children
        views: dict[str, list[tuple[float, bool, tuple[int, float] | None]]] = {c: [] for c in children}
        t_end = cluster.system.clock.now() + 200
        while cluster.system.clock.now() < t_end:
            await anyio.sleep(0.5)
            lm = leader.lm
            for c in children:
                listed = any(c in bd.local_data.last_stats for bd in lm.load_data.broker_data.values())
                data = lm.bundle_data_of(c)   # a live object: keep what it says now
                views[c].append((cluster.system.clock.now(), listed, None if data is None else (
                    data.short_term_data.num_samples, data.short_term_data.msg_rate_in)))
        default = default_bundle_stats()
        for c in children:
            first_listed = next(i for i, (_, listed, _) in enumerate(views[c]) if listed)
            assert first_listed > 0, "a child was reported at once"
            for _, _, data in views[c][:first_listed]:
                # before its first report: no data of its own (placement uses the default)
                assert data is None or data == (0, default.msg_rate_in)
            t_first, _, data = views[c][first_listed]
            assert data is not None and data[0] >= 1 and data[1] != default.msg_rate_in
            # the child's first report comes from its new owner's first stats update after the split
            owner_c = cluster.owner_of(c)
            w = cluster.brokers[owner_c].windows
            period = cluster.conf.stats_update_frequency_in_secs
            first_update = w.stats_updated_at - period * math.floor(
                (w.stats_updated_at - split.t - 1e-6) / period)
            assert first_update > split.t
            assert first_update <= t_first <= first_update + cluster.settings.report_interval + 0.5


class _DiurnalStep:
    """One bundle of rate (1 + 0.3 sin(w t) + 0.2 cos(w t)) x base, the base 100 msg/s, times 3 from
    `step_at` on (a breakpoint the closed form knows of). `bundle_curves` is the fast path; a
    subclass without it is sampled."""

    w = 2 * math.pi / 600.0
    step_at = 37.3

    def rate(self, t: float) -> float:
        return 100.0 * (3.0 if t >= self.step_at else 1.0) * (
            1 + 0.3 * math.sin(self.w * t) + 0.2 * math.cos(self.w * t))

    def bundle_stats(self, broker_id, now, bundles):
        return {"x": _stats(self.rate(now))}

    def system_usage(self, broker_id, now, stats) -> SystemUsage:
        return _CpuIsRateIn().system_usage(broker_id, now, stats)


class _DiurnalStepCurves(_DiurnalStep):
    def __init__(self) -> None:
        self.made: dict[bool, TrafficCurves] = {}

    def bundle_curves(self, broker_id, now, bundles):
        after = now >= self.step_at
        if after not in self.made:
            base = 300.0 if after else 100.0
            k = np.array([1.0, 2.0, 1000.0, 2000.0])       # the four rates per msg/s in
            coef = np.stack([base * k, 0.3 * base * k, 0.2 * base * k])
            self.made[after] = TrafficCurves(
                names=["x"], coef=coef, totals=coef.tolist(), consumers=[0], producers=[1],
                topics=[1], omega=self.w, origin=0.0, valid_from=self.step_at if after else 0.0,
                until=math.inf if after else self.step_at, key="same", total_counts=(0, 1, 1))
        return self.made[after]


def test_the_closed_form_gives_the_exact_period_mean_and_fine_sampling_converges_to_it():
    exact = _DiurnalStepCurves()
    ticked = BrokerWindows("b", exact, now=0.0)
    for t in range(0, 61, 5):                      # report ticks every 5 s, the step between two
        totals = ticked.track(float(t), {"x": {}})
        assert totals.msg_rate_in == pytest.approx(exact.rate(t), rel=1e-12)   # the instant's
    mean = ticked.update_stats(60.0)["x"]
    # the exact integral, piece by piece (antiderivative of 1 + 0.3 sin + 0.2 cos)
    w = exact.w

    def prim(t: float) -> float:
        return t - 0.3 / w * math.cos(w * t) + 0.2 / w * math.sin(w * t)

    want = (100.0 * (prim(37.3) - prim(0.0)) + 300.0 * (prim(60.0) - prim(37.3))) / 60.0
    assert mean.msg_rate_in == pytest.approx(want, rel=1e-12)
    assert mean.msg_throughput_out == pytest.approx(2000.0 * want, rel=1e-12)
    assert ticked.sample_host(60.0).cpu.usage == pytest.approx(want, rel=1e-12)
    # the sampled path (no closed form) at 5 s ticks is off by the step's position in its tick;
    # sampled finely it converges to the closed form's mean
    for dt, tolerance in ((5.0, 0.2), (0.01, 1e-3)):
        sampled = BrokerWindows("b", _DiurnalStep(), now=0.0)
        for i in range(int(round(60.0 / dt)) + 1):
            sampled.track(i * dt, {"x": {}})
        got = sampled.update_stats(60.0)["x"].msg_rate_in
        assert got == pytest.approx(want, rel=tolerance)
        assert dt < 1.0 or got != pytest.approx(want, rel=1e-3)
    # the ticks do not matter to the closed form: one at 60 s only gives the same mean
    once = BrokerWindows("b", _DiurnalStepCurves(), now=0.0)
    once.track(0.0, {"x": {}})
    once.track(60.0, {"x": {}})
    assert once.update_stats(60.0)["x"].msg_rate_in == pytest.approx(want, rel=1e-12)


SHORT_RAMP = """
[scenario]
name = "short-ramp"
description = "a traffic ramp shorter than a report tick, between two ticks"
duration = "3m"
seed = 1
[cluster]
brokers = 2
[[namespaces]]
name = "t/ns"
bundles = 4
[[topics]]
group = "g"
namespace = "t/ns"
count = 20
name = "t-{i}"
rate = { distribution = "constant", rate = 100 }
patterns = [{ kind = "ramp", start = "61s", end = "63s", to_factor = 2 }]
[clients]
count = 1
"""


@pytest.mark.asyncio
async def test_a_ramp_shorter_than_a_tick_is_counted_not_a_broker_failure(pulsar_scenario, tmp_path):
    """The closed form before the ramp ends at its start; no closed form holds inside it, and the
    next tick comes after its end: the windows go on from the ramp's start with the form in force
    at the tick (it used to raise "no piece after the one that ended there" in every broker)."""
    path = tmp_path / "short-ramp.toml"
    path.write_text(SHORT_RAMP)
    async with pulsar_scenario(str(path)) as scenario:
        await scenario.run_until("3m")
        cluster = scenario.cluster
        assert sorted(cluster.live_brokers()) == ["broker-1:8080", "broker-2:8080"]
        rate_in = sum(s.msg_rate_in for b in cluster.brokers.values() for s in b.windows.bundle_stats.values())
        assert rate_in == pytest.approx(2 * 20 * 100, rel=1e-6)   # the ramp's end: twice the base rate
