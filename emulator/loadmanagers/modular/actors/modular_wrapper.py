"""ModularLoadManagerWrapper: the broker side of ModularLoadManagerImpl behind the LoadManager seam.

What every broker's ModularLoadManagerImpl does (start: register with the first report; the report
write with the 10 % / 15 min rule; getLeastLoaded; stop), and where its leader-only half runs: the
LoadManagerLeader actor (leader.py) on the elected broker, over the pure core (modular_load_manager.py).

Choices where the spec is open (documented here once):
* A follower that must decide locally (no active leader) keeps its own ModularLoadManager view, rebuilt
  from the brokers' reports when it is older than one report interval (Pulsar's followers keep theirs
  current by running updateAll on every notification; the decisions are the same, the cost is not).
* The leader actor runs its own LoadSheddingTask and LoadResourceQuotaUpdaterTask timers (Pulsar's are
  PulsarService's, calling the current manager): started with leadership or with this manager on a
  broker that already leads, stopped with either. `stop()` kills it and releases the registration lock
  (ModularLoadManagerImpl.stop: `executors.shutdownNow()`, `brokersData.close()`): the leader's load
  data goes with it; the persisted bundle data under /loadbalance/bundle-data stays for the next one.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

import strategies
from emulator.model.loaddata import BrokerDataUpdateCheck, LoadData, LocalBrokerData, TimeAverageBrokerData
from emulator.model.policies import PolicyView
from emulator.runtime import epoch_ms

from emulator.cluster import paths, user_faults
from emulator.cluster.events import LoadReportWritten, assignment_event
from .leader import LoadManagerLeader
from emulator.cluster.load_manager import MODULAR, LeaderLoadView, LoadManager, ReportTicks, release_registration
from emulator.cluster.messages import SelectBrokerForAssignment
from emulator.cluster.metadata_client import MetadataStoreError
from .modular_load_manager import ModularLoadManager
from emulator.cluster.user_faults import UserCodeError

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.broker import Broker

__all__ = ["ModularLoadManagerWrapper"]

_json_encode = msgspec.json.encode


class ModularLoadManagerWrapper(LoadManager, ReportTicks, LeaderLoadView):
    """One broker's ModularLoadManagerImpl (see the module docstring). Its capabilities: its report
    tick runs as callbacks (ReportTicks); its leader actor's view is the observers' (LeaderLoadView)."""

    class_name = MODULAR
    broker: "Broker"

    def __init__(self, broker: "Broker", requested: str = MODULAR) -> None:
        super().__init__(broker, requested)
        self._last_data: LocalBrokerData | None = None
        self._report_version = -1
        self._force = False
        # needBrokerDataUpdate, keeping what stays the same between two report ticks
        self._need_update = BrokerDataUpdateCheck()
        self.leader_actor: LoadManagerLeader | None = None
        # a follower's view for leaderless decisions (_select_locally)
        self._local_lm: Any = None
        self._local_lm_time = -1.0
        self._local_lm_brokers: frozenset[str] = frozenset()   # the registry the view was built on
        # since when this broker's ModularLoadManagerImpl watches the reports (start(): its listener is
        # registered in initialize), what a follower's load data is built from (follower_view.py)
        self.watching_since = math.inf

    # ================================================================== lifecycle

    async def start(self) -> None:
        """ModularLoadManagerImpl.start(): lock /loadbalance/brokers/<id> with the first report, write
        an empty broker time average, updateAll; on a broker that already leads (a live switch), the
        leader-only half starts with it."""
        b = self.broker
        self.watching_since = b.now
        b._reset_local_data(b.conf.load_manager_class_name)
        b._update_local_data()
        b.local_data.last_update = epoch_ms(b.system.clock)   # System.currentTimeMillis()
        stat = await b.md.acquire_lock(paths.broker_path(b.broker_id), _json_encode(b.local_data))
        self._report_version = stat.version
        self._last_data = msgspec.structs.replace(b.local_data)
        self.registered = True
        await b.md.set(paths.time_average_path(b.broker_id), _json_encode(TimeAverageBrokerData()))
        await b._refresh_available_brokers()
        if b.is_leader and self.leader_actor is None:
            self.leadership_acquired()

    async def stop(self) -> None:
        """ModularLoadManagerImpl.stop(): the leader-only tasks end, the registration lock goes."""
        self.leadership_lost()
        self._local_lm = None
        await release_registration(self)

    async def disable_broker(self) -> None:
        """disableBroker(): the registration lock goes before the bundles are drained."""
        self.registered = False
        try:
            await self.broker.md.release_lock(paths.broker_path(self.broker.broker_id))
        except MetadataStoreError:
            pass   # "still continue and release bundle ownership"

    async def on_session_reestablished(self) -> None:
        b = self.broker
        if self.registered:
            try:
                b._update_local_data()
                stat = await b.md.acquire_lock(paths.broker_path(b.broker_id), _json_encode(b.local_data))
                self._report_version = stat.version
            except MetadataStoreError as e:
                b.log.warning("could not re-register after session loss", error=str(e))

    # ================================================================== leadership

    def leadership_acquired(self) -> None:
        b = self.broker
        self._local_lm = None  # the leader actor decides from now on
        self.leader_actor = LoadManagerLeader(f"{b.broker_id}/leader", b.system, broker=b,
                                              placement_name=b.placement, shedder_name=b.shedder,
                                              watching_since=self.watching_since)
        b.system.spawn(self.leader_actor, parent=b)

    def leadership_lost(self) -> None:
        if self.leader_actor is not None:
            self.leader_actor.kill()
        self.leader_actor = None

    def leader_ready(self) -> bool:
        return self.leader_actor is not None

    def leader_load_data(self) -> LoadData | None:
        """The leader actor's ModularLoadManager's LoadData (None before it has built it)."""
        leader = self.leader_actor
        lm = leader.lm if leader is not None else None
        return lm.load_data if lm is not None else None

    def leader_policies(self) -> PolicyView | None:
        """The policies the leader actor's selection applies (refreshed with each of its decisions)."""
        leader = self.leader_actor
        return leader._policies if leader is not None else None

    def _leading(self) -> LoadManagerLeader | None:
        leader = self.leader_actor
        return leader if self.broker.is_leader and leader is not None and leader.alive else None

    # ================================================================== load report

    def generate_load_report(self) -> LocalBrokerData:
        return self.broker.local_data

    async def write_load_report(self, force: bool = False) -> bool:
        """writeBrokerDataOnZooKeeper: True if a report was written."""
        data = self._report_to_write(force)
        if data is None:
            return False
        b = self.broker
        try:
            stat = await b.md.set(paths.broker_path(b.broker_id), data,
                                  expected_version=self._report_version)
        except MetadataStoreError as e:
            b.log.warning("load report not written", error=str(e))
            return False
        self._report_written(stat)
        return True

    def report_tick(self, then: Callable[[], None]) -> None:
        """The LoadReportUpdaterTask's tick as plain callbacks (`write_load_report(False)`, the same
        steps in the same order; broker.py's report ticks): `then()` once done, at once when no
        report is due, after the metadata write otherwise (the write blocks the tick)."""
        data = self._report_to_write(False)
        if data is None:
            then()
            return
        b = self.broker
        b.md.set_then(paths.broker_path(b.broker_id), data, functools.partial(self._tick_written, then),
                      expected_version=self._report_version)

    def _tick_written(self, then: Callable[[], None], stat: Any, error: BaseException | None) -> None:
        if error is not None:
            if not isinstance(error, MetadataStoreError):
                raise error   # an emulator bug: it crashes the broker, as in the task it was
            self.broker.log.warning("load report not written", error=str(error))
        else:
            self._report_written(stat)
        then()

    def _report_to_write(self, force: bool) -> bytes | None:
        """The report to write now (updateLocalBrokerData, then needBrokerDataUpdate unless forced),
        its `lastUpdate` set; None if none is due."""
        if not self.registered:
            return None
        b = self.broker
        b._update_local_data()
        now_ms = epoch_ms(b.system.clock)
        last = self._last_data
        if not force and last is not None and not self._need_update(last, b.local_data, b.conf, now_ms):
            return None
        b.local_data.last_update = now_ms
        return _json_encode(b.local_data)

    def _report_written(self, stat: Any) -> None:
        b = self.broker
        self._report_version = stat.version
        b.local_data.clean_deltas()
        self._last_data = msgspec.structs.replace(b.local_data)
        b.events.emit(LoadReportWritten(broker=b.broker_id, bundles=b.local_data.num_bundles))

    # ================================================================== the leader's work

    async def write_resource_quotas(self) -> None:
        """writeResourceQuotasToZooKeeper -> writeBundleDataOnZooKeeper (on the leader only)."""
        leader = self._leading()
        if leader is not None:
            await leader.write_bundle_data()

    async def do_load_shedding(self) -> list[tuple[str, str]]:
        leader = self._leading()
        return [] if leader is None else await leader.do_load_shedding()

    async def do_namespace_bundle_split(self) -> list[str]:
        leader = self._leading()
        return [] if leader is None else await leader.check_namespace_bundle_split()

    def set_namespace_bundle_affinity(self, bundle: str, broker: str) -> None:
        """bundleBrokerAffinityMap, keyed by the bundle range, consumed by the next assignment."""
        if self.leader_actor is not None:
            self.leader_actor.affinity[bundle.rsplit("/", 1)[1]] = broker

    # ================================================================== placement

    def is_centralized(self) -> bool:
        return True

    def leader_decides(self) -> None:
        self._local_lm = None  # a leader decides again: free the local view (see _select_locally)

    async def get_least_loaded(self, bundle: str, non_persistent: bool) -> str | None:
        leader = self._leading()
        if leader is not None:
            return await leader.ask(SelectBrokerForAssignment(bundle, non_persistent))
        return await self._select_locally(bundle, non_persistent)

    async def _select_locally(self, bundle: str, non_persistent: bool) -> str | None:
        """A follower's own ModularLoadManager, used while no leader is active.

        Pulsar's followers keep their load manager's view up to date all the time; here it is
        built on the first local decision, refreshed at most once per report interval, cut down to
        the broker registry this broker watches whenever that changed (Pulsar's
        `getAvailableBrokers()` reads the registry on every decision: a view that still listed a
        stopped broker would send lookups there, to fail with NotFound), and dropped when a leader
        decides again (a hundred followers' views of every bundle would not fit in memory): a view
        rebuilt after a gap starts its bundle averages afresh. The view keeps its bundle windows
        as objects (`windows="objects"`, the same numbers): a follower updates it at most once per
        report interval, where the columns' faster updates do not pay for their memory (40 brokers x 26,000
        bundles restart case: peak RSS 1.11 -> 0.93 GiB)."""
        b = self.broker
        now = b.now
        # `lm`, not `self._local_lm`, after the awaits: a leader elected meanwhile sets the attribute
        # to None, and this decision finishes on the view it started with
        lm = self._local_lm
        if lm is not None and self._local_lm_brokers != b.available_brokers:
            # getAvailableBrokers() on every decision: a broker gone from the registry since the view
            # was built is no candidate (brokers that joined wait for the next refresh; rebuilding on
            # every registry change made each follower re-read every report, restart case 1.6x slower)
            available = b.available_brokers
            lm.known_brokers = [x for x in lm.known_brokers if x in available]
            self._local_lm_brokers = available
        if lm is None or now - self._local_lm_time >= b.report_interval:
            if lm is None:
                strategy = strategies.create(b.conf.load_balancer_load_placement_strategy, rng=b.rng)
                lm = self._local_lm = ModularLoadManager(
                    b.conf, strategy, b.rng, broker_id=b.broker_id, windows="objects"
                )
            registered = await b.md.children(paths.BROKERS)
            reports: dict[str, LocalBrokerData | None] = {}
            for x in registered:
                node = await b.md.get(paths.broker_path(x))
                reports[x] = (
                    None if node is None else b.decoded.get(
                        "report:" + x, node.data,
                        functools.partial(msgspec.json.decode, type=LocalBrokerData))
                )
            lm.update_all(registered, reports, b.owned_bundle_names())
            if self._local_lm is lm:
                self._local_lm_time = now
                self._local_lm_brokers = b.available_brokers
        # the follower's ModularLoadManagerImpl applies the same policies as the leader's
        lm.policies = await b.policy_cache.refresh()
        try:
            broker, trace = lm.select_broker_for_assignment(bundle, non_persistent=non_persistent)
        except UserCodeError as fault:
            user_faults.report(b.events, b.log, fault, outcome="lookup failed", bundle=bundle)
            raise
        b.events.emit(assignment_event(bundle=bundle, broker=broker, leader=b.broker_id, local=True,
                                       trace=trace))
        return broker
