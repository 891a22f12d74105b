"""Load data Structs: float32 percentages, usage maxima, time averages, JSON shape, report cadence."""

from __future__ import annotations

import json
import math
import random

import msgspec
import pytest

from emulator.model.config import ServiceConfig
from emulator.model.loaddata import (
    BrokerDataUpdateCheck,
    DEFAULT_MESSAGE_RATE,
    DEFAULT_MESSAGE_THROUGHPUT,
    NUM_LONG_SAMPLES,
    NUM_SHORT_SAMPLES,
    BrokerData,
    BundleData,
    LoadData,
    LocalBrokerData,
    NamespaceBundleStats,
    ResourceUsage,
    TimeAverageBrokerData,
    TimeAverageMessageData,
    default_bundle_stats,
    encode_json,
    is_system_service_namespace,
    namespace_of,
    need_broker_data_update,
    percent_change,
    range_of,
)


def stats(rate_in=0.0, rate_out=0.0, thr_in=0.0, thr_out=0.0, **kw) -> NamespaceBundleStats:
    return NamespaceBundleStats(
        msg_rate_in=rate_in, msg_rate_out=rate_out, msg_throughput_in=thr_in, msg_throughput_out=thr_out, **kw
    )


# --- ResourceUsage (§1.2) --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("usage", "limit", "expected"),
    [
        (30, 100, 30.000001907348633),
        (60, 100, 60.000003814697266),
        (999, 1000, 99.9000015258789),
        (106, 1000, 10.59999942779541),
        (80, 100, 80.0),
        (85, 100, 85.0),
        (140, 100, 140.0),
        (0, 0, 0.0),
        (5, 0, 0.0),
        (5, -1, 0.0),
    ],
)
def test_percent_usage_is_float32(usage: float, limit: float, expected: float) -> None:
    assert ResourceUsage(usage=usage, limit=limit).percent_usage() == expected


def test_default_resource_usage_is_zero_percent() -> None:
    assert ResourceUsage().percent_usage() == 0.0


def test_four_percent_usages_at_once_are_the_same_bits_as_one_at_a_time() -> None:
    """`_percent_usages` (the weighted usage's fast path) against `percent_usage`, value by value,
    exceptions included: ordinary, rounding-sensitive, zero, negative, tiny, huge, inf and NaN."""
    import random
    import struct

    from emulator.model.loaddata import _percent_usages

    def outcome(f):  # the exact bits, or the exception's type
        try:
            return tuple(struct.pack("<d", x) for x in f())
        except Exception as e:  # noqa: BLE001
            return type(e)

    rng = random.Random(4)
    odd = [0.0, -0.0, 1.0, -5.0, 1e-46, 1e-30, 3.5e38, 1e300, math.inf, -math.inf, math.nan, 100.0]
    for _ in range(3000):
        pairs = []
        for _ in range(4):
            if rng.random() < 0.3:
                pairs.append((rng.choice(odd), rng.choice(odd)))
            else:
                limit = rng.uniform(1.0, 1e7)
                pairs.append((rng.uniform(0.0, 1.3) * limit, limit))
        rs = [ResourceUsage(usage=u, limit=lim) for u, lim in pairs]
        assert outcome(lambda rs=rs: _percent_usages(*rs)) == outcome(
            lambda rs=rs: tuple(r.percent_usage() for r in rs)), pairs

    b = broker(cpu=(123.4, 400.0), mem=(1000.0, 4096.0), direct=(7.0, 0.0), bw_in=(3e6, 1e7), bw_out=(1.0, 3.0))
    assert b.percent_usages() == {attr: getattr(b, attr).percent_usage()
                                  for attr in ("cpu", "memory", "direct_memory", "bandwidth_in", "bandwidth_out")}


# --- LocalBrokerData usage maxima (§1.4) -----------------------------------------------------------


def broker(cpu=(0, 0), mem=(0, 0), direct=(0, 0), bw_in=(0, 0), bw_out=(0, 0)) -> LocalBrokerData:
    return LocalBrokerData(
        cpu=ResourceUsage(*cpu),
        memory=ResourceUsage(*mem),
        direct_memory=ResourceUsage(*direct),
        bandwidth_in=ResourceUsage(*bw_in),
        bandwidth_out=ResourceUsage(*bw_out),
    )


