"""The load data the Modular Load Manager exchanges and keeps (spec `pulsar-algorithms.md` §1, §2.1).

Structs stored in the metadata store use `rename="camel"`, so `msgspec.json.encode` produces Pulsar's
JSON (`{"webServiceUrl": ..., "cpu": {"usage": .., "limit": ..}, "msgRateIn": ..}`). Encode with
`encode_json` to get sets and map keys sorted (Python set order varies between processes).

Arithmetic is Java's, surprises included: `ResourceUsage.percent_usage` is single precision, the
unweighted max usage is divided in single precision too, `max` starts at −∞ with a strict `>`, and
`Math.max` propagates NaN. Nothing here validates per instance: these Structs sit in hot paths.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

import msgspec
import numpy as np

if TYPE_CHECKING:
    from emulator.model.config import ServiceConfig

__all__ = [
    "NUM_SHORT_SAMPLES",
    "NUM_LONG_SAMPLES",
    "DEFAULT_MESSAGE_RATE",
    "DEFAULT_MESSAGE_THROUGHPUT",
    "ResourceUsage",
    "NamespaceBundleStats",
    "LocalBrokerData",
    "BrokerDataUpdateCheck",
    "AdvertisedListener",
    "INTERNAL_LISTENER",
    "LOAD_REPORT_TYPE",
    "default_advertised_listeners",
    "TimeAverageMessageData",
    "BundleData",
    "TimeAverageBrokerData",
    "BrokerData",
    "LoadData",
    "SheddingView",
    "default_bundle_stats",
    "java_div",
    "need_broker_data_update",
    "percent_change",
    "namespace_of",
    "range_of",
    "is_system_service_namespace",
    "encode_json",
]

NUM_SHORT_SAMPLES = 10
NUM_LONG_SAMPLES = 1000
DEFAULT_MESSAGE_RATE = 50.0  # msg/s, each way, for a bundle never seen
DEFAULT_MESSAGE_THROUGHPUT = 50000.0  # bytes/s (decimal 50 kB/s), each way

_F32 = struct.Struct("<f")
_F32_PACK = _F32.pack
_F32_UNPACK: Callable[[bytes], tuple[float]] = _F32.unpack
_2F32 = struct.Struct("<ff")
_2F32_PACK, _2F32_UNPACK = _2F32.pack, _2F32.unpack
_USAGE_KEY_PACK = struct.Struct("<12d").pack
_4F32 = struct.Struct("<4f")
_4F32_PACK, _4F32_UNPACK = _4F32.pack, _4F32.unpack
_8F32 = struct.Struct("<8f")
_8F32_PACK, _8F32_UNPACK = _8F32.pack, _8F32.unpack


def _f32(x: float) -> float:
    """Round a double to the nearest float32, as Java's `(float)` cast (widened back to a double)."""
    try:
        return _F32_UNPACK(_F32_PACK(x))[0]
    except OverflowError:  # beyond float32 range: Java rounds to ±Infinity (or ±MAX_VALUE)
        with np.errstate(over="ignore"):
            return float(np.float32(x))


def _java_max(a: float, b: float) -> float:
    """`Math.max(double, double)`: NaN if either is NaN (Python's `max` is order dependent)."""
    if a != a or b != b:
        return math.nan
    return a if a >= b else b


def java_div(a: float, b: float) -> float:
    """Java double division: x/0 is ±Infinity, 0/0 is NaN (Python raises)."""
    if b == 0:
        if a == 0 or a != a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


# --- Resource usage --------------------------------------------------------------------------------


class ResourceUsage(msgspec.Struct, rename="camel"):
    """One resource's usage and limit (units per §1.2; only the ratio matters)."""

    usage: float = 0.0
    limit: float = 0.0

    def percent_usage(self) -> float:
        """Java `percentUsage()`: `((float)usage / (float)limit) * 100` in float32, 0 if limit ≤ 0.

        Placement computes this for every candidate on every assignment: both casts go through one
        struct round trip (each value is rounded on its own, exactly as two casts)."""
        proportion = 0.0
        limit = self.limit
        if limit > 0:
            try:
                usage, limit = _2F32_UNPACK(_2F32_PACK(self.usage, limit))
            except OverflowError:
                usage, limit = _f32(self.usage), _f32(limit)
            proportion = _f32(usage / limit)
        return _f32(proportion * 100.0)


