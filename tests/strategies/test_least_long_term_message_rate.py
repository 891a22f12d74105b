"""LeastLongTermMessageRate (§5.1)."""

from __future__ import annotations

import math
import random

from emulator.model.config import ServiceConfig
from emulator.model.loaddata import (
    BrokerData,
    BundleData,
    LoadData,
    LocalBrokerData,
    ResourceUsage,
    TimeAverageBrokerData,
)
from strategies.base import Selection
from strategies.least_long_term_message_rate import LeastLongTermMessageRate, broker_score

CONF = ServiceConfig()


def broker(long_in: float, long_out: float, cpu: float = 10.0, prealloc: int = 0) -> BrokerData:
    return BrokerData(
        local_data=LocalBrokerData(cpu=ResourceUsage(usage=cpu, limit=100.0)),
        time_average_data=TimeAverageBrokerData(long_term_msg_rate_in=long_in, long_term_msg_rate_out=long_out),
        preallocated_bundle_data={f"t/n/0x{i:08x}_0x{i + 1:08x}": BundleData.default() for i in range(prealloc)},
    )


def test_score_sums_long_term_rates_and_preallocations() -> None:
    assert broker_score(broker(300, 200), CONF) == 500
    # Each default preallocated bundle adds 50 in + 50 out.
    assert broker_score(broker(300, 200, prealloc=2), CONF) == 700
    # Throughput does not count.
    b = broker(1, 1)
    b.time_average_data.long_term_msg_throughput_in = 1e12
    assert broker_score(b, CONF) == 2


def test_overload_is_strictly_above_threshold() -> None:
    assert broker_score(broker(1, 1, cpu=85.0), CONF) == 2  # 85 % is not > 85 %
    assert broker_score(broker(1, 1, cpu=85.5), CONF) == math.inf
    # Weighted: with the CPU weight at 0.5, 100 % CPU counts as 50 %.
    assert broker_score(broker(1, 1, cpu=100.0), ServiceConfig(load_balancer_cpu_resource_weight=0.5)) == 2
    # Pre-PIP-358 switch: the unweighted max ignores weights.
    conf = ServiceConfig(load_balancer_cpu_resource_weight=0.5, emulator_unweighted_max_usage=True)
    assert broker_score(broker(1, 1, cpu=100.0), conf) == math.inf


def test_picks_least_loaded_broker_and_exposes_scores() -> None:
    s = LeastLongTermMessageRate(random.Random(1))
    ld = LoadData(broker_data={"a:1": broker(100, 100), "b:1": broker(10, 10), "c:1": broker(0, 0, cpu=90)})
    assert s.select_broker({"a:1", "b:1", "c:1"}, BundleData.default(), ld, CONF) == "b:1"
    chosen = s.select_broker_explained({"a:1", "b:1", "c:1"}, None, BundleData.default(), ld, CONF)
    assert chosen == Selection("b:1", {"a:1": 200, "b:1": 20, "c:1": math.inf})


def test_ties_are_broken_by_the_rng_over_sorted_ids() -> None:
    ld = LoadData(broker_data={"a:1": broker(5, 5), "b:1": broker(5, 5), "c:1": broker(9, 9)})
    picks = {LeastLongTermMessageRate(random.Random(seed)).select_broker({"a:1", "b:1", "c:1"}, BundleData.default(),
                                                                         ld, CONF)
             for seed in range(40)}
    assert picks == {"a:1", "b:1"}
    # The same seed gives the same pick, whatever the set's construction order.
    one = LeastLongTermMessageRate(random.Random(3)).select_broker({"b:1", "a:1"}, BundleData.default(), ld, CONF)
    two = LeastLongTermMessageRate(random.Random(3)).select_broker({"a:1", "b:1"}, BundleData.default(), ld, CONF)
    assert one == two


def test_all_overloaded_means_random_among_all() -> None:
    ld = LoadData(broker_data={"a:1": broker(1, 1, cpu=99), "b:1": broker(0, 0, cpu=95)})
    picks = {LeastLongTermMessageRate(random.Random(seed)).select_broker({"a:1", "b:1"}, BundleData.default(), ld, CONF)
             for seed in range(40)}
    assert picks == {"a:1", "b:1"}


def test_broker_without_data_is_excluded_and_empty_gives_none() -> None:
    s = LeastLongTermMessageRate(random.Random(1))
    ld = LoadData(broker_data={"a:1": broker(1000, 1000)})
    assert s.select_broker({"a:1", "ghost:1"}, BundleData.default(), ld, CONF) == "a:1"
    assert s.select_broker({"ghost:1"}, BundleData.default(), ld, CONF) is None
    assert s.select_broker(set(), BundleData.default(), ld, CONF) is None


def test_the_random_fallback_is_flagged_only_when_every_broker_is_overloaded() -> None:
    from emulator.model.selection import ALL_OVERLOADED_RANDOM

    hot = LoadData(broker_data={"a:1": broker(1, 1, cpu=90), "b:1": broker(1, 1, cpu=95)})
    got = LeastLongTermMessageRate(random.Random(3)).select_broker_explained(
        {"a:1", "b:1"}, None, BundleData.default(), hot, CONF)
    assert got.fallback == ALL_OVERLOADED_RANDOM and got.broker in {"a:1", "b:1"}
    one_cool = LoadData(broker_data={"a:1": broker(1, 1, cpu=90), "b:1": broker(1, 1)})
    got = LeastLongTermMessageRate(random.Random(3)).select_broker_explained(
        {"a:1", "b:1"}, None, BundleData.default(), one_cool, CONF)
    assert got == Selection("b:1", {"a:1": math.inf, "b:1": 2})


def test_a_selection_scores_every_candidate_as_broker_score_does() -> None:
    """The selection reads the conf once and scores each candidate with the same operations as
    `broker_score`: equal scores, bit for bit, weighted or not, overloaded or not."""
    rng = random.Random(5)
    for unweighted in (False, True):
        conf = ServiceConfig(emulator_unweighted_max_usage=unweighted, load_balancer_cpu_resource_weight=0.5)
        brokers = {f"b{i}:8080": broker(rng.uniform(0, 1e4), rng.uniform(0, 1e4), cpu=rng.uniform(0, 100),
                                        prealloc=rng.randint(0, 3)) for i in range(40)}
        selection = LeastLongTermMessageRate(random.Random(1)).select_broker_explained(
            set(brokers), "t/n/0x0_0x1", BundleData.default(), LoadData(broker_data=brokers), conf)
        assert selection.scores == {b: broker_score(d, conf) for b, d in sorted(brokers.items())}
        assert (math.inf in selection.scores.values()) == unweighted   # cpu > 85 %, weighted at 0.5