def test_max_resource_usage_excludes_memory_and_divides_in_float32() -> None:
    b = broker(cpu=(30, 100), mem=(99, 100), direct=(10, 100), bw_in=(20, 100))
    # Java: float max 30.000002f / 100 (float division) = 0.3f, widened
    assert b.max_resource_usage() == 0.30000001192092896
    assert broker(bw_out=(50, 100)).max_resource_usage() == 0.5


def test_weighted_max_usage_uses_double_arithmetic() -> None:
    b = broker(cpu=(30, 100), mem=(99, 100), direct=(90, 100), bw_in=(20, 100), bw_out=(40, 100))
    assert b.max_resource_usage_with_weight(1.0, 0.0, 1.0, 1.0) == pytest.approx(0.40000001)
    assert b.max_resource_usage_with_weight(1.0, 0.0, 1.0, 1.0) == 40.0 / 100.0
    assert b.max_resource_usage_with_weight(1.0, 1.0, 1.0, 1.0) == 90.0 / 100.0
    assert b.max_resource_usage_with_weight(1.0, 0.0, 1.0, 0.5) == 30.000001907348633 / 100.0
    assert b.max_resource_usage_with_weight_and_memory(1.0, 1.0, 0.0, 1.0, 1.0) == 0.99
    assert b.max_resource_usage_with_weight_and_memory(1.0, 0.0, 0.0, 1.0, 1.0) == 0.4


def test_weighted_max_all_zero_weights_is_zero_and_starts_from_minus_infinity() -> None:
    b = broker(cpu=(30, 100))
    assert b.max_resource_usage_with_weight(0.0, 0.0, 0.0, 0.0) == 0.0
    # negative weights: Java's max starts at -inf, so the result may be negative
    assert b.max_resource_usage_with_weight(-1.0, -1.0, -1.0, -1.0) == pytest.approx(-0.0)
    assert broker(cpu=(50, 100), direct=(50, 100), bw_in=(50, 100), bw_out=(50, 100)).max_resource_usage_with_weight(
        -1.0, -1.0, -1.0, -1.0
    ) == -0.5


def test_weighted_max_within_limit_ignores_values_over_100_percent() -> None:
    b = broker(cpu=(140, 100), bw_in=(60, 100))
    assert b.max_resource_usage_with_weight_within_limit(1.0, 0.0, 0.0, 1.0, 1.0) == 60.000003814697266 / 100
    assert broker(cpu=(140, 100)).max_resource_usage_with_weight_within_limit(1, 0, 0, 1, 1) == 0.0
    assert b.max_resource_usage_with_weight(1.0, 0.0, 1.0, 1.0) == 1.4


def test_weighted_max_usage_uses_the_conf_effective_weights() -> None:
    b = broker(cpu=(30, 100), direct=(80, 100), bw_in=(50, 100))
    assert b.weighted_max_usage(ServiceConfig()) == 0.5
    conf = ServiceConfig(load_balancer_bandwith_in_resource_weight=0.0)  # deprecated key still counts
    assert b.weighted_max_usage(conf) == 30.000001907348633 / 100
    assert b.weighted_max_usage(ServiceConfig(load_balancer_direct_memory_resource_weight=1.0)) == 0.8


# --- LocalBrokerData.update_from_stats -------------------------------------------------------------


