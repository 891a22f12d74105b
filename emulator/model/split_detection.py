"""Which bundles are hot enough to split (BundleSplitterTask.findBundlesToSplit, current version, §6.1).

Pure detection only: executing a split (range check, namespace membership, admin call, unload of the
children) belongs to the leader actor.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from emulator.model.filters import namespace_of_bundle

if TYPE_CHECKING:
    from emulator.model.config import ServiceConfig
    from emulator.model.loaddata import LoadData, NamespaceBundleStats

__all__ = ["MIBI", "find_bundles_to_split"]

MIBI = 1024 * 1024


def find_bundles_to_split(
    load_data: LoadData, conf: ServiceConfig, bundle_count: Callable[[str], int],
    candidates: Iterable[tuple[str, str]] | None = None,
) -> dict[str, str]:
    """Bundle → the broker whose report lists it, for every bundle over a split threshold.

    Reads each broker's *last report* for topics and sessions and the bundle's **long-term** window for
    rate and throughput (0 when the bundle has no BundleData). All four thresholds are strict; a
    bundle with fewer than 2 topics is never split; `maxSessions ≤ 0` disables the session trigger.
    `bundle_count(namespace)` is the namespace's current bundle count; a per-namespace counter of the
    bundles accepted in this round keeps the total under `load_balancer_namespace_maximum_bundles`.
    Brokers are visited in `load_data.broker_data` order, bundles in report order, as Pulsar does.
    `candidates`: (broker, bundle) pairs in that order that hold every hot bundle (the bundle
    windows' vector prefilter, `split_candidates`); each is checked here as the full walk would.
    """
    max_bundle_count = conf.load_balancer_namespace_maximum_bundles
    max_topics = conf.load_balancer_namespace_bundle_max_topics
    max_sessions = conf.load_balancer_namespace_bundle_max_sessions
    max_msg_rate = conf.load_balancer_namespace_bundle_max_msg_rate
    max_bandwidth = conf.load_balancer_namespace_bundle_max_bandwidth_mbytes * MIBI

    selected: dict[str, str] = {}
    accepted_per_namespace: dict[str, int] = {}
    for broker, bundle, stats in _walk(load_data, candidates):
        if stats.topics < 2:
            continue
        rate = 0.0
        throughput = 0.0
        data = load_data.bundle_data.get(bundle)
        if data is not None:
            long_term = data.long_term_data
            rate = long_term.msg_rate_in + long_term.msg_rate_out
            throughput = long_term.msg_throughput_in + long_term.msg_throughput_out
        hot = (
            stats.topics > max_topics
            or (max_sessions > 0 and stats.consumer_count + stats.producer_count > max_sessions)
            or rate > max_msg_rate
            or throughput > max_bandwidth
        )
        if not hot:
            continue
        namespace = namespace_of_bundle(bundle)
        already = accepted_per_namespace.get(namespace, 0)
        if bundle_count(namespace) + already < max_bundle_count:
            selected[bundle] = broker
            accepted_per_namespace[namespace] = already + 1
    return selected


def _walk(load_data: LoadData, candidates: Iterable[tuple[str, str]] | None
          ) -> Iterator[tuple[str, str, NamespaceBundleStats]]:
    broker_data = load_data.broker_data
    if candidates is None:
        for broker, data in broker_data.items():
            for bundle, stats in data.local_data.last_stats.items():
                yield broker, bundle, stats
    else:
        for broker, bundle in candidates:
            yield broker, bundle, broker_data[broker].local_data.last_stats[bundle]
