"""SimpleLoadManagerImpl's LoadReport: Pulsar's JSON, its derived values, load levels, write cadence.

The fixture `tests/data/simple-load-report-3.1.json` is the report Pulsar 3.1 wrote at
`/loadbalance/brokers/broker-1:8080` with SimpleLoadManagerImpl (pulsar-site, "load balance" docs,
Simple tab), copied byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from emulator.model.config import ServiceConfig
from emulator.model.loaddata import NamespaceBundleStats, ResourceUsage
from emulator.model.bundle_order import ResourceType
from emulator.loadmanagers.simple.model.quota import QuotaStore, RealtimeQuotas, ResourceQuota
from emulator.loadmanagers.simple.model.report import (
    LoadReport,
    SystemResourceUsage,
    bottleneck_resource_type,
    broker_report_path,
    decode_load_report,
    encode_load_report,
    is_above_load_level,
    is_below_load_level,
)
from emulator.loadmanagers.simple.model.reporting import (
    average_jvm_heap_mb,
    build_load_report,
    need_load_report_update,
    with_heap_memory,
)
from emulator.loadmanagers.simple.model.settings import SimpleSettings

EXAMPLE = Path(__file__).parents[2] / "data" / "simple-load-report-3.1.json"


def _usage(cpu=(0.0, 100.0), memory=(0.0, 100.0), direct=(0.0, 100.0), bw_in=(0.0, 100.0), bw_out=(0.0, 100.0)):
    return SystemResourceUsage(cpu=ResourceUsage(*cpu), memory=ResourceUsage(*memory),
                               direct_memory=ResourceUsage(*direct), bandwidth_in=ResourceUsage(*bw_in),
                               bandwidth_out=ResourceUsage(*bw_out))


# --- JSON ---------------------------------------------------------------------------------------


def test_pulsar_written_report_round_trips_with_every_key_in_pulsars_order():
    raw = EXAMPLE.read_text().strip()
    report = decode_load_report(raw)
    assert report.name == "broker-1:8080"
    assert report.system_resource_usage.cpu == ResourceUsage(usage=6.224803359552059, limit=800.0)
    assert report.under_loaded is True and report.over_loaded is False
    assert report.web_service_url_tls is msgspec.UNSET  # absent: Pulsar omits null URLs
    original, ours = json.loads(raw), json.loads(encode_load_report(report))
    assert ours == original
    assert list(ours) == list(original)
    # byte for byte but for Java's spelling of 1e7
    assert msgspec.json.encode(report.with_derived()).decode() == raw.replace("1.0E7", "10000000.0")


def test_getter_values_are_recomputed_from_bundle_stats_when_encoded():
    stats = {
        "t/ns/0x00000000_0x80000000": NamespaceBundleStats(msg_rate_in=10.0, msg_rate_out=20.0, topics=3,
                                                           consumer_count=2, producer_count=1),
        "t/ns/0x80000000_0xffffffff": NamespaceBundleStats(msg_rate_in=1.5, msg_rate_out=0.5, topics=1,
                                                           consumer_count=0, producer_count=4),
    }
    report = LoadReport(name="b:8080", timestamp=1234, bundle_stats=stats,
                        system_resource_usage=_usage(cpu=(5.0, 400.0)))
    data = json.loads(encode_load_report(report))
    assert (data["msgRateIn"], data["msgRateOut"]) == (11.5, 20.5)
    assert (data["numTopics"], data["numConsumers"], data["numProducers"], data["numBundles"]) == (4, 2, 5, 2)
    # Java's getMsgThroughputIn/Out return the msgRateIn/Out fields (sic)
    assert (data["msgThroughputIn"], data["msgThroughputOut"]) == (11.5, 20.5)
    assert data["cpu"] == {"usage": 5.0, "limit": 400.0} == data["systemResourceUsage"]["cpu"]
    assert data["lastUpdate"] == 1234 and data["loadReportType"] == "LoadReport"
    assert "webServiceUrlTls" not in data and "allocatedCPU" in data and "preAllocatedCPU" in data
    assert decode_load_report(encode_load_report(report)) == report.with_derived()


def test_defaults_are_javas_and_the_path_is_under_loadbalance_brokers():
    report = LoadReport()
    assert report.system_resource_usage.cpu == ResourceUsage(-1.0, -1.0)
    assert report.persistent_topics_enabled and report.non_persistent_topics_enabled
    assert broker_report_path("broker-1:8080") == "/loadbalance/brokers/broker-1:8080"


# --- load levels ------------------------------------------------------------------------------


def test_above_load_level_reads_bandwidth_cpu_and_direct_memory_but_not_heap():
    assert not is_above_load_level(_usage(memory=(99.0, 100.0)), 85)
    for kind in ("cpu", "direct", "bw_in", "bw_out"):
        assert is_above_load_level(_usage(**{kind: (86.0, 100.0)}), 85)
        assert not is_above_load_level(_usage(**{kind: (85.0, 100.0)}), 85)  # strictly above


def test_below_load_level_needs_all_four_strictly_below():
    assert is_below_load_level(_usage(cpu=(64.0, 100.0), memory=(99.0, 100.0)), 65)
    assert not is_below_load_level(_usage(cpu=(65.0, 100.0)), 65)
    assert is_below_load_level(SystemResourceUsage(), 65)  # limits -1: 0 %


def test_bottleneck_is_the_strictly_highest_of_cpu_memory_and_bandwidths():
    assert bottleneck_resource_type(_usage(cpu=(10.0, 100.0), memory=(20.0, 100.0))) is ResourceType.MEMORY
    assert bottleneck_resource_type(_usage(cpu=(30.0, 100.0), bw_in=(30.0, 100.0))) is ResourceType.CPU
    assert bottleneck_resource_type(_usage(bw_in=(90.0, 100.0))) is ResourceType.BANDWIDTH_IN
    assert bottleneck_resource_type(_usage(bw_out=(1.0, 100.0), direct=(99.0, 100.0))) is ResourceType.BANDWIDTH_OUT


# --- building and writing a report ------------------------------------------------------------


def test_built_report_has_gains_losses_flags_and_quota_totals():
    conf = ServiceConfig()
    quota = ResourceQuota(msg_rate_in=10.0, msg_rate_out=30.0, bandwidth_in=1000.0, bandwidth_out=3000.0,
                          memory=5.0)
    store = QuotaStore(default=quota)
    stats = {"t/ns/0x00000000_0x80000000": NamespaceBundleStats(), "t/ns/0x80000000_0xffffffff": NamespaceBundleStats()}
    report = build_load_report(
        name="b1:8080", web_service_url="http://b1:8080", pulsar_service_url="pulsar://b1:6650",
        broker_version="3.0.0", usage=_usage(cpu=(90.0, 100.0)), bundle_stats=stats,
        previous_bundles={"t/ns/0x00000000_0x80000000", "t/ns/gone"},
        pre_allocated_bundles={"t/ns/0x80000000_0xffffffff", "t/other/0x00000000_0xffffffff"},
        quotas=RealtimeQuotas(), store=store, settings=SimpleSettings.resolve(conf), conf=conf,
        now_ms=5000, start_ms=1000)
    assert report.bundle_gains == {"t/ns/0x80000000_0xffffffff"}
    assert report.bundle_losses == {"t/ns/gone"}
    assert report.over_loaded and not report.under_loaded
    assert (report.allocated_msg_rate_in, report.allocated_memory) == (20.0, 10.0)
    assert report.allocated_cpu == pytest.approx(80.0 * 0.025)
    # the reported bundle is no longer pre-allocated: only the other namespace's remains
    assert (report.pre_allocated_msg_rate_out, report.pre_allocated_bandwidth_in) == (30.0, 1000.0)
    assert report.num_bundles == 2 and report.timestamp == 5000 and report.start_timestamp == 1000


def test_heap_average_weights_the_last_two_minutes_of_samples():
    conf = ServiceConfig()  # min interval 5000 ms -> weight 24
    assert average_jvm_heap_mb(0, 480, conf) == 480
    assert average_jvm_heap_mb(480, 720, conf) == (23 * 480 + 720) // 24
    usage = with_heap_memory(_usage(memory=(1.0, 2048.0)), 490)
    assert usage.memory == ResourceUsage(490.0, 2048.0)


def test_report_write_cadence_follows_write_load_report_on_zookeeper():
    conf = ServiceConfig()
    last = LoadReport(timestamp=100_000, bundle_stats={"t/ns/0x00000000_0xffffffff": NamespaceBundleStats()},
                      system_resource_usage=_usage(cpu=(10.0, 100.0)))
    same = _usage(cpu=(10.0, 100.0))

    def decide(now, *, count=1, usage=same, force=False, last_usage=100_000, report=last):
        return need_load_report_update(report, force=force, now_ms=now, bundle_count=count,
                                       last_resource_usage_ms=last_usage, usage=usage, conf=conf)

    assert decide(0, report=None).write and decide(100_001, force=True).write
    assert not decide(105_000, count=2).write  # not past the 5 s minimum
    assert decide(105_001, count=2).write  # bundle count changed
    assert not decide(150_000, usage=_usage(cpu=(90.0, 100.0))).write  # host usage checked each minute
    moved = decide(160_001, usage=_usage(cpu=(21.0, 100.0)))
    assert moved.write and moved.usage_checked and moved.resource_change == 11
    still = decide(160_001, usage=_usage(cpu=(20.0, 100.0)))
    assert not still.write and still.usage_checked and still.resource_change == 10
    assert decide(100_000 + 15 * 60_000 + 1, last_usage=100_000 + 15 * 60_000).write  # max interval