def test_update_from_stats_sums_counts_and_tracks_gains_and_losses() -> None:
    b = LocalBrokerData()
    b.update_from_stats(
        {
            "t/n/0x00000000_0x80000000": stats(10, 20, 1000, 2000, topics=3, consumer_count=2, producer_count=1),
            "t/n/0x80000000_0xffffffff": stats(1, 2, 100, 200, topics=1, consumer_count=1, producer_count=4),
        }
    )
    assert (b.msg_rate_in, b.msg_rate_out) == (11, 22)
    assert (b.msg_throughput_in, b.msg_throughput_out) == (1100, 2200)
    assert (b.num_topics, b.num_bundles, b.num_consumers, b.num_producers) == (4, 2, 3, 5)
    assert b.bundles == {"t/n/0x00000000_0x80000000", "t/n/0x80000000_0xffffffff"}
    assert b.last_bundle_gains == b.bundles
    assert b.last_bundle_losses == set()
    assert list(b.last_stats) == ["t/n/0x00000000_0x80000000", "t/n/0x80000000_0xffffffff"]

    b.clean_deltas()
    b.update_from_stats({"t/n/0x80000000_0xffffffff": stats(5), "t/n2/0x00000000_0xffffffff": stats(1)})
    assert b.bundles == {"t/n/0x80000000_0xffffffff", "t/n2/0x00000000_0xffffffff"}
    assert b.last_bundle_gains == {"t/n2/0x00000000_0xffffffff"}
    assert b.last_bundle_losses == {"t/n/0x00000000_0x80000000"}
    assert b.msg_rate_in == 6 and b.num_bundles == 2 and b.num_topics == 0

    # deltas accumulate until clean_deltas
    b.update_from_stats({})
    assert b.last_bundle_losses == {
        "t/n/0x00000000_0x80000000",
        "t/n/0x80000000_0xffffffff",
        "t/n2/0x00000000_0xffffffff",
    }
    assert b.num_bundles == 0 and b.msg_rate_in == 0 and b.last_stats == {}
    b.clean_deltas()
    assert b.last_bundle_gains == set() and b.last_bundle_losses == set()


def test_update_from_stats_copies_the_map() -> None:
    given = {"t/n/0x00000000_0xffffffff": stats(1)}
    b = LocalBrokerData()
    b.update_from_stats(given)
    given["t/n/x"] = stats(2)
    assert list(b.last_stats) == ["t/n/0x00000000_0xffffffff"]


def test_default_mutable_fields_are_not_shared() -> None:
    a, b = LocalBrokerData(), LocalBrokerData()
    a.bundles.add("x")
    a.cpu.usage = 5.0
    assert b.bundles == set() and b.cpu.usage == 0.0
    assert LoadData().broker_data is not LoadData().broker_data


# --- JSON shape ------------------------------------------------------------------------------------


def test_local_broker_data_json_is_pulsars_camel_case() -> None:
    b = LocalBrokerData(
        web_service_url="http://b1:8080",
        cpu=ResourceUsage(usage=30.0, limit=100.0),
        msg_rate_in=5.0,
        bundles={"t/n/b", "t/n/a"},
        last_stats={"t/n/a": stats(1.0, topics=2, cache_size=7)},
        last_update=123,
        broker_version_string="4.0.0",
    )
    doc = json.loads(encode_json(b))
    assert doc["webServiceUrl"] == "http://b1:8080"
    assert doc["cpu"] == {"usage": 30.0, "limit": 100.0}
    assert doc["msgRateIn"] == 5.0
    assert doc["bundles"] == ["t/n/a", "t/n/b"]  # sorted
    assert doc["lastStats"]["t/n/a"]["msgRateIn"] == 1.0
    assert doc["lastStats"]["t/n/a"]["cacheSize"] == 7
    assert doc["lastUpdate"] == 123
    for key in (
        "webServiceUrlTls", "pulsarServiceUrl", "pulsarServiceUrlTls", "persistentTopicsEnabled",
        "nonPersistentTopicsEnabled", "memory", "directMemory", "bandwidthIn", "bandwidthOut",
        "msgRateOut", "msgThroughputIn", "msgThroughputOut", "numTopics", "numBundles", "numConsumers",
        "numProducers", "lastBundleGains", "lastBundleLosses", "brokerVersionString", "loadManagerClassName",
    ):  # fmt: skip
        assert key in doc, key
    assert msgspec.json.decode(encode_json(b), type=LocalBrokerData) == b
    assert msgspec.json.decode(msgspec.json.encode(b), type=LocalBrokerData) == b


