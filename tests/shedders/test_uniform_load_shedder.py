"""UniformLoadShedder (§8.3, master). Cases marked "Java:" are ported from UniformLoadShedderTest
(the version with testOverloadBrokerSelect and testFilterOutNonTrafficBundlesForUnloading; the
latter expects PR #21214's zero-traffic filter, our switch)."""

from __future__ import annotations

import random

from emulator.model.config import ServiceConfig
from emulator.model.loaddata import LoadData
from shedders.uniform_load_shedder import UniformLoadShedder
from tests.shedders.builders import MIB, broker, bundle

CONF = ServiceConfig()
RATE_ONLY = dict(
    load_balancer_msg_rate_difference_shedder_threshold=50.0,
    load_balancer_msg_throughput_multiplier_difference_shedder_threshold=0.0,
)
THROUGHPUT_ONLY = dict(
    load_balancer_msg_rate_difference_shedder_threshold=0.0,
    load_balancer_msg_throughput_multiplier_difference_shedder_threshold=2.0,
)


def shedder() -> UniformLoadShedder:
    return UniformLoadShedder(random.Random(0))


def one_busy_broker(n: int, per_bundle_mib: list[float]) -> LoadData:
    ld = LoadData()
    b1 = broker()
    for i in range(1, n + 1):
        b1.local_data.bundles.add(f"bundle-{i}")
        ld.bundle_data[f"bundle-{i}"] = bundle(per_bundle_mib[i - 1] * MIB, per_bundle_mib[i - 1] * MIB)
    total = sum(per_bundle_mib) * MIB
    b1.local_data.msg_throughput_in = b1.local_data.msg_throughput_out = total
    ld.broker_data["broker-1"] = b1
    ld.broker_data["broker2"] = broker()
    return ld


def test_max_unload_bundle_num_per_shedding() -> None:  # Java: testMaxUnloadBundleNumPerShedding
    conf = ServiceConfig(max_unload_bundle_num_per_shedding=2)
    out = shedder().find_bundles_for_unloading(one_busy_broker(20, [1.0] * 20), conf)
    assert len(out) == 2
    # Uncapped: budget (int)((40 MiB − 1) × 0.2) = 8 MiB − 1 holds three 2 MiB bundles, not four.
    assert len(shedder().find_bundles_for_unloading(one_busy_broker(20, [1.0] * 20), CONF)) == 3


def test_broker_with_multiple_bundles() -> None:  # Java: testBrokerWithMultipleBundles
    out = shedder().find_bundles_for_unloading(one_busy_broker(10, [float(i) for i in range(1, 11)]), CONF)
    assert out and all(b == "broker-1" for b, _ in out)


def five_brokers() -> LoadData:
    ld = LoadData()
    rates = [50000, 60000, 70000, 10000, 20000]
    thrs = [50 * MIB, 60 * MIB, 70 * MIB, 80 * MIB, 10 * MIB]
    for i in range(5):
        b = broker(rate_in=rates[i], thr_in=thrs[i])
        for j in range(5):
            name = f"broker-{i}-bundle-{j}"
            b.local_data.bundles.add(name)
            ld.bundle_data[name] = bundle(thr_in=thrs[i] / 5, rate_in=rates[i] / 5)
        ld.broker_data[f"broker{i}"] = b
    return ld


def test_overload_broker_select() -> None:  # Java: testOverloadBrokerSelect
    base = dict(max_unload_bundle_num_per_shedding=1, max_unload_percentage=0.5)
    out = shedder().find_bundles_for_unloading(five_brokers(), ServiceConfig(**base, **RATE_ONLY))
    assert len(out) == 1 and out[0][0] == "broker2"
    out = shedder().find_bundles_for_unloading(five_brokers(), ServiceConfig(**base, **THROUGHPUT_ONLY))
    assert len(out) == 1 and out[0][0] == "broker3"
    both = ServiceConfig(
        **base,
        load_balancer_msg_rate_difference_shedder_threshold=50.0,
        load_balancer_msg_throughput_multiplier_difference_shedder_threshold=2.0,
    )
    out = shedder().find_bundles_for_unloading(five_brokers(), both)
    assert len(out) == 1 and out[0][0] == "broker2"  # the rate trigger has priority


def non_traffic_bundles() -> LoadData:
    ld = LoadData()
    b0 = broker(["broker-0-bundle-0"], rate_in=10_000, thr_in=10 * MIB)
    ld.bundle_data["broker-0-bundle-0"] = bundle(thr_in=10 * MIB, rate_in=10_000)
    b1 = broker(rate_in=100_000, thr_in=100 * MIB)
    rates = [60_000, 20_000, 20_000, 0, 0]
    thrs = [60 * MIB, 20 * MIB, 20 * MIB, 0, 0]
    for i in range(5):
        name = f"broker-1-bundle-{i}"
        b1.local_data.bundles.add(name)
        ld.bundle_data[name] = bundle(thr_in=thrs[i], rate_in=rates[i])
    ld.broker_data["broker0"] = b0
    ld.broker_data["broker1"] = b1
    return ld


