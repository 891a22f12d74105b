"""The load data the Extensible load manager writes to its system topics, and a broker's lookup data.

`BrokerLoadData` (topic `loadbalancer-broker-load-data`, key = broker id) follows apache/pulsar
`extensions/data/BrokerLoadData.java` as BrokerLoadDataTest @04fc474f exercises it (read in the fork
lifepuzzlefun/pulsar@2034085, the version with `topics` and `msgThroughputEMA`; the older
apache/pulsar@de4f6200 lacks both). `TopBundlesLoadData` (topic `loadbalancer-top-bundles-load-data`)
follows `TopBundlesLoadData.java` @cc11ad48, `BrokerLookupData` (the registry's
`/loadbalance/brokers/<id>` value) `BrokerLookupData.java` as BrokerIsolationPoliciesFilterTest
@18a11cbc builds it.

The JSON is Jackson's, from the getters: `weightedMaxEMA`, `msgThroughputEMA`, `bundleCount`,
`updatedAt`, `reportedAt`, ... (spec pulsar-metrics.md §C.3 shows a sample), `ResourceUsage` as
`{"usage", "limit"}` and NamespaceBundleStats with its public field names.

Arithmetic is Java's: each `percentUsage()` is single precision (emulator.model.loaddata.ResourceUsage),
the max starts at −∞ with a strict `>` (`LocalBrokerData.max`), and the EMA takes the first sample as
is, where "first" means `updatedAt == 0` (so an update at time 0 leaves the next one "first" too).
"""

from __future__ import annotations

import math

import msgspec

from emulator.model.config import ServiceConfig
from emulator.model.loaddata import NamespaceBundleStats, ResourceUsage

__all__ = [
    "DEFAULT_RESOURCE_USAGE",
    "BrokerLoadData",
    "BrokerLookupData",
    "BundleLoadData",
    "TopBundlesLoadData",
]

DEFAULT_RESOURCE_USAGE = 1.0
"""A broker without a report looks fully loaded (`maxResourceUsage` and `weightedMaxEMA` start at 1.0)."""


def _java_max(*values: float) -> float:
    """`LocalBrokerData.max(double...)`: starts at −∞, strict `>` (a NaN never wins)."""
    result = -math.inf
    for v in values:
        if v > result:
            result = v
    return result


