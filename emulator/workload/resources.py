"""The broker resource model: what a broker's host reports for the traffic it serves.

Pulsar's `LinuxBrokerHostUsageImpl` reports, and the load manager compares (pulsar-algorithms.md §1.2):

* CPU in *percent-cores*: usage = busy cores × 100, limit = 100 × cores;
* memory = JVM heap used / max heap, in MB;
* direct memory = direct buffers used / `-XX:MaxDirectMemorySize`, in MB;
* bandwidth in / out = NIC traffic in kbit/s (bytes × 8 / 1024), limit = NIC speed in kbit/s
  (`gbps × 1024 × 1024`, the formula of `loadBalancerOverrideBrokerNicSpeedGbps`).

Usage comes from the traffic the broker serves (per-message and per-byte costs), a per-broker base load,
bookie replication on the way out (a broker writes every message to `bookie_write_quorum` bookies through
the same NIC), a background load (a foreign process on the host, PIP-364's "[10, 50, 70] stalls
ThresholdShedder" case) and seeded noise. Every constant is named once, in `ResourceModelConstants`, and a
scenario's `[resources]` table overrides any of them.

`compute_usage` is the pure formula; `ResourceModel` keeps per-broker capacities and noise streams.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

import msgspec
import numpy as np

from emulator.cluster.load_source import SystemUsage
from emulator.model.loaddata import NamespaceBundleStats, ResourceUsage, sum_bundle_stats
from emulator.runtime import derive_seed

__all__ = [
    "BrokerCapacity",
    "BrokerTraffic",
    "ResourceModel",
    "ResourceModelConstants",
    "compute_usage",
    "nic_limit_kbps",
]

NonNegative = Annotated[float, msgspec.Meta(ge=0)]
Positive = Annotated[float, msgspec.Meta(gt=0)]

MIB = 1024.0 * 1024.0
US_PER_S = 1_000_000.0
_NOISE_BLOCK = 64
"""Reports' worth of noise drawn at once per broker."""