def test_bundle_data_and_broker_average_json() -> None:
    data = BundleData.default()
    doc = json.loads(msgspec.json.encode(data))
    assert set(doc) == {"shortTermData", "longTermData", "topics"}
    assert doc["shortTermData"] == {
        "maxSamples": 10,
        "numSamples": 0,
        "msgRateIn": 50.0,
        "msgRateOut": 50.0,
        "msgThroughputIn": 50000.0,
        "msgThroughputOut": 50000.0,
    }
    assert msgspec.json.decode(msgspec.json.encode(data), type=BundleData) == data
    avg = TimeAverageBrokerData(short_term_msg_rate_in=1.0, long_term_msg_throughput_out=2.0)
    doc = json.loads(msgspec.json.encode(avg))
    assert doc["shortTermMsgRateIn"] == 1.0 and doc["longTermMsgThroughputOut"] == 2.0
    assert msgspec.json.decode(msgspec.json.encode(avg), type=TimeAverageBrokerData) == avg


def test_load_data_round_trips() -> None:
    ld = LoadData(
        broker_data={"b1:8080": BrokerData(local_data=LocalBrokerData(bundles={"a/b/x"}))},
        bundle_data={"a/b/0x00000000_0xffffffff": BundleData.default()},
        recently_unloaded_bundles={"a/b/0x00000000_0xffffffff": 5},
    )
    assert msgspec.json.decode(encode_json(ld), type=LoadData) == ld


def test_decoding_ignores_unknown_pulsar_fields() -> None:
    raw = b'{"webServiceUrl":"http://x:8080","loadReportType":"LocalBrokerData","protocols":{},"cpu":{"usage":1,"limit":2}}'
    b = msgspec.json.decode(raw, type=LocalBrokerData)
    assert b.web_service_url == "http://x:8080" and b.cpu.limit == 2.0


# --- TimeAverageMessageData and BundleData (§1.5, §1.6) --------------------------------------------


def test_time_average_is_running_mean_then_ema() -> None:
    t = TimeAverageMessageData(max_samples=3, num_samples=0, msg_rate_in=999.0)
    t.update_values(10.0, 0.0, 0.0, 0.0)
    assert (t.num_samples, t.msg_rate_in) == (1, 10.0)  # first sample overwrites the initial value
    t.update_values(20.0, 0.0, 0.0, 0.0)
    assert (t.num_samples, t.msg_rate_in) == (2, 15.0)
    t.update_values(30.0, 0.0, 0.0, 0.0)
    assert (t.num_samples, t.msg_rate_in) == (3, 20.0)
    t.update_values(50.0, 0.0, 0.0, 0.0)  # full: EMA with weight 1/3
    assert t.num_samples == 3
    assert t.msg_rate_in == (2 * 20.0 + 50.0) / 3


def test_time_average_fields_are_independent() -> None:
    t = TimeAverageMessageData(max_samples=10)
    t.update(stats(1.0, 2.0, 3.0, 4.0))
    t.update(stats(3.0, 4.0, 5.0, 6.0))
    assert (t.msg_rate_in, t.msg_rate_out, t.msg_throughput_in, t.msg_throughput_out) == (2.0, 3.0, 4.0, 5.0)
    assert t.total_msg_rate() == 5.0
    assert t.total_msg_throughput() == 9.0


def test_time_average_with_zero_max_samples_follows_java_division() -> None:
    t = TimeAverageMessageData()  # Java's JSON constructor: maxSamples 0
    t.update_values(1.0, 0.0, 0.0, 0.0)
    assert t.num_samples == 0
    assert t.msg_rate_in == math.inf  # (-1 * 0.0 + 1.0) / 0
    assert math.isnan(t.msg_rate_out)  # (-1 * 0.0 + 0.0) / 0


def test_bundle_data_default_is_overwritten_by_first_sample() -> None:
    data = BundleData.default()
    assert data.short_term_data.max_samples == NUM_SHORT_SAMPLES == 10
    assert data.long_term_data.max_samples == NUM_LONG_SAMPLES == 1000
    for window in (data.short_term_data, data.long_term_data):
        assert window.num_samples == 0
        assert window.msg_rate_in == window.msg_rate_out == DEFAULT_MESSAGE_RATE == 50.0
        assert window.msg_throughput_in == window.msg_throughput_out == DEFAULT_MESSAGE_THROUGHPUT == 50000.0
    assert data.topics == 0
    data.update(stats(7.0, 8.0, 9.0, 10.0, topics=4))
    for window in (data.short_term_data, data.long_term_data):
        assert (window.msg_rate_in, window.msg_rate_out) == (7.0, 8.0)
        assert (window.msg_throughput_in, window.msg_throughput_out) == (9.0, 10.0)
        assert window.num_samples == 1
    assert data.topics == 4


