"""LeastResourceUsageWithWeight, current version (§5.2)."""

from __future__ import annotations

import random

import pytest

from emulator.model.config import ServiceConfig
from emulator.model.loaddata import BrokerData, BundleData, LoadData, LocalBrokerData, ResourceUsage
from strategies.least_resource_usage_with_weight import LeastResourceUsageWithWeight

CONF = ServiceConfig()


def broker(cpu: float, busy: bool = True) -> BrokerData:
    """`busy`: reports a bundle and traffic, so the EMA history is kept."""
    return BrokerData(
        local_data=LocalBrokerData(
            cpu=ResourceUsage(usage=cpu, limit=100.0),
            bundles={"t/n/0x00000000_0xffffffff"} if busy else set(),
            msg_rate_in=10.0 if busy else 0.0,
        )
    )


def test_picks_among_brokers_below_average_minus_threshold() -> None:
    ld = LoadData(broker_data={"a:1": broker(10), "b:1": broker(20), "c:1": broker(60)})
    # avg = 0.30; best = usage + 0.10 <= 0.30 → a (0.10) and b (0.20).
    picks = set()
    for seed in range(30):
        s = LeastResourceUsageWithWeight(random.Random(seed))
        picks.add(s.select_broker({"a:1", "b:1", "c:1"}, BundleData.default(), ld, CONF))
    assert picks == {"a:1", "b:1"}


def test_no_broker_far_enough_below_average_means_all() -> None:
    ld = LoadData(broker_data={"a:1": broker(30), "b:1": broker(35)})
    picks = {LeastResourceUsageWithWeight(random.Random(seed)).select_broker({"a:1", "b:1"}, BundleData.default(),
                                                                             ld, CONF)
             for seed in range(30)}
    assert picks == {"a:1", "b:1"}


def test_history_is_an_ema_and_resets_for_idle_brokers() -> None:
    s = LeastResourceUsageWithWeight(random.Random(0))
    ld = LoadData(broker_data={"a:1": broker(50), "b:1": broker(50, busy=False)})
    s.select_broker({"a:1", "b:1"}, BundleData.default(), ld, CONF)
    ld.broker_data["a:1"] = broker(100)
    ld.broker_data["b:1"] = broker(100, busy=False)
    chosen = s.select_broker_explained({"a:1", "b:1"}, None, BundleData.default(), ld, CONF)
    assert s.history["a:1"] == pytest.approx(0.5 * 0.9 + 0.1 * 1.0)
    assert s.history["b:1"] == pytest.approx(1.0)  # idle → current usage replaces the history
    assert chosen.scores == s.history


def test_on_active_brokers_change_drops_history() -> None:
    s = LeastResourceUsageWithWeight(random.Random(0))
    ld = LoadData(broker_data={"a:1": broker(50), "b:1": broker(50)})
    s.select_broker({"a:1", "b:1"}, BundleData.default(), ld, CONF)
    s.on_active_brokers_change({"a:1"})
    assert set(s.history) == {"a:1"}


def test_overloaded_broker_is_not_excluded() -> None:
    ld = LoadData(broker_data={"a:1": broker(99)})
    strategy = LeastResourceUsageWithWeight(random.Random(0))
    assert strategy.select_broker({"a:1"}, BundleData.default(), ld, CONF) == "a:1"


def test_empty_and_dataless_candidates_give_none() -> None:
    s = LeastResourceUsageWithWeight(random.Random(0))
    assert s.select_broker(set(), BundleData.default(), LoadData(), CONF) is None
    assert s.select_broker({"ghost:1"}, BundleData.default(), LoadData(), CONF) is None


def test_the_random_fallback_is_flagged_only_when_taken() -> None:
    from emulator.model.selection import ALL_OVERLOADED_RANDOM

    even = LoadData(broker_data={"a:1": broker(30), "b:1": broker(35)})
    got = LeastResourceUsageWithWeight(random.Random(1)).select_broker_explained(
        {"a:1", "b:1"}, None, BundleData.default(), even, CONF)
    assert got.fallback == ALL_OVERLOADED_RANDOM     # "Assign randomly as all brokers are overloaded."
    spread = LoadData(broker_data={"a:1": broker(10), "b:1": broker(20), "c:1": broker(60)})
    got = LeastResourceUsageWithWeight(random.Random(1)).select_broker_explained(
        {"a:1", "b:1", "c:1"}, None, BundleData.default(), spread, CONF)
    assert got.fallback is None and got.broker in {"a:1", "b:1"}
