"""Split detection (BundleSplitterTask, §6.1): vectors V-S9, V-S10, V-S11."""

from __future__ import annotations

import pytest

from emulator.model.config import ServiceConfig
from emulator.model.loaddata import (
    BrokerData,
    BundleData,
    LoadData,
    LocalBrokerData,
    NamespaceBundleStats,
    TimeAverageMessageData,
)
from emulator.model.split_detection import find_bundles_to_split


def long_term(rate_in: float, rate_out: float, thr_in: float = 0.0, thr_out: float = 0.0) -> BundleData:
    def window(n: int) -> TimeAverageMessageData:
        return TimeAverageMessageData(
            max_samples=n, num_samples=n, msg_rate_in=rate_in, msg_rate_out=rate_out,
            msg_throughput_in=thr_in, msg_throughput_out=thr_out,
        )

    return BundleData(short_term_data=window(10), long_term_data=window(1000))


def one_broker(stats: dict[str, NamespaceBundleStats], data: dict[str, BundleData]) -> LoadData:
    return LoadData(
        broker_data={"b1:8080": BrokerData(local_data=LocalBrokerData(last_stats=stats))},
        bundle_data=data,
    )


def test_v_s9_single_topic_bundle_is_never_split() -> None:
    bundle = "ten/ns/0x00000000_0x80000000"
    ld = one_broker({bundle: NamespaceBundleStats(topics=1)}, {bundle: long_term(30000, 1)})
    assert find_bundles_to_split(ld, ServiceConfig(), lambda ns: 1) == {}
    # The same load with 2 topics splits.
    ld2 = one_broker({bundle: NamespaceBundleStats(topics=2)}, {bundle: long_term(30000, 1)})
    assert find_bundles_to_split(ld2, ServiceConfig(), lambda ns: 1) == {bundle: "b1:8080"}


def test_v_s10_namespace_bundle_cap_counts_this_rounds_selections() -> None:
    bundles = ["ten/ns/0x00000000_0x40000000", "ten/ns/0x40000000_0x80000000", "ten/ns/0x80000000_0xffffffff"]
    ld = one_broker(
        {b: NamespaceBundleStats(topics=5) for b in bundles},
        {b: long_term(60001, 0) for b in bundles},
    )
    conf = ServiceConfig(load_balancer_namespace_maximum_bundles=3)
    selected = find_bundles_to_split(ld, conf, lambda ns: 1)
    assert list(selected) == bundles[:2]  # 1 existing + 2 selected == 3
    assert find_bundles_to_split(ld, conf, lambda ns: 3) == {}


def test_selected_bundle_maps_to_the_reporting_broker() -> None:
    a, b = "t/n/0x00000000_0x80000000", "t/n/0x80000000_0xffffffff"
    ld = LoadData(
        broker_data={
            "b1:1": BrokerData(local_data=LocalBrokerData(last_stats={a: NamespaceBundleStats(topics=1001)})),
            "b2:1": BrokerData(local_data=LocalBrokerData(last_stats={b: NamespaceBundleStats(topics=1001)})),
        }
    )
    assert find_bundles_to_split(ld, ServiceConfig(), lambda ns: 2) == {a: "b1:1", b: "b2:1"}


@pytest.mark.parametrize(
    ("stats", "data", "conf", "split"),
    [
        (NamespaceBundleStats(topics=1000), None, ServiceConfig(), False),
        (NamespaceBundleStats(topics=1001), None, ServiceConfig(), True),
        (NamespaceBundleStats(topics=2, producer_count=500, consumer_count=500), None, ServiceConfig(), False),
        (NamespaceBundleStats(topics=2, producer_count=500, consumer_count=501), None, ServiceConfig(), True),
        (
            NamespaceBundleStats(topics=2, producer_count=5000),
            None,
            ServiceConfig(load_balancer_namespace_bundle_max_sessions=-1),
            False,
        ),
        (
            NamespaceBundleStats(topics=2, producer_count=5000),
            None,
            ServiceConfig(load_balancer_namespace_bundle_max_sessions=0),
            False,
        ),
        (NamespaceBundleStats(topics=2), long_term(15000, 15000), ServiceConfig(), False),
        (NamespaceBundleStats(topics=2), long_term(15000, 15000.5), ServiceConfig(), True),
        (NamespaceBundleStats(topics=2), long_term(0, 0, 52428800, 52428800), ServiceConfig(), False),
        (NamespaceBundleStats(topics=2), long_term(0, 0, 52428800, 52428801), ServiceConfig(), True),
        # Only the long-term window counts: a hot *report* without BundleData is rate = thr = 0.
        (NamespaceBundleStats(topics=2, msg_rate_in=1e9, msg_throughput_in=1e12), None, ServiceConfig(), False),
    ],
)
def test_v_s11_thresholds_are_strict(
    stats: NamespaceBundleStats, data: BundleData | None, conf: ServiceConfig, split: bool
) -> None:
    bundle = "t/n/0x00000000_0xffffffff"
    ld = one_broker({bundle: stats}, {bundle: data} if data is not None else {})
    assert (bundle in find_bundles_to_split(ld, conf, lambda ns: 1)) is split


def test_short_term_window_is_ignored() -> None:
    bundle = "t/n/0x00000000_0xffffffff"
    data = long_term(0, 0)
    data.short_term_data.msg_rate_in = 1e9
    ld = one_broker({bundle: NamespaceBundleStats(topics=2)}, {bundle: data})
    assert find_bundles_to_split(ld, ServiceConfig(), lambda ns: 1) == {}
