"""ThresholdShedder (§8.2). Cases marked "Java:" are ported from ThresholdShedderTest (the version
with lower-boundary tests; testBrokerWithMultipleBundles with cpu 1000 % from @085e7b8f, which ran
the reverted clamp variant)."""

from __future__ import annotations

import random

import pytest

from emulator.model.config import ServiceConfig
from emulator.model.loaddata import LoadData
from shedders.threshold_shedder import ThresholdShedder
from tests.shedders.builders import MIB, broker, bundle

CONF = ServiceConfig()
LOWER = ServiceConfig(lower_boundary_shedding_enabled=True)


def shedder() -> ThresholdShedder:
    return ThresholdShedder(random.Random(0))


def two_brokers(pct_a: float, pct_b: float, thr_a: float = 400 * MIB) -> LoadData:
    """Broker a (cpu pct_a %, 4 bundles of thr_a/4) and broker b (cpu pct_b %, 2 small bundles)."""
    return LoadData(
        broker_data={
            "a:1": broker([f"t/n/a{i}" for i in range(4)], cpu=(pct_a, 100), thr_in=thr_a),
            "b:1": broker(["t/n/b0", "t/n/b1"], cpu=(pct_b, 100), thr_in=MIB),
        },
        bundle_data={
            **{f"t/n/a{i}": bundle(thr_a / 4 - i) for i in range(4)},
            "t/n/b0": bundle(MIB / 2),
            "t/n/b1": bundle(MIB / 2),
        },
    )


# --- Ported from Pulsar ---------------------------------------------------------------------------


def test_no_brokers() -> None:  # Java: testNoBrokers
    assert shedder().find_bundles_for_unloading(LoadData(), CONF) == []


def test_brokers_with_no_bundles() -> None:  # Java: testBrokersWithNoBundles
    ld = LoadData(broker_data={"broker-1": broker(bw_in=(999, 1000), bw_out=(999, 1000))})
    assert shedder().find_bundles_for_unloading(ld, CONF) == []


def test_broker_not_reach_threshold() -> None:  # Java: testBrokerNotReachThreshold
    ld = LoadData(
        broker_data={"broker-1": broker(["bundle-1"], bw_in=(500, 1000), bw_out=(500, 1000))},
        bundle_data={"bundle-1": bundle(1000, 1000)},
    )
    assert shedder().find_bundles_for_unloading(ld, CONF) == []


def test_broker_reach_threshold() -> None:  # Java: testBrokerReachThreshold
    ld = LoadData(
        broker_data={
            "broker-2": broker(
                ["bundle-1", "bundle-2"],
                cpu=(140, 100),
                direct=(10, 100),
                bw_in=(500, 1000),
                bw_out=(500, 1000),
                thr_in=1.7976931348623157e308,  # Double.MAX_VALUE
            ),
            "broker-3": broker(
                ["bundle-3", "bundle-4"],
                cpu=(10, 100),
                direct=(10, 100),
                bw_in=(500, 1000),
                bw_out=(500, 1000),
            ),
        },
        bundle_data={"bundle-2": bundle(1000, 1000)},
    )
    assert shedder().find_bundles_for_unloading(ld, CONF) == [("broker-2", "bundle-2")]


def test_broker_with_single_bundle() -> None:  # Java: testBrokerWithSingleBundle
    ld = LoadData(
        broker_data={"broker-1": broker(["bundle-1"], bw_in=(999, 1000), bw_out=(999, 1000))},
        bundle_data={"bundle-1": bundle(1000, 1000)},
    )
    assert shedder().find_bundles_for_unloading(ld, CONF) == []