def test_short_window_forgets_faster_than_long_window() -> None:
    data = BundleData.default()
    for _ in range(20):
        data.update(stats(100.0))
    for _ in range(10):
        data.update(stats(0.0))
    assert data.short_term_data.num_samples == 10
    assert data.long_term_data.num_samples == 30
    assert data.short_term_data.msg_rate_in == pytest.approx(100.0 * 0.9**10)
    assert data.long_term_data.msg_rate_in == pytest.approx(100.0 * 20 / 30)


def test_default_instances_are_fresh() -> None:
    a, b = BundleData.default(), BundleData.default()
    a.update(stats(1.0))
    assert b.short_term_data.msg_rate_in == 50.0
    assert default_bundle_stats() is not default_bundle_stats()


# --- TimeAverageBrokerData.reset (§1.7) ------------------------------------------------------------


def test_broker_time_average_sums_bundle_data_or_defaults() -> None:
    known = BundleData.default()
    known.update(stats(1.0, 2.0, 3.0, 4.0))
    for _ in range(NUM_SHORT_SAMPLES):
        known.short_term_data.update(stats(10.0, 20.0, 30.0, 40.0))
    avg = TimeAverageBrokerData(short_term_msg_rate_in=1e9)
    avg.reset(["t/n/known", "t/n/unknown"], {"t/n/known": known}, default_bundle_stats())
    assert avg.short_term_msg_rate_in == known.short_term_data.msg_rate_in + 50.0
    assert avg.short_term_msg_rate_out == known.short_term_data.msg_rate_out + 50.0
    assert avg.short_term_msg_throughput_in == known.short_term_data.msg_throughput_in + 50000.0
    assert avg.short_term_msg_throughput_out == known.short_term_data.msg_throughput_out + 50000.0
    assert avg.long_term_msg_rate_in == 1.0 + 50.0
    assert avg.long_term_msg_rate_out == 2.0 + 50.0
    assert avg.long_term_msg_throughput_in == 3.0 + 50000.0
    assert avg.long_term_msg_throughput_out == 4.0 + 50000.0
    avg.reset([], {}, default_bundle_stats())
    assert avg == TimeAverageBrokerData()


# --- LoadData / system namespaces (§1.8) -----------------------------------------------------------


@pytest.mark.parametrize(
    ("namespace", "system"),
    [
        ("pulsar/system", True),
        ("pulsar/standalone/broker-1:8080", True),
        ("pulsar/broker-1.example:8080", True),
        ("sla-monitor/us-west/10.0.0.1:8080", True),
        ("public/default", False),
        ("pulsar/functions", False),
        ("pulsar/broker-1", False),
        ("sla-monitor/broker-1:8080", False),
        ("pulsar/b1:8080x", False),  # full match only
        ("pulsar/a/b/c:80", True),  # as in Java: [^:]+ also matches '/'
        ("xpulsar/system", False),
    ],
)
def test_system_service_namespaces(namespace: str, system: bool) -> None:
    assert is_system_service_namespace(namespace) is system


def test_bundle_data_for_load_shedding_excludes_system_namespaces_keeping_order() -> None:
    names = [
        "public/default/0x00000000_0x40000000",
        "pulsar/standalone/b1:8080/0x00000000_0xffffffff",
        "pulsar/b1:8080/0x00000000_0xffffffff",
        "sla-monitor/c1/b1:8080/0x00000000_0xffffffff",
        "pulsar/system/0x00000000_0xffffffff",
        "t/n/0x00000000_0xffffffff",
    ]
    ld = LoadData(bundle_data={n: BundleData.default() for n in names})
    view = ld.bundle_data_for_load_shedding()
    assert list(view) == ["public/default/0x00000000_0x40000000", "t/n/0x00000000_0xffffffff"]
    assert view["t/n/0x00000000_0xffffffff"] is ld.bundle_data["t/n/0x00000000_0xffffffff"]


