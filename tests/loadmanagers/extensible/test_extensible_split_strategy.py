"""The Extensible default split strategy: vectors of apache/pulsar DefaultNamespaceBundleSplitStrategyTest
@43db2ad9 (bundle names in the emulator's canonical lower case)."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

import pytest

from emulator.model.config import ServiceConfig
from emulator.loadmanagers.extensible.model.context import LoadManagerContext
from emulator.loadmanagers.extensible.model.counters import SplitCounter
from emulator.loadmanagers.extensible.model.decisions import (
    Split,
    SplitDecision,
    SplitLabel,
    SplitReason,
)
from emulator.loadmanagers.extensible.model.split_strategy import DefaultNamespaceBundleSplitStrategy
from emulator.model.loaddata import NamespaceBundleStats

BUNDLE1 = "tenant/namespace/0x00000000_0xffffffff"
BUNDLE2 = "tenant/namespace/0x00000000_0x0fffffff"
BROKER = "broker-1"
NAMESPACE = "tenant/namespace"
CONF = ServiceConfig().with_overrides({
    "loadBalancerDebugModeEnabled": True, "loadBalancerNamespaceMaximumBundles": 100,
    "loadBalancerNamespaceBundleMaxTopics": 100, "loadBalancerNamespaceBundleMaxSessions": 100,
    "loadBalancerNamespaceBundleMaxMsgRate": 100, "loadBalancerNamespaceBundleMaxBandwidthMbytes": 100,
    "loadBalancerMaxNumberOfBundlesToSplitPerCycle": 1,
    "loadBalancerNamespaceBundleSplitConditionHitCountThreshold": 3,
}, source="DefaultNamespaceBundleSplitStrategyTest.setup")
FAILURE = (SplitLabel.FAILURE, SplitReason.UNKNOWN)


def bundle_stats(**fields: float) -> dict[str, NamespaceBundleStats]:
    return {b: NamespaceBundleStats(topics=5, **fields) for b in (BUNDLE1, BUNDLE2)}  # type: ignore[arg-type]


def context(conf: ServiceConfig = CONF, owned: bool = True,
            splitting: frozenset[str] = frozenset()) -> LoadManagerContext:
    owners = {BUNDLE1: BROKER, BUNDLE2: BROKER} if owned else {}
    return LoadManagerContext(conf=conf, owners=owners, splitting=splitting, now_ms=7)


def threshold_zero() -> ServiceConfig:
    return CONF.with_overrides({"loadBalancerNamespaceBundleSplitConditionHitCountThreshold": 0}, source="t")


def hot_by_rate() -> dict[str, NamespaceBundleStats]:
    return bundle_stats(msg_rate_in=CONF.load_balancer_namespace_bundle_max_msg_rate + 1)


def test_namespace_bundle_split_condition_threshold() -> None:
    s = DefaultNamespaceBundleSplitStrategy()
    assert len(s.find_bundles_to_split(BROKER, hot_by_rate(), {NAMESPACE: 0}, context(threshold_zero()))) == 1


def test_not_enough_topics() -> None:
    stats = {b: msgspec.structs.replace(v, topics=1) for b, v in hot_by_rate().items()}  # stats are frozen
    assert DefaultNamespaceBundleSplitStrategy().find_bundles_to_split(
        BROKER, stats, {NAMESPACE: 0}, context(threshold_zero())) == []


def test_namespace_maximum_bundles() -> None:
    assert DefaultNamespaceBundleSplitStrategy().find_bundles_to_split(
        BROKER, hot_by_rate(), {NAMESPACE: 100}, context(threshold_zero())) == []


def test_empty_bundle_stats() -> None:
    assert DefaultNamespaceBundleSplitStrategy().find_bundles_to_split(
        BROKER, {}, {NAMESPACE: 0}, context(threshold_zero())) == []


def test_no_bundle_owner() -> None:
    s = DefaultNamespaceBundleSplitStrategy()
    assert s.find_bundles_to_split(BROKER, hot_by_rate(), {NAMESPACE: 0}, context(threshold_zero(), owned=False)) == []
    assert s.counter.count(*FAILURE) == 0


def test_error() -> None:
    """getBundleCount fails (here: the namespace's count is unknown): one Failure per bundle."""
    s = DefaultNamespaceBundleSplitStrategy(SplitCounter())
    assert s.find_bundles_to_split(BROKER, hot_by_rate(), {}, context(threshold_zero())) == []
    assert s.counter.count(*FAILURE) == 2
    assert s.counter.updated_at == 7


def test_splitting_bundle() -> None:
    s = DefaultNamespaceBundleSplitStrategy()
    ctx = context(threshold_zero(), splitting=frozenset({BUNDLE1}))
    assert s.find_bundles_to_split(BROKER, hot_by_rate(), {NAMESPACE: 0}, ctx) == []
    assert s.counter.count(*FAILURE) == 0


def expected(bundle: str, reason: SplitReason) -> list[SplitDecision]:
    children = {BUNDLE1: ("0x00000000_0x7fffffff", "0x7fffffff_0xffffffff"),
                BUNDLE2: ("0x00000000_0x07ffffff", "0x07ffffff_0x0fffffff")}[bundle]
    split = Split(service_unit=bundle, source_broker=BROKER,
                  split_service_unit_to_dest_broker={c: None for c in children})
    return [SplitDecision(split=split, label=SplitLabel.SUCCESS, reason=reason)]


HALF = 100 // 2 + 1
HALF_BW = 100 * 1024 * 1024 // 2 + 1


@pytest.mark.parametrize("make, reason", [
    (lambda: bundle_stats(msg_rate_out=HALF, msg_rate_in=HALF), SplitReason.MSG_RATE),
    (lambda: {b: NamespaceBundleStats(topics=101) for b in (BUNDLE1, BUNDLE2)}, SplitReason.TOPICS),
    (lambda: {b: NamespaceBundleStats(topics=5, producer_count=HALF, consumer_count=HALF)
              for b in (BUNDLE1, BUNDLE2)}, SplitReason.SESSIONS),
    (lambda: bundle_stats(msg_throughput_out=HALF_BW, msg_throughput_in=HALF_BW), SplitReason.BANDWIDTH),
])
def test_hit_count_then_one_split_per_cycle(make: Callable[[], dict[str, NamespaceBundleStats]],
                                           reason: SplitReason) -> None:
    """testMaxMsgRate / testMaxTopics / testMaxSessions / testMaxBandwidthMbytes: hot for more than 3
    checks, then bundle1; bundle2's count stopped at the cap of one split per cycle, so it splits next."""
    s = DefaultNamespaceBundleSplitStrategy()
    stats = make()
    threshold = CONF.load_balancer_namespace_bundle_split_condition_hit_count_threshold
    for i in range(threshold + 2):
        actual = s.find_bundles_to_split(BROKER, stats, {NAMESPACE: 0}, context())
        if i == threshold:
            assert actual == expected(BUNDLE1, reason)
        elif i == threshold + 1:
            assert actual == expected(BUNDLE2, reason)
        else:
            assert actual == []
    assert s.counter.count(*FAILURE) == 0


def test_a_cooler_check_resets_the_hit_count() -> None:
    s = DefaultNamespaceBundleSplitStrategy()
    hot, cold = hot_by_rate(), bundle_stats()
    for stats in (hot, hot, hot, cold, hot, hot, hot):
        assert s.find_bundles_to_split(BROKER, stats, {NAMESPACE: 0}, context()) == []
    assert s.find_bundles_to_split(BROKER, hot, {NAMESPACE: 0}, context()) == expected(BUNDLE1, SplitReason.MSG_RATE)


def test_sessions_trigger_off_when_max_is_not_positive() -> None:
    conf = threshold_zero().with_overrides({"loadBalancerNamespaceBundleMaxSessions": 0}, source="t")
    stats = {BUNDLE1: NamespaceBundleStats(topics=5, producer_count=10_000)}
    s = DefaultNamespaceBundleSplitStrategy()
    assert s.find_bundles_to_split(BROKER, stats, {NAMESPACE: 0}, context(conf)) == []


def test_unsplittable_range_and_missing_boundaries_are_failures() -> None:
    conf = threshold_zero().with_overrides({"loadBalancerMaxNumberOfBundlesToSplitPerCycle": 10}, source="t")
    tiny = "tenant/namespace/0x00000010_0x00000011"
    stats = {tiny: NamespaceBundleStats(topics=5, msg_rate_in=1000.0)}
    s = DefaultNamespaceBundleSplitStrategy()
    ctx = LoadManagerContext(conf=conf, owners={tiny: BROKER})
    assert s.find_bundles_to_split(BROKER, stats, {NAMESPACE: 0}, ctx) == []
    assert s.counter.count(*FAILURE) == 1
    # topic_count_equally_divide needs the bundle's topics: without them, no boundary, a Failure.
    by_topics = conf.with_overrides({"defaultNamespaceBundleSplitAlgorithm": "topic_count_equally_divide"}, source="t")
    ctx = LoadManagerContext(conf=by_topics, owners={BUNDLE1: BROKER})
    hot = {BUNDLE1: NamespaceBundleStats(topics=5, msg_rate_in=1000.0)}
    assert s.find_bundles_to_split(BROKER, hot, {NAMESPACE: 0}, ctx) == []
    assert s.counter.count(*FAILURE) == 2
    topics = {BUNDLE1: {f"persistent://tenant/namespace/t{i}": None for i in range(2)}}
    [decision] = s.find_bundles_to_split(BROKER, hot, {NAMESPACE: 0}, ctx, topics)
    assert decision.split is not None and len(decision.split.split_service_unit_to_dest_broker) == 2