def ten_bundles(cpu: tuple[float, float] | None) -> LoadData:
    """broker-1: bundle-i with i MiB/s each way, bandwidth 99.9 %; broker2 idle, same bundle data."""
    ld = LoadData()
    b1 = broker(cpu=cpu, direct=(5000, 100), bw_in=(999, 1000), bw_out=(999, 1000))
    b2 = broker()
    total = 0.0
    for i in range(1, 11):
        b1.local_data.bundles.add(f"bundle-{i}")
        data = bundle(i * MIB, i * MIB)
        ld.bundle_data[f"bundle-{i}"] = data
        ld.bundle_data[f"broker2-bundle-{10 + i}"] = data
        b2.local_data.bundles.add(f"broker2-bundle-{10 + i}")
        total += i * MIB
    b1.local_data.msg_throughput_in = b1.local_data.msg_throughput_out = total
    ld.broker_data["broker-1"] = b1
    ld.broker_data["broker2"] = b2
    return ld


def test_broker_with_multiple_bundles() -> None:  # Java: testBrokerWithMultipleBundles
    # usage 0.999, avg 0.4995: offload 110 MiB × 0.4495 ≈ 49.4 MiB → 20 + 18 + 16 MiB.
    out = shedder().find_bundles_for_unloading(ten_bundles(None), CONF)
    assert out == [("broker-1", "bundle-10"), ("broker-1", "bundle-9"), ("broker-1", "bundle-8")]


def test_cpu_above_100_percent_clamp_variant() -> None:  # Java: testBrokerWithMultipleBundles @085e7b8f
    """cpu 1000 %: current Pulsar uses it (usage 10.0, so everything goes); the reverted #16937
    ignores resources above 100 % and gets the old test's answer."""
    ld = ten_bundles((1000, 100))
    assert len(shedder().find_bundles_for_unloading(ld, CONF)) == 10
    clamp = ServiceConfig(emulator_threshold_shedder_clamp_usage=True)
    out = shedder().find_bundles_for_unloading(ten_bundles((1000, 100)), clamp)
    assert out == [("broker-1", "bundle-10"), ("broker-1", "bundle-9"), ("broker-1", "bundle-8")]


def test_filter_recently_unloaded() -> None:  # Java: testFilterRecentlyUnloaded
    ld = ten_bundles(None)
    ld.recently_unloaded_bundles.update({"bundle-10": 1, "bundle-9": 1})
    out = shedder().find_bundles_for_unloading(ld, CONF)
    assert [b for _, b in out] == ["bundle-8", "bundle-7", "bundle-6", "bundle-5"]


def eleven_brokers(thr_mib: float, idle: int | None, many_bundles: int | None = None) -> LoadData:
    """Java's lower-boundary fixtures: 11 brokers at 80 % bandwidth (broker `idle` at 0 %), each
    reporting `thr_mib` MiB/s in and out; bundles of `thr_mib` each way (10 per broker, or only
    on broker `many_bundles` with the others holding one)."""
    ld = LoadData()
    for i in range(11):
        n = 10 if many_bundles is None or i == many_bundles else 1
        pct = 0 if i == idle else 80
        thr = 0.0 if i == idle else thr_mib * MIB
        b = broker(bw_in=(pct, 100), bw_out=(pct, 100), thr_in=thr, thr_out=thr)
        for j in range(n):
            name = f"broker-{i}-bundle-{j}"
            ld.bundle_data[name] = bundle(thr, thr)
            b.local_data.bundles.add(name)
        ld.broker_data[f"broker-{i}"] = b
    return ld


def test_lower_boundary_shedding() -> None:  # Java: testLowerBoundaryShedding
    # avg = 80 × 10 / 11 = 72.7 %, so nobody reaches 82.7 %; broker-10 sits at 0 %.
    assert shedder().find_bundles_for_unloading(eleven_brokers(100, idle=10), CONF) == []
    s = shedder()
    plan = s.find_bundles_for_unloading_explained(eleven_brokers(100, idle=10), LOWER)
    out = plan.bundles
    assert out == [("broker-0", "broker-0-bundle-0")]  # ties: first in map order, one 200 MiB bundle
    assert plan.explanation["lower_boundary"]["max_usage_broker"] == "broker-0"


