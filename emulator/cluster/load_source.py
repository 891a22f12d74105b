"""Where a broker's numbers come from: per-bundle traffic and system resource usage.

The broker asks a `LoadSource` for the stats of the bundles it owns and for its CPU, memory and bandwidth
usage; the workload layer supplies a rich implementation (traffic patterns, resource model). `FlatLoad`
is the small built-in one: every topic with a connected producer carries the same rates, and usage grows
linearly with the traffic, which is enough to exercise reporting and placement.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Protocol

import msgspec

from emulator.model.loaddata import NamespaceBundleStats, ResourceUsage


class TopicLoad(msgspec.Struct):
    """What a bundle owner knows of one loaded topic."""

    producers: int = 0
    consumers: int = 0


class TopicTable(dict[str, TopicLoad]):
    """A bundle owner's topics (topic -> TopicLoad) with a `version` the owner bumps on every change:
    a topic added or removed, a producer or consumer attached or detached.

    Brokers hand these to the load source every report interval (5 s), and a bundle's topics rarely
    change between two reports, so a load source may keep what it derived from a table for as long as
    the version is the same. Only `BundleOwner` changes a table, and it bumps the version each time."""

    __slots__ = ("_version", "epoch_box")

    def __init__(self) -> None:
        super().__init__()
        self._version = 0
        # what else counts this table's changes: the broker's ownership entries (ownership.py
        # OwnedBundles), whose `epoch` tells the broker its tables are as they were
        self.epoch_box: Any = None

    @property
    def version(self) -> int:
        return self._version

    @version.setter
    def version(self, value: int) -> None:
        self._version = value
        box = self.epoch_box
        if box is not None:
            box.epoch += 1


class SystemUsage(msgspec.Struct):
    cpu: ResourceUsage
    memory: ResourceUsage
    direct_memory: ResourceUsage
    bandwidth_in: ResourceUsage
    bandwidth_out: ResourceUsage


class TrafficCurves(msgspec.Struct):
    """A broker's bundle traffic in closed form from `valid_from` until `until` (emulated times),
    for as long as its topic tables and the traffic model stay as they are (`key`).

    `coef` is a numpy array of shape (3, 4 x bundles): each of the four rates (msg rate in, msg rate
    out, bytes in, bytes out; the four blocks, a bundle per column in `names` order) is
    coef[0] + coef[1] sin(omega (t - origin)) + coef[2] cos(omega (t - origin)); `totals` the same
    three rows summed over the bundles (3 x 4 floats). Counts are those of the tables. The
    stats windows integrate this exactly (stats_window.py); a load source that offers
    `bundle_curves` returns the same object again while nothing changed."""

    names: list[str]
    coef: Any
    totals: list[list[float]]
    consumers: list[int]
    producers: list[int]
    topics: list[int]
    omega: float
    origin: float
    valid_from: float
    until: float
    key: Any
    """Equal keys: the same tables and traffic model, so only a breakpoint of the traffic lies
    between the two curves."""
    total_counts: tuple[int, int, int] = (0, 0, 0)
    """Consumers, producers and topics over every bundle."""


class LoadSource(Protocol):
    def bundle_stats(
        self, broker_id: str, now: float, bundles: Mapping[str, Mapping[str, TopicLoad]]
    ) -> dict[str, NamespaceBundleStats]: ...

    def system_usage(
        self, broker_id: str, now: float, stats: Mapping[str, NamespaceBundleStats]
    ) -> SystemUsage: ...


class CurveSource(LoadSource, Protocol):
    """A LoadSource that can also give its traffic in closed form (`TrafficCurves`), so that the
    stats windows take exact time means instead of sampling at every report tick. `bundle_curves`
    returns None when it has no closed form at `now` (the windows then sample `bundle_stats`)."""

    def bundle_curves(
        self, broker_id: str, now: float, bundles: Mapping[str, Mapping[str, TopicLoad]]
    ) -> TrafficCurves | None: ...


def available_processors(cores: float) -> int:
    """Runtime.availableProcessors() on a host of `cores`: rounded up, at least 1 (the JVM's count of a
    container's CPU quota, CgroupV1Subsystem / CgroupV2Subsystem: ceil(quota / period))."""
    return max(1, math.ceil(cores))


class FlatLoad:
    """Every producing topic publishes `rate` msg/s of `msg_size` bytes; each consumer reads all of it.

    Usage: CPU in percent-cores = base + per-message cost; bandwidth in kbit/s against a NIC limit;
    heap and direct memory constant. Units as Pulsar's LinuxBrokerHostUsageImpl reports them.
    """

    def __init__(
        self,
        rate: float = 10.0,
        msg_size: int = 1024,
        *,
        cores: int = 4,
        nic_gbps: float = 10.0,
        base_cpu_percent: float = 5.0,
        cpu_percent_per_kmsg: float = 2.0,
        topic_rates: Mapping[str, float] | None = None,
        broker_cores: Mapping[str, float] | None = None,
    ) -> None:
        self.rate = rate
        self.msg_size = msg_size
        self.cores = cores
        self.nic_kbps = nic_gbps * 1024 * 1024
        self.base_cpu_percent = base_cpu_percent
        self.cpu_percent_per_kmsg = cpu_percent_per_kmsg
        self.topic_rates = dict(topic_rates or {})
        self.broker_cores = dict(broker_cores or {})
        # broker -> bundle -> (its TopicTable, the table's version, the stats made from it)
        self._stats_cache: dict[
            str, dict[str, tuple[Mapping[str, TopicLoad], int, NamespaceBundleStats]]] = {}

    def bundle_stats(
        self, broker_id: str, now: float, bundles: Mapping[str, Mapping[str, TopicLoad]]
    ) -> dict[str, NamespaceBundleStats]:
        """Flat traffic does not change with time, so a bundle's stats are kept for as long as its
        TopicTable (same object, same version) is unchanged: report ticks of a large steady
        cluster then skip the walk over the topics and hand out the same (frozen) stats object
        again. A FlatLoad's parameters are fixed once it is made."""
        out: dict[str, NamespaceBundleStats] = {}
        cache = self._stats_cache.get(broker_id)
        if cache is None:
            cache = self._stats_cache[broker_id] = {}
        for bundle, topics in bundles.items():
            version = getattr(topics, "version", None)
            hit = cache.get(bundle) if version is not None else None
            if hit is not None and hit[0] is topics and hit[1] == version:
                out[bundle] = hit[2]
                continue
            stats = out[bundle] = self._stats_of(topics)
            if version is not None:
                cache[bundle] = (topics, version, stats)
        if len(cache) > 2 * len(bundles) + 1024:  # forget bundles this broker no longer owns
            for bundle in [b for b in cache if b not in bundles]:
                del cache[bundle]
        return out

    def _stats_of(self, topics: Mapping[str, TopicLoad]) -> NamespaceBundleStats:
        rate_in, rate_out, producers, consumers, n = self._sums_of(topics)
        msg_size = self.msg_size
        return NamespaceBundleStats(
            msg_rate_in=rate_in,
            msg_rate_out=rate_out,
            msg_throughput_in=rate_in * msg_size,
            msg_throughput_out=rate_out * msg_size,
            consumer_count=consumers,
            producer_count=producers,
            topics=n,
        )

    def _sums_of(self, topics: Mapping[str, TopicLoad]) -> tuple[float, float, int, int, int]:
        rate_in = rate_out = 0.0
        producers = consumers = 0
        for topic, load in topics.items():
            producers += load.producers
            consumers += load.consumers
            if load.producers:
                r = self.topic_rates.get(topic, self.rate)
                rate_in += r
                rate_out += r * load.consumers
        return rate_in, rate_out, producers, consumers, len(topics)

    def available_processors(self, broker_id: str) -> int:
        """availableProcessors() of the broker's host (its `broker_cores`, else `cores`)."""
        return available_processors(self.broker_cores.get(broker_id, self.cores))

    def system_usage(
        self, broker_id: str, now: float, stats: Mapping[str, NamespaceBundleStats]
    ) -> SystemUsage:
        msgs = sum(s.msg_rate_in + s.msg_rate_out for s in stats.values())
        thr_in = sum(s.msg_throughput_in for s in stats.values())
        thr_out = sum(s.msg_throughput_out for s in stats.values())
        cpu = self.base_cpu_percent + self.cpu_percent_per_kmsg * msgs / 1000.0
        return SystemUsage(
            cpu=ResourceUsage(usage=cpu, limit=100.0 * self.broker_cores.get(broker_id, self.cores)),
            memory=ResourceUsage(usage=1024.0, limit=4096.0),
            direct_memory=ResourceUsage(usage=256.0, limit=4096.0),
            bandwidth_in=ResourceUsage(usage=thr_in * 8 / 1024, limit=self.nic_kbps),
            bandwidth_out=ResourceUsage(usage=thr_out * 8 / 1024, limit=self.nic_kbps),
        )