def _percent_usages(
    a: ResourceUsage, b: ResourceUsage, c: ResourceUsage, d: ResourceUsage
) -> tuple[float, float, float, float]:
    """`percent_usage()` of four resources, each rounding step done for all four in one struct round
    trip (float32 rounding is per value, so the results are the same bits as four calls).

    A broker's weighted usage needs four of them at every report tick (its memory changes each
    time); a limit <= 0 or a value beyond float32 takes `percent_usage` one at a time, with its
    special cases and exceptions."""
    la, lb, lc, ld = a.limit, b.limit, c.limit, d.limit
    if la > 0 and lb > 0 and lc > 0 and ld > 0:
        try:
            ua, la, ub, lb, uc, lc, ud, ld = _8F32_UNPACK(
                _8F32_PACK(a.usage, la, b.usage, lb, c.usage, lc, d.usage, ld))
            pa, pb, pc, pd = _4F32_UNPACK(_4F32_PACK(ua / la, ub / lb, uc / lc, ud / ld))
            return _4F32_UNPACK(_4F32_PACK(pa * 100.0, pb * 100.0, pc * 100.0, pd * 100.0))
        except (OverflowError, ZeroDivisionError):
            pass
    return a.percent_usage(), b.percent_usage(), c.percent_usage(), d.percent_usage()


class NamespaceBundleStats(msgspec.Struct, rename="camel", frozen=True):
    """One bundle's sample in a load report: rates in msg/s, throughputs in bytes/s.

    Frozen: a report's samples are shared by the broker that made them, the leader that decoded them
    and the caches keyed by them (bundle windows, namespaces), so none of them can change under another."""

    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0
    msg_throughput_in: float = 0.0
    msg_throughput_out: float = 0.0
    consumer_count: int = 0
    producer_count: int = 0
    topics: int = 0
    cache_size: int = 0


def default_bundle_stats() -> NamespaceBundleStats:
    """MLMI's `defaultStats`: what a never-seen bundle is assumed to carry (a fresh instance)."""
    return NamespaceBundleStats(
        msg_rate_in=DEFAULT_MESSAGE_RATE,
        msg_rate_out=DEFAULT_MESSAGE_RATE,
        msg_throughput_in=DEFAULT_MESSAGE_THROUGHPUT,
        msg_throughput_out=DEFAULT_MESSAGE_THROUGHPUT,
    )


# --- LocalBrokerData -------------------------------------------------------------------------------


def _max_from_neg_inf(values: Iterable[float]) -> float:
    result = -math.inf
    for v in values:
        if v > result:
            result = v
    return result


def sum_bundle_stats(stats: Mapping[str, NamespaceBundleStats]) -> NamespaceBundleStats:
    """A broker's bundle stats summed into one NamespaceBundleStats (its totals, as `system_usage`
    and the resource model read them)."""
    rin = rout = tin = tout = 0.0
    topics = producers = consumers = 0
    for s in stats.values():
        rin += s.msg_rate_in
        rout += s.msg_rate_out
        tin += s.msg_throughput_in
        tout += s.msg_throughput_out
        topics += s.topics
        producers += s.producer_count
        consumers += s.consumer_count
    return NamespaceBundleStats(rin, rout, tin, tout, consumers, producers, topics)


class AdvertisedListener(msgspec.Struct, rename="camel", omit_defaults=True):
    """Pulsar's AdvertisedListener: a listener's broker service URIs (`null` ones left out)."""

    broker_service_url: str | None = None
    broker_service_url_tls: str | None = None


INTERNAL_LISTENER = "internal"
"""Pulsar's default `internalListenerName`: the one listener a broker without `advertisedListeners` has."""

LOAD_REPORT_TYPE = "LocalBrokerData"
"""LocalBrokerData.loadReportType: how Pulsar's LoadReportDeserializer tells this report from a LoadReport."""


def default_advertised_listeners(pulsar_service_url: str) -> dict[str, AdvertisedListener]:
    """A broker without `advertisedListeners`: one "internal" listener on its service URL
    (MultipleListenerValidator.validateAndAnalysisAdvertisedListener)."""
    if not pulsar_service_url:
        return {}
    return {INTERNAL_LISTENER: AdvertisedListener(broker_service_url=pulsar_service_url)}


