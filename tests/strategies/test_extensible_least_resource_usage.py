"""The Extensible LeastResourceUsageWithWeight: vectors of apache/pulsar LeastResourceUsageWithWeightTest
(extensions/strategy, @0524997), with Pulsar's configuration and expected picks."""

from __future__ import annotations

import random

import pytest

import strategies
from emulator.model.config import ServiceConfig
from emulator.loadmanagers.extensible.model.context import LoadManagerContext
from emulator.loadmanagers.extensible.model.load_data import BrokerLoadData
from emulator.model.loaddata import ResourceUsage
from strategies.extensible_least_resource_usage import LeastResourceUsageWithWeight

NAME = "org.apache.pulsar.broker.loadbalance.extensions.strategy.LeastResourceUsageWithWeight"
BUNDLE = "t/ns/0x00000000_0xffffffff"
CONF = ServiceConfig().with_overrides({
    "loadBalancerCPUResourceWeight": 1.0, "loadBalancerMemoryResourceWeight": 0.1,
    "loadBalancerDirectMemoryResourceWeight": 0.1, "loadBalancerBandwidthInResourceWeight": 1.0,
    "loadBalancerBandwidthOutResourceWeight": 1.0, "loadBalancerHistoryResourcePercentage": 0.5,
    "loadBalancerAverageResourceUsageDifferenceThresholdPercentage": 5,
}, source="LeastResourceUsageWithWeightTest.getContext")


def update(data: BrokerLoadData, usage: float, now_ms: int = 1) -> BrokerLoadData:
    """createBrokerData / updateLoad: every resource at `usage` of 100, rates 1."""
    ru = ResourceUsage(usage=usage, limit=100.0)
    data.update(cpu=ru, memory=ru, direct_memory=ru, bandwidth_in=ru, bandwidth_out=ru,
                msg_throughput_in=1, msg_throughput_out=1, msg_rate_in=1, msg_rate_out=1,
                bundle_count=1, topics=1, conf=CONF, now_ms=now_ms)
    return data


def store(**usages: float) -> dict[str, BrokerLoadData]:
    return {b: update(BrokerLoadData(), u) for b, u in usages.items()}


def select(s: LeastResourceUsageWithWeight, candidates: set[str], load: dict[str, BrokerLoadData]) -> str | None:
    return s.select(candidates, BUNDLE, LoadManagerContext(conf=CONF, broker_load_data=load))


def test_select() -> None:
    load = {"1": update(BrokerLoadData(), 10), "2": update(BrokerLoadData(), 30),
            "3": update(BrokerLoadData(), 60), "4": update(BrokerLoadData(), 5)}
    s = LeastResourceUsageWithWeight(random.Random(1))
    cands = {"1", "2", "3"}
    assert select(s, cands, load) == "1"
    load.update(store(**{"1": 20, "2": 30, "3": 50}))
    assert select(s, cands, load) == "1"
    for b, u in (("1", 30), ("2", 30), ("3", 40)):
        update(load[b], u)
    assert select(s, cands, load) == "1"  # EMAs 25, 30, 45 against an average of 33.3
    for b, u in (("1", 30), ("2", 30), ("3", 40)):
        update(load[b], u)
    assert select(s, cands, load) == "1"  # 27.5, 30, 42.5
    for b, u in (("1", 35), ("2", 20), ("3", 45)):
        update(load[b], u)
    assert select(s, cands, load) == "2"  # 31.25, 25, 43.75
    update(load["1"], 35)
    update(load["2"], 20)
    load["3"] = update(BrokerLoadData(), 0)  # a restarted broker is one of the best at once
    assert select(s, cands, load) == "3"
    assert s.last_scores is not None and s.last_scores["3"] == 0.0


def test_arithmetic_exception() -> None:
    load = store(**{"1": 10, "2": 30, "3": 60, "4": 5})
    load["1"].weighted_max_ema, load["2"].weighted_max_ema, load["4"].weighted_max_ema = 0.1, 0.3, 0.05
    assert select(LeastResourceUsageWithWeight(random.Random(1)), {"1", "2", "3"}, load) == "1"


