"""SimpleLoadManagerImpl's bundle split: which of a broker's own bundles it splits.

Follows `SimpleLoadManagerImpl.doNamespaceBundleSplit`. Unlike the Modular load manager's leader
task, every broker runs it on its own last load report, right after writing that report.

A bundle is hot when it has more topics than `loadBalancerNamespaceBundleMaxTopics`, more producers
+ consumers than `loadBalancerNamespaceBundleMaxSessions` (if > 0), more msg/s in + out than
`loadBalancerNamespaceBundleMaxMsgRate`, or more bytes/s in + out than
`loadBalancerNamespaceBundleMaxBandwidthMbytes` MiB. It is split unless it has at most one topic or
its namespace already has `loadBalancerNamespaceMaximumBundles` bundles; with auto split disabled
(broker.conf or `/loadbalance/settings/auto_bundle_split_enabled`) it is only logged ("DRY RUN").
Each split is the admin call `splitNamespaceBundle(ns, range, loadBalancerAutoUnloadSplitBundlesEnabled,
null)` (the broker's default algorithm), and any split forces the next load report.

Choice: Pulsar collects the bundles in a HashSet; `split` lists them sorted by name.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from emulator.model.config import ServiceConfig
from emulator.model.filters import namespace_of_bundle
from .report import LoadReport
from .settings import SimpleSettings

__all__ = ["SplitPlan", "do_namespace_bundle_split", "MBYTES"]

MBYTES = 1024 * 1024


class SplitPlan(msgspec.Struct, kw_only=True):
    """One split check's decisions, each list sorted by bundle name.

    `split`: split now (`unload` = the admin call's unload flag; `force_report_update` when any).
    `dry_run`: hot, would be split, auto split disabled. `single_topic` / `too_many_bundles`: hot but
    Pulsar cannot split them."""

    split: list[str] = []
    dry_run: list[str] = []
    single_topic: list[str] = []
    too_many_bundles: list[str] = []
    unload: bool = True
    force_report_update: bool = False


def do_namespace_bundle_split(
    last_report: LoadReport | None,
    namespace_bundle_counts: Mapping[str, int],
    settings: SimpleSettings,
    conf: ServiceConfig,
) -> SplitPlan:
    """`doNamespaceBundleSplit` over this broker's last written report.

    `namespace_bundle_counts`: namespace -> its current number of bundles
    (`NamespaceService.getBundleCount`)."""
    plan = SplitPlan(unload=conf.load_balancer_auto_unload_split_bundles_enabled)
    if last_report is None:
        return plan
    max_topics = conf.load_balancer_namespace_bundle_max_topics
    max_sessions = conf.load_balancer_namespace_bundle_max_sessions
    max_msg_rate = conf.load_balancer_namespace_bundle_max_msg_rate
    max_bandwidth = conf.load_balancer_namespace_bundle_max_bandwidth_mbytes * MBYTES
    max_bundles = conf.load_balancer_namespace_maximum_bundles
    for bundle in sorted(last_report.bundle_stats):
        stats = last_report.bundle_stats[bundle]
        sessions = stats.consumer_count + stats.producer_count
        hot = (stats.topics > max_topics
               or (max_sessions > 0 and sessions > max_sessions)
               or stats.msg_rate_in + stats.msg_rate_out > max_msg_rate
               or stats.msg_throughput_in + stats.msg_throughput_out > max_bandwidth)
        if not hot:
            continue
        if stats.topics <= 1:
            plan.single_topic.append(bundle)
        elif namespace_bundle_counts.get(namespace_of_bundle(bundle), 0) >= max_bundles:
            plan.too_many_bundles.append(bundle)
        elif settings.auto_bundle_split_enabled:
            plan.split.append(bundle)
        else:
            plan.dry_run.append(bundle)
    plan.force_report_update = bool(plan.split)
    return plan