class LocalBrokerData(msgspec.Struct, rename="camel", dict=True):
    """What each broker writes to `/loadbalance/brokers/<id>`; the leader reads it.

    Every field of Pulsar's LocalBrokerData, in camelCase JSON, plus `loadReportType` (its getter's
    constant, which Pulsar's deserializer reads) and `loadManagerClassName` (3.x). `lastUpdate` is
    calendar time in epoch milliseconds (`emulator.runtime.epoch_ms`: the run's stated start plus
    emulated time). Left out: the getters Jackson also writes (`bundleStats`, a copy of `lastStats`,
    and `maxResourceUsage`), derived values a reader computes.

    Equality is field-wise (Java's `equals` compares only the four URLs).
    The instance `__dict__` (never encoded) holds the last weighted usage and what it was made from.
    """

    web_service_url: str = ""
    web_service_url_tls: str = ""
    pulsar_service_url: str = ""
    pulsar_service_url_tls: str = ""
    persistent_topics_enabled: bool = True
    non_persistent_topics_enabled: bool = True
    cpu: ResourceUsage = msgspec.field(default_factory=ResourceUsage)
    memory: ResourceUsage = msgspec.field(default_factory=ResourceUsage)
    direct_memory: ResourceUsage = msgspec.field(default_factory=ResourceUsage)
    bandwidth_in: ResourceUsage = msgspec.field(default_factory=ResourceUsage)
    bandwidth_out: ResourceUsage = msgspec.field(default_factory=ResourceUsage)
    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0
    msg_throughput_in: float = 0.0
    msg_throughput_out: float = 0.0
    num_topics: int = 0
    num_bundles: int = 0
    num_consumers: int = 0
    num_producers: int = 0
    bundles: set[str] = set()
    last_bundle_gains: set[str] = set()
    last_bundle_losses: set[str] = set()
    last_stats: dict[str, NamespaceBundleStats] = {}
    last_update: int = 0
    broker_version_string: str = ""
    load_manager_class_name: str = "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"
    start_timestamp: int = 0
    """Epoch ms the broker's load manager made this data (3.x, ServiceLookupData.getStartTimestamp):
    RedirectManager sends lookups to the load manager of the most recently started broker."""
    protocols: dict[str, str] = {}
    """The protocol handlers' advertised data (none in the emulator: Pulsar's binary protocol only)."""
    advertised_listeners: dict[str, AdvertisedListener] = {}
    load_report_type: str = LOAD_REPORT_TYPE

    def percent_usages(self) -> dict[str, float]:
        """`percent_usage()` of each of the five resources, by field name (the metrics' gauges read
        all five of every broker at every sample: four of them computed together)."""
        cpu, direct, b_in, b_out = _percent_usages(self.cpu, self.direct_memory, self.bandwidth_in,
                                                   self.bandwidth_out)
        return {"cpu": cpu, "memory": self.memory.percent_usage(), "direct_memory": direct,
                "bandwidth_in": b_in, "bandwidth_out": b_out}

    def max_resource_usage(self) -> float:
        """max(cpu, direct memory, bw in, bw out) % / 100, as a fraction. Memory is excluded (#19559).

        Java takes the float overload of `max` and divides the float by 100 in single precision.
        """
        m = _max_from_neg_inf(
            (
                self.cpu.percent_usage(),
                self.direct_memory.percent_usage(),
                self.bandwidth_in.percent_usage(),
                self.bandwidth_out.percent_usage(),
            )
        )
        if math.isinf(m) or m != m:
            return m
        return _f32(m / 100.0)

    def max_resource_usage_with_weight(
        self, cpu_w: float, direct_w: float, in_w: float, out_w: float
    ) -> float:
        """PIP-358's weighted usage: max(percent × weight) / 100 in double precision.

        The max is written out (from −∞, strict `>`, so NaN never wins, as `_max_from_neg_inf`):
        the leader calls this for every candidate of every assignment, on the same report until the
        broker writes again, so the result is kept with the exact bits of the 12 numbers it is a
        function of (a changed field or weight, even -0.0 for 0.0, computes afresh)."""
        cpu, direct, b_in, b_out = self.cpu, self.direct_memory, self.bandwidth_in, self.bandwidth_out
        try:
            key = _USAGE_KEY_PACK(cpu.usage, cpu.limit, direct.usage, direct.limit, b_in.usage, b_in.limit,
                                  b_out.usage, b_out.limit, cpu_w, direct_w, in_w, out_w)
        except (struct.error, TypeError, OverflowError):
            key = None
        if key is not None:
            cached: tuple[bytes, float] | None = self.__dict__.get("_weighted_usage")
            if cached is not None and cached[0] == key:
                return cached[1]
        p_cpu, p_direct, p_in, p_out = _percent_usages(cpu, direct, b_in, b_out)
        m = -math.inf
        v = p_cpu * cpu_w
        if v > m:
            m = v
        v = p_direct * direct_w
        if v > m:
            m = v
        v = p_in * in_w
        if v > m:
            m = v
        v = p_out * out_w
        if v > m:
            m = v
        result = m / 100.0
        if key is not None:
            self.__dict__["_weighted_usage"] = (key, result)
        return result

    def max_resource_usage_with_weight_and_memory(
        self, cpu_w: float, mem_w: float, direct_w: float, in_w: float, out_w: float
    ) -> float:
        """The deprecated 5-argument form, which also weighs heap memory."""
        return (
            _max_from_neg_inf(
                (
                    self.cpu.percent_usage() * cpu_w,
                    self.memory.percent_usage() * mem_w,
                    self.direct_memory.percent_usage() * direct_w,
                    self.bandwidth_in.percent_usage() * in_w,
                    self.bandwidth_out.percent_usage() * out_w,
                )
            )
            / 100.0
        )

    def max_resource_usage_with_weight_within_limit(
        self, cpu_w: float, mem_w: float, direct_w: float, in_w: float, out_w: float
    ) -> float:
        """Reverted ThresholdShedder variant (#16937): weighted values > 100 % ignored, max from 0."""
        result = 0.0
        for v in (
            self.cpu.percent_usage() * cpu_w,
            self.memory.percent_usage() * mem_w,
            self.direct_memory.percent_usage() * direct_w,
            self.bandwidth_in.percent_usage() * in_w,
            self.bandwidth_out.percent_usage() * out_w,
        ):
            if v > result and v <= 100.0:
                result = v
        return result / 100.0

    def weighted_max_usage(self, conf: ServiceConfig) -> float:
        """`max_resource_usage_with_weight` with the conf's 4 effective weights (cpu, direct, in, out)."""
        return self.max_resource_usage_with_weight(*conf.resource_weights)

    def update_from_stats(self, bundle_stats: Mapping[str, NamespaceBundleStats]) -> None:
        """Java `update(SystemResourceUsage, Map)` minus the resources (set those fields directly).

        Sums rates/throughputs, counts topics/bundles/consumers/producers, records the bundles gained
        and lost since the last call (accumulating until `clean_deltas`), and keeps the stats as
        `last_stats` (a copy, in the given order).
        """
        bundles = self.bundles
        lost = bundles.difference(bundle_stats)
        if lost:  # in name order, as Java walks the sorted set
            for bundle in sorted(lost):
                self.last_bundle_losses.add(bundle)
                bundles.discard(bundle)
        if len(bundles) != len(bundle_stats):  # what is left is a subset: some are new, in map order
            for bundle in bundle_stats:
                if bundle not in bundles:
                    self.last_bundle_gains.add(bundle)
                    bundles.add(bundle)
        t = sum_bundle_stats(bundle_stats)   # each field summed in map order, as Java's loop
        self.msg_rate_in = t.msg_rate_in
        self.msg_rate_out = t.msg_rate_out
        self.msg_throughput_in = t.msg_throughput_in
        self.msg_throughput_out = t.msg_throughput_out
        self.num_topics = t.topics
        self.num_bundles = len(bundle_stats)
        self.num_consumers = t.consumer_count
        self.num_producers = t.producer_count
        self.last_stats = dict(bundle_stats)

    def clean_deltas(self) -> None:
        """Forget gains and losses; the broker calls this after each written report."""
        self.last_bundle_gains.clear()
        self.last_bundle_losses.clear()


