"""Which of a broker's bundles SimpleLoadManagerImpl looks at first when it sheds.

Follows pulsar-common `NamespaceBundleStats` (`compareTo`, `compareByMsgRate`,
`compareByTopicConnections`, `compareByCacheSize`, `compareByBandwidthIn`, `compareByBandwidthOut`:
differences under a threshold compare equal), `NamespaceBundleStatsComparator` (most loaded first,
never 0) and `LoadReport.getSortedBundleStats` (a `TreeMap` filled with `putAll`).

Choice: Java fills the TreeMap in the iteration order of a `HashMap<String, ...>`; we use the order
of the given mapping (callers pass an insertion-ordered dict, so a seed decides the run). Given
that order, the resulting order is Java's, down to the tree shape (`_java.tree_map_order`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from emulator.model.loaddata import NamespaceBundleStats
from emulator.model.java_math import tree_map_order

__all__ = [
    "ResourceType",
    "compare_bundle_stats",
    "compare_by_msg_rate",
    "compare_by_topic_connections",
    "compare_by_cache_size",
    "compare_by_bandwidth_in",
    "compare_by_bandwidth_out",
    "sorted_bundle_stats",
]

THROUGHPUT_DIFFERENCE_THRESHOLD = 1e5  # bytes/s
MSG_RATE_DIFFERENCE_THRESHOLD = 100.0  # msg/s
TOPIC_CONNECTION_DIFFERENCE_THRESHOLD = 500
CACHE_SIZE_DIFFERENCE_THRESHOLD = 100000


class ResourceType(enum.Enum):
    """`SystemResourceUsage.ResourceType`."""

    CPU = "CPU"
    MEMORY = "Memory"
    BANDWIDTH_IN = "BandwidthIn"
    BANDWIDTH_OUT = "BandwidthOut"


def _cmp(a: float, b: float) -> int:
    return (a > b) - (a < b)


def compare_by_msg_rate(a: NamespaceBundleStats, b: NamespaceBundleStats) -> int:
    ra, rb = a.msg_rate_in + a.msg_rate_out, b.msg_rate_in + b.msg_rate_out
    return _cmp(ra, rb) if abs(ra - rb) > MSG_RATE_DIFFERENCE_THRESHOLD else 0


def compare_by_topic_connections(a: NamespaceBundleStats, b: NamespaceBundleStats) -> int:
    ta = a.topics + a.consumer_count + a.producer_count
    tb = b.topics + b.consumer_count + b.producer_count
    return _cmp(ta, tb) if abs(ta - tb) > TOPIC_CONNECTION_DIFFERENCE_THRESHOLD else 0


def compare_by_cache_size(a: NamespaceBundleStats, b: NamespaceBundleStats) -> int:
    diff = abs(a.cache_size - b.cache_size)
    return _cmp(a.cache_size, b.cache_size) if diff > CACHE_SIZE_DIFFERENCE_THRESHOLD else 0


def compare_by_bandwidth_in(a: NamespaceBundleStats, b: NamespaceBundleStats) -> int:
    diff = abs(a.msg_throughput_in - b.msg_throughput_in)
    return _cmp(a.msg_throughput_in, b.msg_throughput_in) if diff > THROUGHPUT_DIFFERENCE_THRESHOLD else 0


def compare_by_bandwidth_out(a: NamespaceBundleStats, b: NamespaceBundleStats) -> int:
    diff = abs(a.msg_throughput_out - b.msg_throughput_out)
    return _cmp(a.msg_throughput_out, b.msg_throughput_out) if diff > THROUGHPUT_DIFFERENCE_THRESHOLD else 0


def compare_bundle_stats(a: NamespaceBundleStats, b: NamespaceBundleStats) -> int:
    """`NamespaceBundleStats.compareTo`: bandwidth in, bandwidth out, msg rate, topics and
    connections, cache size; the first that differs beyond its threshold decides.

    The five `compare_by_*` above, in that order, written out in one body: a top-k selection
    compares every bundle of a broker several times per report (`top_bundles.top_k_bundles`)."""
    x, y = a.msg_throughput_in, b.msg_throughput_in
    if abs(x - y) > THROUGHPUT_DIFFERENCE_THRESHOLD:
        return (x > y) - (x < y)
    x, y = a.msg_throughput_out, b.msg_throughput_out
    if abs(x - y) > THROUGHPUT_DIFFERENCE_THRESHOLD:
        return (x > y) - (x < y)
    x, y = a.msg_rate_in + a.msg_rate_out, b.msg_rate_in + b.msg_rate_out
    if abs(x - y) > MSG_RATE_DIFFERENCE_THRESHOLD:
        return (x > y) - (x < y)
    i = a.topics + a.consumer_count + a.producer_count
    j = b.topics + b.consumer_count + b.producer_count
    if abs(i - j) > TOPIC_CONNECTION_DIFFERENCE_THRESHOLD:
        return (i > j) - (i < j)
    i, j = a.cache_size, b.cache_size
    if abs(i - j) > CACHE_SIZE_DIFFERENCE_THRESHOLD:
        return (i > j) - (i < j)
    return 0


_BY_RESOURCE = {
    ResourceType.CPU: compare_by_msg_rate,
    ResourceType.MEMORY: compare_by_topic_connections,
    ResourceType.BANDWIDTH_IN: compare_by_bandwidth_in,
    ResourceType.BANDWIDTH_OUT: compare_by_bandwidth_out,
}


def sorted_bundle_stats(
    bundle_stats: Mapping[str, NamespaceBundleStats], resource: ResourceType | None
) -> list[str]:
    """`LoadReport.getSortedBundleStats(resource)`: bundle names, most loaded on `resource` first
    (None = the full `compareTo`), exactly as the Java TreeMap iterates them."""
    compare = _BY_RESOURCE.get(resource, compare_bundle_stats) if resource else compare_bundle_stats

    def comparator(a: str, b: str) -> int:
        return -1 if compare(bundle_stats[a], bundle_stats[b]) > 0 else 1

    return tree_map_order(bundle_stats, comparator)
