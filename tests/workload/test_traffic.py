"""Traffic model: rate distributions, patterns over time, selections, seeding, vectorised bundle sums."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from emulator.cluster.load_source import TopicLoad
from emulator.workload.load import bundle_sums
from emulator.workload.loader import loads
from emulator.workload.schema import TopicSelector
from emulator.workload.traffic import TrafficModel, topic_names

HEAD = """
[scenario]
name = "t"
description = "d"
duration = "2h"
[[namespaces]]
name = "a/x"
[[namespaces]]
name = "a/y"
"""


def model(body: str, seed: int | None = None) -> TrafficModel:
    return TrafficModel.from_scenario(loads(HEAD + body, "t.toml"), seed)


# ---------------------------------------------------------------------------------- bundle sums


def plain_sums(rates, sizes, index, bundles):
    """The same computation, one topic at a time."""
    out = {}
    for bundle, topics in bundles.items():
        rin = rout = tin = tout = 0.0
        prod = cons = 0
        for topic, load in topics.items():
            prod += load.producers
            cons += load.consumers
            if topic in index and load.producers > 0:
                r = rates[index[topic]]
                rin += r
                rout += r * load.consumers
                tin += r * sizes[index[topic]]
                tout += r * load.consumers * sizes[index[topic]]
        out[bundle] = (rin, rout, tin, tout, prod, cons, len(topics))
    return out


@pytest.mark.parametrize("cached", [False, True])
def test_vectorised_bundle_sums_equal_a_plain_python_computation(cached):
    rng = random.Random(5)
    names = [f"persistent://a/x/t{i}" for i in range(300)]
    index = {t: i for i, t in enumerate(names)}
    rates = np.array([rng.uniform(0, 100) for _ in names])
    sizes = np.array([float(rng.choice([100, 1024, 4096])) for _ in names])
    bundles = {f"a/x/b{b}": {} for b in range(7)}
    bundles["a/x/empty"] = {}
    for t in names + ["persistent://a/x/unknown-1", "persistent://a/x/unknown-2"]:
        bundles[f"a/x/b{rng.randrange(7)}"][t] = TopicLoad(producers=rng.choice([0, 1, 1, 2]),
                                                          consumers=rng.choice([0, 1, 2, 3]))
    cache: dict | None = {} if cached else None
    for _ in range(2):   # the second call reads the cached index arrays
        got = bundle_sums(rates, sizes, index, bundles, cache)
        want = plain_sums(rates, sizes, index, bundles)
        assert list(got) == list(bundles)
        for b, (rin, rout, tin, tout, prod, cons, topics) in want.items():
            s = got[b]
            assert s.msg_rate_in == pytest.approx(rin) and s.msg_rate_out == pytest.approx(rout)
            assert s.msg_throughput_in == pytest.approx(tin)
            assert s.msg_throughput_out == pytest.approx(tout)
            assert (s.producer_count, s.consumer_count, s.topics) == (prod, cons, topics)
            assert type(s.msg_rate_in) is float and type(s.producer_count) is int   # JSON-able
    # a topic moving between bundles (a split) is seen at the next call despite the cache
    moved = next(iter(bundles["a/x/b0"]))
    bundles["a/x/b1"][moved] = bundles["a/x/b0"].pop(moved)
    got = bundle_sums(rates, sizes, index, bundles, cache)
    assert got["a/x/b1"].topics == len(bundles["a/x/b1"])
    assert got["a/x/b1"].msg_rate_in == pytest.approx(plain_sums(rates, sizes, index, bundles)["a/x/b1"][0])


def test_no_producer_no_traffic_and_out_is_in_times_consumers():
    index = {"persistent://a/x/p": 0, "persistent://a/x/q": 1}
    rates, sizes = np.array([10.0, 20.0]), np.array([1000.0, 10.0])
    s = bundle_sums(rates, sizes, index, {"b": {"persistent://a/x/p": TopicLoad(0, 3),
                                                 "persistent://a/x/q": TopicLoad(1, 3)}})["b"]
    assert (s.msg_rate_in, s.msg_rate_out) == (20.0, 60.0)
    assert (s.msg_throughput_in, s.msg_throughput_out) == (200.0, 600.0)


# ---------------------------------------------------------------------------------- distributions


def test_constant_uniform_zipf_and_hot_set_rates():
    m = model("""