# --- Time-averaged data ----------------------------------------------------------------------------


class TimeAverageMessageData(msgspec.Struct, rename="camel"):
    """A running mean of bundle traffic that becomes an EMA (weight 1/max_samples) once full (§1.5)."""

    max_samples: int = 0
    num_samples: int = 0
    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0
    msg_throughput_in: float = 0.0
    msg_throughput_out: float = 0.0

    def update(self, stats: NamespaceBundleStats) -> None:
        """Add one sample, in place."""
        self.update_values(
            stats.msg_rate_in, stats.msg_rate_out, stats.msg_throughput_in, stats.msg_throughput_out
        )

    def update_values(self, rate_in: float, rate_out: float, thr_in: float, thr_out: float) -> None:
        """Add one sample given as numbers; each field is averaged independently.

        The leader runs this for every bundle on every load report, so the usual case (n >= 1, a
        plain double division, the same value Java computes) skips `java_div`; only a window of
        0 samples needs Java's x/0 rules."""
        n = self.num_samples + 1
        if n > self.max_samples:
            n = self.max_samples
        self.num_samples = n
        if n > 0:
            m = n - 1
            self.msg_throughput_in = (m * self.msg_throughput_in + thr_in) / n
            self.msg_throughput_out = (m * self.msg_throughput_out + thr_out) / n
            self.msg_rate_in = (m * self.msg_rate_in + rate_in) / n
            self.msg_rate_out = (m * self.msg_rate_out + rate_out) / n
            return
        self.msg_throughput_in = java_div((n - 1) * self.msg_throughput_in + thr_in, n)
        self.msg_throughput_out = java_div((n - 1) * self.msg_throughput_out + thr_out, n)
        self.msg_rate_in = java_div((n - 1) * self.msg_rate_in + rate_in, n)
        self.msg_rate_out = java_div((n - 1) * self.msg_rate_out + rate_out, n)

    def total_msg_rate(self) -> float:
        return self.msg_rate_in + self.msg_rate_out

    def total_msg_throughput(self) -> float:
        return self.msg_throughput_in + self.msg_throughput_out


