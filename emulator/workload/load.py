"""`WorkloadLoadSource`: the cluster's LoadSource, fed by the traffic and resource models.

Brokers call `bundle_stats` every report interval (5 s) with the topics of the bundles they own and the
producers and consumers connected to each; `system_usage` then turns the bundle sums into the five
ResourceUsages of the report. What a bundle serves:

* a topic publishes its traffic-model rate only while at least one producer is connected to it (the
  application's producers are down while they reconnect after an unload or a crash);
* every connected consumer reads all of it (one subscription each): out = in × connected consumers;
* bytes = messages × the topic's message size;
* a topic the workload does not know carries nothing.

One pass per call: the topics become index arrays, and the per-bundle sums are `np.bincount`s. A
broker's bundles come as versioned `TopicTable`s, so what depends only on the topics and their
producers and consumers (which topics publish, their consumer counts and sizes, the per-bundle counts)
is kept per broker until a table's version changes; a report then costs the traffic model's rates of
the publishing topics alone (`TopicSubset`), three products and one `np.bincount` over them. Every
bundle sum adds the same numbers in the same order as the plain pass (the topics that carry nothing
only add +0.0 there), so both give the same floats; tests/workload/test_load_cache.py checks this
against the plain pass, report by report.

`bundle_curves` gives the same sums in closed form for the stats windows' exact means (stats_window.py):
per bundle and rate, the sums of w, w alpha and w beta over its publishing topics (`TopicSubset.linear`),
made again only when a table, the traffic model or a piece of the traffic changes; the test file
checks each against the plain pass at the instant it is made.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from itertools import chain, repeat
from operator import attrgetter, is_

import numpy as np

from emulator.cluster.load_source import SystemUsage, TopicLoad, TopicTable, TrafficCurves, available_processors
from emulator.model.loaddata import NamespaceBundleStats, ResourceUsage

from .resources import BrokerTraffic, ResourceModel
from .traffic import Linear, TopicSubset, TrafficModel

__all__ = ["WorkloadLoadSource", "bundle_sums"]

_PRODUCERS = attrgetter("producers")
_CONSUMERS = attrgetter("consumers")
_VERSION = attrgetter("version")


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


class _BundleArrays:
    """What one version of a bundle's TopicTable contributes: the traffic indices, consumer counts and
    message sizes of its publishing topics (known to the traffic model, >= 1 producer), in table order,
    and its producer, consumer and topic counts (a topic's message size is fixed for the run). Holds
    the table itself, so the id it is filed under cannot be reused by another table while it lives."""

    __slots__ = ("table", "version", "idx", "consumers", "size", "producer_count", "consumer_count",
                 "topics")

    def __init__(self, table: TopicTable, index: Mapping[str, int], msg_size: np.ndarray) -> None:
        self.table = table
        self.version = table.version
        idx: list[int] = []
        cons: list[int] = []
        producers = consumers = 0
        get = index.get
        for topic, load in table.items():
            p, c = load.producers, load.consumers
            producers += p
            consumers += c
            if p > 0:
                i = get(topic, -1)
                if i >= 0:
                    idx.append(i)
                    cons.append(c)
        self.idx = np.array(idx, dtype=np.intp)
        self.consumers = np.array(cons, dtype=float)
        self.size = msg_size[self.idx]
        self.producer_count = producers
        self.consumer_count = consumers
        self.topics = len(table)


class _BrokerArrays:
    """One broker's bundles at one set of table versions, ready for one `np.bincount`.

    Row j of the (topics x 4) array behind `flat` holds a publishing topic's four values (rate in,
    rate out, bytes in, bytes out), and `bins` files them into bin k * len(names) + bundle (k: the
    column). Only the rates change between reports. The rows take the bundles in turn (the
    first topic of every bundle, then the second, ...): each bin still adds its topics in table order,
    so the sums are the plain pass's, but consecutive additions go to different bins instead of
    waiting for each other, which makes the bincount about twice as fast."""

    __slots__ = ("names", "tables", "versions", "parts", "idx", "consumers", "size", "bins", "nbins",
                 "flat", "r_in", "r_out", "t_in", "t_out", "counts", "empty", "traffic", "curve")

    def __init__(self, names: list[str], parts: list[_BundleArrays], traffic: TrafficModel) -> None:
        self.names = names
        self.parts = parts
        self.tables = [p.table for p in parts]
        self.versions = [p.version for p in parts]
        nb = len(names)
        lengths = [len(p.idx) for p in parts]
        if parts:
            w = np.repeat(np.arange(nb, dtype=np.intp), lengths)
            rank = np.concatenate([np.arange(k, dtype=np.intp) for k in lengths])
            order = np.lexsort((w, rank))          # by rank in the bundle, then by bundle
            self.idx = np.concatenate([p.idx for p in parts])[order]
            self.consumers = np.concatenate([p.consumers for p in parts])[order]
            self.size = np.concatenate([p.size for p in parts])[order]
            w = w[order]
        else:
            w = self.idx = np.zeros(0, np.intp)
            self.consumers = self.size = np.zeros(0)
        self.bins = np.stack([w, w + nb, w + 2 * nb, w + 3 * nb], axis=1).ravel()
        self.nbins = 4 * nb
        rows = np.empty((len(w), 4))
        self.flat = rows.reshape(-1)
        self.r_in, self.r_out, self.t_in, self.t_out = rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3]
        self.counts = ([p.consumer_count for p in parts], [p.producer_count for p in parts],
                       [p.topics for p in parts])
        self.empty = not any(p.topics for p in parts)
        self.traffic: TopicSubset = traffic.subset(self.idx)
        """The rates of these topics only: a broker publishes a few hundred of the model's topics."""
        self.curve: TrafficCurves | None = None
        """The last closed form made from these arrays (`WorkloadLoadSource.bundle_curves`)."""

    def fits(self, bundles: Mapping[str, Mapping[str, TopicLoad]]) -> bool:
        """The same tables (by identity), at the same versions, under the same names."""
        tables = list(bundles.values())
        return (len(tables) == len(self.tables) and all(map(is_, tables, self.tables))
                and list(map(_VERSION, tables)) == self.versions and list(bundles) == self.names)