def test_no_load_data_brokers() -> None:
    cands = {"1", "2", "5"}
    load = store(**{"1": 50, "2": 100})
    assert select(LeastResourceUsageWithWeight(random.Random(1)), cands, load) == "1"
    # Nobody far enough below the average: any candidate, one without load data included.
    load["1"] = update(BrokerLoadData(), 100)
    picks = {select(LeastResourceUsageWithWeight(random.Random(seed)), cands, load) for seed in range(40)}
    assert picks == cands
    picks = {select(LeastResourceUsageWithWeight(random.Random(seed)), cands, {}) for seed in range(40)}
    assert picks == cands


def test_no_candidates() -> None:
    assert select(LeastResourceUsageWithWeight(random.Random(1)), set(), store(a=1)) is None


def test_random_pick_among_the_best_is_seeded() -> None:
    load = store(a=10, b=10, c=90)
    picks = [select(LeastResourceUsageWithWeight(random.Random(seed)), {"a", "b", "c"}, load) for seed in range(40)]
    assert set(picks) == {"a", "b"}
    assert picks == [select(LeastResourceUsageWithWeight(random.Random(seed)), {"a", "b", "c"}, load)
                     for seed in range(40)]


def test_registered_by_its_pulsar_class_name_beside_the_modular_one() -> None:
    assert NAME in strategies.extensible_names() and NAME not in strategies.names()
    s = strategies.create_extensible(NAME, random.Random(1))
    assert isinstance(s, LeastResourceUsageWithWeight) and isinstance(s, strategies.BrokerSelectionStrategy)
    assert not isinstance(strategies.create("LeastResourceUsageWithWeight", random.Random(1)),
                          LeastResourceUsageWithWeight)
    with pytest.raises(ValueError, match="create_extensible"):
        strategies.create(NAME, random.Random(1))
    with pytest.raises(ValueError, match="unknown broker selection strategy"):
        strategies.create_extensible("LeastLongTermMessageRate", random.Random(1))


class CountingStore(dict):
    """A store that counts reads of its values."""

    reads = 0

    def __getitem__(self, key):
        CountingStore.reads += 1
        return super().__getitem__(key)


def test_a_frozen_store_is_scored_once_and_the_picks_stay_those_of_a_fresh_computation() -> None:
    load = CountingStore(store(**{"1": 10, "2": 10, "3": 60, "4": 12}))
    cands = {"1", "2", "3", "4"}
    frozen = LoadManagerContext(conf=CONF, broker_load_data=load, broker_load_data_frozen=True)
    cached, fresh = LeastResourceUsageWithWeight(random.Random(5)), LeastResourceUsageWithWeight(random.Random(5))
    CountingStore.reads = 0
    picks = [cached.select(set(cands), BUNDLE, frozen) for _ in range(30)]
    assert CountingStore.reads == 4                      # scored once for 30 selections
    assert picks == [select(fresh, set(cands), load) for _ in range(30)]
    assert set(picks) == {"1", "2", "4"} and cached.last_scores == fresh.last_scores
    # another store object (the next copy), or other candidates, are scored again
    other = CountingStore(store(**{"1": 60, "2": 60, "3": 10, "4": 60}))
    assert cached.select(set(cands), BUNDLE, LoadManagerContext(
        conf=CONF, broker_load_data=other, broker_load_data_frozen=True)) == "3"
    CountingStore.reads = 0
    assert cached.select({"1", "3"}, BUNDLE, frozen) == "1" and CountingStore.reads == 2


def test_a_store_edited_in_place_is_scored_at_every_call_without_the_frozen_flag() -> None:
    load = store(**{"1": 10, "2": 30})
    s = LeastResourceUsageWithWeight(random.Random(1))
    assert select(s, {"1", "2"}, load) == "1"
    load["1"] = update(BrokerLoadData(), 90)
    assert select(s, {"1", "2"}, load) == "2"
