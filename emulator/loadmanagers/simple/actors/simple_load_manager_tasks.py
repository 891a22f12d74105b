"""SimpleLoadManagerImpl's watches and timers: the child actor of one broker's Simple load manager.

What runs on Pulsar's `pulsar-simple-load-manager` scheduler and metadata listener, here in one actor
so that the manager's `stop()` ends it (simple_load_manager.py says what each step is):

* watches `/loadbalance/brokers` (any change: `updateRanking`), `/loadbalance/settings` (the dynamic
  settings) and `/loadbalance/resource-quota` (the quota store);
* on the leader only: LoadSheddingTask every `loadBalancerSheddingIntervalMinutes` and
  LoadResourceQuotaUpdaterTask every `loadBalancerResourceQuotaUpdateIntervalMinutes`, at a fixed rate
  from the moment this broker became the leader (or started leading with this manager);
* `doNamespaceBundleSplit` after each report write: the owner's own `splitAndOwnBundle`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import anyio
import msgspec

from emulator.runtime import epoch_ms
from ..model import (
    PlacementState,
    QuotaStore,
    RealtimeQuotas,
    ResourceQuota,
    SimpleSettings,
    do_load_shedding,
    do_namespace_bundle_split,
)
from ..model.quota import RESOURCE_QUOTA_ROOT, quota_writes
from ..model.report import LoadReport
from ..model.settings import load_factor_writes
from emulator.runtime import Actor, ActorDead, AskTimeout, ActorSystem, Reply

from emulator.cluster import paths
from emulator.cluster.events import SheddingPlan, Split, SplitSkipped, Unload, UnloadSkipped
from emulator.cluster.messages import AdminError, AdminResult, LookupFailure, UnloadBundle
from emulator.cluster.metadata_client import MetadataClient, MetadataStoreError
from emulator.cluster.metadata_messages import Notification

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.broker import Broker

__all__ = ["SETTINGS_ROOT", "SimpleLoadManagerTasks"]

SETTINGS_ROOT = "/loadbalance/settings"

_SHEDDER = "SimpleLoadManagerImpl"
_encode = msgspec.json.Encoder(order="deterministic").encode


class _Manager(Protocol):
    """What the tasks read and call of their SimpleLoadManagerImpl (simple_load_manager.py)."""

    broker: "Broker"
    dynamic: dict[str, dict[str, str]]
    quotas: RealtimeQuotas
    store: QuotaStore
    reports: dict[str, LoadReport]
    placement: PlacementState
    last_report: LoadReport | None

    def settings(self) -> SimpleSettings: ...
    def remember_quota(self, path: str, quota: ResourceQuota | None) -> None: ...
    def decode_report(self, data: bytes) -> LoadReport | None: ...
    def apply_reports(self, reports: dict[str, LoadReport]) -> None: ...
    def set_load_report_force_update_flag(self) -> None: ...


class SimpleLoadManagerTasks(Actor):
    """The scheduler and listener of one SimpleLoadManagerImpl (see the module docstring)."""

    def __init__(self, name: str, system: ActorSystem, *, manager: _Manager) -> None:
        super().__init__(name, system)
        self.manager = manager
        self.broker = manager.broker
        self.md = MetadataClient(self, self.broker.md.store_name)
        self.started = anyio.Event()
        self._leader_generation = 0
        self._ranking_running = False
        self._ranking_again = False
        self.recently_unloaded: dict[str, int] = {}   # unloadedHotNamespaceCache: bundle -> ms

    async def on_start(self) -> None:
        await self.md.watch(paths.BROKERS)
        await self.md.watch(SETTINGS_ROOT)
        await self.md.watch(RESOURCE_QUOTA_ROOT)
        for name in await self.md.children(SETTINGS_ROOT):
            await self._read_setting(f"{SETTINGS_ROOT}/{name}")
        await self._read_quotas(RESOURCE_QUOTA_ROOT)
        self.started.set()

    async def _read_setting(self, path: str) -> None:
        node = await self.md.get(path)
        if node is None:
            self.manager.dynamic.pop(path, None)
            return
        try:
            self.manager.dynamic[path] = msgspec.json.decode(node.data, type=dict[str, str])
        except (msgspec.DecodeError, msgspec.ValidationError):
            self.manager.dynamic.pop(path, None)

    async def _read_quotas(self, path: str) -> None:
        """The quota nodes under `path`, depth first (tenant / namespace / range, and `default`)."""
        node = await self.md.get(path)
        if node is not None and node.data:
            self._remember_quota(path, node.data)
        for child in await self.md.children(path):
            await self._read_quotas(f"{path}/{child}")

    def _remember_quota(self, path: str, data: bytes | None) -> None:
        quota = None
        if data:
            try:
                quota = msgspec.json.decode(data, type=ResourceQuota)
            except (msgspec.DecodeError, msgspec.ValidationError):
                return
        self.manager.remember_quota(path, quota)

    # ------------------------------------------------------------------ notifications

    async def receive(self, msg: Any, reply: Reply) -> None:
        if type(msg) is Notification:
            self._on_notification(msg)
            reply.ok(None)
        else:
            raise TypeError(f"{self.name}: unexpected message {type(msg).__name__}")

    def _on_notification(self, note: Notification) -> None:
        path = note.path
        if path.startswith(paths.BROKERS):
            self._request_ranking()
        elif path.startswith(SETTINGS_ROOT + "/"):
            self.start_soon(self._read_setting, path)
        elif path.startswith(RESOURCE_QUOTA_ROOT + "/"):
            if note.type == "Deleted":
                self.manager.remember_quota(path, None)
            else:
                self.start_soon(self._reread_quota, path)

    async def _reread_quota(self, path: str) -> None:
        node = await self.md.get(path)
        self._remember_quota(path, None if node is None else node.data)

    def _request_ranking(self) -> None:
        """`scheduler.submit(this::updateRanking)`: one ranking at a time on the single-thread scheduler;
        notifications during one give one more."""
        if self._ranking_running:
            self._ranking_again = True
            return
        self._ranking_running = True
        self.start_soon(self._rankings)

    async def _rankings(self) -> None:
        try:
            while True:
                self._ranking_again = False
                await self.update_ranking()
                if not self._ranking_again:
                    return
        finally:
            self._ranking_running = False

    async def update_ranking(self) -> None:
        """updateRanking: every registered broker's report (unreadable ones left out), then the
        realtime quotas and doLoadRanking."""
        try:
            brokers = await self.md.children(paths.BROKERS)
        except MetadataStoreError as e:
            self.log.warning("Error reading active brokers list while re-ranking load reports", error=str(e))
            return
        reports: dict[str, LoadReport] = {}
        for broker in sorted(brokers):
            node = await self.md.get(paths.broker_path(broker))
            report = None if node is None else self.broker.decoded.get(
                "simple-report:" + broker, node.data, self.manager.decode_report)
            if report is None:
                continue
            reports[broker] = report
        self.manager.apply_reports(reports)

    # ------------------------------------------------------------------ the leader's tasks

    def start_leader_tasks(self) -> None:
        self._leader_generation += 1
        self.start_soon(self._every, self._leader_generation,
                        lambda: self.broker.conf.load_balancer_shedding_interval_minutes, self.do_load_shedding)
        self.start_soon(self._every, self._leader_generation,
                        lambda: self.broker.conf.load_balancer_resource_quota_update_interval_minutes,
                        self.write_resource_quotas)

    def stop_leader_tasks(self) -> None:
        self._leader_generation += 1

    async def _every(self, generation: int, minutes: Any, task: Any) -> None:
        while True:
            await anyio.sleep(minutes() * 60.0)
            if generation != self._leader_generation or not self.broker.is_leader:
                return
            await task()

    async def write_resource_quotas(self) -> None:
        """writeResourceQuotasToZooKeeper: the load factors, then every quota that moved enough."""
        m = self.manager
        try:
            for path, settings in load_factor_writes(m.quotas.cpu_load_factor, m.quotas.memory_load_factor):
                await self.md.set(path, _encode(settings))
                m.dynamic[path] = settings
            for path, quota in quota_writes(m.quotas, m.store):
                await self.md.set(path, _encode(quota))
                m.remember_quota(path, quota)
        except MetadataStoreError as e:
            self.log.warning("Got exception when writing to metadata store", error=str(e))

    async def do_load_shedding(self) -> list[tuple[str, str]]:
        """doLoadShedding + unloadNamespacesFromOverLoadedBrokers: the unload admin call, no destination."""
        m = self.manager
        now_ms = epoch_ms(self.system.clock)
        policies = await self.broker.policy_cache.refresh()
        plan = do_load_shedding(m.reports, m.placement.sorted_rankings, policies, m.placement.bundle_ranges,
                                m.settings(), self.broker.conf, self.recently_unloaded, now_ms)
        self.events_emit(SheddingPlan(shedder=_SHEDDER, plan=list(plan.unloads),
                                      explanation={"overload_threshold": plan.overload_threshold,
                                                   "comfort_load_threshold": plan.comfort_load_threshold,
                                                   "dry_run": [list(x) for x in plan.dry_run],
                                                   "sole_bundle": list(plan.sole_bundle)}))
        for broker, bundle in plan.no_capacity:
            self._skip(broker, bundle, "no broker with enough capacity available for re-balancing")
        for broker, bundle in plan.recently_unloaded:
            self._skip(broker, bundle, "unloaded within the grace period")
        for _, bundle in plan.dry_run:
            self.recently_unloaded[bundle] = now_ms
        done: list[tuple[str, str]] = []
        for broker, bundle in plan.unloads:
            result = await self._admin(broker, UnloadBundle(bundle))
            self.recently_unloaded[bundle] = epoch_ms(self.system.clock)
            if not result.ok:
                self._skip(broker, bundle, f"unload failed: {result.message}")
                continue
            done.append((broker, bundle))
            self.events_emit(Unload(broker=broker, bundle=bundle, destination="", shedder=_SHEDDER,
                                    bundle_data=None, trace=None, result=result.detail))
        return done

    def _skip(self, broker: str, bundle: str, reason: str) -> None:
        self.events_emit(UnloadSkipped(broker=broker, bundle=bundle, reason=reason, bundle_data=None,
                                       trace=None))

    def events_emit(self, event: Any) -> None:
        self.broker.events.emit(event)

    async def _admin(self, broker: str, op: Any, timeout: float = 120.0) -> AdminResult:
        """The leader's PulsarAdmin call, served by the bundle's owner."""
        try:
            return await self.broker.network.broker(broker).ask(op, timeout=timeout)
        except (ActorDead, AskTimeout) as e:
            return AdminResult(False, f"{broker}: {e}")

    async def do_namespace_bundle_split(self) -> list[str]:
        """doNamespaceBundleSplit over this broker's last report: its own splitAndOwnBundle per hot bundle;
        any split forces the next report."""
        m, b = self.manager, self.broker
        counts: dict[str, int] = {}
        if m.last_report is not None:
            for bundle in m.last_report.bundle_stats:
                ns = bundle.rsplit("/", 1)[0]
                if ns not in counts:
                    try:
                        counts[ns] = len(await b.namespace_bundles(ns))
                    except LookupFailure:   # namespace gone (or its metadata failed): nothing to split
                        counts[ns] = 1 << 30
        plan = do_namespace_bundle_split(m.last_report, counts, m.settings(), b.conf)
        for bundle in plan.single_topic:
            self.events_emit(SplitSkipped(bundle=bundle, reason="only one topic"))
        for bundle in plan.too_many_bundles:
            self.events_emit(SplitSkipped(bundle=bundle, reason="the namespace has too many bundles"))
        done: list[str] = []
        for bundle in plan.split:
            if bundle not in b.owned:
                continue
            try:
                detail = await b.split_and_own_bundle(bundle, unload=plan.unload)
                ok, message = True, ""
            except AdminError as e:
                detail, ok, message = {}, False, str(e)
            self.events_emit(Split(bundle=bundle, broker=b.broker_id, unload=plan.unload, ok=ok,
                                   message=message, bundle_data=None, result=detail or {}))
            if ok:
                done.append(bundle)
        if plan.force_report_update:
            m.set_load_report_force_update_flag()
        return done