def test_namespace_and_range_of() -> None:
    assert namespace_of("pulsar/c/b1:8080/0x00000000_0xffffffff") == "pulsar/c/b1:8080"
    assert range_of("pulsar/c/b1:8080/0x00000000_0xffffffff") == "0x00000000_0xffffffff"


# --- needBrokerDataUpdate (§2.1) -------------------------------------------------------------------

CONF = ServiceConfig()
MIN = 60_000


def reported(rate=100.0, thr=1000.0, bundles=4, cpu=(10, 100), last_update=0) -> LocalBrokerData:
    b = broker(cpu=cpu)
    b.msg_rate_in, b.msg_rate_out = rate / 2, rate / 2
    b.msg_throughput_in, b.msg_throughput_out = thr / 2, thr / 2
    b.num_bundles = bundles
    b.last_update = last_update
    return b


def test_percent_change() -> None:
    assert percent_change(0, 0) == 0.0
    assert percent_change(0, 1) == math.inf
    assert percent_change(100, 110) == pytest.approx(10.0)
    assert percent_change(100, 50) == 50.0


def test_unchanged_load_does_not_report_until_15_minutes() -> None:
    last, cur = reported(), reported(last_update=0)
    assert not need_broker_data_update(last, cur, CONF, now_ms=15 * MIN)  # exactly 15 min: strict
    assert need_broker_data_update(last, cur, CONF, now_ms=15 * MIN + 1)


def test_max_interval_uses_current_last_update() -> None:
    last = reported(last_update=0)
    cur = reported(last_update=10 * MIN)
    assert not need_broker_data_update(last, cur, CONF, now_ms=20 * MIN)
    conf = CONF.with_overrides({"loadBalancerReportUpdateMaxIntervalMinutes": 5}, source="t")
    assert need_broker_data_update(last, cur, conf, now_ms=20 * MIN)


def test_first_bundle_is_an_infinite_change() -> None:
    assert need_broker_data_update(reported(bundles=0, rate=0, thr=0), reported(bundles=1, rate=0, thr=0), CONF, 0)


def test_exactly_ten_percent_does_not_report_but_more_does() -> None:
    assert not need_broker_data_update(reported(rate=100.0), reported(rate=110.0), CONF, 0)
    assert need_broker_data_update(reported(rate=100.0), reported(rate=110.1), CONF, 0)
    assert not need_broker_data_update(reported(thr=1000.0), reported(thr=900.0), CONF, 0)
    assert need_broker_data_update(reported(thr=1000.0), reported(thr=899.0), CONF, 0)
    assert not need_broker_data_update(reported(bundles=10), reported(bundles=11), CONF, 0)
    assert need_broker_data_update(reported(bundles=10), reported(bundles=12), CONF, 0)


def test_weighted_usage_change_reports() -> None:
    # 10 % -> 21 % cpu = 11 points (float32 noise included) > 10
    assert need_broker_data_update(reported(cpu=(10, 100)), reported(cpu=(21, 100)), CONF, 0)
    assert not need_broker_data_update(reported(cpu=(10, 100)), reported(cpu=(19, 100)), CONF, 0)
    # a weight of 0 on cpu hides the cpu change
    conf = CONF.with_overrides({"loadBalancerCPUResourceWeight": 0}, source="t")
    assert not need_broker_data_update(reported(cpu=(10, 100)), reported(cpu=(90, 100)), conf, 0)
    # direct memory only counts with its weight (default 0)
    last, cur = reported(), reported()
    cur.direct_memory = ResourceUsage(90, 100)
    assert not need_broker_data_update(last, cur, CONF, 0)
    conf = CONF.with_overrides({"loadBalancerDirectMemoryResourceWeight": 1.0}, source="t")
    assert need_broker_data_update(last, cur, conf, 0)


