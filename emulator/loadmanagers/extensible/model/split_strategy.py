"""Which of its own bundles a broker splits: the Extensible load manager's default split strategy.

Follows apache/pulsar `extensions/strategy/DefaultNamespaceBundleSplitStrategyImpl.java` @95d73ce4
(`findBundlesToSplit`) and DefaultNamespaceBundleSplitStrategyTest @43db2ad9; SplitScheduler
@62c70ec2 calls it every `loadBalancerSplitIntervalMinutes` on every broker when
`loadBalancerEnabled` and `loadBalancerAutoBundleSplitEnabled` (the caller's job, as is publishing
the Split events).

A bundle of this broker with at least 2 topics is hot when, checked in this order, its topics exceed
`loadBalancerNamespaceBundleMaxTopics` (Topics), its producers + consumers exceed
`loadBalancerNamespaceBundleMaxSessions` when that is > 0 (Sessions), its msg rate in + out exceeds
`loadBalancerNamespaceBundleMaxMsgRate` (MsgRate), or its throughput in + out exceeds
`loadBalancerNamespaceBundleMaxBandwidthMbytes` MiB/s (Bandwidth). It splits once it has been hot in
more than `loadBalancerNamespaceBundleSplitConditionHitCountThreshold` consecutive checks, while its
namespace stays under `loadBalancerNamespaceMaximumBundles`, no bundle of the namespace sharing its
lower or upper boundary string is Splitting, and the default split algorithm gives exactly one
boundary. At most `loadBalancerMaxNumberOfBundlesToSplitPerCycle` per call: reaching it stops the walk,
so the bundles after it are not even counted this time.

Unlike the Modular BundleSplitterTask the stats are the broker's own last stats update per bundle
(`BrokerService.getBundleStats`), not the leader's long-term averages.
"""

from __future__ import annotations

from collections.abc import Mapping

from emulator.model.bundles import (
    bundle_range_name,
    can_split,
    parse_bundle,
    split_boundaries,
)
from .context import LoadManagerContext
from .counters import SplitCounter
from .decisions import (
    Split,
    SplitDecision,
    SplitLabel,
    SplitReason,
)
from emulator.model.filters import bundle_range_of
from emulator.model.loaddata import NamespaceBundleStats

__all__ = ["MIBI", "DefaultNamespaceBundleSplitStrategy"]

MIBI = 1024 * 1024

TopicStats = Mapping[str, NamespaceBundleStats | None]


