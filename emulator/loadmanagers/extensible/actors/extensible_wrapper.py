"""ExtensibleLoadManagerWrapper: ExtensibleLoadManagerImpl (PIP-192) behind the LoadManager seam.

Follows apache/pulsar `loadbalance/extensions/ExtensibleLoadManagerImpl.java` (master, @7301658483 in the
search index: `start`, `playLeader`, `playFollower`, `monitor`, `disableBroker`, `selectAsync`,
`assign` / `findBrokerServiceUrl`, `unloadNamespaceBundleAsync`, `splitNamespaceBundleAsync`,
`getMetrics`) and `ExtensibleLoadManagerWrapper.java` (the LoadManager calls the broker makes: report
writes, shedding and quota writes are no-ops or the scheduler's; `disableBroker` unregisters).

What each broker runs, in `start()`'s order:
1. the service-unit state channel (actors/channel.py), an actor child of the broker, over
   the cluster's channel topic (actors/topics.py), with this broker as its ChannelHost
   (actors/broker_host.py);
2. the broker load-data store's table view (every broker reads it to select) and the top-bundles
   store's producer (only the leader reads it);
3. its registration under `/loadbalance/brokers/<id>` with its BrokerLookupData (BrokerRegistryImpl),
   an ephemeral node on the broker's session, as Modular's is;
4. the two reporters every `loadBalancerReportUpdateMinIntervalMillis` (fixed rate) and the split
   scheduler every `loadBalancerSplitIntervalMinutes`;
5. the leader's role (`playLeader`): the unload scheduler, the channel's ownership monitor, fresh
   table views of both stores and forced reports; a follower (`playFollower`) closes them and also
   forces its reports. Pulsar re-checks the role every 2 min (`monitor`); here the broker's leader
   listener calls `leadership_acquired` / `leadership_lost` directly.

The broker reaches what only this manager does through its ChannelOwnership and ExtensibleMetrics
capabilities (emulator/cluster/load_manager_capabilities.py). Its parts, mixins of this one object as
the broker's services are of the broker: selection.py (selectAsync, getContext, the lookup-data cache),
admin.py (admin unload, split and stated owners through the channel), decision_events.py (the
decisions as the cluster's events).

Lookups (namespace_service.py calls `find_broker_service_url`): any broker assigns (`assign`, one
assignment in flight per bundle on each broker) by selecting with the filter pipeline and
LeastResourceUsageWithWeight and writing (Assigning, dst) to the channel; the answer is Connect(owner)
(BrokerLookupData.toLookupResult: `LookupResult.Type.BrokerUrl`, never a redirect through a leader).

Choices where the emulator differs (each named, none changes a decision):
* The channel owner is the broker's own leader election (`/loadbalance/leader`); Pulsar's Extensible
  manager elects on `/loadbalance/extension/leader` with the same mechanism (PulsarService's own
  election is skipped when the extension is on), so who leads and when are the same.
* The system topics are always available (topics.py); in Pulsar they move with the leader.
* `loadBalancerLoadSheddingStrategy` names the unload strategy as in `createNamespaceUnloadStrategy`:
  a Modular shedder's name (the default ThresholdShedder) is not a NamespaceUnloadStrategy, so, as in
  Pulsar, the error is logged and TransferShedder is used.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

import shedders
import strategies
from emulator.cluster import paths
from emulator.cluster.load_manager import (
    EXTENSIBLE,
    ChannelOwnership,
    ExtensibleMetrics,
    LoadManager,
    release_registration,
)
from emulator.cluster.messages import LookupFailure, ServerError
from emulator.cluster.metadata_client import MetadataStoreError
from emulator.model.loaddata import NamespaceBundleStats
from emulator.model.policies import PolicyView
from emulator.runtime import epoch_ms
from emulator.runtime.rng import derive_rng

from ..model.counters import AssignCounter, SplitCounter, UnloadCounter
from ..model.decisions import UnloadLabel
from ..model.load_data import BrokerLoadData, BrokerLookupData, TopBundlesLoadData
from ..model.split_strategy import DefaultNamespaceBundleSplitStrategy
from .admin import ExtensibleAdmin
from .assignment import Assigner, AssignmentFailed, NoBrokerSelectedError
from .broker_host import BrokerChannelHost
from .channel import ServiceUnitStateChannel
from .channel_types import (
    BundleDeletedError,
    ChannelNotReadyError,
    ChannelOwnerUnknownError,
    ChannelState,
    InFlightTimeoutError,
    OwnerInactiveError,
)
from .decision_events import ExtensibleDecisionEvents
from .load_data_store import LoadDataStore
from .managers import SplitManager, UnloadManager
from .metrics_source import CounterSnapshot, ExtensibleMetricsSource
from .periodic import at_fixed_rate
from .reporters import BrokerLoadDataReporter, BrokerUsage, TopBundleLoadDataReporter
from .schedulers import SplitScheduler, UnloadScheduler
from .selection import ExtensibleSelection
from .topics import ExtensibleTopics

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.broker import Broker

__all__ = ["ExtensibleLoadManagerWrapper"]

LOOKUP_ERRORS = (BundleDeletedError, InFlightTimeoutError, OwnerInactiveError, ChannelNotReadyError,
                 ChannelOwnerUnknownError, NoBrokerSelectedError, AssignmentFailed, TimeoutError,
                 MetadataStoreError)
"""What a lookup through the channel can fail with in Pulsar's terms (the channel's and the assigner's
errors, a timeout, the metadata store); any other exception is an emulator bug and is not turned into
a lookup answer."""

LEAST_RESOURCE_USAGE_WITH_WEIGHT = (
    "org.apache.pulsar.broker.loadbalance.extensions.strategy.LeastResourceUsageWithWeight")
TRANSFER_SHEDDER = "org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder"


class _TopicsOnDemand(Mapping[str, Any]):
    """bundle -> `broker._topic_stats` of each active owned bundle, computed on access."""

    def __init__(self, broker: "Broker") -> None:
        self._broker = broker

    def __getitem__(self, bundle: str) -> Any:
        o = self._broker.owned.get(bundle)
        if o is None or not o.active or o.actor is None:
            raise KeyError(bundle)
        return self._broker._topic_stats(o.actor)

    def __iter__(self) -> Iterator[str]:
        return (bundle for bundle, o in self._broker.owned.items() if o.active and o.actor is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class ExtensibleLoadManagerWrapper(ExtensibleSelection, ExtensibleAdmin, ExtensibleDecisionEvents, LoadManager,
                                   ChannelOwnership, ExtensibleMetrics):
    """One broker's ExtensibleLoadManagerImpl (see the module docstring). Its capabilities: ownership
    through the channel (ChannelOwnership: lookups, ownership checks, admin operations) and its own
    metrics and load-data view (ExtensibleMetrics). Its parts are mixins (see the module docstring)."""

    class_name = EXTENSIBLE
    broker: "Broker"

    def __init__(self, broker: "Broker", requested: str = EXTENSIBLE) -> None:
        super().__init__(broker, requested)
        self.state = "INIT"          # INIT -> RUNNING -> DISABLED (ExtensibleLoadManagerImpl.State)
        self.role: str | None = None  # "Leader" | "Follower"
        self._generation = 0          # the report tasks of this start (stop / disable end them)
        conf = broker.conf
        seed = broker.system.seed
        self.unload_counter = UnloadCounter()
        self.split_counter = SplitCounter()
        self.assign_counter = AssignCounter()
        self.strategy = strategies.create_extensible(
            LEAST_RESOURCE_USAGE_WITH_WEIGHT, derive_rng(seed, broker.broker_id + "/extensible-selection"))
        self.unload_strategy = self._create_unload_strategy(
            conf.load_balancer_load_shedding_strategy, derive_rng(seed, broker.broker_id + "/extensible-shedder"))
        if hasattr(self.unload_strategy, "counter"):
            self.unload_strategy.counter = self.unload_counter  # TransferShedder.initialize
        self.split_strategy = DefaultNamespaceBundleSplitStrategy(self.split_counter)
        self.host = BrokerChannelHost(broker, self)
        self.channel: ServiceUnitStateChannel | None = None
        self.assigner: Assigner | None = None
        self.broker_store: LoadDataStore[BrokerLoadData] | None = None
        self.top_store: LoadDataStore[TopBundlesLoadData] | None = None
        self.broker_reporter: BrokerLoadDataReporter | None = None
        self.top_reporter: TopBundleLoadDataReporter | None = None
        self.unload_manager = UnloadManager(self.unload_counter, self._now_ms)
        self.split_manager = SplitManager(self.split_counter, self._now_ms)
        self.unload_scheduler: UnloadScheduler | None = None
        self.split_scheduler: SplitScheduler | None = None
        self._lookup_data: dict[str, BrokerLookupData] = {}
        self._lookup_changes = 0
        self._lookup_loads: dict[str, asyncio.Future[None]] = {}   # reads in flight, by broker
        # a decision's available brokers (read only), made again when the registry or lookup data change
        self._available: tuple[tuple[frozenset[str], int] | None, dict[str, BrokerLookupData]] = (None, {})
        self._policies = PolicyView()
        self._last_selection: tuple[int, bool] = (0, False)   # candidates, fallback of the last select
        # the filter pipeline's last answer and what it depended on (`_filter_key`): a restart storm
        # selects tens of thousands of times between two load-data updates
        self._filtered: tuple[tuple[Any, ...], dict[str, BrokerLookupData]] | None = None
        self._unload_snapshot: CounterSnapshot[UnloadCounter] = CounterSnapshot()
        self._split_snapshot: CounterSnapshot[SplitCounter] = CounterSnapshot()

    def _create_unload_strategy(self, name: str, rng: Any) -> Any:
        """`createNamespaceUnloadStrategy`: the configured class if it is a NamespaceUnloadStrategy,
        else (logged as Pulsar logs it) TransferShedder."""
        try:
            return shedders.create_extensible(name, rng)
        except Exception as e:
            self.broker.log.error("create namespace unload strategy failed. using TransferShedder instead.",
                                  strategy=name, error=f"{type(e).__name__}: {e}")
            return shedders.create_extensible(TRANSFER_SHEDDER, rng)

    def _now_ms(self) -> int:
        return epoch_ms(self.broker.system.clock)

    # ================================================================== lifecycle

    async def start(self) -> None:
        b = self.broker
        topics = b.load_manager_shared.get(EXTENSIBLE)
        if not isinstance(topics, ExtensibleTopics):
            topics = b.load_manager_shared[EXTENSIBLE] = ExtensibleTopics(b.system)
        channel = self.channel = ServiceUnitStateChannel(
            f"{b.broker_id}/channel", b.system, host=self.host, topic=topics.channel(), conf=b.conf)
        b.system.spawn(channel, parent=b)
        self.assigner = Assigner(channel, self, self.assign_counter, self._assigned)
        self.broker_store = LoadDataStore(topics.broker_load_data(), channel)
        self.top_store = LoadDataStore(topics.top_bundles_load_data(), channel)
        channel.load_data_stores = (self.broker_store, self.top_store)
        for listener in (self.unload_manager.handle_event, self.split_manager.handle_event):
            channel.listen(listener)
        await channel.start()
        await self.broker_store.start_table_view()
        await self._register()
        self.broker_reporter = BrokerLoadDataReporter(b.broker_id, self.broker_store, b.conf, self._usage,
                                                      self._now_ms)
        self.top_reporter = TopBundleLoadDataReporter(b.broker_id, self.top_store, b.conf, self._bundle_stats,
                                                      self._now_ms, lambda: self._policies)
        channel.listen(self.top_reporter.handle_event)
        self.unload_scheduler = UnloadScheduler(channel, self.unload_manager, self.unload_strategy, b.conf,
                                                self._context, self.unload_counter, self._unload_run)
        self.split_scheduler = SplitScheduler(channel, self.split_manager, self.split_strategy, b.conf,
                                              self._split_context, self._split_bundle_stats, self._bundle_counts,
                                              self._split_topics, self._split_run)
        self.state = "RUNNING"
        self._generation += 1
        generation = self._generation
        interval = b.conf.load_balancer_report_update_min_interval_millis / 1000.0
        for reporter in (self.broker_reporter, self.top_reporter):
            b.start_soon(at_fixed_rate, lambda: b.now, interval, interval, reporter.report,
                         lambda: self._generation == generation)
        self.split_scheduler.start(b)
        if b.is_leader:
            await self._play_leader()
        else:
            await self._play_follower()

    async def _register(self) -> None:
        """BrokerRegistryImpl.register: the ephemeral `/loadbalance/brokers/<id>` with BrokerLookupData."""
        b = self.broker
        data = BrokerLookupData(
            broker_id=b.broker_id, web_service_url=b.web_url, pulsar_service_url=b.service_url,
            load_manager_class_name=EXTENSIBLE, start_timestamp=epoch_ms(b.system.clock),
            broker_version=b.local_data.broker_version_string or None)
        await b.md.acquire_lock(paths.broker_path(b.broker_id), msgspec.json.encode(data))
        self.registered = True
        await b._refresh_available_brokers()
        await self._refresh_lookup_data()

    async def stop(self) -> None:
        """close(): the report tasks, schedulers, channel and registration go."""
        self._generation += 1
        self.leadership_lost()
        if self.split_scheduler is not None:
            self.split_scheduler.close()
        self.unload_manager.close()
        self.split_manager.close()
        if self.channel is not None:
            self.channel.close()
            self.channel.kill()
        self.state = "INIT"
        await release_registration(self)

    async def disable_broker(self) -> None:
        """disableBroker(): stop reporting, hand every bundle over (`cleanOwnerships`: the channel
        disabled, then `doCleanup(self, gracefully)`), unregister; bundles the hand-over left here
        are closed (their clients go back to a lookup)."""
        self.state = "DISABLED"
        self._generation += 1
        channel = self.channel
        if channel is not None and channel.alive:
            channel.channel_state = ChannelState.DISABLED
            try:
                await channel.do_cleanup(self.broker.broker_id, gracefully=True)
            except (TimeoutError, ChannelNotReadyError, ChannelOwnerUnknownError) as e:
                # doCleanup's own failures are logged and the broker keeps shutting down; anything
                # else is an emulator bug and fails the broker actor (exit 3)
                self.broker.log.error("Failed to clean the ownerships", error=repr(e))
            # the hand-over's Releasing -> Assigning steps run on this channel: let them finish
            await channel.wait_idle(self.broker.conf.namespace_bundle_unloading_timeout_ms / 1000.0)
        await release_registration(self)
        for bundle in list(self.broker.owned):
            await self.host.close(bundle, True, None)

    async def on_session_reestablished(self) -> None:
        if self.channel is not None:
            self.channel.on_metadata_session_event("SessionReestablished")
        if self.registered:
            b = self.broker
            try:
                await self._register()
            except MetadataStoreError as e:
                b.log.warning("could not re-register after session loss", error=str(e))

    def on_session_lost(self) -> None:
        if self.channel is not None:
            self.channel.on_metadata_session_event("SessionLost")

    def on_broker_registry_event(self, broker: str, created: bool) -> None:
        """BrokerRegistry listeners: the channel's (clean-up) and the lookup-data cache's."""
        if self.channel is not None and self.channel.alive:
            self.channel.on_broker_registry_event(broker, created)
        if created:
            self.broker.start_soon(self._refresh_lookup_data)
        elif self._lookup_data.pop(broker, None) is not None:
            self._lookup_changes += 1

    # ================================================================== roles

    def leadership_acquired(self) -> None:
        if self.state == "RUNNING":
            self.broker.start_soon(self._play_leader)

    def leadership_lost(self) -> None:
        if self.state == "RUNNING" and self.role == "Leader":
            self.broker.start_soon(self._play_follower)
        elif self.unload_scheduler is not None:
            self.unload_scheduler.close()
            if self.channel is not None:
                self.channel.play_follower()

    def leader_ready(self) -> bool:
        return self.role == "Leader"

    async def _play_leader(self) -> None:
        """playLeader(): fresh views of both stores, the unload scheduler, the ownership monitor,
        then a forced report of both."""
        if self.state != "RUNNING" or not self.broker.is_leader:
            return
        assert self.broker_store and self.top_store and self.unload_scheduler and self.channel
        await self.broker_store.init()
        await self.top_store.init()
        self.unload_scheduler.start(self.broker)
        self.channel.play_leader()
        self.role = "Leader"
        await self._force_reports()

    async def _play_follower(self) -> None:
        """playFollower(): the unload scheduler and monitor stop, a fresh broker-load view, no
        top-bundles view; a forced report of both."""
        if self.state != "RUNNING":
            return
        assert self.broker_store and self.top_store and self.unload_scheduler and self.channel
        self.unload_scheduler.close()
        self.channel.play_follower()
        await self.broker_store.init()
        self.top_store.close_table_view()
        self.role = "Follower"
        await self._force_reports()

    async def _force_reports(self) -> None:
        if self.broker_reporter is not None and self.top_reporter is not None:
            await self.broker_reporter.report(force=True)
            await self.top_reporter.report(force=True)

    # ================================================================== reporter inputs

    def _usage(self) -> BrokerUsage:
        """`LoadManagerShared.getSystemResourceUsage` + `pulsarStats.getBrokerStats()`: the broker's
        local data as the stats windows and host samples left it (local_data.py)."""
        b = self.broker
        b._update_local_data()
        d = b.local_data
        return BrokerUsage(cpu=d.cpu, memory=d.memory, direct_memory=d.direct_memory,
                           bandwidth_in=d.bandwidth_in, bandwidth_out=d.bandwidth_out,
                           msg_throughput_in=d.msg_throughput_in, msg_throughput_out=d.msg_throughput_out,
                           msg_rate_in=d.msg_rate_in, msg_rate_out=d.msg_rate_out,
                           bundle_count=d.num_bundles, topics=d.num_topics)

    def _bundle_stats(self) -> tuple[int, dict[str, NamespaceBundleStats]]:
        """`pulsarStats.getUpdatedAt()` and `getBundleStats()` as of the last stats update."""
        b = self.broker
        w = b.windows
        if w is None:   # emulator_instant_stats: every read is a fresh update
            b._update_local_data()
            return self._now_ms(), dict(b.local_data.last_stats)
        clock = b.system.clock
        start_ms = epoch_ms(clock) - clock.now_ms()
        return start_ms + math.floor(w.stats_updated_at * 1000.0 + 1e-6), dict(w.bundle_stats)

    def _split_bundle_stats(self) -> dict[str, NamespaceBundleStats]:
        owned = self.broker.owned
        return {k: v for k, v in self._bundle_stats()[1].items() if k in owned and owned[k].active}

    def _bundle_counts(self) -> dict[str, int]:
        b = self.broker
        return {ns: len(nb.names) for ns, nb in b._ns_bundles.items()}

    def _split_topics(self) -> Mapping[str, Any]:
        """Each owned bundle's topics with their stats, made when the split strategy asks for a
        bundle (only for the one it splits: a run sees every bundle of the broker, once a minute),
        within the same instant (the strategy runs without awaiting)."""
        return _TopicsOnDemand(self.broker)

    def extensible_metrics(self) -> ExtensibleMetricsSource | None:
        """What `getMetrics()` renders for this broker. The broker load data is the reporter's last
        computed value: Pulsar's getMetrics calls `generateLoadData()`, which moves the EMA on every
        scrape; here a scrape changes nothing (a recorded run decides as an unrecorded one)."""
        channel = self.channel
        if channel is None or self.state == "INIT":
            return None
        reporter = self.broker_reporter
        return ExtensibleMetricsSource(
            unload_counter=self._unload_snapshot.counter, split_counter=self._split_snapshot.counter,
            assign_counter=self.assign_counter, channel_counters=channel.counters,
            broker_load_data=reporter.local if reporter is not None and reporter.published else None,
            is_leader=self.role == "Leader", owned_service_units=len(channel.owned_service_units()))

    async def find_broker_service_url(self, bundle: str) -> str:
        """findBrokerServiceUrl -> assign: the bundle's owner, assigned now if it has none."""
        if self.assigner is None or self.state != "RUNNING":
            raise LookupFailure(ServerError.SERVICE_NOT_READY, "The load manager is not running")
        try:
            return await self.assigner.assign(bundle)
        except LookupFailure:
            raise
        except LOOKUP_ERRORS as e:   # the lookup's exceptionally: handleLookupError -> ServiceNotReady
            raise LookupFailure(ServerError.SERVICE_NOT_READY, f"{type(e).__name__}: {e}") from None

    async def check_ownership(self, bundle: str) -> bool:
        """checkOwnershipAsync: the channel's owner of `bundle` (waiting while it is in flight) is this
        broker; if so the bundle is served here from now on (the Owned value's `own` may not have run
        yet in this instant)."""
        channel = self.channel
        if channel is None or self.state != "RUNNING":
            return False
        try:
            owner = await channel.get_owner(bundle)
        except LOOKUP_ERRORS:   # deleted, in-flight timeout, inactive owner: not served here
            return False
        if owner != self.broker.broker_id:
            return False
        return self.host.own_now(bundle)

    def is_centralized(self) -> bool:
        return False

    async def get_least_loaded(self, bundle: str, non_persistent: bool) -> str | None:
        return await self.select(bundle, frozenset())

    # ================================================================== the rest of LoadManager

    def generate_load_report(self) -> Any:
        """ExtensibleLoadManagerWrapper.generateLoadReport: `null` (the data is BrokerLoadData)."""
        return None

    async def write_load_report(self, force: bool = False) -> bool:
        """writeLoadReportOnZookeeper: a no-op (the reporters publish to the load-data topics)."""
        return False

    async def do_load_shedding(self) -> list[tuple[str, str]]:
        """doLoadShedding -> the unload scheduler's `execute()` (on the leader)."""
        if self.unload_scheduler is None or self.role != "Leader":
            return []
        await self.unload_scheduler.execute()
        return [(d.unload.source_broker, d.unload.service_unit) for d in self.unload_scheduler.last_decisions
                if d.label is UnloadLabel.SUCCESS and d.unload is not None]

    def set_namespace_bundle_affinity(self, bundle: str, broker: str) -> None:
        """No affinity map: an unload with a destination is a transfer (unload_namespace_bundle)."""

    # The base's defaults, as ExtensibleLoadManagerWrapper answers: no resource-quota write, no
    # doNamespaceBundleSplit (the split scheduler runs on its own), no force flag, the registry as
    # the available brokers, no leader actor.

    def broker_load_data_view(self) -> dict[str, BrokerLoadData]:
        """The broker load-data table view as this broker reads it (monitor --extensions)."""
        return dict(self.broker_store.items()) if self.broker_store is not None else {}
