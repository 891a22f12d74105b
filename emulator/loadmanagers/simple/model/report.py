"""SimpleLoadManagerImpl's load report: what each broker writes to `/loadbalance/brokers/<broker>`.

Follows pulsar-common `policies/data/loadbalancer/LoadReport.java` and `SystemResourceUsage.java` as
Jackson writes them (`ObjectMapperFactory`: getters, `NON_NULL`). Field order and names are those of
the report Pulsar 3.1 writes (the "Simple" tab of the load-balance docs, `get /loadbalance/brokers/
broker-1:8080`): Jackson names `isUnderLoaded()` `underLoaded`, writes the getter-only values
(`loadReportType`, `msgThroughputIn/Out` (sic: = msgRateIn/Out), the five resources again at the top
level, `lastUpdate` = timestamp) after the fields, and omits null URLs (`UNSET` here).

The counts and rates that Java's getters compute from `bundleStats` at every write are plain fields
here; `with_derived()` recomputes them and `encode_load_report` always writes the recomputed ones, so
the JSON agrees with `bundleStats` as Pulsar's does.
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType

from emulator.model.loaddata import NamespaceBundleStats, ResourceUsage
from emulator.model.bundle_order import ResourceType

__all__ = [
    "LOAD_REPORT_TYPE",
    "SIMPLE_LOAD_MANAGER_CLASS",
    "LOADBALANCE_BROKERS_ROOT",
    "SystemResourceUsage",
    "LoadReport",
    "broker_report_path",
    "encode_load_report",
    "decode_load_report",
    "is_above_load_level",
    "is_below_load_level",
    "bottleneck_resource_type",
]

LOAD_REPORT_TYPE = "LoadReport"  # LoadReport.loadReportType: how readers tell it from LocalBrokerData
SIMPLE_LOAD_MANAGER_CLASS = "org.apache.pulsar.broker.loadbalance.impl.SimpleLoadManagerImpl"
LOADBALANCE_BROKERS_ROOT = "/loadbalance/brokers"


def _unknown() -> ResourceUsage:
    """`new ResourceUsage(-1, -1)`: what `SystemResourceUsage()` starts every resource at."""
    return ResourceUsage(usage=-1.0, limit=-1.0)


class SystemResourceUsage(msgspec.Struct, rename="camel", kw_only=True):
    """Host usage in the report; units as LinuxBrokerHostUsageImpl: CPU in % of one core x cores,
    memory and direct memory in MB, bandwidth in Kbit/s."""

    bandwidth_in: ResourceUsage = msgspec.field(default_factory=_unknown)
    bandwidth_out: ResourceUsage = msgspec.field(default_factory=_unknown)
    cpu: ResourceUsage = msgspec.field(default_factory=_unknown)
    memory: ResourceUsage = msgspec.field(default_factory=_unknown)
    direct_memory: ResourceUsage = msgspec.field(default_factory=_unknown)


class LoadReport(msgspec.Struct, rename="camel", kw_only=True):
    """`LoadReport` with Jackson's property names, in the order Pulsar writes them."""

    name: str | None | UnsetType = UNSET
    broker_version_string: str | None | UnsetType = UNSET
    web_service_url: str | None | UnsetType = UNSET
    web_service_url_tls: str | None | UnsetType = UNSET
    pulsar_service_url: str | None | UnsetType = UNSET
    pulsar_service_url_tls: str | None | UnsetType = UNSET
    persistent_topics_enabled: bool = True
    non_persistent_topics_enabled: bool = True
    timestamp: int = 0
    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0
    num_topics: int = 0
    num_consumers: int = 0
    num_producers: int = 0
    num_bundles: int = 0
    protocols: dict[str, str] = {}
    load_manager_class_name: str | None | UnsetType = SIMPLE_LOAD_MANAGER_CLASS
    start_timestamp: int = 0
    system_resource_usage: SystemResourceUsage = msgspec.field(default_factory=SystemResourceUsage)
    bundle_stats: dict[str, NamespaceBundleStats] = {}
    bundle_gains: set[str] = set()
    bundle_losses: set[str] = set()
    allocated_cpu: float = msgspec.field(default=0.0, name="allocatedCPU")
    allocated_memory: float = 0.0
    allocated_bandwidth_in: float = 0.0
    allocated_bandwidth_out: float = 0.0
    allocated_msg_rate_in: float = 0.0
    allocated_msg_rate_out: float = 0.0
    pre_allocated_cpu: float = msgspec.field(default=0.0, name="preAllocatedCPU")
    pre_allocated_memory: float = 0.0
    pre_allocated_bandwidth_in: float = 0.0
    pre_allocated_bandwidth_out: float = 0.0
    pre_allocated_msg_rate_in: float = 0.0
    pre_allocated_msg_rate_out: float = 0.0
    under_loaded: bool = False
    over_loaded: bool = False
    load_report_type: str = LOAD_REPORT_TYPE
    msg_throughput_in: float = 0.0
    msg_throughput_out: float = 0.0
    bandwidth_in: ResourceUsage | None | UnsetType = UNSET
    bandwidth_out: ResourceUsage | None | UnsetType = UNSET
    memory: ResourceUsage | None | UnsetType = UNSET
    cpu: ResourceUsage | None | UnsetType = UNSET
    direct_memory: ResourceUsage | None | UnsetType = UNSET
    last_update: int = 0

    def bundles(self) -> set[str]:
        """`getBundles()`: the names of the bundles in `bundleStats` (a new set)."""
        return set(self.bundle_stats)

    def with_derived(self) -> LoadReport:
        """A copy whose getter-computed values are recomputed as Java's getters do at each write:
        sums over `bundleStats` (in its order), the five resources from `systemResourceUsage`,
        `msgThroughputIn/Out` = the msg rates (Java returns the `msgRateIn/Out` fields there) and
        `lastUpdate` = `timestamp`."""
        rate_in = rate_out = 0.0
        topics = consumers = producers = 0
        for stats in self.bundle_stats.values():
            rate_in += stats.msg_rate_in
            rate_out += stats.msg_rate_out
            topics += stats.topics
            consumers += stats.consumer_count
            producers += stats.producer_count
        sru = self.system_resource_usage
        return msgspec.structs.replace(
            self,
            msg_rate_in=rate_in,
            msg_rate_out=rate_out,
            num_topics=topics,
            num_consumers=consumers,
            num_producers=producers,
            num_bundles=len(self.bundle_stats),
            load_report_type=LOAD_REPORT_TYPE,
            msg_throughput_in=rate_in,
            msg_throughput_out=rate_out,
            bandwidth_in=sru.bandwidth_in,
            bandwidth_out=sru.bandwidth_out,
            memory=sru.memory,
            cpu=sru.cpu,
            direct_memory=sru.direct_memory,
            last_update=self.timestamp,
        )


