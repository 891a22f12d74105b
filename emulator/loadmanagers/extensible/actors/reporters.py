"""What each broker publishes to the two load-data stores: BrokerLoadDataReporter, TopBundleLoadDataReporter.

Follow apache/pulsar `extensions/reporter/BrokerLoadDataReporter.java` (@1a5df8f3: `generateLoadData`,
`reportAsync`, `needBrokerDataUpdate`, `percentChange`) and `TopBundleLoadDataReporter.java`
(@12a6f86f: `generateLoadData`, `reportAsync`, `tombstone`, `handleEvent`). ExtensibleLoadManagerImpl
runs both every `loadBalancerReportUpdateMinIntervalMillis` (fixed rate, `start` here) and forces a
report when the broker's role changes (`report(force=True)`).

- The broker reporter recomputes its BrokerLoadData every run (the EMA moves even when nothing is
  published) and publishes it when forced, when the last publish is older than
  `loadBalancerReportUpdateMaxIntervalMinutes`, or when the largest change since the last publish
  (100 x the max resource usage, % msg rate, % throughput, % bundle count) exceeds
  `loadBalancerReportUpdateThresholdPercentage`. Readers drop data older than
  `loadBalancerBrokerLoadDataTTLInSeconds` (TransferShedder: OutDatedData); the max interval keeps a
  live broker's data younger than that.
- The top-bundles reporter publishes its top k bundles (`top_bundles.top_k_bundles`) whenever the
  broker's bundle stats were refreshed since its last run, and removes its entry (at most once per
  10 s) when it starts releasing or splitting a bundle or takes one, so the leader does not shed on
  a stale list.

The inputs are passed in: `usage()` gives the broker's resource usage and broker-level stats
(`LoadManagerShared.getSystemResourceUsage` + `pulsarStats.getBrokerStats()`), `bundle_stats()` the
time of the last stats refresh and the bundle -> NamespaceBundleStats map (`getBundleStats()`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import msgspec

from emulator.model.config import ServiceConfig
from ..model.load_data import BrokerLoadData, TopBundlesLoadData
from ..model.state import ServiceUnitState, ServiceUnitStateData, state_of
from ..model.top_bundles import top_k_bundles
from emulator.model.loaddata import NamespaceBundleStats, ResourceUsage
from emulator.model.policies import PolicyView

from .load_data_store import LoadDataStore

__all__ = [
    "TOMBSTONE_DELAY_IN_MILLIS",
    "BrokerLoadDataReporter",
    "BrokerUsage",
    "TopBundleLoadDataReporter",
    "percent_change",
]

TOMBSTONE_DELAY_IN_MILLIS = 10_000
"""`TopBundleLoadDataReporter.TOMBSTONE_DELAY_IN_MILLIS`: at most one removal per 10 s."""

_S = ServiceUnitState


class BrokerUsage(msgspec.Struct, frozen=True, kw_only=True):
    """One reading of a broker: `SystemResourceUsage` and the broker-level stats."""

    cpu: ResourceUsage
    memory: ResourceUsage
    direct_memory: ResourceUsage
    bandwidth_in: ResourceUsage
    bandwidth_out: ResourceUsage
    msg_throughput_in: float = 0.0
    msg_throughput_out: float = 0.0
    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0
    bundle_count: int = 0
    topics: int = 0


def percent_change(old: float, new: float) -> float:
    """`percentChange`: 0 from 0 to 0, +inf from 0 to anything else, else 100·|old−new|/old."""
    if old == 0:
        return 0.0 if new == 0 else math.inf
    return 100 * abs((old - new) / old)


class BrokerLoadDataReporter:
    """`BrokerLoadDataReporter`: `local` is the data last computed, `last` the data last published."""

    def __init__(self, broker_id: str, store: LoadDataStore[BrokerLoadData], conf: ServiceConfig,
                 usage: Callable[[], BrokerUsage], clock_ms: Callable[[], int]) -> None:
        self.broker_id = broker_id
        self.store = store
        self.conf = conf
        self.usage = usage
        self.clock_ms = clock_ms
        self.local = BrokerLoadData()
        self.last = BrokerLoadData()
        self.published = 0

    def generate(self) -> BrokerLoadData:
        """`generateLoadData`: update `local` from the current usage (EMAs included)."""
        u = self.usage()
        self.local.update(
            cpu=u.cpu, memory=u.memory, direct_memory=u.direct_memory, bandwidth_in=u.bandwidth_in,
            bandwidth_out=u.bandwidth_out, msg_throughput_in=u.msg_throughput_in,
            msg_throughput_out=u.msg_throughput_out, msg_rate_in=u.msg_rate_in, msg_rate_out=u.msg_rate_out,
            bundle_count=u.bundle_count, topics=u.topics, conf=self.conf, now_ms=self.clock_ms(),
        )
        return self.local

    def need_update(self) -> bool:
        """`needBrokerDataUpdate`."""
        max_interval_ms = self.conf.load_balancer_report_update_max_interval_minutes * 60_000
        if self.clock_ms() - self.local.reported_at > max_interval_ms:
            return True
        last, local = self.last, self.local
        max_change = max(
            100.0 * abs(last.max_resource_usage - local.max_resource_usage),
            percent_change(last.msg_rate_in + last.msg_rate_out, local.msg_rate_in + local.msg_rate_out),
            percent_change(last.msg_throughput_in + last.msg_throughput_out,
                           local.msg_throughput_in + local.msg_throughput_out),
            percent_change(last.bundle_count, local.bundle_count),
        )
        return max_change > self.conf.load_balancer_report_update_threshold_percentage

    async def report(self, force: bool = False) -> bool:
        """`reportAsync(force)`: True if it published. The value published is a copy of `local`
        as it is now (Java serialises the instance at send time)."""
        self.generate()
        if not (force or self.need_update()):
            return False
        await self.store.push(self.broker_id, msgspec.structs.replace(self.local))
        self.local.reported_at = self.clock_ms()
        self.last.update_from(self.local)
        self.published += 1
        return True


class TopBundleLoadDataReporter:
    """`TopBundleLoadDataReporter`; also a channel StateChangeListener (`handle_event`)."""

    def __init__(self, broker_id: str, store: LoadDataStore[TopBundlesLoadData], conf: ServiceConfig,
                 bundle_stats: Callable[[], tuple[int, Mapping[str, NamespaceBundleStats]]],
                 clock_ms: Callable[[], int], policies: Callable[[], PolicyView] | None = None) -> None:
        self.broker_id = broker_id
        self.store = store
        self.conf = conf
        self.bundle_stats = bundle_stats
        self.clock_ms = clock_ms
        self.policies = policies
        self.load_data = TopBundlesLoadData()
        self.last_bundle_stats_updated_at = 0
        self.last_tombstoned_at: int | None = None
        self.published = 0
        self.tombstones = 0

    def generate(self) -> TopBundlesLoadData | None:
        """`generateLoadData`: the top k bundles if the stats were refreshed since last time, else None."""
        updated_at, stats = self.bundle_stats()
        if updated_at <= self.last_bundle_stats_updated_at:
            return None
        policies = self.policies() if self.policies is not None else None
        self.load_data = top_k_bundles(stats, self.conf.load_balancer_max_number_of_bundles_in_bundle_load_report,
                                       self.conf, policies)
        self.last_bundle_stats_updated_at = updated_at
        return self.load_data

    async def report(self, force: bool = False) -> bool:
        """`reportAsync(force)`: publish the top bundles if new or forced."""
        if self.generate() is None and not force:
            return False
        await self.store.push(self.broker_id, self.load_data)
        self.published += 1
        return True

    def tombstone(self) -> None:
        """`tombstone()`: remove this broker's entry, at most once per `TOMBSTONE_DELAY_IN_MILLIS`
        (the first time always: Java's 0 against the epoch clock)."""
        now = self.clock_ms()
        if self.last_tombstoned_at is not None and now - self.last_tombstoned_at < TOMBSTONE_DELAY_IN_MILLIS:
            return
        self.last_tombstoned_at = now
        self.store.remove(self.broker_id)
        self.tombstones += 1

    def handle_event(self, service_unit: str, data: ServiceUnitStateData | None, error: BaseException | None) -> None:
        """`handleEvent`: tombstone when this broker releases or splits a bundle, or takes one."""
        if error is not None or data is None:
            return
        state = state_of(data)
        if state in (_S.RELEASING, _S.SPLITTING) and data.source_broker == self.broker_id:
            self.tombstone()
        elif state is _S.OWNED and data.dst_broker == self.broker_id:
            self.tombstone()