class BundleData(msgspec.Struct, rename="camel"):
    """A bundle's short-term (10 samples) and long-term (1000 samples) traffic, and its topic count."""

    short_term_data: TimeAverageMessageData
    long_term_data: TimeAverageMessageData
    topics: int = 0

    @classmethod
    def from_stats(
        cls, num_short_samples: int, num_long_samples: int, default_stats: NamespaceBundleStats
    ) -> BundleData:
        """Java `new BundleData(short, long, defaultStats)`: both windows seeded, no samples counted."""
        ri, ro = default_stats.msg_rate_in, default_stats.msg_rate_out
        ti, to = default_stats.msg_throughput_in, default_stats.msg_throughput_out
        return cls(TimeAverageMessageData(num_short_samples, 0, ri, ro, ti, to),
                   TimeAverageMessageData(num_long_samples, 0, ri, ro, ti, to))

    @classmethod
    def default(cls) -> BundleData:
        """A never-seen bundle: 50 msg/s and 50000 B/s each way in both windows, 0 samples.

        Because `num_samples` is 0, the first `update` overwrites these values completely.
        (Written out: the leader makes one for every bundle it has not seen, 65,000 after a restart.)
        """
        rate, thr = DEFAULT_MESSAGE_RATE, DEFAULT_MESSAGE_THROUGHPUT
        return cls(TimeAverageMessageData(NUM_SHORT_SAMPLES, 0, rate, rate, thr, thr),
                   TimeAverageMessageData(NUM_LONG_SAMPLES, 0, rate, rate, thr, thr))

    def update(self, stats: NamespaceBundleStats) -> None:
        """One sample into both windows; `topics` follows the latest sample."""
        ri, ro = stats.msg_rate_in, stats.msg_rate_out
        ti, to = stats.msg_throughput_in, stats.msg_throughput_out
        self.short_term_data.update_values(ri, ro, ti, to)
        self.long_term_data.update_values(ri, ro, ti, to)
        self.topics = stats.topics


class TimeAverageBrokerData(msgspec.Struct, rename="camel"):
    """Per broker: sums of its bundles' short/long-term data, recomputed by the leader (§1.7)."""

    short_term_msg_rate_in: float = 0.0
    short_term_msg_rate_out: float = 0.0
    short_term_msg_throughput_in: float = 0.0
    short_term_msg_throughput_out: float = 0.0
    long_term_msg_rate_in: float = 0.0
    long_term_msg_rate_out: float = 0.0
    long_term_msg_throughput_in: float = 0.0
    long_term_msg_throughput_out: float = 0.0

    def reset(
        self,
        bundles: Iterable[str],
        bundle_data: Mapping[str, BundleData],
        default_stats: NamespaceBundleStats,
    ) -> None:
        """Recompute the sums over `bundles`; a bundle without BundleData counts as `default_stats` in
        both windows (the same four fields, so one loop body adds either)."""
        s_ri = s_ro = s_ti = s_to = l_ri = l_ro = l_ti = l_to = 0.0
        short: TimeAverageMessageData | NamespaceBundleStats
        long: TimeAverageMessageData | NamespaceBundleStats
        for bundle in bundles:
            data = bundle_data.get(bundle)
            if data is None:
                short = long = default_stats
            else:
                short, long = data.short_term_data, data.long_term_data
            s_ri += short.msg_rate_in
            s_ro += short.msg_rate_out
            s_ti += short.msg_throughput_in
            s_to += short.msg_throughput_out
            l_ri += long.msg_rate_in
            l_ro += long.msg_rate_out
            l_ti += long.msg_throughput_in
            l_to += long.msg_throughput_out
        self.short_term_msg_rate_in = s_ri
        self.short_term_msg_rate_out = s_ro
        self.short_term_msg_throughput_in = s_ti
        self.short_term_msg_throughput_out = s_to
        self.long_term_msg_rate_in = l_ri
        self.long_term_msg_rate_out = l_ro
        self.long_term_msg_throughput_in = l_ti
        self.long_term_msg_throughput_out = l_to