def test_filter_out_non_traffic_bundles_is_a_switch() -> None:  # Java: testFilterOutNonTrafficBundles...
    """Master: budget 45000 msg/s takes bundle-1 and -2 (20000 each), then the two zero-traffic
    bundles (0 ≤ 5000). PR #21214 (switch) never takes zero-traffic bundles."""
    base = dict(max_unload_bundle_num_per_shedding=5, max_unload_percentage=0.5)
    for kind in (RATE_ONLY, THROUGHPUT_ONLY):
        master = shedder().find_bundles_for_unloading(non_traffic_bundles(), ServiceConfig(**base, **kind))
        assert [b for _, b in master] == [f"broker-1-bundle-{i}" for i in (1, 2, 3, 4)]
        pr = ServiceConfig(**base, **kind, emulator_uniform_skip_zero_traffic_bundles=True)
        filtered = shedder().find_bundles_for_unloading(non_traffic_bundles(), pr)
        assert filtered == [("broker1", "broker-1-bundle-1"), ("broker1", "broker-1-bundle-2")]


def rate_pair(max_rate: float, bundle_rates: list[float]) -> LoadData:
    """Busy broker a:1 (rate `max_rate`) holding `bundle_rates`; idle b:1 at 1000 msg/s."""
    ld = LoadData(
        broker_data={
            "a:1": broker([f"t/n/{i}" for i in range(len(bundle_rates))], rate_in=max_rate),
            "b:1": broker(["t/n/x", "t/n/y"], rate_in=1000.0),
        }
    )
    for i, r in enumerate(bundle_rates):
        ld.bundle_data[f"t/n/{i}"] = bundle(rate_in=r)
    return ld


def test_int_truncation_of_the_budget() -> None:
    """Budget (int)(1999.9 × 1.0) = 1999: a 1999.5 msg/s bundle does not fit, 1999.0 does."""
    conf = ServiceConfig(max_unload_percentage=1.0, **RATE_ONLY)
    s = shedder()
    plan = s.find_bundles_for_unloading_explained(rate_pair(2999.9, [3000.0, 1999.5]), conf)
    assert plan.bundles == []
    assert plan.explanation["required"] == 1999
    out = shedder().find_bundles_for_unloading(rate_pair(2999.9, [1999.5, 1999.0]), conf)
    assert out == [("a:1", "t/n/1")]


def test_budget_shrinks_by_truncated_traffic() -> None:
    """1999 − (int)1000.7 = 999 (not 998.3): then 999.5 does not fit but 999.0 does."""
    conf = ServiceConfig(max_unload_percentage=1.0, **RATE_ONLY)
    s = shedder()
    plan = s.find_bundles_for_unloading_explained(rate_pair(2999.9, [1000.7, 999.5, 999.0, 0.5]), conf)
    out = plan.bundles
    assert out == [("a:1", "t/n/0"), ("a:1", "t/n/2")]
    assert plan.explanation["remaining"] == 0  # 999 − (int)999.0, then 0.5 > 0


def test_min_unload_message() -> None:
    conf = ServiceConfig(max_unload_percentage=1.0, **RATE_ONLY)
    s = shedder()
    plan = s.find_bundles_for_unloading_explained(rate_pair(1999.9, [100.0, 100.0]), conf)
    assert plan.bundles == []  # 999 < 1000
    assert plan.explanation["skip"] == "below_min_unload"
    assert shedder().find_bundles_for_unloading(rate_pair(2000.0, [100.0, 100.0]), conf) != []


def test_rate_trigger_wins_even_when_its_broker_cannot_shed() -> None:
    """Rate fires for a:1 (one bundle): the throughput trigger toward c:1 is not tried."""
    ld = LoadData(
        broker_data={
            "a:1": broker(["t/n/a"], rate_in=100_000.0, thr_in=MIB),
            "b:1": broker(["t/n/b"], rate_in=1000.0, thr_in=MIB),
            "c:1": broker(["t/n/c0", "t/n/c1"], rate_in=1000.0, thr_in=100 * MIB),
        },
        bundle_data={"t/n/c0": bundle(10 * MIB), "t/n/c1": bundle(10 * MIB)},
    )
    s = shedder()
    plan = s.find_bundles_for_unloading_explained(ld, CONF)
    assert plan.bundles == []
    e = plan.explanation
    assert e["msg_rate_threshold_exceeded"] and e["throughput_threshold_exceeded"]
    assert e["source"] == "a:1" and e["skip"] == "sole_bundle"
    rate_off = ServiceConfig(load_balancer_msg_rate_difference_shedder_threshold=0.0)
    assert shedder().find_bundles_for_unloading(ld, rate_off) == [("c:1", "t/n/c0")]


def test_zero_min_counts_as_one_and_max_starts_at_minus_one() -> None:
    """All brokers idle: min 0 → 1.0, max 0 → difference −100 %, nothing fires."""
    ld = LoadData(broker_data={"a:1": broker(["t/n/a", "t/n/b"]), "b:1": broker()})
    s = shedder()
    plan = s.find_bundles_for_unloading_explained(ld, CONF)
    assert plan.bundles == []
    assert plan.explanation["min_msg_rate"]["value"] == 1.0
    assert plan.explanation["msg_rate_difference_pct"] == -100.0


def test_recently_unloaded_bundles_are_skipped() -> None:
    conf = ServiceConfig(max_unload_percentage=1.0, **RATE_ONLY)
    ld = rate_pair(5000.0, [1500.0, 1000.0])
    ld.recently_unloaded_bundles["t/n/0"] = 1
    assert shedder().find_bundles_for_unloading(ld, conf) == [("a:1", "t/n/1")]