[[topics]]
group = "c"
namespace = "a/x"
name = "c{i}"
count = 10
rate = { distribution = "constant", rate = 7 }
[[topics]]
group = "u"
namespace = "a/x"
name = "u{i}"
count = 500
rate = { distribution = "uniform", low = 10, high = 20 }
[[topics]]
group = "z"
namespace = "a/y"
name = "z{i}"
count = 1000
rate = { distribution = "zipf", total = 5000, exponent = 1.2 }
[[topics]]
group = "h"
namespace = "a/y"
name = "h{i}"
count = 100
rate = { distribution = "hot_set", rate = 2, hot_count = 3, hot_factor = 50 }
""")
    r = m.base_rate
    assert np.all(r[m.groups["c"]] == 7.0)
    u = r[m.groups["u"]]
    assert u.min() >= 10 and u.max() <= 20 and 14 < u.mean() < 16
    z = np.sort(r[m.groups["z"]])[::-1]
    assert z.sum() == pytest.approx(5000)
    assert z[0] / z[1] == pytest.approx(2 ** 1.2) and z[0] / z[9] == pytest.approx(10 ** 1.2)
    assert not np.all(np.diff(r[m.groups["z"]]) <= 0)    # hot topics are scattered, not the first ones
    h = r[m.groups["h"]]
    assert sorted(set(h.tolist())) == [2.0, 100.0] and (h == 100.0).sum() == 3


def test_partitioned_topics_split_their_rate_over_partitions():
    group_text = """
[[topics]]
namespace = "a/x"
name = "orders-{i}"
count = 2
partitions = 4
rate = { rate = 100 }
"""
    m = model(group_text)
    assert m.names[:5] == [f"persistent://a/x/orders-0-partition-{p}" for p in range(4)] + [
        "persistent://a/x/orders-1-partition-0"]
    assert np.all(m.base_rate == 25.0) and np.all(m.partitions == 4)
    m.set_rate(m.select(TopicSelector(topics=["a/x/orders-1"]), np.random.default_rng(0)), 400.0)
    assert m.base_rate.tolist() == [25.0] * 4 + [100.0] * 4
    sc = loads(HEAD + group_text, "t.toml")
    assert [p for _, p in topic_names(sc.topics[0])] == ["persistent://a/x/orders-0"] * 4 + [
        "persistent://a/x/orders-1"] * 4


def test_rates_are_seeded_per_group():
    body = """
[[topics]]
group = "u"
namespace = "a/x"
count = 50
rate = { distribution = "uniform", low = 0, high = 100 }
"""
    extra = """
[[topics]]
group = "v"
namespace = "a/y"
count = 50
rate = { distribution = "uniform", low = 0, high = 100 }
"""
    a, b, c = model(body, 1), model(body, 1), model(body, 2)
    assert np.array_equal(a.base_rate, b.base_rate) and not np.array_equal(a.base_rate, c.base_rate)
    # adding a group does not reshuffle an existing one
    assert np.array_equal(model(body + extra, 1).base_rate[:50], a.base_rate)


# ---------------------------------------------------------------------------------- patterns


def test_diurnal_ramp_and_spike_patterns_over_time():
    m = model("""
[[topics]]
group = "g"
namespace = "a/x"
count = 4
rate = { rate = 100 }
patterns = [
  { kind = "diurnal", amplitude = 0.5, period = "1h" },
  { kind = "ramp", start = "10m", end = "20m", to_factor = 3 },
  { kind = "spike", at = "30m", duration = "5m", factor = 10, select = { hottest = 1 } },
]
""")
    def at(t: float) -> list[float]:
        return m.rates(t).tolist()

    assert at(0) == pytest.approx([100.0] * 4)
    assert at(15 * 60) == pytest.approx([100 * (1 + 0.5 * math.sin(2 * math.pi / 4)) * 2.0] * 4)
    assert at(30 * 60) == pytest.approx([100 * 1.0 * 3 * 10] + [300.0] * 3)   # sin(pi) = 0
    assert at(35 * 60) == pytest.approx([100 * (1 + 0.5 * math.sin(2 * math.pi * 35 / 60)) * 3] * 4)
    with pytest.raises(ValueError):
        m.rates(0)[0] = 1.0          # a shared read-only vector


def test_phase_jitter_spreads_the_peaks():
    m = model("""
[[topics]]
namespace = "a/x"
count = 100
patterns = [{ kind = "diurnal", amplitude = 1.0, period = "1h", phase_jitter = "15m" }]
""")
    at_zero = m.rates(0.0)
    assert at_zero.min() < 5 and at_zero.max() > 15     # sin(2pi * U(-15m, 15m) / 1h) spans (-1, 1)


def test_noise_is_a_function_of_seed_and_time_only():
    body = """
[[topics]]
namespace = "a/x"
count = 200
rate = { rate = 100 }
patterns = [{ kind = "noise", sd = 0.2, interval = "10s" }]
"""
    a, b = model(body, 3), model(body, 3)
    r1 = a.rates(12.0).copy()
    assert 0.15 < np.std(r1 / 100) < 0.25
    assert np.array_equal(a.rates(15.0), r1)                 # same interval, same draw
    assert not np.array_equal(a.rates(25.0), r1)             # next interval, new draw
    b.rates(100.0)
    assert np.array_equal(b.rates(12.0), r1)                 # independent of what was asked before
    assert not np.array_equal(model(body, 4).rates(12.0), r1)


def test_origin_shifts_pattern_time_to_the_run_start():
    m = model("""
[[topics]]
namespace = "a/x"
count = 1
patterns = [{ kind = "spike", at = "1m", duration = "1m", factor = 5 }]
""")
    m.origin = 1000.0
    assert m.rates(1000.0 + 30).tolist() == [10.0]
    assert m.rates(1000.0 + 90).tolist() == [50.0]


def test_event_changes_spike_ramp_scale():
    m = model("""