def broker_report_path(broker: str) -> str:
    """Where a broker's report lives: `/loadbalance/brokers/<host:port>`."""
    return f"{LOADBALANCE_BROKERS_ROOT}/{broker}"


_ENCODER = msgspec.json.Encoder(order="deterministic")


def encode_load_report(report: LoadReport) -> bytes:
    """Pulsar-shaped JSON (derived values recomputed; sets and map keys sorted, so equal reports
    give equal bytes)."""
    return _ENCODER.encode(report.with_derived())


def decode_load_report(data: bytes | str) -> LoadReport:
    """Read a report as Pulsar stores it (unknown properties ignored, as Pulsar's mapper does)."""
    return msgspec.json.decode(data, type=LoadReport)


def _usages(usage: SystemResourceUsage) -> tuple[float, float, float, float]:
    return (usage.bandwidth_out.percent_usage(), usage.bandwidth_in.percent_usage(),
            usage.cpu.percent_usage(), usage.direct_memory.percent_usage())


def is_above_load_level(usage: SystemResourceUsage, threshold_percentage: float) -> bool:
    """`SimpleLoadManagerImpl.isAboveLoadLevel`: bandwidth out, bandwidth in, CPU or direct memory
    (not heap memory) strictly above the threshold, each in float32 `percentUsage()`."""
    return any(p > threshold_percentage for p in _usages(usage))


def is_below_load_level(usage: SystemResourceUsage, threshold_percentage: float) -> bool:
    """`SimpleLoadManagerImpl.isBelowLoadLevel`: all four strictly below the threshold."""
    return all(p < threshold_percentage for p in _usages(usage))


def bottleneck_resource_type(usage: SystemResourceUsage) -> ResourceType:
    """`LoadReport.getBottleneckResourceType`: CPU, then memory (heap, here), bandwidth in and
    bandwidth out, the first with the strictly highest `percentUsage()` (direct memory is not
    considered)."""
    kind, best = ResourceType.CPU, usage.cpu.percent_usage()
    for candidate, resource in ((ResourceType.MEMORY, usage.memory),
                                (ResourceType.BANDWIDTH_IN, usage.bandwidth_in),
                                (ResourceType.BANDWIDTH_OUT, usage.bandwidth_out)):
        p = resource.percent_usage()
        if p > best:
            kind, best = candidate, p
    return kind

