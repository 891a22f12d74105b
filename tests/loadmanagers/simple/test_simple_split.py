"""SimpleLoadManagerImpl's doNamespaceBundleSplit.

Ported from Pulsar's `LoadBalancerTest.testNamespaceBundleAutoSplit`.
"""

from __future__ import annotations

from emulator.model.config import ServiceConfig
from emulator.model.loaddata import NamespaceBundleStats
from emulator.loadmanagers.simple.model.report import LoadReport
from emulator.loadmanagers.simple.model.settings import AUTO_BUNDLE_SPLIT_ENABLED_PATH, SimpleSettings
from emulator.loadmanagers.simple.model.split import MBYTES, do_namespace_bundle_split

CONF = ServiceConfig()
MAX_BUNDLES = CONF.load_balancer_namespace_maximum_bundles
MAX_TOPICS = CONF.load_balancer_namespace_bundle_max_topics
MAX_SESSIONS = CONF.load_balancer_namespace_bundle_max_sessions
MAX_RATE = CONF.load_balancer_namespace_bundle_max_msg_rate
MAX_BW = CONF.load_balancer_namespace_bundle_max_bandwidth_mbytes * MBYTES


def _stats(topics, producers, consumers, rate_in, rate_out, tput_in, tput_out):
    return NamespaceBundleStats(topics=topics, producer_count=producers, consumer_count=consumers,
                                msg_rate_in=rate_in, msg_rate_out=rate_out, msg_throughput_in=tput_in,
                                msg_throughput_out=tput_out)


def _report() -> LoadReport:
    half = "0x00000000_0x80000000"
    return LoadReport(name="broker-0:8080", bundle_stats={
        f"pulsar/use/primary-ns-01/{half}": _stats(MAX_TOPICS + 1, 0, 0, 0, 0, 0, 0),
        f"pulsar/use/primary-ns-02/{half}": _stats(2, MAX_SESSIONS + 1, 0, 0, 0, 0, 0),
        f"pulsar/use/primary-ns-03/{half}": _stats(2, 0, MAX_SESSIONS + 1, 0, 0, 0, 0),
        f"pulsar/use/primary-ns-04/{half}": _stats(2, 0, 0, MAX_RATE + 1, 0, 0, 0),
        f"pulsar/use/primary-ns-05/{half}": _stats(2, 0, 0, 0, MAX_RATE + 1, 0, 0),
        f"pulsar/use/primary-ns-06/{half}": _stats(2, 0, 0, 0, 0, MAX_BW + 1, 0),
        f"pulsar/use/primary-ns-07/{half}": _stats(2, 0, 0, 0, 0, 0, MAX_BW + 1),
        f"pulsar/use/primary-ns-08/{half}": _stats(MAX_TOPICS - 1, MAX_SESSIONS - 1, 1, MAX_RATE - 1, 1, MAX_BW - 1, 1),
        f"pulsar/use/primary-ns-09/{half}": _stats(1, 0, 0, 0, 0, 0, MAX_BW + 1),
        "pulsar/use/primary-ns-10/0x00000000_0x02000000": _stats(MAX_TOPICS + 1, 0, 0, 0, 0, 0, 0),
    })


COUNTS = {f"pulsar/use/primary-ns-{i:02d}": (MAX_BUNDLES if i == 10 else 2) for i in range(1, 11)}


def test_namespace_bundle_auto_split_vectors():
    """01-07 split (topics, producers, consumers, rate in, rate out, bandwidth in, bandwidth out);
    08 is just under every limit, 09 has a single topic, 10's namespace has the maximum bundles."""
    plan = do_namespace_bundle_split(_report(), COUNTS, SimpleSettings.resolve(CONF), CONF)
    assert plan.split == [f"pulsar/use/primary-ns-{i:02d}/0x00000000_0x80000000" for i in range(1, 8)]
    assert plan.single_topic == ["pulsar/use/primary-ns-09/0x00000000_0x80000000"]
    assert plan.too_many_bundles == ["pulsar/use/primary-ns-10/0x00000000_0x02000000"]
    assert plan.unload is CONF.load_balancer_auto_unload_split_bundles_enabled and plan.force_report_update


def test_sessions_limit_off_when_not_positive_and_disabled_split_is_a_dry_run():
    conf = CONF.with_overrides({"loadBalancerNamespaceBundleMaxSessions": "-1"}, source="test")
    plan = do_namespace_bundle_split(_report(), COUNTS, SimpleSettings.resolve(conf), conf)
    assert "pulsar/use/primary-ns-02/0x00000000_0x80000000" not in plan.split
    assert "pulsar/use/primary-ns-03/0x00000000_0x80000000" not in plan.split
    settings = SimpleSettings.resolve(CONF, {AUTO_BUNDLE_SPLIT_ENABLED_PATH: {"autoBundleSplitEnabled": "false"}})
    plan = do_namespace_bundle_split(_report(), COUNTS, settings, CONF)
    assert plan.split == [] and len(plan.dry_run) == 7 and not plan.force_report_update
    assert do_namespace_bundle_split(None, COUNTS, settings, CONF).split == []
