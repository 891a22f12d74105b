"""`WorkloadLoadSource`: the cluster's LoadSource, fed by the traffic and resource models.

Brokers call `bundle_stats` every report interval (5 s) with the topics of the bundles they own and the
producers and consumers connected to each; `system_usage` then turns the bundle sums into the five
ResourceUsages of the report. What a bundle serves:

* a topic publishes its traffic-model rate only while at least one producer is connected to it (the
  application's producers are down while they reconnect after an unload or a crash);
* every connected consumer reads all of it (one subscription each): out = in × connected consumers;
* bytes = messages × the topic's message size;
* a topic the workload does not know carries nothing.

One pass per call: the topics become index arrays, and the per-bundle sums are `np.bincount`s.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain, repeat
from operator import attrgetter

import numpy as np

from emulator.cluster.load_source import SystemUsage, TopicLoad
from emulator.model.loaddata import NamespaceBundleStats

from .resources import BrokerTraffic, ResourceModel
from .traffic import TrafficModel

__all__ = ["WorkloadLoadSource", "bundle_sums"]

_PRODUCERS = attrgetter("producers")
_CONSUMERS = attrgetter("consumers")


def bundle_sums(
    rates: np.ndarray,
    msg_size: np.ndarray,
    index: Mapping[str, int],
    bundles: Mapping[str, Mapping[str, TopicLoad]],
    cache: dict[int, tuple[tuple[str, ...], np.ndarray]] | None = None,
) -> dict[str, NamespaceBundleStats]:
    """Per-bundle NamespaceBundleStats from per-topic rates (msg/s) and sizes (bytes).

    `cache` (optional, owned by the caller) keeps each topics mapping's index array between calls,
    keyed by the mapping's id and checked against its current keys: a bundle's topics rarely change
    between two reports, its producers and consumers are read every time."""
    names = list(bundles)
    dicts = list(bundles.values())
    nb = len(names)
    sizes = [len(d) for d in dicts]
    n = sum(sizes)
    if not n:
        return {name: NamespaceBundleStats() for name in names}
    # C-level iteration only: this runs for every broker every report interval
    if cache is None:
        i = np.fromiter(map(index.get, chain.from_iterable(dicts), repeat(-1, n)), np.int64, n)
    else:
        i = np.concatenate([_indices(d, index, cache) for d in dicts])
    loads = list(chain.from_iterable(d.values() for d in dicts))
    p = np.fromiter(map(_PRODUCERS, loads), np.int64, n)
    c = np.fromiter(map(_CONSUMERS, loads), np.int64, n)
    w = np.repeat(np.arange(nb), sizes)
    known = i >= 0
    safe = np.where(known, i, 0)
    rate_in = np.where(known & (p > 0), rates[safe], 0.0)
    rate_out = rate_in * c
    size = msg_size[safe]
    r_in = np.bincount(w, weights=rate_in, minlength=nb).tolist()
    r_out = np.bincount(w, weights=rate_out, minlength=nb).tolist()
    t_in = np.bincount(w, weights=rate_in * size, minlength=nb).tolist()
    t_out = np.bincount(w, weights=rate_out * size, minlength=nb).tolist()
    n_prod = np.bincount(w, weights=p, minlength=nb).astype(np.int64).tolist()
    n_cons = np.bincount(w, weights=c, minlength=nb).astype(np.int64).tolist()
    return {
        name: NamespaceBundleStats(
            msg_rate_in=r_in[b], msg_rate_out=r_out[b],
            msg_throughput_in=t_in[b], msg_throughput_out=t_out[b],
            consumer_count=n_cons[b], producer_count=n_prod[b], topics=sizes[b],
        )
        for b, name in enumerate(names)
    }


def _indices(topics: Mapping[str, TopicLoad], index: Mapping[str, int],
             cache: dict[int, tuple[tuple[str, ...], np.ndarray]]) -> np.ndarray:
    keys = tuple(topics)
    hit = cache.get(id(topics))
    if hit is not None and hit[0] == keys:
        return hit[1]
    if len(cache) > 100_000:
        cache.clear()
    arr = np.fromiter(map(index.get, keys, repeat(-1, len(keys))), np.int64, len(keys))
    cache[id(topics)] = (keys, arr)
    return arr


class WorkloadLoadSource:
    """LoadSource of a scenario: `traffic` decides the rates, `resources` the host usage."""

    def __init__(self, traffic: TrafficModel, resources: ResourceModel) -> None:
        self.traffic = traffic
        self.resources = resources
        self._index_cache: dict[int, tuple[tuple[str, ...], np.ndarray]] = {}

    def bundle_stats(
        self, broker_id: str, now: float, bundles: Mapping[str, Mapping[str, TopicLoad]]
    ) -> dict[str, NamespaceBundleStats]:
        return bundle_sums(self.traffic.rates(now), self.traffic.msg_size, self.traffic.index, bundles,
                           self._index_cache)

    def system_usage(
        self, broker_id: str, now: float, stats: Mapping[str, NamespaceBundleStats]
    ) -> SystemUsage:
        return self.resources.usage(broker_id, BrokerTraffic.from_stats(stats))