# --- The leader's view -----------------------------------------------------------------------------


class BrokerData(msgspec.Struct, rename="camel", dict=True):
    """The leader's record of one broker (kept in memory, not in the store).

    It owns `preallocated_bundle_data` and keeps the two sums placement reads of it on every
    assignment (LeastLongTermMessageRate's long-term msg rate, the max-topics filter's topics): in a
    restart storm a broker holds hundreds of preallocations between two of its reports, and every
    candidate is scored on every assignment. The sums are made as the strategy's loop makes them (0.0,
    then `+= rate_in + rate_out` per bundle in map order), so `preallocate` adds one term and gives the
    same float. They are kept for one dict object at one length (a dict replaced, or grown or shrunk
    behind `preallocate` / `release_preallocation` / `clear_preallocations`, is added up again); whoever
    changes a held BundleData in place calls `preallocated_data_changed()` (the load manager does after
    every update of its bundle windows). A BrokerData built by hand works as a plain Struct.
    """

    local_data: LocalBrokerData
    time_average_data: TimeAverageBrokerData = msgspec.field(default_factory=TimeAverageBrokerData)
    preallocated_bundle_data: dict[str, BundleData] = {}

    def preallocate(self, bundle: str, data: BundleData) -> None:
        """`preallocated_bundle_data[bundle] = data`, the sums following."""
        held = self.preallocated_bundle_data
        sums = self._valid_sums()
        if sums is not None and bundle not in held:
            long_term = data.long_term_data
            sums.rate += long_term.msg_rate_in + long_term.msg_rate_out
            sums.topics += data.topics
            sums.count += 1
        else:
            self.preallocated_data_changed()  # a replaced value keeps its place: add up again
        held[bundle] = data

    def release_preallocation(self, bundle: str) -> None:
        """Forget one preallocated bundle (absent: nothing happens)."""
        if self.preallocated_bundle_data.pop(bundle, None) is not None:
            self.preallocated_data_changed()

    def clear_preallocations(self) -> None:
        held = self.preallocated_bundle_data
        if not held:   # the leader clears every broker's after each report: most hold none
            sums = self.__dict__.get("_preallocated_sums")
            if sums is not None and sums.held is held and sums.count == 0:
                return
        held.clear()
        self.__dict__["_preallocated_sums"] = _PreallocatedSums(held, 0, 0.0, 0)

    def preallocated_data_changed(self) -> None:
        """A held BundleData changed in place: the next read adds the sums up again."""
        self.__dict__.pop("_preallocated_sums", None)

    def preallocated_long_term_msg_rate(self) -> float:
        """Sum over the preallocated bundles, in map order, of long-term msg rate in + out."""
        return self._sums().rate

    def preallocated_topics(self) -> int:
        """Sum of the preallocated bundles' topic counts."""
        return self._sums().topics

    def _valid_sums(self) -> _PreallocatedSums | None:
        sums: _PreallocatedSums | None = self.__dict__.get("_preallocated_sums")
        held = self.preallocated_bundle_data
        if sums is not None and sums.held is held and sums.count == len(held):
            return sums
        return None

    def _sums(self) -> _PreallocatedSums:
        sums = self._valid_sums()
        if sums is None:
            held = self.preallocated_bundle_data
            rate = 0.0
            topics = 0
            for data in held.values():
                long_term = data.long_term_data
                rate += long_term.msg_rate_in + long_term.msg_rate_out
                topics += data.topics
            sums = self.__dict__["_preallocated_sums"] = _PreallocatedSums(held, len(held), rate, topics)
        return sums


