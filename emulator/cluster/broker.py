"""Broker actor: the shell that wires a broker's services together, as PulsarService and BrokerService do.

The services are written one per module, each a part of this one actor (broker_base.py says why):

* namespace_service.py: lookups (ServerCnx.handleLookup, NamespaceService.findBrokerServiceUrl /
  searchForCandidateBroker);
* ownership.py: OwnershipCache (acquire the `/namespace/<bundle>` lock, unload, split) over the bundle
  factory (bundle_factory.py);
* server_cnx.py: producers and consumers;
* leader_election.py: `/loadbalance/leader`;
* local_data.py: stats windows and the broker's LocalBrokerData;
* the load manager, behind the seam of load_manager.py: `load_manager` is created by
  `load_manager.create(loadManagerClassName)` and replaced as a whole when that key changes
  (BrokerService's configuration listener: create the new one, stop the old one, start the new one,
  set it); `capabilities` are its named capabilities (load_manager_capabilities.py), resolved when it
  is set, which the broker's parts and the observers read instead of probing the manager.

This module holds what PulsarService does between them: the start-up order, the message dispatch, the
metadata notifications, the 5 s LoadReportUpdaterTask, session loss, the stop modes and the live switch.

The live switch: every broker watches `/admin/configuration` (its `/admin` watch covers it); a change
there runs the listener if `loadManagerClassName` no longer names the class its load manager was made
for. The value is read from the cluster's ServiceConfig, which `Cluster.set_config` changed before
writing the node (every broker shares it), so the notification is the trigger and costs no read. What
the old manager held goes with its `stop()` (its registration lock under /loadbalance/brokers, a leader's
load data and timers); the new one registers afresh with its own report shape and, on the leader, starts
its leader-only work from the store (modular_wrapper.py, noop_load_manager.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import msgspec

from emulator.model.config import ServiceConfig
from emulator.model.loaddata import LocalBrokerData, default_advertised_listeners
from emulator.runtime import ActorSystem, Reply, sleep

from . import bookkeeper_open
from . import load_manager as load_managers
from . import paths
from .bookkeeper import Bookies, LedgerFenced
from .broker_base import BrokerStats
from .decoded import DecodeCache
from .events import (
    BrokerCrashed,
    BrokerStarted,
    BrokerStartFailed,
    BrokerStopped,
    BrokerStopping,
    ClusterEvents,
    LoadManagerChanged,
    LoadManagerSwitchUnsupported,
    SessionLost,
    SessionReestablished,
)
from .capacity import Capacity
from .latency import Latencies, LatencySampler
from .leader_election import LeaderBroker, LeaderElection
from .load_manager import Capabilities, ClusterShared, LoadManager
from .load_manager_switch import MIGRATION_DOCS, switch_supported, unsupported_switch_message
from .load_source import LoadSource
from .local_data import BrokerLoadData
from .messages import (
    AcquireBundle,
    AdminError,
    AdminResult,
    Attach,
    Detach,
    LookupTopic,
    SplitBundle,
    UnloadBundle,
    WarmStart,
)
from .metadata_client import MetadataClient, MetadataStoreError
from .metadata_store import MetadataStore, metadata_session_timeout
from .metadata_messages import Notification, SessionEvent
from .namespace_service import NamespaceService
from .network import Network, host_of, service_url_of, web_url_of
from .ownership import NamespaceEphemeralData, OwnedBundle, OwnedBundles
from .policy_cache import PolicyCache
from .redirect_manager import RedirectView
from .server_cnx import ServerCnx
from .topic_loader import TopicLoader

__all__ = ["Broker", "BrokerStats", "LeaderBroker", "NamespaceEphemeralData", "OwnedBundle"]


class Broker(NamespaceService, ServerCnx, LeaderElection, BrokerLoadData):
    def __init__(
        self,
        broker_id: str,
        system: ActorSystem,
        *,
        conf: ServiceConfig,
        network: Network,
        load_source: LoadSource,
        events: ClusterEvents,
        placement: str | None = None,
        shedder: str | None = None,
        store_name: str = "metadata-store",
        report_interval: float = 5.0,
        close_time: float = 0.0,
        close_time_per_topic: float = 0.0,
        decoded: DecodeCache | None = None,
        latencies: Latencies | None = None,
        capacity: Capacity | None = None,
        cluster_name: str = "cluster",
        load_manager_shared: dict[str, ClusterShared] | None = None,
        bookies: Bookies | None = None,
    ) -> None:
        super().__init__(broker_id, system)
        # shared with the cluster's other brokers: what they decode, they only read
        self.decoded = decoded if decoded is not None else DecodeCache()
        self.broker_id = broker_id
        self.conf = conf
        self.network = network
        self.load_source = load_source
        self.events = events
        # the leader's placement and shedding strategies, when not conf's (ClusterSettings)
        self.placement = placement
        self.shedder = shedder
        self.report_interval = report_interval
        self.close_time = close_time
        self.close_time_per_topic = close_time_per_topic
        self.closing = False
        # operation latencies (latency.py); without a model, the two close times above and no other
        self.latency = LatencySampler(
            latencies or Latencies.zero(bundle_close=close_time, topic_close=close_time_per_topic),
            system.seed, broker_id)
        # the shared capacities (capacity.py); without them, unlimited (the cost-free cluster)
        self.capacity = capacity or Capacity.unlimited()
        # the cluster's bookies (bookkeeper.py); a broker made alone gets its own
        self.bookies = bookies or Bookies(self.capacity.bookkeeper, system.seed)
        self.topic_loader: TopicLoader = bookkeeper_open.topic_loader(self, self.bookies)
        self.md = MetadataClient(self, store_name)
        self.cluster_name = cluster_name
        # what a load manager keeps once per cluster (load_manager.ClusterShared), shared by its brokers
        self.load_manager_shared = load_manager_shared if load_manager_shared is not None else {}
        # the policies a local decision applies; refreshed only when one is made (_select_locally)
        self.policy_cache = PolicyCache(self.md, cluster_name, conf)
        self.service_url = service_url_of(broker_id)
        self.web_url = web_url_of(broker_id)
        self._self_owner_info = msgspec.json.encode(
            NamespaceEphemeralData(native_url=self.service_url, http_url=self.web_url)
        )
        self.stats = BrokerStats()
        # leader election
        self.election_started = False
        self.is_leader = False
        self.leader_id: str | None = None
        # what this broker knows of the cluster
        self.available_brokers: frozenset[str] = frozenset()
        self.redirect_view = RedirectView(self.decoded)   # the registrations' classes (redirect_manager.py)
        self._init_bundle_factory()
        self.owned = OwnedBundles()
        self._init_namespace_service()
        self.local_data = LocalBrokerData(
            web_service_url=self.web_url,
            pulsar_service_url=self.service_url,
            load_manager_class_name=conf.load_manager_class_name,
            advertised_listeners=default_advertised_listeners(self.service_url),
        )
        self.splitting = set()
        self.windows = None
        self._windows_seen = (-1, -1)
        self._tables_epoch = None
        self.started = anyio.Event()
        # LoadManager.create (PulsarService.start): the warning of a fallback is logged here, once
        self._use_load_manager(load_managers.create(conf.load_manager_class_name, self))
        self._switching = False
        # the ZooKeeper client's reconnect backoff (_reopen_session): when the last session was made,
        # and how many attempts in a row have failed
        self._session_opened_at: float | None = None
        self._session_retries = 0

    def _use_load_manager(self, manager: LoadManager) -> None:
        """Take `manager` as this broker's load manager (Pulsar's AtomicReference set) and resolve its
        capabilities, once: what the broker and the observers ask of it beyond `LoadManager` is read
        from `capabilities` (load_manager_capabilities.py), as Pulsar checks
        `isLoadManagerExtensionEnabled`, never by probing the manager's attributes."""
        self.load_manager = manager
        self.capabilities = Capabilities.of(manager)

    # ================================================================== lifecycle

    async def on_start(self) -> None:
        """Pulsar's startup order: metadata session, binary port, leader election, then the load manager.

        The process first takes `broker_start` (JVM, BookKeeper client, managed-ledger factory, web
        service: PulsarService.start up to the load manager); the metadata steps after it take their
        metadata_op each."""
        start_up = self.latency("broker_start")
        if start_up > 0:
            await anyio.sleep(start_up)
        await self.md.open_session(session_events=True)
        self.network.listen(self.broker_id, self)
        await self.md.watch(paths.LEADER)
        # registrations come and go (Created, Deleted); the reports written there are the leader's
        await self.md.watch(paths.BROKERS, kinds=("Created", "Deleted"))
        # /admin/local-policies, /admin/clusters/<cluster> and /admin/configuration
        await self.policy_cache.watch()
        self.election_started = True
        try:
            if self.conf.emulator_first_leader not in ("", self.broker_id):
                await self._await_first_leader()
            await self._elect()
            self._start_windows()
            await self.load_manager.start()   # PulsarService.startLoadManagementService
        except MetadataStoreError as e:
            # PulsarBrokerStarter: "Failed to start pulsar service", then Runtime.halt(1): the process
            # is gone and its session expires on its own. Pulsar's outcome, not an emulator bug (e.g.
            # LockBusy: the previous process's registration is still held by its unexpired session)
            self.log.error("Failed to start pulsar service", error=repr(e))
            self.events.emit(BrokerStartFailed(broker=self.broker_id, error=repr(e)))
            self.crash()
            return
        self.start_soon(self._report_loop)
        self.started.set()
        self.events.emit(BrokerStarted(broker=self.broker_id))
        if self.conf.load_manager_class_name != self.load_manager.requested and not self._switching:
            self._switching = True   # switched while this broker was starting
            self.start_soon(self._apply_load_manager_class_name)

    def crash(self) -> None:
        """Process killed: nothing released; connections drop; the session expires on its own."""
        self.network.unlisten(self.broker_id)
        self.network.drop_connections(self.broker_id)
        self.events.emit(BrokerCrashed(broker=self.broker_id, bundles=len(self.owned)))
        self.kill()

    async def shutdown(self, timeout: float | None = None) -> bool:
        """PulsarService.closeAsync, 3.x order: deregister (disableBroker), drain bundles one at a time,
        drop the remaining connections, give up leadership, stop the load manager, close the session.
        True if it finished within `timeout` (default brokerShutdownTimeoutMs); otherwise the process
        dies where it is and what it still holds is left to session expiry (a SIGTERM with a short
        grace period)."""
        if timeout is None:
            timeout = self.conf.broker_shutdown_timeout_ms / 1000.0
        self.closing = True
        self.events.emit(BrokerStopping(broker=self.broker_id, bundles=len(self.owned), timeout=timeout))
        started = self.now
        with anyio.move_on_after(timeout) as scope:
            await self.load_manager.disable_broker()
            for bundle in list(self.owned):
                try:
                    await self.unload_bundle(bundle)
                except AdminError:
                    pass
            self.network.unlisten(self.broker_id)
            self.network.drop_connections(self.broker_id)
            await self._release_leadership()
            await self.load_manager.stop()
            await self.md.close_session()
        finished = not scope.cancelled_caught
        self.events.emit(BrokerStopped(broker=self.broker_id, graceful=finished,
                                       duration=self.now - started, bundles_left=len(self.owned)))
        if finished:
            self.kill()
        else:
            self.crash()
        return finished

    # ================================================================== messages

    async def receive(self, msg: Any, reply: Reply) -> None:
        kind = type(msg)
        if kind is LookupTopic:
            self._on_lookup(msg, reply)
        elif kind is Attach:
            self._on_attach(msg, reply)
        elif kind is Detach:
            self._on_detach(msg, reply)
        elif kind is Notification:
            self._on_notification(msg)
            reply.ok(None)
        elif kind is SessionEvent:
            self.start_soon(self._on_session_lost)
            reply.ok(None)
        elif kind is UnloadBundle:
            channel = self.capabilities.channel_ownership
            if channel is not None:   # Extensible: an Admin unload (or transfer) through the channel
                self.start_soon(self._admin, channel.unload_namespace_bundle, (msg.bundle, msg.destination), {},
                                reply)
            else:
                self.start_soon(self._admin, self.unload_bundle, (msg.bundle,), {}, reply)
        elif kind is SplitBundle:
            channel = self.capabilities.channel_ownership
            if channel is not None:
                self.start_soon(self._admin, channel.split_namespace_bundle, (msg.bundle,), {}, reply)
            else:
                self.start_soon(self._admin, self.split_and_own_bundle, (msg.bundle,),
                                {"unload": msg.unload, "algorithm": msg.algorithm,
                                 "boundaries": msg.boundaries}, reply)
        elif kind is AcquireBundle:
            channel = self.capabilities.channel_ownership
            if channel is not None:
                self.start_soon(self._admin, channel.assign_stated, (msg.bundle, self.broker_id), {}, reply)
            else:
                self.start_soon(self._admin, self._acquire_stated, (msg.bundle,), {}, reply)
        elif kind is LedgerFenced:
            bookkeeper_open.on_ledger_fenced(self, msg)
        elif kind is WarmStart:
            self.start_soon(self._admin, self.warm_start, (), {}, reply)
        else:
            raise TypeError(f"broker {self.broker_id}: unexpected message {kind.__name__}")

    async def _admin(self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                     reply: Reply) -> None:
        """Run an admin operation in a task; the coroutine is created here, inside the task, so a
        broker that dies first leaves no never-awaited coroutine behind. The REST call's own time
        (`admin_call`: HTTP round trip and Jetty handling) passes before the operation starts."""
        took = self.latency("admin_call")
        if took > 0:
            await anyio.sleep(took)
        dispatched = self.executors.admin(self.now)   # a Jetty thread (broker_executors.py)
        if dispatched is not None and dispatched > self.now:
            await anyio.sleep(dispatched - self.now)
        try:
            detail = await op(*args, **kwargs)
        except AdminError as e:
            reply.ok(AdminResult(False, str(e)))
        else:
            reply.ok(AdminResult(True, detail=detail or {}))

    # ================================================================== metadata notifications

    def _on_notification(self, note: Notification) -> None:
        path = note.path
        if path == paths.LEADER:
            if note.type == "Deleted":
                self.start_soon(self._on_leader_deleted)
        elif path.startswith(paths.BROKERS + "/"):
            if note.type in ("Created", "Deleted"):
                self.start_soon(self._refresh_available_brokers,
                                path[len(paths.BROKERS) + 1:] if note.type == "Created" else None)
                # BrokerRegistry listeners (the Extensible channel's clean-up)
                self.load_manager.on_broker_registry_event(path[len(paths.BROKERS) + 1:], note.type == "Created")
        elif path == paths.DYNAMIC_CONFIGURATION:
            if note.type != "Deleted" and not self._switching:
                self._switching = True
                self.start_soon(self._apply_load_manager_class_name)
        elif self.policy_cache.on_notification(note) and path.startswith(paths.LOCAL_POLICIES + "/"):
            self._invalidate_namespace(paths.namespace_of_policies_path(path))

    async def _refresh_available_brokers(self, created: str | None = None) -> None:
        """The children of /loadbalance/brokers, and the registrations RedirectManager reads
        (redirect_manager.py): each one new to this broker, or `created` again.

        Those are read from the store's tree without a metadata operation: Pulsar's lock cache
        refreshes them with a read per change, off the lookup path; here that read costs nothing
        and moves no other operation (the view is right once the listing is)."""
        try:
            self.available_brokers = await self.md.children_set(paths.BROKERS)
        except MetadataStoreError as e:  # keep the last view; the next notification refreshes it
            self.log.warning("could not list available brokers", error=str(e))
            return
        view = self.redirect_view
        read: dict[str, bytes] = {}
        to_read = view.unknown_of(self.available_brokers)   # a set difference: O(changes), not O(brokers)
        if created is not None and created in self.available_brokers:
            to_read |= {created}
        if to_read:
            store = self.system.get(self.md.store_name)
            for broker in to_read:
                data = store.peek(paths.broker_path(broker)) if isinstance(store, MetadataStore) else None
                if data is not None:
                    read[broker] = data
        view.update(self.available_brokers, read)

    # ================================================================== the live switch

    async def _apply_load_manager_class_name(self) -> None:
        """BrokerService's `loadManagerClassName` listener, run while the configured class differs
        from the one the load manager was made for; one switch at a time (`_switching` is set by the
        caller), each in Pulsar's order."""
        try:
            while not self.closing and self.started.is_set():
                wanted = self.conf.load_manager_class_name
                if wanted == self.load_manager.requested:
                    return
                if not await self._switch_load_manager(wanted):
                    return
        finally:
            self._switching = False

    async def _switch_load_manager(self, class_name: str) -> bool:
        """Create the new manager, stop the old one, start the new one, set it (False if it failed:
        Pulsar logs "Failed to change load manager" and keeps the reference it had)."""
        new = load_managers.create(class_name, self)
        self.log.info("Created load manager", class_name=class_name)
        old = self.load_manager
        try:
            await old.stop()
            await new.start()
        except MetadataStoreError as e:
            self.log.warning("Failed to change load manager", error=repr(e))
            return False
        self._use_load_manager(new)
        old.leadership_lost()   # anything the old one started while it was being stopped
        self.events.emit(LoadManagerChanged(broker=self.broker_id, previous=old.class_name,
                                            current=new.class_name, requested=class_name))
        if not switch_supported(old.class_name, new.class_name):
            self.log.warning(unsupported_switch_message(old.class_name, new.class_name),
                             previous=old.class_name, current=new.class_name, docs=MIGRATION_DOCS)
            self.events.emit(LoadManagerSwitchUnsupported(
                broker=self.broker_id, previous=old.class_name, current=new.class_name,
                requested=class_name, how="live", docs=MIGRATION_DOCS))
        return True

    # ================================================================== metadata session

    async def _on_session_lost(self) -> None:
        """PulsarService.handleMetadataSessionEvent(SessionLost).

        `zookeeperSessionExpiredPolicy=shutdown`: the broker shuts down at once (like a crash, its
        ephemerals are already gone). `reconnect` (default): open a new session and revalidate every
        lock it held (ResourceLockImpl on SessionReestablished): re-create the node with the same
        value; a lock another broker took meanwhile (LockBusy) is lost and its bundle unloaded
        locally. Choice: LockBusy marks the lock expired (newer ResourceLockImpl); the older code only
        logged it and kept serving, which leaves two owners."""
        self.events.emit(SessionLost(broker=self.broker_id,
                                     policy=self.conf.zookeeper_session_expired_policy))
        self.load_manager.on_session_lost()   # the Extensible channel's metadata state
        if self.conf.zookeeper_session_expired_policy == "shutdown":
            self.crash()
            return
        await self._reopen_session()
        await self.load_manager.on_session_reestablished()
        lost = await self._revalidate_ownership()
        if self.is_leader:
            await self._elect()
        await self._refresh_available_brokers()
        self.events.emit(SessionReestablished(broker=self.broker_id, lost_bundles=lost))

    async def _reopen_session(self) -> None:
        """A new metadata session after SessionLost, with the ZooKeeper client's retry backoff.

        ZKMetadataStore builds its PulsarZooKeeperClient with `connectRetryPolicy(new
        BoundExponentialBackoffRetryPolicy(100, 60_000, Integer.MAX_VALUE))`: after an expiry the client
        makes a new session at once, and each further attempt that fails waits longer, from 100 ms up to
        60 s. An attempt fails when the ensemble does not answer (the ask raises) or when the new session
        is lost again before one session timeout has passed (a leader so far behind its queue that the
        session expires before it is established). Without the backoff such a broker spins on new
        sessions, and one whose open times out escapes as an actor fault. Choice: the wait doubles without
        the policy's random spread (its lower bound, 100 ms x 2^n), so a run needs no extra draw."""
        now = self.now
        if self._session_opened_at is not None and now - self._session_opened_at < metadata_session_timeout(self.conf):
            self._session_retries += 1
        else:
            self._session_retries = 0
        while True:
            if self._session_retries:
                await anyio.sleep(min(0.1 * 2.0 ** (self._session_retries - 1), 60.0))
            try:
                await self.md.open_session(session_events=True)
                self._session_opened_at = self.now
                return
            except MetadataStoreError as exc:
                self._session_retries += 1
                self.log.warning("metadata session not re-established, retrying", error=str(exc),
                                 retries=self._session_retries)

    # ================================================================== load reports

    async def _report_loop(self) -> None:
        """LoadReportUpdaterTask: every 5 s, the load manager's report write (for Modular: if it
        changed enough or is 15 min old).

        At a fixed rate, as Pulsar schedules it (PulsarService.startLoadManagementService:
        `loadManagerExecutor.scheduleAtFixedRate(new LoadReportUpdaterTask(...), 5000, 5000, ms)`): the
        ticks stay on start + k x 5 s whatever the write costs. The write blocks its tick
        (ModularLoadManagerImpl.writeBrokerDataOnZooKeeper joins the metadata update), so a write
        longer than the interval delays the next tick, which then runs at once (the executor's
        catch-up), never two at a time. A fixed delay after each write would let every broker's ticks
        drift by its metadata latency, cycle after cycle. Each tick reads the current load manager
        (Pulsar's AtomicReference), so a live switch needs no new loop.

        This fires for every broker every 5 emulated seconds, so a load manager that can run its
        tick as plain callbacks (the ReportTicks capability: Modular, Noop) is woken by a `Wakeup` of the
        broker (emulator.runtime.wakeup: the same instants and the same order of callbacks as the
        sleeping task, at a fraction of its cost); the others tick in this task, sleeping between
        ticks (`emulator.runtime.sleep`). A live switch between the two kinds hands the ticks over
        at the next tick."""
        loop = asyncio.get_running_loop()
        self._report_time = loop.time   # the loop's time, as asyncio's timers read it
        self._report_start = loop.time()
        self._report_k = 0
        self._report_wakeup = self.wakeup(self._report_tick)
        if self.capabilities.report_ticks is not None:
            self._arm_report_tick()
        else:
            await self._report_ticks_in_task(False)

    def _next_report_delay(self) -> float:
        """The delay until the next tick, start + k x interval (0: it is late, it runs at once)."""
        self._report_k += 1
        delay = self._report_start + self._report_k * self.report_interval - self._report_time()
        return delay if delay > 0.0 else 0.0

    def _arm_report_tick(self) -> None:
        self._report_wakeup.after(self._next_report_delay())

    def _report_tick(self) -> None:
        ticks = self.capabilities.report_ticks
        if ticks is None:   # switched to a load manager whose write awaits: ticks in a task from here
            self.start_soon(self._report_ticks_in_task, True)
            return
        ticks.report_tick(self._arm_report_tick)

    async def _report_ticks_in_task(self, tick_now: bool) -> None:
        """The ticks of a load manager without ReportTicks, each awaiting its write."""
        if tick_now:
            await self.write_load_report()
        while True:
            await sleep(self._next_report_delay())
            ticks = self.capabilities.report_ticks
            if ticks is not None:   # switched to one that ticks in callbacks: hand the ticks over
                ticks.report_tick(self._arm_report_tick)
                return
            await self.write_load_report()

    async def write_load_report(self, force: bool = False) -> bool:
        """The load manager's writeLoadReportOnZookeeper(force): True if a report was written."""
        return await self.load_manager.write_load_report(force)

    # ================================================================== views

    @property
    def host(self) -> str:
        return host_of(self.broker_id)

    @property
    def leader_actor(self) -> Any:
        """The actor running the load manager's leader-only work here (Modular's LoadManagerLeader),
        or None."""
        return self.load_manager.leader_actor