[[topics]]
group = "g"
namespace = "a/x"
count = 3
rate = { rate = 10 }
""")
    everything = m.select(TopicSelector(), np.random.default_rng(0))
    assert everything is None
    one = np.array([1])
    m.spike(one, 4.0, start=100, duration=50)
    m.ramp(None, 2.0, start=200, over=100)
    assert m.rates(120).tolist() == [10.0, 40.0, 10.0]
    assert m.rates(160).tolist() == [10.0, 10.0, 10.0]
    assert m.rates(250).tolist() == [15.0, 15.0, 15.0]
    m.scale(np.array([0]), 3.0)
    assert m.rates(400).tolist() == [60.0, 20.0, 20.0]


def test_selectors():
    m = model("""
[[topics]]
group = "x"
namespace = "a/x"
count = 10
rate = { distribution = "uniform", low = 1, high = 100 }
[[topics]]
group = "y"
namespace = "a/y"
name = "y{i}"
count = 10
""")
    rng = np.random.default_rng(1)
    assert m.select(TopicSelector(namespace="a/y"), rng).tolist() == list(range(10, 20))
    assert m.select(TopicSelector(group="x", hottest=2), rng).tolist() == sorted(
        np.argsort(-m.base_rate[:10])[:2].tolist())
    assert len(m.select(TopicSelector(group="y", random=3), rng)) == 3
    assert len(m.select(TopicSelector(fraction=0.25), rng)) == 5
    assert m.select(TopicSelector(topics=["a/y/y3", "persistent://a/x/topic-0"]), rng).tolist() == [0, 13]
    with pytest.raises(ValueError, match="no such topic group"):
        m.select(TopicSelector(group="nope"), rng)
    with pytest.raises(ValueError, match="not in the scenario"):
        m.select(TopicSelector(topics=["a/y/zzz"]), rng)


def test_jittered_diurnal_matches_the_direct_sine_at_any_time():
    """The per-topic phases are folded into fixed cos/sin terms; the factor must stay the direct
    1 + A sin(omega (t + phase)) to within rounding, over days of emulated time."""
    from emulator.workload.traffic import _Diurnal

    rng = np.random.default_rng(5)
    phase = 5400.0 + rng.uniform(-600.0, 600.0, 1000)
    d = _Diurnal(None, 0.35, 86_400.0, phase)
    for t in (0.0, 1.0, 3_600.0, 43_210.5, 86_400.0, 7 * 86_400.0 + 17.25):
        direct = 1.0 + 0.35 * np.sin(2.0 * math.pi / 86_400.0 * (t + phase))
        np.testing.assert_allclose(d.factor(t), direct, rtol=0, atol=1e-12)
    flat = _Diurnal(None, 0.5, 3_600.0, 900.0)
    assert flat.factor(0.0) == pytest.approx(1.5)


def test_a_topic_subset_gives_the_full_rates_bit_for_bit():
    """`TopicSubset.rates` (a broker's report: its own topics only) equals `rates(now)[idx]` exactly,
    through every kind of modifier, on all topics or a group or a selection, while events add
    modifiers, change base rates and spikes finish."""
    m = model("""
[[topics]]
group = "g"
namespace = "a/x"
count = 300
rate = { distribution = "zipf", total = 10000, exponent = 1.1 }
patterns = [
  { kind = "diurnal", amplitude = 0.4, period = "1h", phase_jitter = "5m" },
  { kind = "noise", sd = 0.2, interval = "10s", select = { fraction = 0.5 } },
  { kind = "spike", at = "10m", duration = "5m", factor = 7, select = { hottest = 5 } },
]
[[topics]]
group = "h"
namespace = "a/y"
count = 200
rate = { distribution = "uniform", low = 1, high = 50 }
patterns = [{ kind = "noise", sd = 0.3, interval = "7s" }, { kind = "ramp", start = "1m", end = "9m", to_factor = 2 }]
[[traffic.patterns]]
kind = "diurnal"
amplitude = 0.35
period = "2h"
phase_jitter = "10m"
[[traffic.patterns]]
kind = "diurnal"
amplitude = 0.1
period = "30m"
""")
    m.origin = 100.0
    rng = np.random.default_rng(3)
    subsets = [m.subset(rng.permutation(500)[:k]) for k in (0, 1, 17, 250, 500)]
    subsets.append(m.subset(np.arange(300, 500)))
    for step, t in enumerate(np.cumsum(rng.uniform(0.0, 9.0, 400)) + 100.0):
        if step == 100:
            m.spike(np.array([3, 301, 499]), 4.0, start=t - 100.0, duration=60.0)
        if step == 200:
            m.set_rate(np.array([0, 450]), 77.0)
            m.ramp(None, 0.5, start=t - 100.0, over=300.0)
        for s in subsets:
            got = s.rates(float(t), out=np.empty(len(s.idx)))
            assert np.array_equal(got, m.rates(float(t))[s.idx]), (step, len(s.idx))