def test_lower_boundary_shedding_no_broker_to_offload() -> None:  # Java: ...NoBrokerToOffload
    assert shedder().find_bundles_for_unloading(eleven_brokers(80, idle=None), LOWER) == []


def test_lower_boundary_shedding_broker_with_one_bundle() -> None:  # Java: ...BrokerWithOneBundle
    ld = eleven_brokers(100, idle=5, many_bundles=3)
    assert shedder().find_bundles_for_unloading(ld, CONF) == []
    out = shedder().find_bundles_for_unloading(eleven_brokers(100, idle=5, many_bundles=3), LOWER)
    assert len(out) == 1 and out[0][0] == "broker-3"


# --- Formulas, edges and state ----------------------------------------------------------------------


def test_pip_217_ema_arithmetic_90_10_becomes_86_14() -> None:
    """h = 0.9: history 90 %/10 %, both brokers now at 50 % → 0.9·0.9 + 0.1·0.5 = 0.86 and
    0.9·0.1 + 0.1·0.5 = 0.14 after one update."""
    s = shedder()
    s.find_bundles_for_unloading(two_brokers(90, 10, thr_a=MIB), CONF)
    assert s.history == {"a:1": 0.9, "b:1": 0.1}
    s.find_bundles_for_unloading(two_brokers(50, 50, thr_a=MIB), CONF)
    assert s.history["a:1"] == pytest.approx(0.86, abs=1e-12)
    assert s.history["b:1"] == pytest.approx(0.14, abs=1e-12)
    assert s.history["a:1"] == 0.9 * 0.9 + (1 - 0.9) * 0.5  # Java's expression, bit for bit


def test_first_sample_is_the_history() -> None:
    s = shedder()
    s.find_bundles_for_unloading(two_brokers(30, 20), CONF)
    assert s.history["a:1"] == 30.000001907348633 / 100  # float32 percentage, then / 100


def test_dead_zone_inside_avg_plus_minus_t() -> None:
    s = shedder()
    ld = LoadData(
        broker_data={
            f"b{i}:1": broker(["t/n/x%d" % i, "t/n/y%d" % i], cpu=(pct, 100), thr_in=1000 * MIB)
            for i, pct in enumerate((55, 50, 45))
        },
        bundle_data={f"t/n/{k}{i}": bundle(500 * MIB) for i in range(3) for k in "xy"},
    )
    plan = s.find_bundles_for_unloading_explained(ld, LOWER)
    assert plan.bundles == []
    assert plan.explanation["lower_boundary"]["skip"] == "no_broker_below_lower_bound"


def test_exactly_avg_plus_t_sheds_just_below_does_not() -> None:
    # 70 % and 50 %: avg 0.6, and 0.6 + 0.1 == 0.7, so `hist < avg + t` is false → shed.
    s = shedder()
    plan = s.find_bundles_for_unloading_explained(two_brokers(70, 50), CONF)
    assert plan.bundles == [("a:1", "t/n/a0")]
    assert plan.explanation["brokers"]["a:1"]["min_offload"] == pytest.approx(400 * MIB * 0.05)
    assert shedder().find_bundles_for_unloading(two_brokers(69.99, 50), CONF) == []


def test_min_throughput_guard_is_10_mib() -> None:
    # 70/50: min offload = thr × (0.7 − 0.6 − 0.1 + 0.05), which in doubles is 0.04999999999999997,
    # so 200 MiB/s gives a hair under 10 MiB and is skipped; 201 MiB/s sheds.
    s = shedder()
    plan = s.find_bundles_for_unloading_explained(two_brokers(70, 50, thr_a=200 * MIB), CONF)
    assert plan.bundles == []
    info = plan.explanation["brokers"]["a:1"]
    assert info["skip"] == "below_min_throughput"
    assert info["min_offload"] == 200 * MIB * (0.7 - 0.6 - 0.1 + 0.05) < 10 * MIB
    assert shedder().find_bundles_for_unloading(two_brokers(70, 50, thr_a=201 * MIB), CONF) != []
    # The guard is strict: a minimum exactly equal to the threshold sheds.
    exact = ServiceConfig(load_balancer_bundle_unload_min_throughput_threshold=info["min_offload"] / MIB)
    assert shedder().find_bundles_for_unloading(two_brokers(70, 50, thr_a=200 * MIB), exact) != []