class BrokerLoadData(msgspec.Struct, kw_only=True, rename="camel"):
    """One broker's load as its BrokerLoadDataReporter publishes it; `update` computes the features.

    Mutable, updated in place, as the reporter's single instance is in Pulsar: publish a copy
    (`msgspec.structs.replace(data)`), never the instance the next `update` changes.
    """

    cpu: ResourceUsage = msgspec.field(default_factory=ResourceUsage)
    memory: ResourceUsage = msgspec.field(default_factory=ResourceUsage)
    direct_memory: ResourceUsage = msgspec.field(default_factory=ResourceUsage)
    bandwidth_in: ResourceUsage = msgspec.field(default_factory=ResourceUsage)
    bandwidth_out: ResourceUsage = msgspec.field(default_factory=ResourceUsage)
    msg_throughput_in: float = 0.0
    msg_throughput_out: float = 0.0
    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0
    bundle_count: int = 0
    topics: int = 0
    max_resource_usage: float = DEFAULT_RESOURCE_USAGE
    weighted_max_ema: float = msgspec.field(default=DEFAULT_RESOURCE_USAGE, name="weightedMaxEMA")
    msg_throughput_ema: float = msgspec.field(default=0.0, name="msgThroughputEMA")
    updated_at: int = 0
    reported_at: int = 0

    def update(
        self,
        *,
        cpu: ResourceUsage,
        memory: ResourceUsage,
        direct_memory: ResourceUsage,
        bandwidth_in: ResourceUsage,
        bandwidth_out: ResourceUsage,
        msg_throughput_in: float,
        msg_throughput_out: float,
        msg_rate_in: float,
        msg_rate_out: float,
        bundle_count: int,
        topics: int,
        conf: ServiceConfig,
        now_ms: int,
    ) -> None:
        """`update(SystemResourceUsage, msgThroughputIn, msgThroughputOut, msgRateIn, msgRateOut,
        bundleCount, topics, conf)`: new usages and rates, then the max usage and the two EMAs."""
        self.cpu, self.memory, self.direct_memory = cpu, memory, direct_memory
        self.bandwidth_in, self.bandwidth_out = bandwidth_in, bandwidth_out
        self.msg_throughput_in = msg_throughput_in
        self.msg_throughput_out = msg_throughput_out
        self.msg_rate_in = msg_rate_in
        self.msg_rate_out = msg_rate_out
        self.bundle_count = bundle_count
        self.topics = topics
        self._update_features(conf)
        self.updated_at = now_ms

    def update_from(self, other: BrokerLoadData) -> None:
        """`update(BrokerLoadData other)`: copy every field but nothing is recomputed."""
        for field in self.__struct_fields__:
            setattr(self, field, getattr(other, field))

    def clear(self) -> None:
        """`clear()`: back to a never-reported broker."""
        self.update_from(BrokerLoadData())

    def _update_features(self, conf: ServiceConfig) -> None:
        history = conf.load_balancer_history_resource_percentage
        self.max_resource_usage = _java_max(
            self.cpu.percent_usage(), self.direct_memory.percent_usage(),
            self.bandwidth_in.percent_usage(), self.bandwidth_out.percent_usage(),
        ) / 100  # memory is left out on purpose (PIP-358)
        weighted = self.weighted_max_usage(conf)
        first = self.updated_at == 0
        self.weighted_max_ema = (
            weighted if first else self.weighted_max_ema * history + (1 - history) * weighted
        )
        throughput = self.msg_throughput_in + self.msg_throughput_out
        self.msg_throughput_ema = (
            throughput if first else self.msg_throughput_ema * history + (1 - history) * throughput
        )

    def weighted_max_usage(self, conf: ServiceConfig) -> float:
        """`getMaxResourceUsageWithWeight` with the five configured weights, a fraction.

        Pulsar reads the bandwidth weights through the deprecated `getLoadBalancerBandwith*` getters,
        which fall back between the two spellings as `ServiceConfig.resource_weights` does.
        """
        cpu_w, direct_w, in_w, out_w = conf.resource_weights
        return _java_max(
            self.cpu.percent_usage() * cpu_w,
            self.memory.percent_usage() * conf.load_balancer_memory_resource_weight,
            self.direct_memory.percent_usage() * direct_w,
            self.bandwidth_in.percent_usage() * in_w,
            self.bandwidth_out.percent_usage() * out_w,
        ) / 100


class BundleLoadData(msgspec.Struct, kw_only=True, rename="camel"):
    """`record BundleLoadData(String bundleName, NamespaceBundleStats stats)`."""

    bundle_name: str
    stats: NamespaceBundleStats


class TopBundlesLoadData(msgspec.Struct, kw_only=True, rename="camel"):
    """`{"topBundlesLoadData": [{"bundleName": ..., "stats": {...}}, ...]}`, in TopKBundles' order:
    the k most loaded bundles, **least loaded first** (see `top_bundles.top_k_bundles`)."""

    top_bundles_load_data: list[BundleLoadData] = msgspec.field(default_factory=list)


class BrokerLookupData(msgspec.Struct, kw_only=True, rename="camel"):
    """What a broker registers under `/loadbalance/brokers/<broker id>` (BrokerRegistryImpl).

    The filters read `load_manager_class_name` (BrokerLoadManagerClassFilter), `broker_version`
    (BrokerVersionFilter) and the two topic flags (the isolation filter's topic-loading predicate).
    """

    broker_id: str = ""
    web_service_url: str = ""
    web_service_url_tls: str = ""
    pulsar_service_url: str = ""
    pulsar_service_url_tls: str = ""
    advertised_listeners: dict[str, dict[str, str]] = msgspec.field(default_factory=dict)
    protocols: dict[str, str] = msgspec.field(default_factory=dict)
    persistent_topics_enabled: bool = True
    non_persistent_topics_enabled: bool = True
    load_manager_class_name: str | None = None
    start_timestamp: int = 0
    broker_version: str | None = None
    properties: dict[str, str] = msgspec.field(default_factory=dict)
