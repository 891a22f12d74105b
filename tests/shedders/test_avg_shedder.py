"""AvgShedder (§8.4 shedding, §5.4 placement with PR #26246's plan keyed by bundle name).
Cases marked "Java:" are ported from AvgShedderTest (placement asserted through the bundle name)."""

from __future__ import annotations

import random

from emulator.model.config import ServiceConfig
from emulator.model.loaddata import BundleData, LoadData
from shedders.avg_shedder import AvgShedder
from tests.shedders.builders import MIB, broker, bundle

CONF = ServiceConfig()
HALF = ServiceConfig(max_unload_percentage=0.5)


def shedder(seed: int = 0) -> AvgShedder:
    return AvgShedder(random.Random(seed))


def three_brokers(cpu1: float, cpu2: float, cpu3: float = 50) -> LoadData:
    """Java's fixture: broker1 (20000 msg/s, 11 bundles of 900 msg/s), broker2 (2000 msg/s),
    broker3 in the middle (10000 msg/s)."""
    ld = LoadData(
        broker_data={
            "broker1": broker(cpu=(cpu1, 100), rate_in=10000, rate_out=10000),
            "broker2": broker(cpu=(cpu2, 100), rate_in=1000, rate_out=1000),
            "broker3": broker(cpu=(cpu3, 100), rate_in=5000, rate_out=5000),
        }
    )
    for i in range(11):
        ld.broker_data["broker1"].local_data.bundles.add(f"bundle-{i}")
        ld.bundle_data[f"bundle-{i}"] = bundle(rate_in=450, rate_out=450)
    return ld


def planned(s: AvgShedder, ld: LoadData, bundle_name: str) -> str | None:
    return s.select_broker_for_bundle(
        set(ld.broker_data), bundle_name, ld.bundle_data[bundle_name], ld, CONF
    )


def test_hit_high_threshold() -> None:  # Java: testHitHighThreshold
    """Scores 80/30/50: gap 50 ≥ 40 is a high hit; with 2 high hits the pair sheds on call 2:
    (20000 − 2000) × 0.5 = 9000 msg/s = 10 bundles of 900."""
    s, ld = shedder(), three_brokers(80, 30)
    assert s.find_bundles_for_unloading(ld, HALF) == []
    out = s.find_bundles_for_unloading(ld, HALF)
    assert len(out) == 10 and {b for b, _ in out} == {"broker1"}
    assert all(planned(s, ld, name) == "broker2" for _, name in out)


def test_hit_low_threshold() -> None:  # Java: testHitLowThreshold
    """Scores 60/40/50: gap exactly 20 is not below the low threshold 20, so it counts a low hit."""
    conf = ServiceConfig(
        max_unload_percentage=0.5,
        load_balancer_avg_shedder_low_threshold=20,
        load_balancer_avg_shedder_hit_count_low_threshold=6,
    )
    s, ld = shedder(), three_brokers(60, 40)
    for _ in range(5):
        assert s.find_bundles_for_unloading(ld, conf) == []
    out = s.find_bundles_for_unloading(ld, conf)
    assert len(out) == 10 and {b for b, _ in out} == {"broker1"}
    assert all(planned(s, ld, name) == "broker2" for _, name in out)


def test_default_low_hits_are_eight() -> None:
    """Gap 20 (≥ 15, < 40) is a low hit only: the default `hitCountLowThreshold` 8 sheds on call 8."""
    s, ld = shedder(), three_brokers(60, 40)
    for call in range(7):
        assert s.find_bundles_for_unloading(ld, HALF) == []
        assert s.hit_count_low["broker1"] == call + 1
        assert s.hit_count_high.get("broker1") == 0  # cleared, then re-created at 0 by the check
    assert len(s.find_bundles_for_unloading(ld, HALF)) == 10
    assert "broker1" not in s.hit_count_low  # counters of a pair that shed are cleared


