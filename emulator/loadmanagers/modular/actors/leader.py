"""LoadManagerLeader: the leader-only half of ModularLoadManagerImpl, as an actor on the elected broker.

Started when its broker becomes Leading and killed when it stops leading. On start it rebuilds its view from
the store (every broker's report under /loadbalance/brokers and the persisted /loadbalance/bundle-data),
then runs `updateAll` once per notification under /loadbalance/brokers, exactly as Pulsar's single-thread
load-manager executor does (one bundle-data sample per notification, pulsar-algorithms.md §2.2).
It answers `selectBrokerForAssignment` for its broker's lookups and writes bundle data every
`loadBalancerResourceQuotaUpdateIntervalMinutes`.

Reads triggered by a notification run in a child task and come back as an `_Apply` message, so every
state change happens inside the actor's serial message handling and the order of notifications is kept.

When the split check runs, and what delays a split (read in apache/pulsar, current master):

* `ModularLoadManagerImpl.updateAll` ends with `checkNamespaceBundleSplit()`, and `updateAll` is what
  `handleDataNotification` submits to the load-manager executor for every notification under
  /loadbalance/brokers. `PulsarService.startLoadManagementService` schedules only the report task
  (every broker, 5 s) and, on the leader, `LoadSheddingTask` and `LoadResourceQuotaUpdaterTask`: there
  is no split task for this load manager (`loadBalancerSplitIntervalMinutes` is the Extensible one's).
  So the check runs once per written load report (or broker join/leave), here in `_update_all`.
* `BundleSplitterTask.findBundlesToSplit` keeps no hit count: a bundle is selected by the first check
  that sees it over a threshold. `loadBalancerNamespaceBundleSplitConditionHitCountThreshold` is read
  only by the Extensible load manager's `DefaultNamespaceBundleSplitStrategyImpl` (its
  ServiceConfiguration doc: "only used in load balancer extension logics"); it changes nothing here.
* What the check sees is late by Pulsar's own clocks: the owner's report carries the bundle stats of
  its last `PulsarStats.updateStats` (every `statsUpdateFrequencyInSecs`, see stats_window.py) and is
  written only on a > 10 % change; the rate and throughput triggers read the bundle's long-term
  BundleData, which gains one sample per `updateAll`, i.e. per notification.
* `splitNamespaceBundle` is the leader's internal PulsarAdmin REST call, redirected to the owner
  (`NamespacesBase.internalSplitNamespaceBundleAsync` -> `NamespaceService.splitAndOwnBundle`): the
  owner takes both children's ownership, writes the local policies (CAS), releases the parent,
  re-homes the loaded topics (`BrokerService.refreshTopicToStatsMaps`) and, with
  `loadBalancerAutoUnloadSplitBundlesEnabled`, unloads the children in the background.
* Before the call the leader drops the parent's BundleData and its persisted node; the children have
  none. Placement after the unload uses `getBundleDataOrDefault` (the default 50 msg/s) and the
  children get data of their own only when a report lists them: their new owner's first stats update
  after it loaded their topics, then its next report. Until its own next stats update the old owner's
  reports still list the parent (`bundleStats` of the previous update), so `updateBundleData` brings the
  parent back on default data; the "Bundle has been removed" check of `checkNamespaceBundleSplit`
  keeps it from being split twice.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from emulator.model.loaddata import BundleData, LocalBrokerData
from emulator.model.policies import PolicyView
from emulator.runtime import Actor, ActorSystem, Reply

from emulator.model.bundles import parse_bundle
from emulator.model.loaddata import namespace_of
from emulator.runtime import ActorDead, AskTimeout
from shedders.base import find_bundles_for_unloading_explained

from emulator.cluster import paths
from emulator.cluster.events import (
    Assignment,
    assignment_event,
    BundleNumbers,
    LeaderStarted,
    SelectionTrace,
    ShedderWarmed,
    SheddingPlan,
    SheddingSkipped,
    Split,
    SplitSkipped,
    Unload,
    UnloadSkipped,
)
from emulator.cluster.messages import (AdminResult, LookupFailure, SelectBrokerForAssignment, SplitBundle, UnloadBundle,
                       WarmShedder)
from emulator.cluster.metadata_client import MetadataClient, MetadataStoreError
from emulator.cluster.metadata_messages import Notification
from emulator.cluster.load_manager import MODULAR
from .follower_view import FollowerView
from .modular_load_manager import ModularLoadManager
from emulator.cluster.policy_cache import PolicyCache
from emulator.cluster.strategy_pair import create_pair
from emulator.cluster import user_faults
from emulator.cluster.user_faults import UserCodeError, call_user

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.broker import Broker

_encode = msgspec.json.encode


class _Apply(msgspec.Struct):
    """Result of reading one broker's report after a notification (None: node gone)."""

    broker: str | None
    report: LocalBrokerData | None
    membership: list[str] | None = None