class DefaultNamespaceBundleSplitStrategy:
    """Keeps Pulsar's per-bundle hit counts between calls (`splitConditionHitCounts`).

    `counter` is the broker's SplitCounter: the strategy counts its Failure/Unknown cases there;
    a Success is counted by SplitManager when the split completes (the caller).
    """

    def __init__(self, counter: SplitCounter | None = None) -> None:
        self.counter = counter if counter is not None else SplitCounter()
        self.hit_counts: dict[str, int] = {}

    def find_bundles_to_split(
        self,
        broker_id: str,
        bundle_stats: Mapping[str, NamespaceBundleStats],
        bundle_counts: Mapping[str, int],
        context: LoadManagerContext,
        topics: Mapping[str, TopicStats] | None = None,
    ) -> list[SplitDecision]:
        """`findBundlesToSplit(context, pulsar)` for broker `broker_id`, decisions in walk order.

        - `bundle_stats`: the broker's bundle → stats (its walk order; Java walks a HashMap).
        - `bundle_counts`: namespace → current number of bundles (`getBundleCount`); a namespace
          missing here stands for that call failing (Failure/Unknown, as Pulsar counts the exception).
        - `topics`: bundle → its topics and their stats, for the topic-count and flow-or-qps
          algorithms (`getSplitBoundary` lists the bundle's topics); range_equally_divide needs none.
        - `context`: `conf`, `owners` (the channel's Owned bundles: only this broker's are split),
          `splitting` (bundles in state Splitting) and `now_ms` for the counter.
        """
        conf = context.conf
        max_bundle_count = conf.load_balancer_namespace_maximum_bundles
        max_topics = conf.load_balancer_namespace_bundle_max_topics
        max_sessions = conf.load_balancer_namespace_bundle_max_sessions
        max_msg_rate = conf.load_balancer_namespace_bundle_max_msg_rate
        max_bandwidth = conf.load_balancer_namespace_bundle_max_bandwidth_mbytes * MIBI
        max_splits = conf.load_balancer_max_number_of_bundles_to_split_per_cycle
        threshold = conf.load_balancer_namespace_bundle_split_condition_hit_count_threshold
        splitting = {b: bundle_range_of(b) for b in context.splitting}

        decisions: list[SplitDecision] = []
        accepted_per_namespace: dict[str, int] = {}
        for stale in [b for b in self.hit_counts if b not in bundle_stats]:
            del self.hit_counts[stale]

        for bundle, stats in bundle_stats.items():
            if stats.topics < 2:
                continue
            if not context.is_owner(bundle, broker_id):
                continue
            namespace, lower, upper = parse_bundle(bundle)
            if not can_split(lower, upper):
                self._fail(context)
                continue

            reason = _hot_reason(stats, max_topics, max_sessions, max_msg_rate, max_bandwidth)
            if reason is SplitReason.UNKNOWN:
                self.hit_counts.pop(bundle, None)
            else:
                self.hit_counts[bundle] = self.hit_counts.get(bundle, 0) + 1
            if self.hit_counts.get(bundle, 0) <= threshold:
                continue

            count = bundle_counts.get(namespace)
            if count is None:
                self._fail(context)
                continue
            if count + accepted_per_namespace.get(namespace, 0) >= max_bundle_count:
                continue

            if _relative_is_splitting(namespace, bundle_range_of(bundle), splitting):
                continue

            try:
                boundaries = split_boundaries(
                    conf.default_namespace_bundle_split_algorithm, lower, upper,
                    (topics or {}).get(bundle, {}), conf,
                )
            except ValueError:  # specified_positions_divide without positions: the future fails
                boundaries = None
            if boundaries is None or len(boundaries) != 1:
                self._fail(context)
                continue
            middle = boundaries[0]
            children: dict[str, str | None] = {
                bundle_range_name(lower, middle): None, bundle_range_name(middle, upper): None}
            split = Split(service_unit=bundle, source_broker=broker_id,
                          split_service_unit_to_dest_broker=children)
            decisions.append(SplitDecision(split=split, label=SplitLabel.SUCCESS, reason=reason))
            accepted_per_namespace[namespace] = accepted_per_namespace.get(namespace, 0) + 1
            self.hit_counts.pop(bundle, None)
            if len(decisions) == max_splits:
                break
        return decisions

    def _fail(self, context: LoadManagerContext) -> None:
        self.counter.update(SplitLabel.FAILURE, SplitReason.UNKNOWN, context.now_ms)


def _hot_reason(
    stats: NamespaceBundleStats, max_topics: int, max_sessions: int, max_msg_rate: int, max_bandwidth: int
) -> SplitReason:
    if stats.topics > max_topics:
        return SplitReason.TOPICS
    if max_sessions > 0 and stats.consumer_count + stats.producer_count > max_sessions:
        return SplitReason.SESSIONS
    if stats.msg_rate_in + stats.msg_rate_out > max_msg_rate:
        return SplitReason.MSG_RATE
    if stats.msg_throughput_in + stats.msg_throughput_out > max_bandwidth:
        return SplitReason.BANDWIDTH
    return SplitReason.UNKNOWN


def _relative_is_splitting(namespace: str, bundle_range: str, splitting: Mapping[str, str]) -> bool:
    """Pulsar's check, string for string: a Splitting bundle whose name starts with the namespace and
    whose range starts with this bundle's lower boundary or ends with its upper one."""
    lower, _, upper = bundle_range.partition("_")
    return any(
        other.startswith(namespace) and (other_range.startswith(lower) or other_range.endswith(upper))
        for other, other_range in splitting.items()
    )