def test_selects_biggest_first_until_the_minimum_is_covered() -> None:
    # 90/10: avg 0.5, min offload = 400 MiB × (0.9 − 0.5 − 0.1 + 0.05) = 140 MiB: 100 + 100 MiB.
    out = shedder().find_bundles_for_unloading(two_brokers(90, 10), CONF)
    assert out == [("a:1", "t/n/a0"), ("a:1", "t/n/a1")]


def test_average_zero_sheds_nothing_even_with_lower_boundary() -> None:
    s = shedder()
    plan = s.find_bundles_for_unloading_explained(two_brokers(0, 0), LOWER)
    assert plan.bundles == []
    assert plan.explanation["skip"] == "average_usage_is_zero"
    assert "lower_boundary" not in plan.explanation


def test_lower_boundary_updates_the_ema_a_second_time() -> None:
    """Spec §10.9: the lower-boundary pass recomputes the average, moving every EMA again."""
    once, twice = shedder(), shedder()
    for s in (once, twice):
        s.find_bundles_for_unloading(eleven_brokers(100, idle=10), CONF)  # history = 0.8 / 0.0
    ld = eleven_brokers(100, idle=10)
    ld.broker_data["broker-0"].local_data.bandwidth_in.usage = 50.0
    ld.broker_data["broker-0"].local_data.bandwidth_out.usage = 50.0
    once.find_bundles_for_unloading(ld, CONF)
    twice_plan = twice.find_bundles_for_unloading_explained(ld, LOWER)
    step = 0.8 * 0.9 + (1 - 0.9) * 0.5
    assert once.history["broker-0"] == step
    assert twice.history["broker-0"] == step * 0.9 + (1 - 0.9) * 0.5
    assert twice_plan.explanation["hist_after"]["broker-0"] == twice.history["broker-0"]


def test_recently_unloaded_and_system_bundles_are_skipped() -> None:
    ld = two_brokers(90, 10)
    heartbeat = "pulsar/cluster-a/a.example:8080"
    ld.broker_data["a:1"].local_data.bundles.add(heartbeat + "/0x00000000_0xffffffff")
    ld.bundle_data[heartbeat + "/0x00000000_0xffffffff"] = bundle(1000 * MIB)
    ld.recently_unloaded_bundles["t/n/a0"] = 5
    out = shedder().find_bundles_for_unloading(ld, CONF)
    assert out == [("a:1", "t/n/a1"), ("a:1", "t/n/a2")]


def test_on_active_brokers_change_drops_history_of_inactive_brokers() -> None:
    s = shedder()
    s.find_bundles_for_unloading(two_brokers(90, 10), CONF)
    s.on_active_brokers_change({"b:1", "c:1"})
    assert s.history == {"b:1": 0.1}
    # a:1 comes back at 50 %: it starts from its usage, not from the forgotten 90 %.
    s.find_bundles_for_unloading(two_brokers(50, 10), CONF)
    assert s.history["a:1"] == 0.5


def test_explanation_names_the_numbers() -> None:
    s = shedder()
    plan = s.find_bundles_for_unloading_explained(two_brokers(90, 10), CONF)
    e = plan.explanation
    assert e["avg"] == pytest.approx(0.5) and e["threshold"] == 0.1
    a = e["brokers"]["a:1"]
    assert a["usage"] == 0.9 and a["hist"] == 0.9
    assert [c["bundle"] for c in a["candidates"] if c["selected"]] == ["t/n/a0", "t/n/a1"]
    assert e["brokers"]["b:1"]["skip"] == "below_upper_bound"
    assert e["selected"] == [["a:1", "t/n/a0"], ["a:1", "t/n/a1"]]