class _PreallocatedSums:
    """BrokerData's running sums over `held` (its preallocated_bundle_data), valid while that dict has
    `count` entries."""

    __slots__ = ("held", "count", "rate", "topics")

    def __init__(self, held: dict[str, BundleData], count: int, rate: float, topics: int) -> None:
        self.held, self.count, self.rate, self.topics = held, count, rate, topics


class SheddingView(dict[str, BundleData]):
    """`LoadData.bundle_data_for_load_shedding()`: a plain {bundle: BundleData} dict in the leader's
    map order, which also knows each bundle's position in that order.

    A shedder looks for the bundles of each overloaded broker in the order of this map (Java's
    stream encounter order breaks ties); with the positions it sorts the broker's own bundles
    instead of scanning every bundle of the cluster once per broker."""

    __slots__ = ("_positions",)

    def positions(self) -> dict[str, int]:
        """bundle -> index in iteration order; built on first use (the view must not change
        afterwards, as it does not during one shedding decision)."""
        try:
            return self._positions
        except AttributeError:
            self._positions: dict[str, int] = dict(zip(self, range(len(self))))
            return self._positions


class LoadData(msgspec.Struct, rename="camel"):
    """Everything the placement and shedding strategies read (§1.8)."""

    broker_data: dict[str, BrokerData] = {}
    bundle_data: dict[str, BundleData] = {}
    recently_unloaded_bundles: dict[str, int] = {}

    def bundle_data_for_load_shedding(self) -> SheddingView:
        """`bundle_data` without bundles of system service namespaces (heartbeat, SLA monitor, ...).

        Each namespace is matched once per call (a cluster has tens of thousands of bundles in a
        few namespaces, and the match is three regular expressions)."""
        out = SheddingView(self.bundle_data)  # a C-level copy, in map order
        # only names under `pulsar/` or `sla-monitor/` can be system namespaces: find those first
        maybe = [b for b in out if b.startswith(_SYSTEM_PREFIXES)]
        system: dict[str, bool] = {}
        for bundle in maybe:
            ns = namespace_of(bundle)
            skip = system.get(ns)
            if skip is None:
                skip = system[ns] = is_system_service_namespace(ns)
            if skip:
                del out[bundle]
        return out


# --- Names -----------------------------------------------------------------------------------------

_SYSTEM_NAMESPACE = "pulsar/system"
_SYSTEM_PREFIXES = ("pulsar/", "sla-monitor/")  # every name below can only start so
_SYSTEM_SERVICE_PATTERNS = (
    re.compile(r"pulsar/[^/]+/([^:]+:\d+)"),  # heartbeat v1: pulsar/<cluster>/<host:port>
    re.compile(r"pulsar/([^:]+:\d+)"),  # heartbeat v2: pulsar/<host:port>
    re.compile(r"sla-monitor/[^/]+/([^:]+:\d+)"),  # SLA monitor
)


def namespace_of(bundle: str) -> str:
    """`tenant/ns/0x00000000_0x40000000` → `tenant/ns` (everything before the last `/`)."""
    i = bundle.rfind("/")
    return bundle[:i] if i >= 0 else bundle


def range_of(bundle: str) -> str:
    """`tenant/ns/0x00000000_0x40000000` → `0x00000000_0x40000000` (everything after the last `/`)."""
    return bundle[bundle.rfind("/") + 1 :]


def is_system_service_namespace(namespace: str) -> bool:
    """NamespaceService.isSystemServiceNamespace: `pulsar/system` or a heartbeat/SLA namespace."""
    return namespace == _SYSTEM_NAMESPACE or any(
        p.fullmatch(namespace) for p in _SYSTEM_SERVICE_PATTERNS
    )


# --- Report cadence (§2.1) ---------------------------------------------------------------------------


def percent_change(old: float, new: float) -> float:
    """MLMI `percentChange`: 0 if both are 0, +∞ if only `old` is 0, else 100·|old − new| / old."""
    if old == 0:
        return 0.0 if new == 0 else math.inf
    return 100.0 * abs((old - new) / old)