class LoadManagerLeader(Actor):
    def __init__(self, name: str, system: ActorSystem, *, broker: "Broker",
                 placement_name: str | None = None, shedder_name: str | None = None,
                 watching_since: float = math.inf) -> None:
        super().__init__(name, system)
        self.broker = broker
        # since when the broker's load manager watched the reports as a follower (follower_view.py)
        self.watching_since = watching_since
        self.conf = broker.conf
        self.events = broker.events
        self.md = MetadataClient(self, broker.md.store_name)
        self.placement, self.shedder = create_pair(
            placement_name or self.conf.load_balancer_load_placement_strategy,
            shedder_name or self.conf.load_balancer_load_shedding_strategy, rng=self.rng)
        self.lm: ModularLoadManager | None = None
        # bundleBrokerAffinityMap: bundle RANGE -> destination broker, set by unload-with-destination
        # and consumed by the next assignment of that range (see `_select`)
        self.affinity: dict[str, str] = {}
        self._split_running = False
        self._split_again = False
        # the last bundle counts made without a read: (namespaces, factory version, counts)
        self._split_counts: tuple[list[str], int, dict[str, int]] | None = None
        self._reports: dict[str, LocalBrokerData | None] = {}
        self._available: list[str] = []
        self.updates = 0
        self._policies = PolicyView()

    # ------------------------------------------------------------------ start: rebuild from the store

    async def on_start(self) -> None:
        # a follower keeps the load data it built from the reports (follower_view.py); a broker that
        # was not watching them rebuilds from the persisted bundle data
        followers = self._followers()
        inherited = followers.bundle_data_for(self.watching_since)
        persisted = inherited if inherited is not None else await self._read_persisted_bundle_data()
        self.lm = ModularLoadManager(
            self.conf, self.placement, self.rng, broker_id=self.broker.broker_id,
            persisted_bundle_data=persisted, shedding_strategy=self.shedder,
        )
        self.policy_cache = PolicyCache(self.md, self.broker.cluster_name, self.conf)
        await self.md.watch(paths.BROKERS)
        await self.policy_cache.watch()
        await self._read_policies()
        self._available = await self.md.children(paths.BROKERS)
        for b in self._available:
            self._reports[b] = await self._read_report(b)
        self._update_all()
        self.start_soon(self._bundle_data_writer)
        self.start_soon(self._shedding_loop)
        self.events.emit(LeaderStarted(broker=self.broker.broker_id, brokers=len(self._available),
                                       bundle_data=len(persisted), followers_view=inherited is not None))

    def _followers(self) -> FollowerView:
        shared = self.broker.load_manager_shared
        view = shared.get(MODULAR)
        if not isinstance(view, FollowerView):
            view = shared[MODULAR] = FollowerView()
        return view

    async def _read_persisted_bundle_data(self) -> dict[str, BundleData]:
        out: dict[str, BundleData] = {}
        for tenant in await self.md.children(paths.BUNDLE_DATA):
            for ns in await self.md.children(f"{paths.BUNDLE_DATA}/{tenant}"):
                base = f"{paths.BUNDLE_DATA}/{tenant}/{ns}"
                for rng in await self.md.children(base):
                    node = await self.md.get(f"{base}/{rng}")
                    if node is not None:
                        out[f"{tenant}/{ns}/{rng}"] = msgspec.json.decode(node.data, type=BundleData)
        return out

    async def _read_policies(self) -> None:
        """The policies the filters apply (isolation, anti-affinity groups, failure domains), read at
        start (ModularLoadManagerImpl.initialize) and again after every change under
        /admin/local-policies or /admin/clusters/<cluster> (policy_cache.py)."""
        self._policies = await self.policy_cache.refresh()
        if self.lm is not None:
            self.lm.policies = self._policies

    async def _read_report(self, broker: str) -> LocalBrokerData | None:
        node = await self.md.get(paths.broker_path(broker))
        return None if node is None else msgspec.json.decode(node.data, type=LocalBrokerData)

    # ------------------------------------------------------------------ messages

    async def receive(self, msg: Any, reply: Reply) -> None:
        kind = type(msg)
        if kind is SelectBrokerForAssignment:
            try:
                reply.ok(self._select(msg))
            except UserCodeError as fault:  # the user's strategy raised: that lookup fails
                user_faults.report(self.events, self.log, fault, outcome="lookup failed",
                                   bundle=msg.bundle)
                reply.error(fault)
        elif kind is Notification:
            self._on_notification(msg)
        elif kind is _Apply:
            self._apply(msg)
        elif kind is WarmShedder:
            reply.ok(self.warm_shedder(msg.cycles))
        else:
            raise TypeError(f"{self.name}: unexpected message {kind.__name__}")

    def _select(self, msg: SelectBrokerForAssignment) -> str | None:
        """getLeastLoaded: a destination set by unload-with-destination wins once (keyed by the bundle
        range, as Pulsar's bundleBrokerAffinityMap), else selectBrokerForAssignment.

        Where Pulsar consumes the affinity is not confirmed (pulsar-protocol.md §8 item 2); with
        `emulator_unload_destination_affinity = false` the destination is recorded but ignored."""
        assert self.lm is not None
        rng_key = msg.bundle.rsplit("/", 1)[1]
        dest = self.affinity.pop(rng_key, None)
        if dest is not None and getattr(self.conf, "emulator_unload_destination_affinity", True) \
                and dest in self._available:
            self.events.emit(Assignment(bundle=msg.bundle, broker=dest, leader=self.broker.broker_id,
                                        local=False, affinity=True, trace=None))
            # the destination stands for the next lookups of the bundle too, until the owner's report
            # lists it, as a selection's preallocation does: without it a second client's lookup,
            # before the destination took the bundle, made a fresh choice that never took effect
            self.lm.preallocate_destination(msg.bundle, dest)
            return dest
        broker, trace = self.lm.select_broker_for_assignment(
            msg.bundle, non_persistent=msg.non_persistent
        )
        self.events.emit(assignment_event(bundle=msg.bundle, broker=broker, leader=self.broker.broker_id,
                                          local=False, trace=trace))
        return broker

    def _on_notification(self, note: Notification) -> None:
        """handleDataNotification: any change under /loadbalance/brokers -> list the live brokers and
        reap preallocations to dead ones, then (re-read the changed report and) updateAll."""
        path = note.path
        if self.policy_cache.on_notification(note):
            self.start_soon(self._read_policies)
            return
        if not path.startswith(paths.BROKERS):
            return
        changed = None if path == paths.BROKERS else path.rsplit("/", 1)[1]
        self.start_soon(self._read_and_apply, changed)

    async def _read_and_apply(self, broker: str | None) -> None:
        membership = await self.md.children(paths.BROKERS)
        report = await self._read_report(broker) if broker is not None else None
        self.tell(_Apply(broker, report, membership=membership))

    def _apply(self, msg: _Apply) -> None:
        assert self.lm is not None
        if msg.membership is not None:
            # reapDeadBrokerPreallocations runs before updateAll, while the dead broker's data is
            # still in loadData (otherwise its preallocations would never be found again)
            self.lm.reap_dead_broker_preallocations(msg.membership)
            self._available = sorted(msg.membership)
            for gone in set(self._reports) - set(msg.membership):
                del self._reports[gone]
        if msg.broker is not None:
            if msg.report is None:
                self._reports.pop(msg.broker, None)
            elif msg.broker in self._available:
                self._reports[msg.broker] = msg.report
        self._update_all()

    def _update_all(self) -> None:
        assert self.lm is not None
        result = self.lm.update_all(self._available, self._reports,
                                    self.broker.owned_bundle_names())
        self.updates += 1
        self._followers().record(self.lm, self.system.clock.now())
        removed = getattr(result, "removed_bundles", ()) or ()
        for bundle in removed:
            self.start_soon(self._delete_quietly, paths.bundle_data_path(bundle))
        for broker in getattr(result, "dead_brokers", ()) or ():
            self.start_soon(self._delete_quietly, paths.time_average_path(broker))
        self._request_split_check()

    async def _delete_quietly(self, path: str) -> None:
        try:
            await self.md.delete(path)
        except MetadataStoreError:
            pass

    def warm_shedder(self, cycles: int) -> int:
        """A scenario's warm start: the shedder's history as after `cycles` shedding cycles over the
        current load data. A shedder with history says how in `warm_up(load_data, conf, cycles)`
        (ThresholdShedder: its EMA step per cycle, as getBrokerAvgUsage makes it); AvgShedder's hit
        counters start empty as in Pulsar, and shedders without history have nothing to fill. A
        placement strategy with history of its own (LeastResourceUsageWithWeight's per-broker EMA)
        is warmed the same way, by its `warm_up(load_data, conf)`. Returns the number of brokers the
        shedder saw."""
        assert self.lm is not None
        warm_up = getattr(self.shedder, "warm_up", None)
        load_data = self.lm.shedding_view(self.shedder)
        if warm_up is not None and cycles > 0:
            warm_up(load_data, self.conf, cycles)
        warm_placement = getattr(self.placement, "warm_up", None)
        if warm_placement is not None and self.placement is not self.shedder:   # AvgShedder: both roles
            warm_placement(self.lm.load_data, self.conf)
        self.events.emit(ShedderWarmed(shedder=type(self.shedder).__name__, cycles=cycles,
                                       brokers=len(load_data.broker_data)))
        return len(load_data.broker_data)

    # ------------------------------------------------------------------ periodic bundle-data writer

    async def _bundle_data_writer(self) -> None:
        """LoadResourceQuotaUpdaterTask -> writeBundleDataOnZooKeeper, at a fixed rate."""
        interval = self.conf.load_balancer_resource_quota_update_interval_minutes * 60.0
        while True:
            await anyio.sleep(interval)
            await self.write_bundle_data()

    async def write_bundle_data(self) -> None:
        assert self.lm is not None
        self.lm.update_bundle_data(self.broker.owned_bundle_names())
        for bundle, data in self.lm.bundle_data_to_write().items():
            await self.md.set(paths.bundle_data_path(bundle), _encode(data))
        for broker, bd in sorted(self.lm.load_data.broker_data.items()):
            await self.md.set(paths.time_average_path(broker), _encode(bd.time_average_data))

    # ------------------------------------------------------------------ load shedding

    async def _shedding_loop(self) -> None:
        """LoadSheddingTask (3.x): fixed delay of loadBalancerSheddingIntervalMinutes after each run;
        a user's shedder (or placement, picking a destination) that raises skips that cycle.

        The interval is read every round, so a dynamic change applies from the next one."""
        while True:
            await anyio.sleep(self.conf.load_balancer_shedding_interval_minutes * 60.0)
            try:
                await self.do_load_shedding()
            except UserCodeError as fault:  # LoadSheddingTask.run: logged, the next cycle runs
                user_faults.report(self.events, self.log, fault, outcome="shedding cycle skipped")

    async def do_load_shedding(self) -> list[tuple[str, str]]:
        """ModularLoadManagerImpl.doLoadShedding (pulsar-algorithms.md §8, steps 1-5). Returns the
        (broker, bundle) pairs actually unloaded."""
        assert self.lm is not None
        conf = self.conf
        now_ms = self.system.clock.now_ms()
        if not (conf.load_balancer_enabled and conf.load_balancer_shedding_enabled):
            return []
        if len(self._available) <= 1:
            self.events.emit(SheddingSkipped(reason="one broker or less", brokers=list(self._available)))
            return []
        # the shedder reads `lm.load_data`: its bundle windows current unless it declared it reads none
        recent = self.lm.shedding_view(self.shedder).recently_unloaded_bundles
        grace_ms = conf.load_balancer_shedding_grace_period_minutes * 60_000
        for bundle, t in list(recent.items()):
            if t < now_ms - grace_ms:
                del recent[bundle]
        decided = call_user("shedding", self.shedder, find_bundles_for_unloading_explained,
                            self.shedder, self.lm.load_data, conf)
        plan = decided.bundles
        self.events.emit(SheddingPlan(shedder=type(self.shedder).__name__, plan=list(plan),
                                      explanation=decided.explanation))
        done: list[tuple[str, str]] = []
        excluded = set(conf.load_balancer_shedding_excluded_namespaces)
        for broker, bundle in plan:
            stats = self._bundle_numbers(bundle)
            if namespace_of(bundle) in excluded:
                self._skip(broker, bundle, "namespace excluded from shedding", stats)
                continue
            if not self.lm.should_namespace_policies_unload(bundle, broker):
                self._skip(broker, bundle, "namespace policies leave no other broker", stats)
                continue
            if not self.lm.should_anti_affinity_namespace_unload(bundle, broker):
                self._skip(broker, bundle, "anti-affinity forbids the unload", stats)
                continue
            dest, trace = self.lm.select_broker(bundle)
            if dest is None:
                self._skip(broker, bundle, "no destination broker", stats, trace=trace)
                continue
            if dest == broker:
                self._skip(broker, bundle, "destination is the current owner", stats, trace=trace)
                continue
            if dest not in self._available:
                # the admin call's NamespacesBase.setNamespaceBundleAffinityAsync: the destination must be
                # among getAvailableBrokersAsync(), else NotAllowedException and no unload (the leader's
                # load data can still hold a broker that left since its last update)
                self._skip(broker, bundle, "unload failed: Not allowed unload namespace bundle to inactive "
                           f"destination broker {dest}", stats, trace=trace)
                continue
            self.affinity[bundle.rsplit("/", 1)[1]] = dest
            result = await self.admin(broker, UnloadBundle(bundle))
            if not result.ok:
                self.affinity.pop(bundle.rsplit("/", 1)[1], None)
                self._skip(broker, bundle, f"unload failed: {result.message}", stats, trace=trace)
                continue
            recent[bundle] = self.system.clock.now_ms()
            done.append((broker, bundle))
            self.events.emit(Unload(broker=broker, bundle=bundle, destination=dest,
                                    shedder=type(self.shedder).__name__, bundle_data=stats,
                                    trace=trace, result=result.detail))
        self.shedder.on_unload_attempt_completed(list(plan))
        return done

    def _bundle_numbers(self, bundle: str) -> BundleNumbers | None:
        assert self.lm is not None
        data = self.lm.bundle_data_of(bundle)  # one row: this runs per planned unload and split
        if data is None:
            return None
        st, lt = data.short_term_data, data.long_term_data
        return BundleNumbers(short_msg_rate=st.msg_rate_in + st.msg_rate_out,
                             short_throughput=st.msg_throughput_in + st.msg_throughput_out,
                             long_msg_rate=lt.msg_rate_in + lt.msg_rate_out,
                             long_throughput=lt.msg_throughput_in + lt.msg_throughput_out,
                             topics=data.topics)

    def _skip(self, broker: str, bundle: str, reason: str, stats: BundleNumbers | None,
              trace: SelectionTrace | None = None) -> None:
        self.events.emit(UnloadSkipped(broker=broker, bundle=bundle, reason=reason, bundle_data=stats,
                                       trace=trace))

    async def admin(self, broker: str, op: Any, timeout: float = 120.0) -> AdminResult:
        """The leader's internal PulsarAdmin call, served by the bundle's owner."""
        try:
            return await self.broker.network.broker(broker).ask(op, timeout=timeout)
        except (ActorDead, AskTimeout) as e:
            return AdminResult(False, f"{broker}: {e}")

    # ------------------------------------------------------------------ bundle split

    def _request_split_check(self) -> None:
        """checkNamespaceBundleSplit runs at the end of every updateAll (ModularLoadManagerImpl.updateAll,
        see the module docstring); runs never overlap."""
        if self._split_running:
            self._split_again = True
            return
        self._split_running = True
        self.start_soon(self._split_checks)

    async def _split_checks(self) -> None:
        try:
            while True:
                self._split_again = False
                await self.check_namespace_bundle_split()
                if not self._split_again:
                    return
        finally:
            self._split_running = False

    async def _bundle_counts(self, namespaces: list[str]) -> dict[str, int]:
        """Each reported namespace's bundle count, from the factory's cache or read (in first-seen
        order over every report). Counts made without a read are kept with the namespaces and the
        cache's version, and reused while both are the same: the same answers without a step per
        namespace, after each of 1,000 brokers' reports."""
        factory_version = self.broker.namespace_bundles_version
        last = self._split_counts
        if last is not None and last[1] == factory_version and last[0] == namespaces:
            return last[2]
        counts: dict[str, int] = {}
        cached = self.broker.cached_namespace_bundles
        read = False
        for ns in namespaces:
            known = cached(ns)   # the factory's cache answers without a task step (most of them)
            if known is not None:
                counts[ns] = len(known)
                continue
            read = True
            try:
                counts[ns] = len(await self.broker.namespace_bundles(ns))
            except LookupFailure:  # namespace gone (or its metadata failed): nothing to split there
                counts[ns] = 1 << 30
        self._split_counts = None if read else (namespaces, factory_version, counts)
        return counts

    async def check_namespace_bundle_split(self) -> list[str]:
        """ModularLoadManagerImpl.checkNamespaceBundleSplit (pulsar-algorithms.md §6.1-6.2)."""
        assert self.lm is not None
        conf = self.conf
        if not conf.load_balancer_auto_bundle_split_enabled or len(self.lm.known_brokers) <= 1:
            return []
        counts = await self._bundle_counts(self.lm.reported_namespaces())
        to_split = self.lm.find_bundles_to_split(lambda ns: counts.get(ns, 0))
        done = []
        for bundle, owner in to_split.items():
            ns, lower, upper = parse_bundle(bundle)
            if upper - lower <= 1:
                continue
            try:
                current = await self.broker.namespace_bundles(ns)
            except LookupFailure:
                continue
            if not current.contains(bundle):
                self.events.emit(SplitSkipped(bundle=bundle, reason="Bundle has been removed"))
                continue
            numbers = self._bundle_numbers(bundle)
            self.lm.remove_bundle_data(bundle)
            await self._delete_quietly(paths.bundle_data_path(bundle))
            unload = (conf.load_balancer_auto_unload_split_bundles_enabled
                      and self.lm.should_namespace_policies_unload(bundle, owner)
                      and self.lm.should_anti_affinity_namespace_unload(bundle, owner))
            result = await self.admin(owner, SplitBundle(bundle, unload=unload, algorithm=None))
            self.events.emit(Split(bundle=bundle, broker=owner, unload=unload, ok=result.ok,
                                   message=result.message, bundle_data=numbers, result=result.detail))
            if result.ok:
                done.append(bundle)
        return done