class ResourceModelConstants(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Every cost of the resource model, in one place (a scenario's `[resources]` overrides any).

    CPU costs are microseconds of CPU per unit: a broker publishing 10,000 msg/s of 1 KiB to one
    consumer spends 10k × (40 + 20) µs + 20k × 4 µs = 0.68 cores on the traffic, so an 8-core broker at
    50 % CPU moves roughly 60k msg/s in and out.

    Calibration status (issue 27, checked against the stored public material, not the live web): the
    six CPU constants below are NOT calibrated on a published measurement. No published figure of
    Pulsar broker CPU against msg/s or MB/s was reachable: Confluent's "Benchmarking Apache Kafka,
    Apache Pulsar, and RabbitMQ" (2020; 3 × i3en.2xlarge, 8 vCPU, 1 KiB messages, batching on) and
    StreamNative's "Apache Pulsar vs. Apache Kafka 2022 Benchmark" report throughput and latency, and
    their stored copies carry no broker CPU figure; the OpenMessaging Benchmark publishes no CPU. The
    one published point with broker CPU and traffic together is the sizing table proposed in
    apache/pulsar PR #13187 (site2/docs/deploy-bare-metal.md, "minimum hardware settings", 250
    topics): 0.2 broker cores for 3 MB/s written at 350 entries/s and 6 MB/s read at 650 entries/s.
    It is a recommendation, not a measurement, and the merged text kept only "CPU: 0.2" for 250
    topics; these constants give 0.34 cores there (0.25 idle + 14 ms + 13 ms + 35 ms + 25 ms per
    second, one message per entry, no sessions counted), i.e. above it, mostly from `cpu_base_cores`.
    The values stay as they were (they are orders of magnitude, not fits) until a measured source is
    found; `tests/workload/test_resources.py` pins them to the arithmetic above so a change is seen.

    Batching: the traffic model has no batch sizes, so the per-message costs stand for per-entry
    costs too. The assumption holds for the built-in scenarios: Pulsar's Java producer batches for
    `batchingMaxPublishDelayMicros` = 1 ms (at most 1,000 messages or 128 KiB; apache/pulsar
    ProducerConfigurationData), so a producer publishing λ msg/s sends entries of about 1 + λ × 1 ms
    messages: 1.01 to 1.35 for the 10 to 350 msg/s per topic of the shipped scenarios. A workload of
    hot producers (thousands of msg/s each) would need a separate per-entry cost.
    """

    cpu_base_cores: NonNegative = 0.25
    """An idle broker: JVM, GC, ZooKeeper session, stats and metrics threads. Uncalibrated; the Pulsar
    docs' minimum broker (0.2 cores for 250 topics with traffic, PR #13187) says it is an upper bound."""
    cpu_us_per_msg_in: NonNegative = 40.0
    """Publish path per message (= per entry, see Batching): decode, managed-ledger add, bookie round
    trip, ack. Uncalibrated."""
    cpu_us_per_msg_out: NonNegative = 20.0
    """Dispatch path per message delivered to one consumer (cache read, flow control, ack handling).
    Uncalibrated."""
    cpu_us_per_kib: NonNegative = 4.0
    """Per KiB moved in or out: buffer copies and checksums (no TLS). Uncalibrated."""
    cpu_us_per_topic: NonNegative = 100.0
    """Per loaded topic and second: stats, timers, inactive-subscription checks. Uncalibrated."""
    cpu_us_per_session: NonNegative = 20.0
    """Per producer or consumer and second: keep-alives, flow permits, stats. Uncalibrated."""
    heap_base_mb: NonNegative = 400.0
    """Heap of an idle broker."""
    heap_mb_per_topic: NonNegative = 0.25
    """Per loaded topic: managed ledger, cursors, stats objects."""
    heap_mb_per_session: NonNegative = 0.02
    """Per producer or consumer."""
    heap_mb_per_mib_s: NonNegative = 4.0
    """Per MiB/s of traffic in + out: in-flight requests, pending acks."""
    direct_base_mb: NonNegative = 64.0
    """Direct memory of an idle broker (Netty pools)."""
    direct_mb_per_mib_s: NonNegative = 24.0
    """Per MiB/s in + out: managed-ledger entry cache and Netty buffers."""
    wire_overhead_bytes_per_msg: NonNegative = 48.0
    """Pulsar protocol framing and metadata per message on the wire."""
    bookie_write_quorum: Annotated[int, msgspec.Meta(ge=0)] = 2
    """Each published byte leaves again to this many bookies (managedLedgerDefaultWriteQuorum = 2)."""
    noise_cpu: NonNegative = 0.03
    """Relative standard deviation of the CPU reading (1 + sd × N(0, 1), at least 0)."""
    noise_memory: NonNegative = 0.02
    """Relative standard deviation of heap and direct-memory readings."""
    noise_bandwidth: NonNegative = 0.01
    """Relative standard deviation of the NIC readings."""
    saturate: bool = True
    """CPU and NIC readings stop at their limit (a host cannot be busier than all its cores or faster
    than its NIC); False lets them exceed 100 %, as a synthetic report could."""


class BrokerCapacity(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One broker's host: cores, NIC speed, heap and direct memory, and any foreign CPU load.

    Defaults follow Pulsar's packaging (`PULSAR_MEM="-Xms2g -Xmx2g -XX:MaxDirectMemorySize=4g"`) on an
    8-core, 10 Gbit/s host."""

    cores: Positive = 8.0
    nic_gbps: Positive = 10.0
    heap_mb: Positive = 2048.0
    direct_mb: Positive = 4096.0
    background_cores: NonNegative = 0.0
    """CPU used by a foreign process on the same host, in cores."""


class BrokerTraffic(msgspec.Struct, frozen=True):
    """What a broker serves, summed over its bundles (msg/s, bytes/s, counts)."""

    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0
    msg_throughput_in: float = 0.0
    msg_throughput_out: float = 0.0
    topics: int = 0
    sessions: int = 0

    @classmethod
    def from_stats(cls, stats: Mapping[str, NamespaceBundleStats]) -> BrokerTraffic:
        t = sum_bundle_stats(stats)
        return cls(t.msg_rate_in, t.msg_rate_out, t.msg_throughput_in, t.msg_throughput_out, t.topics,
                   t.producer_count + t.consumer_count)


def nic_limit_kbps(gbps: float) -> float:
    """A NIC's speed in Pulsar's kbit/s (`overrideBrokerNicSpeedGbps × 1024 × 1024`)."""
    return gbps * 1024.0 * 1024.0


def compute_usage(
    k: ResourceModelConstants,
    capacity: BrokerCapacity,
    traffic: BrokerTraffic,
    noise: tuple[float, float, float] = (1.0, 1.0, 1.0),
    nic_override_gbps: float | None = None,
) -> SystemUsage:
    """The five ResourceUsages of one report. `noise` = (cpu, memory, bandwidth) multipliers."""
    cpu_noise, mem_noise, bw_noise = noise
    moved_mib = (traffic.msg_throughput_in + traffic.msg_throughput_out) / MIB
    cpu_us = (
        traffic.msg_rate_in * k.cpu_us_per_msg_in
        + traffic.msg_rate_out * k.cpu_us_per_msg_out
        + (traffic.msg_throughput_in + traffic.msg_throughput_out) / 1024.0 * k.cpu_us_per_kib
        + traffic.topics * k.cpu_us_per_topic
        + traffic.sessions * k.cpu_us_per_session
    )
    cpu_limit = 100.0 * capacity.cores
    cpu = (k.cpu_base_cores * 100.0 + cpu_us / US_PER_S * 100.0) * cpu_noise
    cpu += capacity.background_cores * 100.0

    heap = (k.heap_base_mb + traffic.topics * k.heap_mb_per_topic
            + traffic.sessions * k.heap_mb_per_session + moved_mib * k.heap_mb_per_mib_s) * mem_noise
    direct = (k.direct_base_mb + moved_mib * k.direct_mb_per_mib_s) * mem_noise

    wire_in = traffic.msg_throughput_in + traffic.msg_rate_in * k.wire_overhead_bytes_per_msg
    wire_out = traffic.msg_throughput_out + traffic.msg_rate_out * k.wire_overhead_bytes_per_msg
    wire_out += k.bookie_write_quorum * wire_in
    bw_in = wire_in * 8.0 / 1024.0 * bw_noise
    bw_out = wire_out * 8.0 / 1024.0 * bw_noise
    nic = nic_limit_kbps(nic_override_gbps if nic_override_gbps is not None else capacity.nic_gbps)
    if k.saturate:
        cpu = min(cpu, cpu_limit)
        bw_in = min(bw_in, nic)
        bw_out = min(bw_out, nic)
    return SystemUsage(
        cpu=ResourceUsage(usage=cpu, limit=cpu_limit),
        memory=ResourceUsage(usage=min(heap, capacity.heap_mb), limit=capacity.heap_mb),
        direct_memory=ResourceUsage(usage=min(direct, capacity.direct_mb), limit=capacity.direct_mb),
        bandwidth_in=ResourceUsage(usage=bw_in, limit=nic),
        bandwidth_out=ResourceUsage(usage=bw_out, limit=nic),
    )


class ResourceModel:
    """Per-broker capacities (changeable during a run) and per-broker seeded noise streams.

    A broker's noise stream is `numpy.random.default_rng(derive_seed(seed, "resources/<broker id>"))`,
    so adding a broker does not change any other broker's readings, and a restarted broker continues its
    own stream. `conf` is the cluster's live ServiceConfig (read for the NIC-speed override)."""

    def __init__(
        self,
        constants: ResourceModelConstants | None = None,
        default: BrokerCapacity | None = None,
        *,
        seed: int = 0,
        capacities: Mapping[str, BrokerCapacity] | None = None,
        conf: object | None = None,
    ) -> None:
        self.constants = constants or ResourceModelConstants()
        self.default = default or BrokerCapacity()
        self.seed = seed
        self.conf = conf
        self._capacity: dict[str, BrokerCapacity] = dict(capacities or {})
        self._noise: dict[str, np.random.Generator] = {}
        # standard normals drawn ahead, per broker: a Generator gives the same sequence in blocks as
        # three at a time, and one call per block instead of one per report is a third of a report
        self._drawn: dict[str, list[float]] = {}

    def capacity(self, broker_id: str) -> BrokerCapacity:
        return self._capacity.get(broker_id, self.default)

    def set_capacity(self, broker_id: str, **changes: float | None) -> BrokerCapacity:
        """Change some of a broker's capacity fields (validated like the scenario file; None keeps one)."""
        merged = msgspec.structs.asdict(self.capacity(broker_id))
        merged.update({k: v for k, v in changes.items() if v is not None})
        try:
            new = msgspec.convert(merged, BrokerCapacity)
        except msgspec.ValidationError as e:
            given = ", ".join(f"{k}={v!r}" for k, v in changes.items() if v is not None)
            raise ValueError(f"set_capacity({broker_id}, {given}): {e}") from None
        self._capacity[broker_id] = new
        return new

    def _draws(self, broker_id: str) -> list[float]:
        """The broker's normal deviates not used yet, popped three per report (refilled by blocks)."""
        drawn = self._drawn.get(broker_id)
        if not drawn:
            gen = self._noise.get(broker_id)
            if gen is None:
                gen = self._noise[broker_id] = np.random.default_rng(
                    derive_seed(self.seed, f"resources/{broker_id}"))
            drawn = self._drawn[broker_id] = gen.standard_normal(3 * _NOISE_BLOCK).tolist()[::-1]
        return drawn

    def _noise_multipliers(self, broker_id: str) -> tuple[float, float, float]:
        k = self.constants
        drawn = self._draws(broker_id)
        z0, z1, z2 = drawn.pop(), drawn.pop(), drawn.pop()
        return (max(0.0, 1.0 + k.noise_cpu * z0),
                max(0.0, 1.0 + k.noise_memory * z1),
                max(0.0, 1.0 + k.noise_bandwidth * z2))

    def usage(self, broker_id: str, traffic: BrokerTraffic) -> SystemUsage:
        override = getattr(self.conf, "load_balancer_override_broker_nic_speed_gbps", None)
        return compute_usage(self.constants, self.capacity(broker_id), traffic,
                             self._noise_multipliers(broker_id), override)

    def memory_usage(self, broker_id: str, totals: NamespaceBundleStats) -> tuple[ResourceUsage, ResourceUsage]:
        """The heap and direct memory of `usage(broker_id, BrokerTraffic.from_stats({"": totals}))`,
        the same bits, and the same three noise draws (the stream goes on as after `usage`).

        A broker's report tick keeps only these two of the five usages (the CPU and NICs come from
        the last host sample): the other three cost a third of the tick for nothing."""
        k = self.constants
        capacity = self._capacity.get(broker_id, self.default)
        # _noise_multipliers' three draws, its memory multiplier alone
        drawn = self._draws(broker_id)
        drawn.pop()
        mem_noise = max(0.0, 1.0 + k.noise_memory * drawn.pop())
        drawn.pop()
        # BrokerTraffic.from_stats of one entry: each sum starts from 0.0 / 0, as there
        moved_mib = ((0.0 + totals.msg_throughput_in) + (0.0 + totals.msg_throughput_out)) / MIB
        sessions = (0 + totals.producer_count) + (0 + totals.consumer_count)
        heap = (k.heap_base_mb + (0 + totals.topics) * k.heap_mb_per_topic
                + sessions * k.heap_mb_per_session + moved_mib * k.heap_mb_per_mib_s) * mem_noise
        direct = (k.direct_base_mb + moved_mib * k.direct_mb_per_mib_s) * mem_noise
        return (ResourceUsage(usage=min(heap, capacity.heap_mb), limit=capacity.heap_mb),
                ResourceUsage(usage=min(direct, capacity.direct_mb), limit=capacity.direct_mb))