def test_shedding_multiple_pairs() -> None:  # Java: testSheddingMultiplePairs
    ld = LoadData(
        broker_data={
            "broker1": broker(cpu=(80, 100), rate_in=10000, rate_out=10000),
            "broker2": broker(cpu=(30, 100), rate_in=1000, rate_out=1000),
            "broker3": broker(cpu=(75, 100), rate_in=10000, rate_out=10000),
            "broker4": broker(cpu=(35, 100), rate_in=1000, rate_out=1000),
        }
    )
    for i in range(11):
        for owner in ("1", "3"):
            ld.broker_data[f"broker{owner}"].local_data.bundles.add(f"bundle{owner}-{i}")
            ld.bundle_data[f"bundle{owner}-{i}"] = bundle(rate_in=450, rate_out=450)
    s = shedder()
    assert s.find_bundles_for_unloading(ld, HALF) == []
    out = s.find_bundles_for_unloading(ld, HALF)
    assert len(out) == 20
    assert sum(1 for b, _ in out if b == "broker1") == 10 and sum(1 for b, _ in out if b == "broker3") == 10
    for _, name in out:
        assert planned(s, ld, name) == ("broker2" if name.startswith("bundle1-") else "broker4")


def five_brokers() -> LoadData:
    return LoadData(
        broker_data={f"b{i}:1": broker(cpu=(pct, 100)) for i, pct in enumerate((90, 10, 50, 70, 30))}
    )


def test_pairing_of_five_brokers_includes_the_middle_with_itself() -> None:
    """Sorted 10, 30, 50, 70, 90: pairs (10, 90), (30, 70) and (50, 50). The middle pair has gap 0,
    below the low threshold 15, so it only clears b2's counters; with a low threshold of 0 it
    becomes a pair, and b2 gets two low hits in one call (one as min, one as max)."""
    s = shedder()
    plan = s.find_bundles_for_unloading_explained(five_brokers(), CONF)
    assert plan.explanation["sorted"] == ["b1:1", "b4:1", "b2:1", "b3:1", "b0:1"]
    pairs = [(p["min_broker"], p["max_broker"]) for p in plan.explanation["pairs"]]
    assert pairs == [("b1:1", "b0:1"), ("b4:1", "b3:1")]
    assert s.hit_count_low == {"b1:1": 1, "b0:1": 1, "b4:1": 1, "b3:1": 1}
    assert s.hit_count_high == {"b1:1": 1, "b0:1": 1, "b4:1": 0, "b3:1": 0}  # 80 ≥ 40; 40 ≥ 40

    zero = shedder()
    zero_plan = zero.find_bundles_for_unloading_explained(
        five_brokers(), ServiceConfig(load_balancer_avg_shedder_low_threshold=0))
    last = zero_plan.explanation["pairs"][-1]
    assert (last["min_broker"], last["max_broker"]) == ("b2:1", "b2:1")
    assert zero.hit_count_low["b2:1"] == 2


def test_no_pairs_clears_every_hit_counter() -> None:
    s, ld = shedder(), three_brokers(80, 30)
    s.find_bundles_for_unloading(ld, HALF)
    assert s.hit_count_high["broker1"] == 1
    s.find_bundles_for_unloading(three_brokers(50, 45), HALF)  # gaps 5 and 0: no pair
    assert s.hit_count_high == {} and s.hit_count_low == {}
    assert s.find_bundles_for_unloading(ld, HALF) == []  # the count starts over


def test_throughput_when_the_msg_rate_is_too_small() -> None:
    ld = LoadData(
        broker_data={
            "hi:1": broker(["t/n/a", "t/n/b", "t/n/c"], cpu=(90, 100), rate_in=1000, thr_in=30 * MIB),
            "lo:1": broker(cpu=(10, 100), rate_in=900, thr_in=0.0),
        },
        bundle_data={
            "t/n/a": bundle(thr_in=20 * MIB, rate_in=900),
            "t/n/b": bundle(thr_in=5 * MIB, rate_in=50),
            "t/n/c": bundle(thr_in=4 * MIB, rate_in=50),
        },
    )
    s = shedder()
    s.find_bundles_for_unloading(ld, HALF)
    plan = s.find_bundles_for_unloading_explained(ld, HALF)
    out = plan.bundles
    # msg: (1000 − 900) × 0.5 = 50 ≤ 1000 → throughput 15 MiB: 20 MiB too big, then 5 and 4 MiB.
    assert out == [("hi:1", "t/n/b"), ("hi:1", "t/n/c")]
    assert plan.explanation["pairs"][0]["metric"] == "throughput"


