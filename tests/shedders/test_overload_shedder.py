"""OverloadShedder (§8.1). Cases marked "Java:" are ported from OverloadShedderTest @75c23aa1."""

from __future__ import annotations

import random

import pytest

from emulator.model.config import ServiceConfig
from emulator.model.loaddata import LoadData
from shedders.overload_shedder import OverloadShedder
from emulator.model.selection import placement_usage
from tests.shedders.builders import MIB, broker, bundle

CONF = ServiceConfig()


def shedder() -> OverloadShedder:
    return OverloadShedder(random.Random(0))


def ten_bundles_on_broker_1(with_other_broker: bool) -> LoadData:
    """bundle-i carries i MiB/s each way; broker-1 reports 99.9 % bandwidth in and out."""
    ld = LoadData()
    b1 = broker(bw_in=(999, 1000), bw_out=(999, 1000))
    other = broker()
    total = 0.0
    for i in range(1, 11):
        b1.local_data.bundles.add(f"bundle-{i}")
        data = bundle(thr_in=i * MIB, thr_out=i * MIB)
        ld.bundle_data[f"bundle-{i}"] = data
        if with_other_broker:  # owned by the other broker: never selected for broker-1
            ld.bundle_data[f"another-broker-bundle-{10 + i}"] = data
            other.local_data.bundles.add(f"another-broker-bundle-{10 + i}")
        total += i * MIB
    b1.local_data.msg_throughput_in = total
    b1.local_data.msg_throughput_out = total
    ld.broker_data["broker-1"] = b1
    if with_other_broker:
        ld.broker_data["another-broker"] = other
    return ld


def test_no_brokers() -> None:  # Java: testNoBrokers
    assert shedder().find_bundles_for_unloading(LoadData(), CONF) == []


def test_brokers_with_no_bundles() -> None:  # Java: testBrokersWithNoBundles
    ld = LoadData(broker_data={"broker-1": broker(bw_in=(999, 1000), bw_out=(999, 1000))})
    s = shedder()
    plan = s.find_bundles_for_unloading_explained(ld, CONF)
    assert plan.bundles == []
    assert plan.explanation["brokers"]["broker-1"]["skip"] == "no_bundles"


def test_broker_not_overloaded() -> None:  # Java: testBrokerNotOverloaded
    ld = LoadData(
        broker_data={"broker-1": broker(["bundle-1"], bw_in=(500, 1000), bw_out=(500, 1000))},
        bundle_data={"bundle-1": bundle(1000, 1000)},
    )
    assert shedder().find_bundles_for_unloading(ld, CONF) == []


def test_broker_with_single_bundle() -> None:  # Java: testBrokerWithSingleBundle
    ld = LoadData(
        broker_data={"broker-1": broker(["bundle-1"], bw_in=(999, 1000), bw_out=(999, 1000))},
        bundle_data={"bundle-1": bundle(1000, 1000)},
    )
    s = shedder()
    plan = s.find_bundles_for_unloading_explained(ld, CONF)
    assert plan.bundles == []
    assert plan.explanation["brokers"]["broker-1"]["skip"] == "sole_bundle"


def test_broker_with_multiple_bundles() -> None:  # Java: testBrokerWithMultipleBundles
    # usage 0.999 → offload 110 MiB × (0.999 − 0.85 + 0.05) ≈ 21.9 MiB: 20 MiB, then 18 MiB.
    s = shedder()
    plan = s.find_bundles_for_unloading_explained(ten_bundles_on_broker_1(True), CONF)
    out = plan.bundles
    assert out == [("broker-1", "bundle-10"), ("broker-1", "bundle-9")]
    info = plan.explanation["brokers"]["broker-1"]
    assert info["min_offload"] == pytest.approx(110 * MIB * (0.999 - 0.85 + 0.05), rel=1e-6)


def test_filter_recently_unloaded() -> None:  # Java: testFilterRecentlyUnloaded
    ld = ten_bundles_on_broker_1(False)
    ld.recently_unloaded_bundles.update({"bundle-10": 1, "bundle-9": 1})
    out = shedder().find_bundles_for_unloading(ld, CONF)
    assert out == [("broker-1", "bundle-8"), ("broker-1", "bundle-7")]


def exactly(cpu: tuple[float, float]) -> LoadData:
    return LoadData(
        broker_data={"b:1": broker(["t/n/a", "t/n/b"], cpu=cpu, thr_in=100.0)},
        bundle_data={"t/n/a": bundle(10.0), "t/n/b": bundle(90.0)},
    )


def test_exactly_at_the_threshold_is_overloaded_unlike_placement() -> None:
    """The shedder skips only `usage < 0.85`; placement calls a broker overloaded only if `> 0.85`."""
    ld = exactly((85, 100))
    assert shedder().find_bundles_for_unloading(ld, CONF) == [("b:1", "t/n/b")]
    assert not placement_usage(ld.broker_data["b:1"].local_data, CONF) > 0.85
    assert shedder().find_bundles_for_unloading(exactly((8499, 10000)), CONF) == []


def test_at_least_one_bundle_even_when_nothing_is_required() -> None:
    # The broker reports no throughput, so the minimum to offload is 0; one bundle still goes.
    ld = exactly((85, 100))
    ld.broker_data["b:1"].local_data.msg_throughput_in = 0.0
    s = shedder()
    plan = s.find_bundles_for_unloading_explained(ld, CONF)
    assert plan.bundles == [("b:1", "t/n/b")]
    assert plan.explanation["brokers"]["b:1"]["min_offload"] == 0.0


def test_system_namespaces_are_never_shed() -> None:
    heartbeat = "pulsar/broker-1.example:8080/0x00000000_0xffffffff"
    ld = LoadData(
        broker_data={"b:1": broker([heartbeat, "t/n/a", "t/n/b"], cpu=(95, 100), thr_in=1e9)},
        bundle_data={heartbeat: bundle(1e9), "t/n/a": bundle(10.0), "t/n/b": bundle(20.0)},
    )
    out = shedder().find_bundles_for_unloading(ld, CONF)
    assert out == [("b:1", "t/n/b"), ("b:1", "t/n/a")]


def test_weighted_usage_by_default_unweighted_as_a_switch() -> None:
    """Direct memory has weight 0 (PIP-358 + #21168); the pre-PIP-358 max counts it."""
    ld = LoadData(
        broker_data={"b:1": broker(["t/n/a", "t/n/b"], direct=(95, 100), thr_in=100.0)},
        bundle_data={"t/n/a": bundle(10.0), "t/n/b": bundle(90.0)},
    )
    assert shedder().find_bundles_for_unloading(ld, CONF) == []
    old = ServiceConfig(emulator_unweighted_max_usage=True)
    assert shedder().find_bundles_for_unloading(ld, old) == [("b:1", "t/n/b")]
