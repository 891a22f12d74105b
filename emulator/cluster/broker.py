"""Broker actor: lookups with authoritative redirects, bundle ownership, leader election, load reports.

Follows pulsar-protocol.md §1.2 ("Net behaviour"), §2, §3 and §4 for the current (3.x) code:

1. a bundle owned by anyone (and enabled) -> any broker answers Connect(owner);
2. unowned, non-authoritative lookup at a non-leader while the leader is active -> Redirect(leader,
   authoritative=false);
3. unowned at the leader, or anywhere while the leader is missing or not in /loadbalance/brokers -> the
   load manager picks X; X == self -> acquire and Connect, else Redirect(X, authoritative=true);
4. unowned with authoritative=true -> acquire here, no load-manager check; LockBusy -> Failed/MetadataError;
5. a bundle this broker is unloading -> Failed/MetadataError.

Concurrent lookups of one bundle with the same authoritative flag share one resolution
(findingBundlesAuthoritative / NotAuthoritative). `maxConcurrentLookupRequest` pending lookups at most,
beyond which the answer is Failed/TooManyRequests at once.

Choices where the spec is open (documented here once):
* Ownership is read from the store on every lookup (no cache of other brokers' ownership nodes), which is
  what Pulsar's metadata cache converges to; heartbeat/SLA namespaces are not emulated.
* A follower that must decide locally (no active leader) keeps its own ModularLoadManager view, rebuilt
  from the brokers' reports when it is older than one report interval (Pulsar's followers keep theirs
  current by running updateAll on every notification; the decisions are the same, the cost is not).
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Callable

import anyio
import msgspec

import strategies
from emulator.model.bundles import (
    NamespaceBundles,
    parse_bundle,
    parse_topic,
    split_boundaries,
    topic_hash,
)
from emulator.model.config import ServiceConfig
from emulator.model.loaddata import (
    LocalBrokerData,
    default_advertised_listeners,
    NamespaceBundleStats,
    TimeAverageBrokerData,
    need_broker_data_update,
)
from emulator.model.policies import LocalPolicies
from emulator.runtime import Actor, ActorDead, ActorSystem, AskTimeout, Reply, epoch_ms

from . import paths
from .bundle_owner import BundleOwner
from .decoded import DecodeCache
from .events import (
    assignment_event,
    BrokerCrashed,
    BrokerStarted,
    BrokerStartFailed,
    BrokerStopped,
    BrokerStopping,
    BundleOwned,
    BundleSplit,
    BundleSplitSkipped,
    BundleUnloaded,
    ClusterEvents,
    LeaderElected,
    LoadReportWritten,
    SessionLost,
    SessionReestablished,
)
from .latency import Latencies, LatencySampler
from .load_source import LoadSource
from .stats_window import BrokerWindows
from .messages import (
    AdminResult,
    Attach,
    AttachResult,
    CloseTopics,
    Detach,
    SplitBundle,
    UnloadBundle,
    AcquireBundle,
    WarmStart,
    LookupTopic,
    LookupTopicResponse,
    LookupType,
    SelectBrokerForAssignment,
    ServerError,
)
from .metadata_client import BadVersion, LockBusy, MetadataClient, MetadataStoreError
from .metadata_messages import Notification, SessionEvent
from .network import Network, host_of, service_url_of, web_url_of
from .policy_cache import PolicyCache
from .user_faults import UserCodeError
from . import user_faults
from .topic_loader import TopicLoader

_json_encode = msgspec.json.encode


class NamespaceEphemeralData(msgspec.Struct, rename="camel"):
    """Value of an ownership node `/namespace/<bundle>` (Pulsar's NamespaceEphemeralData JSON)."""

    native_url: str
    http_url: str
    native_url_tls: str = ""
    http_url_tls: str = ""
    disabled: bool = False
    advertised_listeners: dict[str, Any] = {}


class LeaderBroker(msgspec.Struct, rename="camel"):
    """Value of `/loadbalance/leader` (3.x LeaderBroker JSON)."""

    broker_id: str
    service_url: str


class LookupFailure(Exception):
    """A lookup that ends in CommandLookupTopicResponse Failed with `error`."""

    def __init__(self, error: ServerError, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


class AdminError(Exception):
    """An admin operation refused by the broker (IllegalStateException / NotFound in Pulsar)."""


class _Result(msgspec.Struct, frozen=True):
    broker_id: str
    redirect: bool
    authoritative: bool = True


_ATTACHED = AttachResult(ok=True)


_NOT_RUNNING = "Failed due to pulsar service is not ready"
"""ServerCnx's answer while PulsarService is not running (closing): to lookups and to CommandConnect."""
_LOOKUP_REFUSED = LookupTopicResponse(LookupType.FAILED, error=ServerError.SERVICE_NOT_READY,
                                      message=_NOT_RUNNING)
_CONNECT_REFUSED = AttachResult(False, ServerError.SERVICE_NOT_READY, _NOT_RUNNING,
                                connection_refused=True)


class OwnedBundle:
    """Pulsar's OwnedBundle: the in-memory ownership entry, present while acquiring and while owned."""

    __slots__ = ("bundle", "acquired", "active", "actor")

    def __init__(self, bundle: str, acquired: asyncio.Future[bool]) -> None:
        self.bundle = bundle
        self.acquired = acquired
        self.active = False
        self.actor: BundleOwner | None = None


class BrokerStats:
    """Plain counters the observers read (Pulsar's lookup metrics are derived from these)."""

    __slots__ = ("lookups", "answers", "redirects", "failures", "too_many", "pending", "assignments",
                 "lookup_seconds")

    def __init__(self) -> None:
        self.lookups = self.answers = self.redirects = self.failures = 0
        self.too_many = self.pending = self.assignments = 0
        self.lookup_seconds = 0.0   # emulated time spent answering lookups (pulsar_broker_lookup sum)


class Broker(Actor):
    def __init__(
        self,
        broker_id: str,
        system: ActorSystem,
        *,
        conf: ServiceConfig,
        network: Network,
        load_source: LoadSource,
        events: ClusterEvents,
        leader_factory: Callable[["Broker"], Actor],
        store_name: str = "metadata-store",
        report_interval: float = 5.0,
        close_time: float = 0.0,
        close_time_per_topic: float = 0.0,
        decoded: DecodeCache | None = None,
        latencies: Latencies | None = None,
        cluster_name: str = "cluster",
    ) -> None:
        super().__init__(broker_id, system)
        # shared with the cluster's other brokers: what they decode, they only read
        self.decoded = decoded if decoded is not None else DecodeCache()
        self.broker_id = broker_id
        self.conf = conf
        self.network = network
        self.load_source = load_source
        self.events = events
        self._leader_factory = leader_factory
        self.report_interval = report_interval
        self.close_time = close_time
        self.close_time_per_topic = close_time_per_topic
        self.closing = False
        # operation latencies (latency.py); without a model, the two close times above and no other
        self.latency = LatencySampler(
            latencies or Latencies.zero(bundle_close=close_time, topic_close=close_time_per_topic),
            system.seed, broker_id)
        self.topic_loader = TopicLoader(self.call_later, functools.partial(self.latency, "topic_load"),
                                        lambda: self.conf.max_concurrent_topic_load_request)
        self.md = MetadataClient(self, store_name)
        self.cluster_name = cluster_name
        # the policies a local decision applies; refreshed only when one is made (_select_locally)
        self.policy_cache = PolicyCache(self.md, cluster_name, conf)
        self.service_url = service_url_of(broker_id)
        self.web_url = web_url_of(broker_id)
        self._self_owner_info = _json_encode(
            NamespaceEphemeralData(native_url=self.service_url, http_url=self.web_url)
        )
        self.stats = BrokerStats()
        # leader election
        self.election_started = False
        self.is_leader = False
        self.leader_id: str | None = None
        self.leader_actor: Actor | None = None
        # what this broker knows of the cluster
        self.available_brokers: frozenset[str] = frozenset()
        self._ns_bundles: dict[str, NamespaceBundles] = {}
        self._ns_loading: dict[str, asyncio.Future[NamespaceBundles]] = {}
        self._ns_invalidated: set[str] = set()   # changed while a read was in flight: don't cache it
        self.owned: dict[str, OwnedBundle] = {}
        # (bundle, authoritative) -> the lookups waiting on its resolution: (reply, started)
        self._finding: dict[tuple[str, bool], list[tuple[Reply, float]]] = {}
        self._responses: dict[_Result, LookupTopicResponse] = {}
        # load reporting
        self.local_data = LocalBrokerData(
            web_service_url=self.web_url,
            pulsar_service_url=self.service_url,
            load_manager_class_name=conf.load_manager_class_name,
            advertised_listeners=default_advertised_listeners(self.service_url),
        )
        self._last_data: LocalBrokerData | None = None
        self._report_version = -1
        self.registered = False
        self._local_lm: Any = None
        self._local_lm_time = -1.0
        self._local_lm_brokers: frozenset[str] = frozenset()   # the registry the view was built on
        self.splitting: set[str] = set()   # parents between their children's locks and their release
        # stats periods and host-usage samples (stats_window.py); None = instant stats
        self.windows: BrokerWindows | None = None
        self._windows_seen = (-1, -1)
        self.started = anyio.Event()

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
        await self.md.watch(paths.BROKERS)
        await self.policy_cache.watch()   # /admin/local-policies and /admin/clusters/<cluster>
        self.election_started = True
        try:
            await self._elect()
            self._start_windows()
            await self._register()
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

    async def _register(self) -> None:
        """ModularLoadManagerImpl.start(): lock /loadbalance/brokers/<id> with the first report."""
        self._update_local_data()
        self.local_data.last_update = epoch_ms(self.system.clock)   # System.currentTimeMillis()
        stat = await self.md.acquire_lock(paths.broker_path(self.broker_id), self._encode_report())
        self._report_version = stat.version
        self._last_data = msgspec.structs.replace(self.local_data)
        self.registered = True
        await self.md.set(
            paths.time_average_path(self.broker_id), _json_encode(TimeAverageBrokerData())
        )
        await self._refresh_available_brokers()

    def crash(self) -> None:
        """Process killed: nothing released; connections drop; the session expires on its own."""
        self.network.unlisten(self.broker_id)
        self.network.drop_connections(self.broker_id)
        self.events.emit(BrokerCrashed(broker=self.broker_id, bundles=len(self.owned)))
        self.kill()

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
            self.start_soon(self._admin, self.unload_bundle, (msg.bundle,), {}, reply)
        elif kind is SplitBundle:
            self.start_soon(self._admin, self.split_and_own_bundle, (msg.bundle,),
                            {"unload": msg.unload, "algorithm": msg.algorithm,
                             "boundaries": msg.boundaries}, reply)
        elif kind is AcquireBundle:
            self.start_soon(self._admin, self._acquire_stated, (msg.bundle,), {}, reply)
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
        try:
            detail = await op(*args, **kwargs)
        except AdminError as e:
            reply.ok(AdminResult(False, str(e)))
        else:
            reply.ok(AdminResult(True, detail=detail or {}))

    # ================================================================== lookups

    def _on_lookup(self, msg: LookupTopic, reply: Reply) -> None:
        """Lookups are answered from memory or by their bundle's resolution.

        As Pulsar's handler runs on its I/O thread up to the first asynchronous step, a lookup whose
        bundle is owned and active here is answered at once, and one whose (bundle, authoritative)
        resolution is in flight waits in that resolution's list, which `_resolve` answers. A task
        runs per resolution, and per lookup only while its namespace's bundles are being loaded: in
        a lookup storm nearly every lookup shares a resolution, and a task per waiting lookup used
        to be most of the cost."""
        stats = self.stats
        stats.lookups += 1
        if self.closing:
            # ServerCnx.handleLookup: `if (!service.getPulsar().isRunning())` answers ServiceNotReady
            # before anything else (PR #17085, in 3.0): a broker draining for shutdown refuses every
            # lookup, and the client closes that connection (ClientCnx.checkServerError)
            stats.failures += 1
            reply.ok(_LOOKUP_REFUSED)
            return
        if stats.pending >= self.conf.max_concurrent_lookup_request:
            stats.too_many += 1
            stats.failures += 1
            reply.ok(
                LookupTopicResponse(
                    LookupType.FAILED,
                    error=ServerError.TOO_MANY_REQUESTS,
                    message="Failed due to too many pending lookup requests",
                )
            )
            return
        stats.pending += 1
        started = self.now
        try:
            name, namespace = parse_topic(msg.topic)
        except ValueError as e:
            self._answer(reply, started, LookupFailure(ServerError.TOPIC_NOT_FOUND, str(e)))
            return
        bundles = self._ns_bundles.get(namespace)
        if bundles is None:
            self.start_soon(self._lookup_after_load, namespace, name, msg, reply, started)
        else:
            self._route_lookup(bundles.bundle_of_full_name(name), msg, reply, started)

    async def _lookup_after_load(self, namespace: str, name: str, msg: LookupTopic, reply: Reply,
                                 started: float) -> None:
        try:
            bundles = await self.namespace_bundles(namespace)
        except LookupFailure as e:  # namespace_bundles turns store errors into LookupFailures
            self._answer(reply, started, e)
        except BaseException:
            self.stats.pending -= 1
            raise
        else:
            self._route_lookup(bundles.bundle_of_full_name(name), msg, reply, started)

    def _route_lookup(self, bundle: str, msg: LookupTopic, reply: Reply, started: float) -> None:
        key = (bundle, msg.authoritative)
        waiters = self._finding.get(key)
        if waiters is None:
            owned = self.owned.get(bundle)
            if owned is not None and owned.acquired.done():
                # an entry whose acquisition finished holds the lock (failures delete the entry)
                if owned.active:
                    self._answer(reply, started, _Result(self.broker_id, redirect=False))
                else:
                    self._answer(reply, started, LookupFailure(
                        ServerError.METADATA_ERROR, f"Namespace bundle {bundle} is being unloaded"))
                return
            waiters = self._finding[key] = []
            self.start_soon(self._resolve, key, msg.topic.startswith("non-persistent://"), waiters)
        waiters.append((reply, started))

    def _answer(self, reply: Reply, started: float, outcome: _Result | BaseException) -> None:
        stats = self.stats
        stats.pending -= 1
        stats.lookup_seconds += self.now - started
        if isinstance(outcome, _Result):
            if outcome.redirect:
                stats.redirects += 1
            else:
                stats.answers += 1
            response = self._responses.get(outcome)
            if response is None:  # responses are immutable: one per (broker, redirect, authoritative)
                response = self._responses[outcome] = LookupTopicResponse(
                    LookupType.REDIRECT if outcome.redirect else LookupType.CONNECT,
                    broker_service_url=service_url_of(outcome.broker_id),
                    broker_id=outcome.broker_id,
                    authoritative=outcome.authoritative,
                )
            reply.ok(response)
            return
        stats.failures += 1
        assert isinstance(outcome, LookupFailure), outcome
        error = outcome.error
        if error is ServerError.METADATA_ERROR and self.conf.emulator_lookup_failures_as_service_not_ready:
            error = ServerError.SERVICE_NOT_READY   # TopicLookupBase.handleLookupError before 3.0.2
        reply.ok(LookupTopicResponse(LookupType.FAILED, error=error, message=outcome.message))

    async def namespace_bundles(self, namespace: str) -> NamespaceBundles:
        """NamespaceBundleFactory: cached ranges, read from /admin/local-policies, refreshed by watch.

        Concurrent misses share one read (the factory's async loading cache)."""
        cached = self._ns_bundles.get(namespace)
        if cached is not None:
            return cached
        loading = self._ns_loading.get(namespace)
        if loading is not None:
            return await asyncio.shield(loading)
        fut: asyncio.Future[NamespaceBundles] = asyncio.get_running_loop().create_future()
        self._ns_loading[namespace] = fut
        try:
            bundles = await self._load_namespace_bundles(namespace)
        except BaseException as e:
            fut.set_exception(e if isinstance(e, LookupFailure) else LookupFailure(
                ServerError.METADATA_ERROR, f"loading bundles of {namespace} interrupted"))
            fut.exception()
            raise
        else:
            fut.set_result(bundles)
            return bundles
        finally:
            del self._ns_loading[namespace]

    async def _load_namespace_bundles(self, namespace: str) -> NamespaceBundles:
        try:
            node = await self.md.get(paths.local_policies_path(namespace))
        except MetadataStoreError as e:
            raise LookupFailure(ServerError.METADATA_ERROR, str(e)) from None
        if node is None:
            raise LookupFailure(ServerError.TOPIC_NOT_FOUND, f"Namespace {namespace} does not exist")
        bundles = self._decode_bundles(namespace, node.data)
        if namespace not in self._ns_invalidated:
            self._ns_bundles[namespace] = bundles
        self._ns_invalidated.discard(namespace)
        return bundles

    async def _resolve(self, key: tuple[str, bool], non_persistent: bool,
                       waiters: list[tuple[Reply, float]]) -> None:
        """NamespaceService.findBrokerServiceUrl, shared by the lookups of one (bundle,
        authoritative) while it runs (Pulsar's findingBundlesAuthoritative/NotAuthoritative maps);
        every waiter is answered here, with no callback or task of its own."""
        bundle, authoritative = key
        outcome: _Result | LookupFailure
        try:
            try:
                outcome = await self._find_uncached(bundle, authoritative, non_persistent)
            except MetadataStoreError as e:
                raise LookupFailure(ServerError.METADATA_ERROR, str(e)) from None
            except (ActorDead, AskTimeout) as e:
                raise LookupFailure(ServerError.SERVICE_NOT_READY, str(e)) from None
            except UserCodeError as e:  # TopicLookupBase.lookupTopicAsync's exceptionally
                raise LookupFailure(ServerError.SERVICE_NOT_READY, str(e)) from None
        except LookupFailure as e:
            outcome = e
        except BaseException:
            del self._finding[key]
            failure = LookupFailure(ServerError.SERVICE_NOT_READY, f"lookup of {bundle} interrupted")
            for reply, started in waiters:
                self._answer(reply, started, failure)
            raise
        del self._finding[key]
        for reply, started in waiters:
            self._answer(reply, started, outcome)

    async def _find_uncached(self, bundle: str, authoritative: bool, non_persistent: bool) -> _Result:
        owned = self.owned.get(bundle)
        if owned is not None:
            await asyncio.shield(owned.acquired)
            if owned.active:
                return _Result(self.broker_id, redirect=False)
            raise LookupFailure(
                ServerError.METADATA_ERROR, f"Namespace bundle {bundle} is being unloaded"
            )
        try:
            node = await self.md.get(paths.ownership_path(bundle))
        except MetadataStoreError as e:
            raise LookupFailure(ServerError.METADATA_ERROR, str(e)) from None
        if node is not None:
            data = msgspec.json.decode(node.data, type=NamespaceEphemeralData)
            if data.disabled:
                raise LookupFailure(
                    ServerError.METADATA_ERROR, f"Namespace bundle {bundle} is being unloaded"
                )
            return _Result(data.http_url.split("://", 1)[-1], redirect=False)
        return await self._search_for_candidate_broker(bundle, authoritative, non_persistent)

    async def _search_for_candidate_broker(
        self, bundle: str, authoritative: bool, non_persistent: bool
    ) -> _Result:
        if not self.election_started:
            raise LookupFailure(
                ServerError.METADATA_ERROR, "The leader election has not yet been completed!"
            )
        authoritative_redirect = self.is_leader
        if authoritative:
            candidate: str | None = self.broker_id
        else:
            decide_here = self.is_leader
            leader = self.leader_id
            if not decide_here and (leader is None or leader not in self.available_brokers):
                decide_here = True
                # Pulsar logs this at WARN per lookup; at info here, or a leader drain floods stderr
                self.log.info("leader not active, deciding locally", bundle=bundle, leader=leader)
            if decide_here:
                candidate = await self._get_least_loaded(bundle, non_persistent)
                if candidate is None:
                    raise LookupFailure(
                        ServerError.SERVICE_NOT_READY, f"No broker was available to own {bundle}"
                    )
                authoritative_redirect = True
            else:
                self._local_lm = None  # a leader decides again: free the local view (see _select_locally)
                candidate = leader
        assert candidate is not None
        if candidate == self.broker_id:
            await self.try_acquiring_ownership(bundle)
            return _Result(self.broker_id, redirect=False)
        if candidate not in self.available_brokers:
            raise LookupFailure(
                ServerError.METADATA_ERROR,
                f"NotFound: {paths.broker_path(candidate)}",
            )
        return _Result(candidate, redirect=True, authoritative=authoritative_redirect)

    async def _get_least_loaded(self, bundle: str, non_persistent: bool) -> str | None:
        leader = self.leader_actor
        if self.is_leader and leader is not None and leader.alive:
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
        from .modular_load_manager import ModularLoadManager

        now = self.now
        # `lm`, not `self._local_lm`, after the awaits: a leader elected meanwhile sets the attribute
        # to None, and this decision finishes on the view it started with
        lm = self._local_lm
        if lm is not None and self._local_lm_brokers != self.available_brokers:
            # getAvailableBrokers() on every decision: a broker gone from the registry since the view
            # was built is no candidate (brokers that joined wait for the next refresh; rebuilding on
            # every registry change made each follower re-read every report, restart case 1.6x slower)
            available = self.available_brokers
            lm.known_brokers = [b for b in lm.known_brokers if b in available]
            self._local_lm_brokers = available
        if lm is None or now - self._local_lm_time >= self.report_interval:
            if lm is None:
                strategy = strategies.create(
                    self.conf.load_balancer_load_placement_strategy, rng=self.rng
                )
                lm = self._local_lm = ModularLoadManager(
                    self.conf, strategy, self.rng, broker_id=self.broker_id, windows="objects"
                )
            registered = await self.md.children(paths.BROKERS)
            reports: dict[str, LocalBrokerData | None] = {}
            for b in registered:
                node = await self.md.get(paths.broker_path(b))
                reports[b] = (
                    None if node is None else self.decoded.get(
                        "report:" + b, node.data,
                        functools.partial(msgspec.json.decode, type=LocalBrokerData))
                )
            lm.update_all(registered, reports, self.owned_bundle_names())
            if self._local_lm is lm:
                self._local_lm_time = now
                self._local_lm_brokers = self.available_brokers
        # the follower's ModularLoadManagerImpl applies the same policies as the leader's
        lm.policies = await self.policy_cache.refresh()
        try:
            broker, trace = lm.select_broker_for_assignment(bundle, non_persistent=non_persistent)
        except UserCodeError as fault:
            user_faults.report(self.events, self.log, fault, outcome="lookup failed", bundle=bundle)
            raise
        self.events.emit(assignment_event(bundle=bundle, broker=broker, leader=self.broker_id, local=True,
                                          trace=trace))
        return broker

    # ================================================================== ownership

    async def try_acquiring_ownership(self, bundle: str, *, validate: bool = True) -> None:
        """OwnershipCache.tryAcquiringOwnership: create the ephemeral lock, then start the bundle's owner.

        With `validate`, the bundle is checked against the namespace's current ranges once the lock is
        held, and released again if a split removed it meanwhile (a lookup that raced a split must not
        resurrect the parent; emulator choice, Pulsar relies on its refreshed bundle factory)."""
        owned = self.owned.get(bundle)
        if owned is not None:
            await asyncio.shield(owned.acquired)
            if not owned.active:
                raise LookupFailure(
                    ServerError.METADATA_ERROR,
                    f"Namespace bundle {bundle} is currently being unloaded",
                )
            return
        fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        owned = self.owned[bundle] = OwnedBundle(bundle, fut)
        try:
            await self.md.acquire_lock(paths.ownership_path(bundle), self._self_owner_info)
        except BaseException as e:
            del self.owned[bundle]
            fut.set_result(False)
            if isinstance(e, (LockBusy, MetadataStoreError)):
                raise LookupFailure(
                    ServerError.METADATA_ERROR,
                    f"Failed to acquire ownership for namespace bundle {bundle}: {e}",
                ) from None
            raise
        if validate:
            try:
                still = await self._still_a_bundle(bundle)
            except MetadataStoreError:
                still = False
            if not still:
                try:
                    await self.md.release_lock(paths.ownership_path(bundle))
                except MetadataStoreError:
                    pass
                del self.owned[bundle]
                fut.set_result(False)
                raise LookupFailure(ServerError.METADATA_ERROR,
                                    f"Namespace bundle {bundle} no longer exists (split); redo the lookup")
        owner = BundleOwner(f"{self.broker_id}/{bundle}", self.system, bundle=bundle,
                            broker_id=self.broker_id, network=self.network,
                            close_time=self.close_time,
                            close_time_per_topic=self.close_time_per_topic, latency=self.latency)
        self.system.spawn(owner, parent=self)
        owned.actor = owner
        owned.active = True
        fut.set_result(True)
        self.stats.assignments += 1
        self.events.emit(BundleOwned(bundle=bundle, broker=self.broker_id))

    async def _still_a_bundle(self, bundle: str) -> bool:
        namespace = bundle.rsplit("/", 1)[0]
        node = await self.md.get(paths.local_policies_path(namespace))
        if node is None:
            return False
        return self._decode_bundles(namespace, node.data).contains(bundle)

    def _decode_bundles(self, namespace: str, data: bytes) -> NamespaceBundles:
        """A namespace's bundle ranges from its /admin/local-policies bytes (decoded once per
        distinct value in the cluster: every acquisition re-validates against them)."""
        return self.decoded.get("bundles:" + namespace, data, lambda raw: msgspec.json.decode(
            raw, type=LocalPolicies).to_namespace_bundles(namespace))

    def owned_bundle_names(self) -> list[str]:
        return [b for b, o in self.owned.items() if o.active]

    # ================================================================== initial state (scenario)

    async def _acquire_stated(self, bundle: str) -> dict[str, Any]:
        """A scenario's owner at t = 0: the lock and the bundle's owner, as a lookup that decided
        on this broker would make them (try_acquiring_ownership, validated against the ranges)."""
        try:
            await self.try_acquiring_ownership(bundle)
        except LookupFailure as e:
            raise AdminError(e.message) from None
        return {"bundle": bundle, "broker": self.broker_id}

    async def warm_start(self) -> dict[str, Any]:
        """Warm start: the last stats period and host-usage sample hold this instant's traffic as if it
        had been steady for a long time (stats_window.py `warm`), and a report carrying them is
        written at once, so the leader's first view of this broker is the steady state, not the empty
        first period of a broker that just started."""
        if self.windows is not None:
            now = self.now
            topics = {b: o.actor.topics for b, o in self.owned.items() if o.active and o.actor}
            self.windows.warm(now, self.load_source.bundle_stats(self.broker_id, now, topics))
        written = await self.write_load_report(force=True)
        return {"broker": self.broker_id, "bundles": len(self.local_data.bundles), "written": written}

    # ================================================================== unload

    async def unload_bundle(self, bundle: str, *, timeout: float | None = None) -> dict[str, Any]:
        """OwnedBundle.handleUnloadRequest: inactive in memory, close topics, release the lock.

        Meanwhile this broker answers lookups of the bundle with Failed/MetadataError ("being
        unloaded"); others still read the ownership node and answer Connect(self), and the attach
        is then refused with ServiceNotReady. Closing gives up after namespaceBundleUnloadingTimeoutMs
        and the lock is released anyway."""
        owned = self.owned.get(bundle)
        if owned is None:
            raise AdminError(f"Bundle {bundle} is not currently owned by {self.broker_id}")
        await asyncio.shield(owned.acquired)
        if not owned.active:
            raise AdminError(f"Namespace bundle {bundle} is not active (unload in progress)")
        started = self.now
        owned.active = False
        if timeout is None:
            timeout = self.conf.namespace_bundle_unloading_timeout_ms / 1000.0
        closed = 0
        actor = owned.actor
        timed_out = False
        if actor is not None and actor.alive:
            try:
                closed = await actor.ask(CloseTopics(), timeout=timeout)
            except AskTimeout:
                timed_out = True
                self.log.warning("Unloading of bundle has timed out", bundle=bundle)
            except ActorDead:
                pass
        try:
            await self.md.release_lock(paths.ownership_path(bundle))
        except MetadataStoreError as e:
            self.log.warning("releasing ownership failed", bundle=bundle, error=str(e))
        if actor is not None:
            actor.kill()
        self.owned.pop(bundle, None)
        took = self.now - started
        self.events.emit(BundleUnloaded(bundle=bundle, broker=self.broker_id, topics=closed,
                                        duration=took, timed_out=timed_out))
        return {"bundle": bundle, "topics": closed, "duration": took}

    # ================================================================== split

    async def split_and_own_bundle(self, bundle: str, *, unload: bool, algorithm: str | None = None,
                                   boundaries: tuple[int, ...] | list[int] | None = None
                                   ) -> dict[str, Any]:
        """NamespaceService.splitAndOwnBundle, on the owner (pulsar-protocol.md §5.2).

        Boundaries from the algorithm (default `defaultNamespaceBundleSplitAlgorithm`); locks for the
        children; the new ranges written to /admin/local-policies/<ns> with compare-and-set (up to 7
        attempts, 100 ms apart on BadVersion); the parent marked inactive and released, its topics
        handed to the children; the children unloaded in the background when `unload`."""
        conf = self.conf
        algorithm = algorithm or conf.default_namespace_bundle_split_algorithm
        if algorithm not in conf.supported_namespace_bundle_split_algorithms:
            raise AdminError(f"Unsupported namespace bundle split algorithm {algorithm!r}; supported: "
                             f"{', '.join(conf.supported_namespace_bundle_split_algorithms)}")
        namespace, lower, upper = parse_bundle(bundle)
        self.splitting.add(bundle)
        try:
            return await self._split_and_own(bundle, namespace, lower, upper, algorithm, unload,
                                              boundaries)
        finally:
            self.splitting.discard(bundle)

    async def _split_and_own(self, bundle: str, namespace: str, lower: int, upper: int,
                             algorithm: str, unload: bool,
                             boundaries: tuple[int, ...] | list[int] | None) -> dict[str, Any]:
        """splitAndOwnBundleOnceAndRetry. From the children's locks to the parent's release both
        are owned here and active (OwnershipCache holds the children before `updateBundleState(parent,
        false)`), the parent still serving its topics: `splitting` names the parent meanwhile."""
        conf = self.conf
        for attempt in range(7):
            owned = self.owned.get(bundle)
            if owned is None or not owned.active or owned.actor is None:
                raise AdminError(f"Bundle {bundle} is not currently owned by {self.broker_id}")
            node = await self.md.get(paths.local_policies_path(namespace))
            if node is None:
                raise AdminError(f"Namespace {namespace} does not exist")
            policies = msgspec.json.decode(node.data, type=LocalPolicies)
            current = policies.to_namespace_bundles(namespace)
            if not current.contains(bundle):
                raise AdminError(f"Bundle {bundle} not found in {namespace}'s bundles")
            topics = self._topic_stats(owned.actor)
            try:
                bounds = split_boundaries(algorithm, lower, upper, topics, conf,
                                          positions=list(boundaries) if boundaries else None)
            except ValueError as e:
                raise AdminError(str(e)) from None
            if not bounds:
                self.log.info("No valid boundary to split bundle", bundle=bundle, algorithm=algorithm)
                self.events.emit(BundleSplitSkipped(bundle=bundle, broker=self.broker_id,
                                                    algorithm=algorithm, reason="no split boundary"))
                return {"bundle": bundle, "children": [], "algorithm": algorithm}
            new = current.split(bundle, boundaries=bounds)
            children = new.children_of(bundle)
            for child in children:
                try:
                    await self.try_acquiring_ownership(child, validate=False)
                except LookupFailure as e:
                    self.log.warning("could not own split child", child=child, error=e.message)
            updated = msgspec.structs.replace(policies, bundles=LocalPolicies.from_namespace_bundles(
                new).bundles)
            try:
                await self.md.set(paths.local_policies_path(namespace), msgspec.json.encode(updated),
                                  expected_version=node.stat.version)
            except BadVersion:
                for child in children:
                    if child in self.owned:
                        await self._release_quietly(child)
                await anyio.sleep(0.1)
                continue
            self._ns_bundles.pop(namespace, None)
            parent_actor = owned.actor
            owned.active = False
            for child in children:
                child_owned = self.owned.get(child)
                if child_owned is not None and child_owned.actor is not None:
                    _, lo, up = parse_bundle(child)
                    last = up == 0xFFFFFFFF
                    parent_actor.hand_over(child_owned.actor, lambda t, lo=lo, up=up, last=last: (
                        lo <= topic_hash(t) < up or (last and topic_hash(t) == up)))
            await self._release_quietly(bundle)
            self.events.emit(BundleSplit(bundle=bundle, broker=self.broker_id, children=children,
                                         algorithm=algorithm, boundaries=bounds, unload=unload,
                                         attempt=attempt + 1))
            if unload:
                for child in children:
                    self.start_soon(self._unload_quietly, child)
            return {"bundle": bundle, "children": children, "algorithm": algorithm}
        raise AdminError(f"Failed to split {bundle}: local policies changed 7 times (BadVersion)")

    def _topic_stats(self, owner: BundleOwner) -> dict[str, NamespaceBundleStats | None]:
        """Per-topic stats for the split algorithms (flow_or_qps needs rates per topic)."""
        now = self.now
        per_topic = self.load_source.bundle_stats(
            self.broker_id, now, {t: {t: load} for t, load in owner.topics.items()})
        return dict(per_topic)

    async def _release_quietly(self, bundle: str) -> None:
        owned = self.owned.pop(bundle, None)
        if owned is not None and owned.actor is not None:
            owned.actor.kill()
        try:
            await self.md.release_lock(paths.ownership_path(bundle))
        except MetadataStoreError:
            pass

    async def _unload_quietly(self, bundle: str) -> None:
        try:
            await self.unload_bundle(bundle)
        except AdminError as e:
            self.log.info("unload skipped", bundle=bundle, reason=str(e))

    # ================================================================== stop modes

    async def shutdown(self, timeout: float | None = None) -> bool:
        """PulsarService.closeAsync, 3.x order: deregister, drain bundles one at a time, drop the
        remaining connections, give up leadership, close the session. True if it finished within
        `timeout` (default brokerShutdownTimeoutMs); otherwise the process dies where it is and what
        it still holds is left to session expiry (a SIGTERM with a short grace period)."""
        if timeout is None:
            timeout = self.conf.broker_shutdown_timeout_ms / 1000.0
        self.closing = True
        self.events.emit(BrokerStopping(broker=self.broker_id, bundles=len(self.owned), timeout=timeout))
        started = self.now
        with anyio.move_on_after(timeout) as scope:
            self.registered = False
            try:
                await self.md.release_lock(paths.broker_path(self.broker_id))
            except MetadataStoreError:
                pass   # "still continue and release bundle ownership"
            for bundle in list(self.owned):
                try:
                    await self.unload_bundle(bundle)
                except AdminError:
                    pass
            self.network.unlisten(self.broker_id)
            self.network.drop_connections(self.broker_id)
            if self.is_leader:
                if self.leader_actor is not None:
                    self.leader_actor.kill()
                self.is_leader = False
                try:
                    await self.md.release_lock(paths.LEADER)
                except MetadataStoreError:
                    pass
            await self.md.close_session()
        finished = not scope.cancelled_caught
        self.events.emit(BrokerStopped(broker=self.broker_id, graceful=finished,
                                       duration=self.now - started, bundles_left=len(self.owned)))
        if finished:
            self.kill()
        else:
            self.crash()
        return finished

    # ================================================================== producers / consumers

    def _on_attach(self, msg: Attach, reply: Reply) -> None:
        """ServerCnx handleProducer/handleSubscribe: serve only topics of active bundles owned here.

        A broker draining for shutdown takes no new connection (ServerCnx.handleConnect checks
        `isRunning()`, PR #17314): a client that has none to it is refused before its producer or
        consumer is looked at; one that still has its connection is served as usual."""
        if self.closing and not self.network.is_connected(msg.client, self.broker_id):
            reply.ok(_CONNECT_REFUSED)
            return
        try:
            name, namespace = parse_topic(msg.topic)
        except ValueError as e:
            reply.ok(AttachResult(False, ServerError.TOPIC_NOT_FOUND, str(e)))
            return
        bundles = self._ns_bundles.get(namespace)
        if bundles is None:
            self.start_soon(self._attach_after_load, namespace, name, msg, reply)
            return
        self._route_attach(bundles.bundle_of_full_name(name), msg, reply)

    async def _attach_after_load(self, namespace: str, name: str, msg: Attach,
                                 reply: Reply) -> None:
        try:
            bundles = await self.namespace_bundles(namespace)
        except LookupFailure as e:
            reply.ok(AttachResult(False, e.error, e.message))
            return
        self._route_attach(bundles.bundle_of_full_name(name), msg, reply)

    def _route_attach(self, bundle: str, msg: Attach, reply: Reply) -> None:
        owned = self.owned.get(bundle)
        if owned is None or not owned.active or owned.actor is None or not owned.actor.alive:
            reply.ok(
                AttachResult(
                    False,
                    ServerError.SERVICE_NOT_READY,
                    f"Namespace bundle for topic ({msg.topic}) not served by this instance. "
                    "Please redo the lookup.",
                )
            )
            return
        owner = owned.actor
        if msg.topic in owner.topics:   # loaded already (a topic stays loaded until its bundle goes)
            self._attached(owner, msg, reply)
            return
        # BrokerService.getOrCreateTopic: load the topic first (a permit of
        # maxConcurrentTopicLoadRequest, queued beyond; topic_loader.py), then serve the producer
        self.topic_loader.load((owner, msg.topic), functools.partial(
            self._after_topic_load, bundle, owner, msg, reply))

    def _after_topic_load(self, bundle: str, owner: BundleOwner, msg: Attach, reply: Reply) -> None:
        owned = self.owned.get(bundle)
        if owned is None or owned.actor is not owner or not owned.active or not owner.alive:
            self._route_attach(bundle, msg, reply)   # unloaded meanwhile: refused as any other
            return
        self._attached(owner, msg, reply)

    def _attached(self, owner: BundleOwner, msg: Attach, reply: Reply) -> None:
        self.network.connect(msg.client, self.broker_id)
        owner.attach(msg)
        reply.ok(_ATTACHED)

    def _on_detach(self, msg: Detach, reply: Reply) -> None:
        name, namespace = parse_topic(msg.topic)
        bundles = self._ns_bundles.get(namespace)
        owned = self.owned.get(bundles.bundle_of_full_name(name)) if bundles else None
        if owned is not None and owned.actor is not None and owned.actor.alive:
            owned.actor.detach(msg)
        reply.ok(None)

    # ================================================================== metadata notifications

    def _on_notification(self, note: Notification) -> None:
        path = note.path
        if path == paths.LEADER:
            if note.type == "Deleted":
                self.start_soon(self._on_leader_deleted)
        elif path.startswith(paths.BROKERS + "/"):
            if note.type in ("Created", "Deleted"):
                self.start_soon(self._refresh_available_brokers)
        elif self.policy_cache.on_notification(note) and path.startswith(paths.LOCAL_POLICIES + "/"):
            namespace = paths.namespace_of_policies_path(path)
            if namespace in self._ns_loading:
                self._ns_invalidated.add(namespace)
            if self._ns_bundles.pop(namespace, None) is not None:
                self.log.debug("Policy updated for namespace, refreshing the bundle cache",
                               namespace=namespace)

    async def _refresh_available_brokers(self) -> None:
        try:
            self.available_brokers = frozenset(await self.md.children(paths.BROKERS))
        except MetadataStoreError as e:  # keep the last view; the next notification refreshes it
            self.log.warning("could not list available brokers", error=str(e))

    # ================================================================== leader election

    async def _elect(self) -> None:
        """LeaderElectionImpl.elect(): create-if-absent on /loadbalance/leader, else follow the holder."""
        value = _json_encode(LeaderBroker(broker_id=self.broker_id, service_url=self.web_url))
        while True:
            try:
                await self.md.acquire_lock(paths.LEADER, value)
            except LockBusy:
                node = await self.md.get(paths.LEADER)
                if node is None:
                    continue  # the holder vanished meanwhile: race again
                leader = msgspec.json.decode(node.data, type=LeaderBroker)
                self._become_follower(leader.broker_id)
                return
            except MetadataStoreError as e:
                # e.g. the session just expired: LEADER_ELECTION_RETRY_DELAY_SECONDS, then again
                self.log.warning("leader election failed, retrying in 5 s", error=str(e))
                await anyio.sleep(5.0)
                continue
            else:
                self._become_leader()
                return

    async def _on_leader_deleted(self) -> None:
        if self.closing:   # a stopping broker (maybe the old leader itself) does not run again
            return
        if self.is_leader:
            self.log.info("Leadership released")
        self.leader_id = None
        await self._elect()

    def _become_leader(self) -> None:
        was = self.is_leader
        self.is_leader = True
        self.leader_id = self.broker_id
        if not was:
            self.log.info("This broker was elected leader")
            self._local_lm = None  # the leader actor decides from now on
            self.leader_actor = self._leader_factory(self)
            self.system.spawn(self.leader_actor, parent=self)
            self.events.emit(LeaderElected(broker=self.broker_id))

    def _become_follower(self, leader_id: str) -> None:
        self.leader_id = leader_id
        if self.is_leader:
            self.is_leader = False
            if self.leader_actor is not None:
                self.leader_actor.kill()
            self.leader_actor = None
        self.log.debug("This broker is a follower", leader=leader_id)

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
        if self.conf.zookeeper_session_expired_policy == "shutdown":
            self.crash()
            return
        await self.md.open_session(session_events=True)
        if self.registered:
            try:
                self._update_local_data()
                stat = await self.md.acquire_lock(paths.broker_path(self.broker_id),
                                                  self._encode_report())
                self._report_version = stat.version
            except MetadataStoreError as e:
                self.log.warning("could not re-register after session loss", error=str(e))
        lost = []
        for bundle, owned in list(self.owned.items()):
            if not owned.active:
                continue
            try:
                await self.md.acquire_lock(paths.ownership_path(bundle), self._self_owner_info)
            except MetadataStoreError:
                lost.append(bundle)
                owned.active = False
                if owned.actor is not None:
                    await owned.actor.close_topics()
                    owned.actor.kill()
                self.owned.pop(bundle, None)
        if self.is_leader:
            await self._elect()
        await self._refresh_available_brokers()
        self.events.emit(SessionReestablished(broker=self.broker_id, lost_bundles=lost))

    # ================================================================== load reports

    async def _report_loop(self) -> None:
        """LoadReportUpdaterTask: every 5 s, write the report if it changed enough or is 15 min old.

        At a fixed rate, as Pulsar schedules it (PulsarService.startLoadManagementService:
        `loadManagerExecutor.scheduleAtFixedRate(new LoadReportUpdaterTask(...), 5000, 5000, ms)`): the
        ticks stay on start + k x 5 s whatever the write costs. The write blocks its tick
        (ModularLoadManagerImpl.writeBrokerDataOnZooKeeper joins the metadata update), so a write
        longer than the interval delays the next tick, which then runs at once (the executor's
        catch-up), never two at a time. A fixed delay after each write would let every broker's ticks
        drift by its metadata latency, cycle after cycle.

        `asyncio.sleep` is what `anyio.sleep` awaits on this loop, without the backend lookup: this
        timer fires for every broker every 5 emulated seconds."""
        loop = asyncio.get_running_loop()
        interval = self.report_interval
        start = loop.time()
        k = 0
        while True:
            k += 1
            delay = start + k * interval - loop.time()
            await asyncio.sleep(delay if delay > 0.0 else 0.0)
            await self.write_load_report()

    def _start_windows(self) -> None:
        """BrokerService.startStatsUpdater and the LinuxBrokerHostUsageImpl constructor: one stats update
        and one host-usage sample now, then each on its own clock (stats_window.py)."""
        if self.conf.emulator_instant_stats:
            return
        self.windows = BrokerWindows(self.broker_id, self.load_source, self.now)
        self._sample_windows()
        self.windows.update_stats(self.now)
        self.windows.sample_host(self.now)
        self.start_soon(self._stats_loop)
        self.start_soon(self._host_usage_loop)

    async def _stats_loop(self) -> None:
        """updateRates at a fixed rate of statsUpdateFrequencyInSecs after statsUpdateInitialDelayInSecs."""
        assert self.windows is not None
        await asyncio.sleep(self.conf.stats_update_initial_delay_in_secs)
        while True:
            self._sample_windows()
            self.windows.update_stats(self.now)
            await asyncio.sleep(self.conf.stats_update_frequency_in_secs)

    async def _host_usage_loop(self) -> None:
        """calculateBrokerHostUsage with a fixed delay of loadBalancerHostUsageCheckIntervalMinutes."""
        assert self.windows is not None
        while True:
            await asyncio.sleep(self.conf.load_balancer_host_usage_check_interval_minutes * 60.0)
            self._sample_windows()
            self.windows.sample_host(self.now)

    def _sample_windows(self) -> Any:
        """The traffic of this instant into the windows; returns the broker's totals."""
        w = self.windows
        assert w is not None
        now = self.now
        if w.sampled_at(now):
            return w.current_totals
        topics = {b: o.actor.topics for b, o in self.owned.items() if o.active and o.actor}
        return w.track(now, topics)

    def _update_local_data(self) -> None:
        """updateLocalBrokerData: bundles, rates and counts of the last stats update, CPU and bandwidth
        of the last host-usage sample, heap and direct memory of this instant."""
        w = self.windows
        if w is None:
            self._update_local_data_instant()
            return
        totals = self._sample_windows()
        local = self.local_data
        now_usage = self.load_source.system_usage(self.broker_id, self.now, {"": totals})
        local.memory = now_usage.memory
        local.direct_memory = now_usage.direct_memory
        stats_version, host_version = self._windows_seen
        if host_version != w.host_version and w.host_usage is not None:
            local.cpu = w.host_usage.cpu
            local.bandwidth_in = w.host_usage.bandwidth_in
            local.bandwidth_out = w.host_usage.bandwidth_out
        if stats_version != w.stats_version:
            local.update_from_stats(w.bundle_stats)
        self._windows_seen = (w.stats_version, w.host_version)

    def _update_local_data_instant(self) -> None:
        """`emulator_instant_stats`: every report carries the traffic and usage of its instant."""
        now = self.now
        topics = {b: o.actor.topics for b, o in self.owned.items() if o.active and o.actor}
        bundle_stats: dict[str, NamespaceBundleStats] = self.load_source.bundle_stats(
            self.broker_id, now, topics
        )
        usage = self.load_source.system_usage(self.broker_id, now, bundle_stats)
        local = self.local_data
        local.cpu = usage.cpu
        local.memory = usage.memory
        local.direct_memory = usage.direct_memory
        local.bandwidth_in = usage.bandwidth_in
        local.bandwidth_out = usage.bandwidth_out
        local.update_from_stats(bundle_stats)

    def _encode_report(self) -> bytes:
        return _json_encode(self.local_data)

    async def write_load_report(self, force: bool = False) -> bool:
        """writeBrokerDataOnZooKeeper: True if a report was written."""
        if not self.registered:
            return False
        self._update_local_data()
        now_ms = epoch_ms(self.system.clock)
        last = self._last_data
        if not force and last is not None and not need_broker_data_update(
            last, self.local_data, self.conf, now_ms
        ):
            return False
        self.local_data.last_update = now_ms
        try:
            stat = await self.md.set(
                paths.broker_path(self.broker_id),
                self._encode_report(),
                expected_version=self._report_version,
            )
        except MetadataStoreError as e:
            self.log.warning("load report not written", error=str(e))
            return False
        self._report_version = stat.version
        self.local_data.clean_deltas()
        self._last_data = msgspec.structs.replace(self.local_data)
        self.events.emit(LoadReportWritten(broker=self.broker_id, bundles=self.local_data.num_bundles))
        return True

    # ================================================================== views

    @property
    def host(self) -> str:
        return host_of(self.broker_id)
