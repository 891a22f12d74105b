"""SimpleLoadManagerImpl on the broker: Pulsar's first load manager behind the LoadManager seam.

Follows pulsar-broker `loadbalance/impl/SimpleLoadManagerImpl.java`, in its order of things, over the
pure logic of emulator/loadmanagers/simple/model/:

* `start()`: generate the first LoadReport, acquire `/loadbalance/brokers/<broker>` with it, rank the
  brokers once (`updateRanking`), read the default quota and the load factors from the store;
* every broker watches `/loadbalance/brokers` (its metadata listener, `accept(Notification)`): any
  change there re-reads every registered broker's report and re-ranks (`updateRanking`:
  `updateRealtimeResourceQuota`, then `doLoadRanking`);
* the 5 s LoadReportUpdaterTask calls `writeLoadReportOnZookeeper`: the write test of reporting.py,
  the report update on the lock, then `doNamespaceBundleSplit` of this broker's own bundles (the split
  is the owner's `splitAndOwnBundle`, ownership.py);
* `getLeastLoaded`: the pre-allocated broker, else the strategy's pick (placement.py); `isCentralized`
  only for leastLoadedServer / leastMsgPerSecond (lookups then go to the leader: namespace_service.py);
* the leader's LoadSheddingTask (`doLoadShedding`: the unload admin call to the owner, no destination)
  and LoadResourceQuotaUpdaterTask (`writeResourceQuotasToZooKeeper`: load factors, default and bundle
  quotas under `/loadbalance/resource-quota`), at fixed rate from the leadership's start.

The watches and timers run in a child actor (simple_load_manager_tasks.py), so that `stop()` ends them
all at once, as Pulsar's `scheduler.shutdownNow()`. Choices: the report decoded from a node that is not
a LoadReport (a Modular broker during a live switch) counts as unreadable ("Error reading load report");
the quota store is read at start and kept current by a watch on `/loadbalance/resource-quota` (Pulsar
reads it through a metadata cache); the decision log gets Assignment / Unload / Split events as for
Modular (an unload's `destination` is "": Simple names none).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from emulator.runtime import epoch_ms
from emulator.model.config import ServiceConfig
from ..model import (
    PlacementState,
    QuotaStore,
    RealtimeQuotas,
    ResourceQuota,
    SimpleSettings,
    decode_load_report,
    do_load_ranking,
    encode_load_report,
    get_least_loaded_broker,
    update_realtime_resource_quota,
)
from ..model.quota import DEFAULT_RESOURCE_QUOTA_PATH, RESOURCE_QUOTA_ROOT
from ..model.report import LoadReport, SystemResourceUsage
from ..model.reporting import (
    average_jvm_heap_mb,
    build_load_report,
    need_load_report_update,
    with_heap_memory,
)
from ..model.settings import initial_load_factors

from emulator.cluster import paths
from emulator.cluster.events import Assignment, LoadReportWritten
from emulator.cluster.load_manager import SIMPLE, LoadBalancingMetrics, LoadManager, release_registration
from emulator.cluster.metadata_client import MetadataStoreError
from .simple_load_manager_tasks import SimpleLoadManagerTasks

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.broker import Broker

__all__ = ["SimpleLoadManagerImpl"]


class SimpleLoadManagerImpl(LoadManager, LoadBalancingMetrics):
    """One broker's SimpleLoadManagerImpl (see the module docstring). No leader actor (the base's
    None): the leader's tasks run in `tasks`. It exports its own rank and quota series
    (LoadBalancingMetrics)."""

    class_name = SIMPLE
    broker: "Broker"

    def __init__(self, broker: "Broker", requested: str = SIMPLE) -> None:
        super().__init__(broker, requested)
        self.last_report: LoadReport | None = None
        self.last_resource_usage_ms = -1
        self.avg_heap_mb = 0
        self.force_update = False
        self.start_ms = 0
        self.placement = PlacementState()
        self.quotas = RealtimeQuotas()
        self.store = QuotaStore()
        self.reports: dict[str, LoadReport] = {}     # currentLoadReports
        self.ranks: dict[str, int] = {}              # each broker's final rank (brk_lb_load_rank)
        self.dynamic: dict[str, dict[str, str]] = {}   # /loadbalance/settings/* as stored
        self.tasks: SimpleLoadManagerTasks | None = None

    # ================================================================== settings

    @property
    def conf(self) -> ServiceConfig:
        return self.broker.conf

    def settings(self) -> SimpleSettings:
        """The values of this decision: `/loadbalance/settings/*`, else the deprecated conf keys."""
        return SimpleSettings.resolve(self.conf, self.dynamic)

    # ================================================================== lifecycle

    async def start(self) -> None:
        """start(): the first report as the lock's value, the tasks (watches), the first ranking,
        the default quota and the load factors."""
        b = self.broker
        self.start_ms = epoch_ms(b.system.clock)
        tasks = self.tasks = SimpleLoadManagerTasks(f"{b.broker_id}/simple-lm", b.system, manager=self)
        b.system.spawn(tasks, parent=b)
        await tasks.started.wait()
        report = self._generate()
        self.last_resource_usage_ms = report.timestamp
        await b.md.acquire_lock(paths.broker_path(b.broker_id), encode_load_report(report))
        self.last_report = report
        self.registered = True
        b.log.info("Created broker ephemeral node", path=paths.broker_path(b.broker_id))
        await b._refresh_available_brokers()
        await tasks.update_ranking()
        self.quotas.avg_quota = self.store.default_quota()
        self.quotas.last_update_ms = epoch_ms(b.system.clock)
        self.quotas.cpu_load_factor, self.quotas.memory_load_factor = initial_load_factors(
            self.dynamic, self.quotas.cpu_load_factor, self.quotas.memory_load_factor)
        if b.is_leader:
            self.leadership_acquired()

    async def stop(self) -> None:
        """stop(): the scheduler's tasks end, the lock goes."""
        if self.tasks is not None:
            self.tasks.kill()
            self.tasks = None
        await self.disable_broker()

    async def disable_broker(self) -> None:
        """disableBroker(): `brokerLock.release()`."""
        await release_registration(self)

    async def on_session_reestablished(self) -> None:
        """The lock manager revalidates the lock with its last value."""
        if self.registered and self.last_report is not None:
            try:
                await self.broker.md.acquire_lock(paths.broker_path(self.broker.broker_id),
                                                  encode_load_report(self.last_report))
            except MetadataStoreError as e:
                self.broker.log.warning("could not re-register after session loss", error=str(e))

    # ================================================================== leadership

    def leadership_acquired(self) -> None:
        if self.tasks is not None:
            self.tasks.start_leader_tasks()

    def leadership_lost(self) -> None:
        if self.tasks is not None:
            self.tasks.stop_leader_tasks()

    # ================================================================== the load report

    def _usage(self) -> SystemResourceUsage:
        """getSystemResourceUsage: the host usage, heap memory replaced by its 120 s average."""
        local = self.broker.local_data
        usage = SystemResourceUsage(bandwidth_in=local.bandwidth_in, bandwidth_out=local.bandwidth_out,
                                    cpu=local.cpu, memory=local.memory, direct_memory=local.direct_memory)
        heap = self.avg_heap_mb if self.avg_heap_mb > 0 else int(local.memory.usage)
        return with_heap_memory(usage, heap)

    def _generate(self) -> LoadReport:
        """generateLoadReportForcefully (from the broker's stats, refreshed first)."""
        b = self.broker
        b._update_local_data()
        own = self.placement.rankings.get(b.broker_id)
        pre = own.pre_allocated_bundles if own is not None else set()
        report = build_load_report(
            name=b.broker_id, web_service_url=b.web_url, pulsar_service_url=b.service_url,
            broker_version="", usage=self._usage(), bundle_stats=b.local_data.last_stats,
            previous_bundles=self.last_report.bundles() if self.last_report is not None else set(),
            pre_allocated_bundles=pre, quotas=self.quotas, store=self.store, settings=self.settings(),
            conf=self.conf, now_ms=epoch_ms(b.system.clock), start_ms=self.start_ms)
        pre.difference_update(report.bundle_stats)   # Java removes them in place
        return report

    def generate_load_report(self) -> LoadReport | None:
        """generateLoadReport(): the last report (a fresh one past the minimum interval is what Pulsar
        returns; the admin view shows what the others read)."""
        return self.last_report

    def set_load_report_force_update_flag(self) -> None:
        self.force_update = True

    async def write_load_report(self, force: bool = False) -> bool:
        """writeLoadReportOnZookeeper: the heap average, the write test, the write, then the split."""
        if not self.registered:
            return False
        b = self.broker
        b._update_local_data()
        now_ms = epoch_ms(b.system.clock)
        self.avg_heap_mb = average_jvm_heap_mb(self.avg_heap_mb, int(b.local_data.memory.usage), self.conf)
        decision = need_load_report_update(
            self.last_report, force=force or self.force_update, now_ms=now_ms,
            bundle_count=len(b.owned), last_resource_usage_ms=self.last_resource_usage_ms,
            usage=self._usage(), conf=self.conf)
        self.force_update = False
        if decision.usage_checked:
            self.last_resource_usage_ms = now_ms
        if not decision.write:
            return False
        report = self._generate()
        try:
            await b.md.update_lock(paths.broker_path(b.broker_id), encode_load_report(report))
        except MetadataStoreError as e:
            b.log.warning("load report not written", error=str(e))
            return False
        self.last_report = report
        self.last_resource_usage_ms = report.timestamp
        b.events.emit(LoadReportWritten(broker=b.broker_id, bundles=report.num_bundles))
        await self.do_namespace_bundle_split()
        return True

    # ================================================================== ranking (every broker)

    def apply_reports(self, reports: dict[str, LoadReport]) -> None:
        """updateRanking's body over freshly read reports: the realtime quotas, then doLoadRanking."""
        self.reports = reports
        update_realtime_resource_quota(self.quotas, reports, self.store)
        ranking = do_load_ranking(reports, self.placement.rankings, self.quotas, self.store,
                                  self.settings().strategy, self.placement.bundle_ranges)
        self.placement.install(ranking)
        if ranking is not None:
            self.ranks = ranking.ranks

    def load_balancing_metrics(self) -> dict[str, float]:
        """updateLoadBalancingMetrics: this broker's rank and allocated-quota percentages."""
        b = self.broker.broker_id
        ranking = self.placement.rankings.get(b)
        if ranking is None or b not in self.ranks:
            return {}
        return {"load_rank": float(self.ranks[b]),
                "quota_pct_cpu": ranking.allocated_load_percentage_cpu,
                "quota_pct_memory": ranking.allocated_load_percentage_memory,
                "quota_pct_bandwidth_in": ranking.allocated_load_percentage_bandwidth_in,
                "quota_pct_bandwidth_out": ranking.allocated_load_percentage_bandwidth_out}

    def decode_report(self, data: bytes) -> LoadReport | None:
        try:
            return decode_load_report(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None

    # ================================================================== placement

    def is_centralized(self) -> bool:
        return self.settings().is_centralized

    async def get_least_loaded(self, bundle: str, non_persistent: bool) -> str | None:
        b = self.broker
        policies = await b.policy_cache.refresh()
        settings = self.settings()
        broker = get_least_loaded_broker(
            bundle, self.placement, self.quotas, self.store, self.reports, b.available_brokers,
            policies, settings, b.rng, non_persistent=non_persistent)
        if broker is None:
            b.log.warning("No broker available to acquire service unit", bundle=bundle)
        b.events.emit(Assignment(bundle=bundle, broker=broker, leader=b.broker_id,
                                 local=not settings.is_centralized, trace=None))
        return broker

    # ================================================================== the leader's work and the split

    async def write_resource_quotas(self) -> None:
        if self.tasks is not None and self.broker.is_leader:
            await self.tasks.write_resource_quotas()

    async def do_load_shedding(self) -> list[tuple[str, str]]:
        if self.tasks is None or not self.broker.is_leader:
            return []
        return await self.tasks.do_load_shedding()

    async def do_namespace_bundle_split(self) -> list[str]:
        if self.tasks is None:
            return []
        return await self.tasks.do_namespace_bundle_split()

    def remember_quota(self, path: str, quota: ResourceQuota | None) -> None:
        """A quota node read or written: the store view the decisions read."""
        if path == DEFAULT_RESOURCE_QUOTA_PATH:
            self.store.default = quota
        elif path.startswith(RESOURCE_QUOTA_ROOT + "/"):
            bundle = path[len(RESOURCE_QUOTA_ROOT) + 1:]
            if quota is None:
                self.store.bundles.pop(bundle, None)
            else:
                self.store.bundles[bundle] = quota