def test_zero_traffic_and_recently_unloaded_bundles_are_not_selected() -> None:
    ld = three_brokers(80, 30)
    ld.bundle_data["bundle-0"] = bundle()  # zero traffic
    ld.recently_unloaded_bundles["bundle-1"] = 1
    s = shedder()
    s.find_bundles_for_unloading(ld, HALF)
    names = [b for _, b in s.find_bundles_for_unloading(ld, HALF)]
    assert "bundle-0" not in names and "bundle-1" not in names and len(names) == 9


def test_int_comparator_variant_ties_scores_less_than_one_point_apart() -> None:
    """Map order a (50.5), b (50.2), c (10). Doubles sort c, b, a → pair (c, a); Java's old
    `(int)(s1 − s2)` calls a and b equal, TimSort keeps them, and the pair becomes (c, b)."""
    ld = LoadData(
        broker_data={
            "a:1": broker(["t/n/a0", "t/n/a1"], cpu=(50.5, 100), rate_in=10000),
            "b:1": broker(["t/n/b0", "t/n/b1"], cpu=(50.2, 100), rate_in=10000),
            "c:1": broker(cpu=(10, 100)),
        },
        bundle_data={f"t/n/{n}": bundle(rate_in=2000) for n in ("a0", "a1", "b0", "b1")},
    )
    for flag, order, source in ((False, ["c:1", "b:1", "a:1"], "a:1"), (True, ["c:1", "a:1", "b:1"], "b:1")):
        conf = ServiceConfig(max_unload_percentage=0.5, emulator_avg_shedder_int_comparator=flag)
        s = shedder()
        plan = s.find_bundles_for_unloading_explained(ld, conf)
        assert plan.explanation["sorted"] == order
        out = s.find_bundles_for_unloading(ld, conf)
        assert {b for b, _ in out} == {source}


# --- Placement ---------------------------------------------------------------------------------------


def test_plan_is_used_then_cleared_on_completion() -> None:
    s, ld = shedder(), three_brokers(80, 30)
    s.find_bundles_for_unloading(ld, HALF)
    plan = s.find_bundles_for_unloading_explained(ld, HALF)
    out = plan.bundles
    assert s.plan == {name: "broker2" for _, name in out}
    assert plan.explanation["plan"] == s.plan
    s.on_unload_attempt_completed(out)
    assert s.plan == {}
    # Without a plan the bundle is placed at random: over many calls, more than one broker.
    assert len({planned(s, ld, out[0][1]) for _ in range(30)}) > 1


def test_planned_broker_not_a_candidate_falls_back_to_random_placement() -> None:
    s, ld = shedder(), three_brokers(80, 30)
    s.plan = {"bundle-0": "broker2"}
    seen = {
        s.select_broker_for_bundle({"broker1", "broker3"}, "bundle-0", BundleData.default(), ld, CONF)
        for _ in range(30)
    }
    assert seen == {"broker1", "broker3"}
    assert s.plan == {"bundle-0": "broker2"}  # the plan is kept for the rest of the attempt


def test_overloaded_planned_broker_gives_way_to_a_healthy_one() -> None:
    ld = three_brokers(80, 30)
    ld.broker_data["broker2"].local_data.cpu.usage = 90.0  # 90 > 85
    s = shedder()
    s.plan = {"bundle-0": "broker2"}
    chosen = {planned(s, ld, "bundle-0") for _ in range(30)}
    assert chosen == {"broker1", "broker3"}  # both at or below 85 (the source is not excluded)
    ld.broker_data["broker1"].local_data.cpu.usage = 86.0
    ld.broker_data["broker3"].local_data.cpu.usage = 95.0
    assert planned(s, ld, "bundle-0") == "broker2"  # no healthy candidate: keep the plan


def test_select_broker_is_uncached_random_and_none_without_candidates() -> None:
    s, ld = shedder(3), three_brokers(80, 30)
    assert s.select_broker(set(), BundleData.default(), ld, CONF) is None
    assert s.select_broker_for_bundle(set(), "bundle-0", BundleData.default(), ld, CONF) is None
    picks = [s.select_broker({"broker1", "broker2"}, BundleData.default(), ld, CONF) for _ in range(30)]
    assert set(picks) == {"broker1", "broker2"} and s.plan == {}
    again = shedder(3)
    cands = {"broker2", "broker1"}
    assert picks == [again.select_broker(cands, BundleData.default(), ld, CONF) for _ in range(30)]