def test_threshold_is_configurable() -> None:
    conf = CONF.with_overrides({"loadBalancerReportUpdateThresholdPercentage": 50}, source="t")
    assert not need_broker_data_update(reported(rate=100.0), reported(rate=140.0), conf, 0)
    assert need_broker_data_update(reported(rate=100.0), reported(rate=151.0), conf, 0)


def test_weighted_usage_is_recomputed_when_a_number_changes() -> None:
    """The kept weighted usage answers only for the exact same 12 numbers (bits, not values)."""
    local = LocalBrokerData(cpu=ResourceUsage(usage=30.0, limit=100.0),
                            bandwidth_in=ResourceUsage(usage=10.0, limit=100.0))
    assert local.max_resource_usage_with_weight(1.0, 1.0, 1.0, 1.0) == pytest.approx(0.3)
    local.cpu.usage = 50.0  # mutated in place
    assert local.max_resource_usage_with_weight(1.0, 1.0, 1.0, 1.0) == pytest.approx(0.5)
    assert local.max_resource_usage_with_weight(1.0, 1.0, 6.0, 1.0) == pytest.approx(0.6)
    local.bandwidth_in = ResourceUsage(usage=90.0, limit=100.0)  # replaced
    assert local.max_resource_usage_with_weight(1.0, 1.0, 1.0, 1.0) == pytest.approx(0.9)
    zero = LocalBrokerData(cpu=ResourceUsage(usage=0.0, limit=100.0))
    assert math.copysign(1.0, zero.max_resource_usage_with_weight(-1.0, -1.0, -1.0, -1.0)) == -1.0
    assert math.copysign(1.0, zero.max_resource_usage_with_weight(1.0, -1.0, -1.0, -1.0)) == 1.0
    assert msgspec.json.encode(local) == msgspec.json.encode(msgspec.json.decode(msgspec.json.encode(local),
                                                                                  type=LocalBrokerData))


def test_the_report_tick_check_answers_as_need_broker_data_update() -> None:
    """BrokerDataUpdateCheck keeps what stays the same between ticks: across a tick sequence where the
    memories change every tick and CPU, bandwidth, rates, bundles, weights, `last` and the time change
    now and then (zeros, limits of 0, NaN included), every answer is need_broker_data_update's."""
    rng = random.Random(19)
    check = BrokerDataUpdateCheck()
    conf = CONF
    last = reported()
    cur = reported(last_update=0)
    answers = []
    choices = [0.0, 0.0, 5.0, 50.0, 100.0, math.nan, 1e-3]
    for tick in range(3000):
        cur.memory = ResourceUsage(rng.uniform(0, 4096), 4096)
        cur.direct_memory = ResourceUsage(rng.choice([0.0, -0.0, 3000.0, rng.uniform(0, 2048)]),
                                          rng.choice([2048.0, 2048.0, 0.0]))
        r = rng.random()
        if r < 0.1:
            cur.cpu = ResourceUsage(rng.choice(choices), rng.choice([100.0, 400.0, 0.0]))
            cur.bandwidth_in = ResourceUsage(rng.uniform(0, 1e6), 1e6)
            cur.bandwidth_out = ResourceUsage(rng.choice(choices), 1e6)
        elif r < 0.13:
            cur.msg_rate_in = rng.choice([0.0, rng.uniform(0, 1e4)])
            cur.msg_throughput_out = rng.uniform(0, 1e7)
        elif r < 0.15:
            cur.num_bundles = rng.randrange(0, 5)
        elif r < 0.18:
            last = msgspec.structs.replace(cur)
            cur.last_update = tick * 5000
        elif r < 0.2:
            conf = CONF.with_overrides({"loadBalancerDirectMemoryResourceWeight": rng.choice([0.0, -0.0, 1.0, 2.5]),
                                        "loadBalancerCPUResourceWeight": rng.choice([0.5, 1.0])}, source="t")
        now_ms = tick * 5000
        expected = need_broker_data_update(last, cur, conf, now_ms)
        assert check(last, cur, conf, now_ms) == expected, tick
        answers.append(expected)
    assert 100 < sum(answers) < len(answers) - 100   # both answers were exercised
