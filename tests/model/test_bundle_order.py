"""`compare_bundle_stats` written out in one body reads as the chain of the five `compare_by_*`
(NamespaceBundleStats.compareTo): the first that differs beyond its threshold decides."""

from __future__ import annotations

import itertools
import math
import random

from emulator.model.loaddata import NamespaceBundleStats
from emulator.model import bundle_order as bo


def chained(a: NamespaceBundleStats, b: NamespaceBundleStats) -> int:
    for compare in (bo.compare_by_bandwidth_in, bo.compare_by_bandwidth_out, bo.compare_by_msg_rate,
                    bo.compare_by_topic_connections, bo.compare_by_cache_size):
        result = compare(a, b)
        if result:
            return result
    return 0


def test_the_written_out_comparison_is_the_chain_of_the_five():
    rng = random.Random(7)
    # values on both sides of each threshold, equal ones and a NaN
    rates = [0.0, 40.0, 60.0, 140.0, 1e4, math.nan]
    bytes_ = [0.0, 5e4, 1e5, 1.5e5, 2e5 + 1, 3e5]
    counts = [0, 250, 500, 501, 1001]
    cache = [0, 100000, 100001, 250000]
    stats = [NamespaceBundleStats(msg_rate_in=rng.choice(rates), msg_rate_out=rng.choice(rates),
                                  msg_throughput_in=rng.choice(bytes_), msg_throughput_out=rng.choice(bytes_),
                                  consumer_count=rng.choice(counts), producer_count=rng.choice(counts),
                                  topics=rng.choice(counts), cache_size=rng.choice(cache))
             for _ in range(300)]
    outcomes = set()
    for a, b in itertools.product(stats[:120], stats[120:240]):
        expected = chained(a, b)
        assert bo.compare_bundle_stats(a, b) == expected
        outcomes.add(expected)
    assert outcomes == {-1, 0, 1}