def need_broker_data_update(
    last: LocalBrokerData, current: LocalBrokerData, conf: ServiceConfig, now_ms: int
) -> bool:
    """MLMI `needBrokerDataUpdate`: write a report if the last one is too old or load moved enough.

    `last` is the data last written; `current` the fresh data, whose `last_update` is the time of the
    last write. The change threshold is strict (exactly 10 % does not trigger).
    """
    max_interval_ms = conf.load_balancer_report_update_max_interval_minutes * 60_000
    if now_ms - current.last_update > max_interval_ms:
        return True
    weights = conf.resource_weights
    max_change = _java_max(
        100.0
        * abs(
            last.max_resource_usage_with_weight(*weights)
            - current.max_resource_usage_with_weight(*weights)
        ),
        _traffic_change(last, current),
    )
    return max_change > conf.load_balancer_report_update_threshold_percentage


def _traffic_change(last: LocalBrokerData, current: LocalBrokerData) -> float:
    """needBrokerDataUpdate's percent changes of message rate, throughput and bundle count, maxed in
    its order."""
    return _java_max(
        percent_change(last.msg_rate_in + last.msg_rate_out, current.msg_rate_in + current.msg_rate_out),
        _java_max(
            percent_change(
                last.msg_throughput_in + last.msg_throughput_out,
                current.msg_throughput_in + current.msg_throughput_out,
            ),
            percent_change(last.num_bundles, current.num_bundles),
        ),
    )


class BrokerDataUpdateCheck:
    """`need_broker_data_update` for one broker's report ticks, with the parts that stay the same
    between ticks computed once.

    Between two ticks of a broker only its heap and direct memory and the time change: CPU and
    bandwidth come from the last host sample, the rates and bundle count from the last stats update,
    `last` from the last write. So the weighted usage of `last`, the rate, throughput and bundle
    changes and the CPU and bandwidth terms of the current weighted usage are kept while those
    numbers (and the weights) are the same, and a tick computes the direct-memory term, the max and
    the comparison: the same operations in the same order on the same values, so the same answer
    as `need_broker_data_update` (a test compares them on random data). With a direct-memory
    weight of 0 (Pulsar's default) and a usage within its limit, that term is a zero whatever the
    memory: its float32 percent is not computed."""

    __slots__ = ("_last", "_key", "_last_usage", "_others", "_rates")

    def __init__(self) -> None:
        self._last: LocalBrokerData | None = None
        self._key: tuple[float, ...] = ()
        self._last_usage = 0.0
        self._others = (0.0, 0.0, 0.0)
        self._rates = 0.0

    def __call__(self, last: LocalBrokerData, current: LocalBrokerData, conf: ServiceConfig,
                 now_ms: int) -> bool:
        max_interval_ms = conf.load_balancer_report_update_max_interval_minutes * 60_000
        if now_ms - current.last_update > max_interval_ms:
            return True
        cpu_w, direct_w, in_w, out_w = weights = conf.resource_weights
        cpu, b_in, b_out = current.cpu, current.bandwidth_in, current.bandwidth_out
        key = (cpu.usage, cpu.limit, b_in.usage, b_in.limit, b_out.usage, b_out.limit, cpu_w, direct_w,
               in_w, out_w, current.msg_rate_in, current.msg_rate_out, current.msg_throughput_in,
               current.msg_throughput_out, current.num_bundles)
        if last is not self._last or key != self._key:   # NaN never equals: computed afresh
            self._last = last
            self._key = key
            self._last_usage = last.max_resource_usage_with_weight(*weights)
            self._others = (cpu.percent_usage() * cpu_w, b_in.percent_usage() * in_w,
                            b_out.percent_usage() * out_w)
            self._rates = _traffic_change(last, current)
        # max_resource_usage_with_weight's max, in its order (cpu, direct, in, out)
        v_cpu, v_in, v_out = self._others
        m = -math.inf
        if v_cpu > m:
            m = v_cpu
        direct = current.direct_memory
        if direct_w == 0.0 and 0.0 < direct.usage <= direct.limit < 1e38:
            v = 0.0 * direct_w   # its percent is in (0, 100]: times a zero weight, this very zero
        else:
            v = direct.percent_usage() * direct_w
        if v > m:
            m = v
        if v_in > m:
            m = v_in
        if v_out > m:
            m = v_out
        max_change = _java_max(100.0 * abs(self._last_usage - m / 100.0), self._rates)
        return max_change > conf.load_balancer_report_update_threshold_percentage


# --- JSON ------------------------------------------------------------------------------------------

_ENCODER = msgspec.json.Encoder(order="deterministic")


def encode_json(obj: object) -> bytes:
    """Pulsar-shaped JSON with sets and map keys sorted, so equal data gives equal bytes."""
    return _ENCODER.encode(obj)