class WorkloadLoadSource:
    """LoadSource of a scenario: `traffic` decides the rates, `resources` the host usage."""

    def __init__(self, traffic: TrafficModel, resources: ResourceModel) -> None:
        self.traffic = traffic
        self.resources = resources
        self._index_cache: dict[int, tuple[tuple[str, ...], np.ndarray]] = {}
        self._brokers: dict[str, _BrokerArrays] = {}

    def available_processors(self, broker_id: str) -> int:
        """availableProcessors() of the broker's host now (its `[cluster.capacity]` cores, its
        override, or the last `set_capacity`): the cluster sizes a starting broker's threads by it."""
        return available_processors(self.resources.capacity(broker_id).cores)

    def bundle_curves(
        self, broker_id: str, now: float, bundles: Mapping[str, Mapping[str, TopicLoad]]
    ) -> TrafficCurves | None:
        """The broker's bundle traffic from `now` on in closed form (`TrafficCurves`), or None
        when the traffic model has none at `now` (see `TopicSubset.linear`). The same object as
        the last call while the tables, the model and the piece of the traffic are the same, so a
        report tick costs a comparison; a new one is three `np.bincount`s over the publishing
        topics (a term times the base rate, sin and cos terms of the diurnal curve)."""
        a = self._brokers.get(broker_id)
        if a is None or not a.fits(bundles):
            if not all(type(t) is TopicTable for t in bundles.values()):
                return None
            a = self._rebuild(broker_id, bundles)   # type: ignore[arg-type]
        traffic = self.traffic
        key = (a, traffic._version, traffic._modifiers)
        c = a.curve
        if c is not None and c.valid_from <= now < c.until and c.key == key:
            return c
        nb = len(a.names)
        consumers, producers, topics = a.counts
        if a.empty:
            lin = Linear(math.inf)
            coef = np.zeros((3, 4 * nb))
        else:
            r_in = a.r_in
            piece = a.traffic.linear(now, out=r_in)
            if piece is None:
                return None
            lin = piece
            np.multiply(r_in, a.consumers, out=a.r_out)
            np.multiply(r_in, a.size, out=a.t_in)
            np.multiply(a.r_out, a.size, out=a.t_out)
            coef = np.zeros((3, a.nbins))
            coef[0] = np.bincount(a.bins, weights=a.flat, minlength=a.nbins)
            if lin.omega:
                assert lin.alpha is not None and lin.beta is not None   # omega: the diurnal terms
                rows = a.flat.reshape(-1, 4)
                coef[1] = np.bincount(a.bins, weights=(rows * lin.alpha[:, None]).ravel(),
                                      minlength=a.nbins)
                coef[2] = np.bincount(a.bins, weights=(rows * lin.beta[:, None]).ravel(),
                                      minlength=a.nbins)
        key = (a, traffic._version, traffic._modifiers)   # `linear` may have dropped finished ones
        c = TrafficCurves(
            names=a.names, coef=coef, totals=coef.reshape(3, 4, nb).sum(axis=2).tolist(),
            consumers=consumers, producers=producers, topics=topics, omega=lin.omega,
            origin=lin.origin, valid_from=now, until=lin.until, key=key,
            total_counts=(sum(consumers), sum(producers), sum(topics)))
        if a.curve is None or now >= a.curve.valid_from:   # keep the newest piece
            a.curve = c
        return c

    def curve_still(self, broker_id: str, curve: TrafficCurves, now: float) -> bool:
        """True if `bundle_curves(broker_id, now, tables)` would return `curve` itself, for tables
        that have not changed since it was made (the caller's knowledge: the broker's ownership
        epoch): the broker's arrays still hold it, and its piece and the traffic model still hold
        at `now`. The same test as `bundle_curves`, without matching the tables."""
        a = self._brokers.get(broker_id)
        if a is None or a.curve is not curve:
            return False
        traffic = self.traffic
        return curve.valid_from <= now < curve.until and curve.key == (
            a, traffic._version, traffic._modifiers)

    def bundle_stats(
        self, broker_id: str, now: float, bundles: Mapping[str, Mapping[str, TopicLoad]]
    ) -> dict[str, NamespaceBundleStats]:
        a = self._brokers.get(broker_id)
        if a is None or not a.fits(bundles):
            if not all(type(t) is TopicTable for t in bundles.values()):
                traffic = self.traffic
                return bundle_sums(traffic.rates(now), traffic.msg_size, traffic.index, bundles,
                                   self._index_cache)
            a = self._rebuild(broker_id, bundles)   # type: ignore[arg-type]
        if a.empty:
            return {name: NamespaceBundleStats() for name in a.names}
        # the plain pass's arithmetic, element for element (see the module docstring)
        r_in = a.r_in
        a.traffic.rates(now, out=r_in)
        np.multiply(r_in, a.consumers, out=a.r_out)
        np.multiply(r_in, a.size, out=a.t_in)
        np.multiply(a.r_out, a.size, out=a.t_out)
        sums = np.bincount(a.bins, weights=a.flat, minlength=a.nbins).tolist()
        nb = len(a.names)
        consumers, producers, topics = a.counts
        # positional, in NamespaceBundleStats' field order (msg_rate_in, msg_rate_out,
        # msg_throughput_in, msg_throughput_out, consumer_count, producer_count, topics): the
        # structs are made by map() in C, one per owned bundle on every report
        return dict(zip(a.names, map(
            NamespaceBundleStats, sums[:nb], sums[nb:2 * nb], sums[2 * nb:3 * nb], sums[3 * nb:],
            consumers, producers, topics)))

    def _rebuild(self, broker_id: str, bundles: Mapping[str, TopicTable]) -> _BrokerArrays:
        """New arrays for the broker, reusing each bundle whose table is unchanged."""
        old = self._brokers.get(broker_id)
        known = {id(p.table): p for p in old.parts} if old is not None else {}
        parts: list[_BundleArrays] = []
        for table in bundles.values():
            p = known.get(id(table))
            if p is None or p.table is not table or p.version != table.version:
                p = _BundleArrays(table, self.traffic.index, self.traffic.msg_size)
            parts.append(p)
        arrays = self._brokers[broker_id] = _BrokerArrays(list(bundles), parts, self.traffic)
        return arrays

    def system_usage(
        self, broker_id: str, now: float, stats: Mapping[str, NamespaceBundleStats]
    ) -> SystemUsage:
        return self.resources.usage(broker_id, BrokerTraffic.from_stats(stats))

    def memory_usage(self, broker_id: str, now: float,
                     totals: NamespaceBundleStats) -> tuple[ResourceUsage, ResourceUsage]:
        """`system_usage(broker_id, now, {"": totals})`'s memory and direct memory alone (the same
        values and noise draws; `ResourceModel.memory_usage`)."""
        return self.resources.memory_usage(broker_id, totals)
