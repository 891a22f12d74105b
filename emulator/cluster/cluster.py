"""Cluster: builds and runs one emulated Pulsar cluster inside the current (virtual or wall) event loop.

It owns the actor system, the metadata store, the network, the brokers and the clients, and offers the
operations scenarios and tests need (add/kill brokers, create namespaces, add clients, wait for a
condition). Several clusters can live in one process: nothing here is global.
"""

from __future__ import annotations

import random
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Iterable, Mapping, TypedDict

import anyio
import msgspec
import structlog

from emulator.model.bundles import NamespaceBundles
from emulator.model.config import ServiceConfig
from emulator.model.durations import format_duration, parse_duration
from emulator.model.policies import LocalPolicies
from emulator.runtime import Actor, ActorDead, ActorFailure, ActorSystem, AskTimeout, Clock, Reply, VirtualClock

from . import paths
from .broker import Broker, LeaderBroker
from .client import ClientSettings, PulsarClient
from .decoded import DecodeCache
from .dynamic_config import DynamicConfiguration
from .bookkeeper import Bookies
from .broker_executors import DEFAULT_CORES
from .events import ActorFailed, AdminSplit, AdminUnload, ClusterEvents, LoadManagerSwitchUnsupported
from .capacity import Capacity
from .latency import Constant, Latencies
from .load_manager import ClusterShared
from .load_manager_switch import MIGRATION_DOCS
from .load_source import FlatLoad, LoadSource
from .messages import AcquireBundle, AdminResult, SplitBundle, UnloadBundle, WarmStart
from .metadata_client import MetadataClient
from .metadata_ensemble import MetadataBatching
from .metadata_store import MetadataStore, metadata_session_timeout
from .network import Network, broker_id_for, service_url_of

if TYPE_CHECKING:  # pragma: no cover
    from emulator.model.policies import PolicyView

    from .policy_admin import PolicyAdmin

STORE_NAME = "metadata-store"


DEFAULT_NAMESPACE = "public/default"
"""The namespace Pulsar's cluster initialisation creates (TopicName.PUBLIC_TENANT / DEFAULT_NAMESPACE)."""
DEFAULT_NAMESPACE_BUNDLES = 16
"""PulsarClusterMetadataSetup.DEFAULT_BUNDLE_NUMBER: its bundles when `--default-namespace-bundle-number`
is not given."""


class WaitTimeout(TimeoutError):
    """`Cluster.wait_until` gave up: what was awaited, for how long, and when (emulated seconds).
    `emulator.testing` turns it into a failure report naming the seed and the last decisions."""

    def __init__(self, what: str, timeout: float, started: float, now: float) -> None:
        super().__init__(f"{what} not reached within {format_duration(timeout)} "
                         f"({timeout:g} emulated seconds; waited from t={started:.3f}s to t={now:.3f}s)")
        self.what, self.timeout, self.started, self.time = what, timeout, started, now


class ClusterSettings(msgspec.Struct, frozen=True, kw_only=True):
    """Emulator knobs that do not exist in a real cluster (kept apart from ServiceConfig)."""

    report_interval: float = 5.0            # LoadManagerShared.LOAD_REPORT_UPDATE_MINIMUM_INTERVAL
    metadata_op_latency: float = 0.0        # seconds per metadata-store operation
    broker_start_timeout: float = 60.0      # emulated seconds a broker may take to start
    placement: str | None = None            # overrides conf.load_balancer_load_placement_strategy
    shedder: str | None = None              # overrides conf.load_balancer_load_shedding_strategy
    bundle_close_time: float = 0.02         # seconds to close a bundle's topics on unload (base)...
    topic_close_time: float = 0.002         # ...plus the slowest of its topics (closed concurrently)
    sigterm_timeout: float = 5.0            # grace period of a SIGTERM-like stop before the kill
    network_latency: float = 0.0            # one-way client <-> broker latency, seconds
    latency: Latencies | None = None
    """Every operation's duration (emulator/cluster/latency.py). None: the cost-free cluster, built
    from the fields above (`metadata_op_latency`, `bundle_close_time`, `topic_close_time`), every
    other step instantaneous. Scenarios pass the calibrated defaults with their [latency] table."""

    capacity: Capacity | None = None
    """The shared capacities (emulator/cluster/capacity.py). None: unlimited, the cost-free cluster
    the cluster tests build; scenarios pass the calibrated defaults with their [capacity] table."""

    def capacities(self) -> Capacity:
        return Capacity.unlimited() if self.capacity is None else self.capacity

    def latencies(self) -> Latencies:
        if self.latency is not None:
            return self.latency
        return Latencies.zero(bundle_close=self.bundle_close_time, topic_close=self.topic_close_time,
                              metadata_op=self.metadata_op_latency)


class Cluster:
    def __init__(self, system: ActorSystem, conf: ServiceConfig, *, load_source: LoadSource,
                 settings: ClusterSettings, name: str = "cluster") -> None:
        self.name = name
        self.system = system
        self.conf = conf
        self.settings = settings
        self.load_source = load_source
        self.events = ClusterEvents(system.clock, now=system.now)
        # an actor crash is an emulator bug: observers (recorder, metrics) see it as an event
        system.on_failure.append(self._on_actor_failure)
        self.network = Network(latency=settings.network_latency)
        self.latencies = settings.latencies()
        self.capacity = settings.capacities()
        self.bookies = Bookies(self.capacity.bookkeeper, system.seed, lambda: sum(
            b.local_data.msg_throughput_in for b in self.brokers.values() if b.alive))
        self.decoded = DecodeCache()  # load reports and bundle ranges, decoded once for all brokers
        # what a load manager keeps once per cluster, shared by its brokers (the Extensible manager's
        # system topics), keyed by its class name and made when a broker first runs it
        self.load_manager_shared: dict[str, ClusterShared] = {}
        self.brokers: dict[str, Broker] = {}
        self.clients: dict[str, PulsarClient] = {}
        self.store = MetadataStore(
            STORE_NAME, system,
            session_timeout=metadata_session_timeout(conf),
            capacity=self.capacity.metadata, batching=MetadataBatching.from_conf(conf),
            **_store_latency(self.latencies),
        )
        self._admin: MetadataClient | None = None
        self._admin_actor: Actor | None = None
        # dynamic configuration: start-up values, the /admin/configuration map and its writes
        self.dynamic = DynamicConfiguration(conf, self.store, self.events,
                                            lambda: (self._admin_actor, self._admin))
        self._host_seq = 0
        self._default_namespace: anyio.Event | None = None
        """Set while `ensure_default_namespace` writes public/default: a second caller waits for it."""
        self._broker_settings: dict[str, dict[str, object]] = {}   # each broker's own broker.conf keys
        self.invariants: object | None = None   # set by emulator.testing / the CLI when checking
        self.decision_log: object | None = None  # likewise: an observer of self.events

    # ------------------------------------------------------------------ construction

    @classmethod
    @asynccontextmanager
    async def start(
        cls,
        brokers: int | Iterable[str] = 3,
        *,
        conf: ServiceConfig | None = None,
        seed: int = 0,
        namespaces: dict[str, int] | None = None,
        load_source: LoadSource | None = None,
        settings: ClusterSettings | None = None,
        clock: Clock | None = None,
        name: str = "cluster",
        before_brokers: Callable[["Cluster"], Awaitable[None]] | None = None,
    ) -> AsyncIterator["Cluster"]:
        """Start a cluster in the running loop; everything is torn down when the block exits.

        `before_brokers(cluster)` runs once the metadata store is up and before any broker starts:
        what it writes there (persisted load data of a warm start) is what the brokers and the
        first leader find, as in a cluster that ran before."""
        conf = conf or ServiceConfig()
        clock = clock or VirtualClock()
        async with ActorSystem(seed, clock, name=name) as system:
            cluster = cls(system, conf, load_source=load_source or FlatLoad(),
                          settings=settings or ClusterSettings(), name=name)
            await cluster._boot(brokers, namespaces, before_brokers)
            yield cluster

    async def _boot(self, brokers: int | Iterable[str], namespaces: dict[str, int] | None,
                    before_brokers: Callable[["Cluster"], Awaitable[None]] | None = None) -> None:
        self.system.spawn(self.store)
        admin = _AdminActor("admin", self.system)
        self.system.spawn(admin)
        self._admin_actor = admin
        self._admin = MetadataClient(admin, STORE_NAME)
        if namespaces is None:
            namespaces = {"public/default": self.conf.default_number_of_namespace_bundles}
        for ns, n in namespaces.items():
            await self.create_namespace(ns, n)
        if before_brokers is not None:
            await before_brokers(self)
        hosts = [f"broker-{i + 1}" for i in range(brokers)] if isinstance(brokers, int) else list(brokers)
        # start concurrently, as a real cluster's brokers do; the election decides the leader
        async with anyio.create_task_group() as tg:
            for host in hosts:
                tg.start_soon(self.add_broker, host)

    # ------------------------------------------------------------------ namespaces

    async def create_namespace(self, namespace: str, bundles: int | None = None, *,
                               anti_affinity_group: str | None = None,
                               boundaries: list[int] | None = None) -> NamespaceBundles:
        """Write the namespace's local policies with `bundles` equal ranges (PulsarAdmin createNamespace),
        or with the given `boundaries` (createNamespace with a BundlesData of explicit boundaries, as
        `pulsar-admin namespaces create --bundles` cannot but the REST API can), and its anti-affinity
        group (setNamespaceAntiAffinityGroup) if given."""
        if boundaries is not None:
            nb = NamespaceBundles.from_boundaries(namespace, boundaries)
        else:
            n = bundles if bundles is not None else self.conf.default_number_of_namespace_bundles
            if n < 1:
                raise ValueError(f"namespace {namespace}: bundles = {n}; must be >= 1")
            nb = NamespaceBundles.default(namespace, n)
        assert self._admin is not None
        await self._admin.set(paths.local_policies_path(namespace), msgspec.json.encode(
            LocalPolicies.from_namespace_bundles(nb, anti_affinity_group)))
        return nb

    async def ensure_default_namespace(self) -> bool:
        """`public/default` as Pulsar's cluster initialisation makes it (PulsarClusterMetadataSetup
        .initializeCluster -> createNamespaceIfAbsent, DEFAULT_BUNDLE_NUMBER = 16 bundles), unless the
        namespace exists. Written on first use (an HTTP lookup or admin call, a real client's lookup),
        not at start: a namespace node the run never uses would still be read by every policy-cache
        refresh and move a recorded run's timing. True if it was written now."""
        if self.store.peek(paths.local_policies_path(DEFAULT_NAMESPACE)) is not None:
            return False
        if self._default_namespace is not None:     # another caller is writing it: wait for that write
            await self._default_namespace.wait()
            return False
        self._default_namespace = anyio.Event()
        try:
            await self.create_namespace(DEFAULT_NAMESPACE, DEFAULT_NAMESPACE_BUNDLES)
        finally:
            self._default_namespace.set()
            self._default_namespace = None
        return True

    @property
    def policies(self) -> "PolicyAdmin":
        """Isolation policies, failure domains, anti-affinity groups (pulsar-admin clusters and
        namespaces; policy_admin.py)."""
        from .policy_admin import PolicyAdmin

        assert self._admin is not None
        return PolicyAdmin(self._admin, self.name, self)

    def leader_policies(self) -> "PolicyView | None":
        """The policies the running leader's selection applies (None without a running leader)."""
        leader = self.leader()
        b = self.brokers.get(leader) if leader else None
        if b is None or not b.alive:
            return None
        view = b.capabilities.leader_load_view   # Modular's leader; the others apply theirs per decision
        return None if view is None else view.leader_policies()

    async def namespace_bundles(self, namespace: str) -> NamespaceBundles:
        assert self._admin is not None
        node = await self._admin.get(paths.local_policies_path(namespace))
        if node is None:
            raise ValueError(f"namespace {namespace!r} does not exist")
        return msgspec.json.decode(node.data, type=LocalPolicies).to_namespace_bundles(namespace)

    async def write_node(self, path: str, data: bytes) -> None:
        """Write a persistent node as the operator's admin client (no session: it outlives brokers)."""
        assert self._admin is not None
        await self._admin.set(path, data)

    # ------------------------------------------------------------------ brokers

    def _next_host(self) -> str:
        while True:
            self._host_seq += 1
            host = f"broker-{self._host_seq}"
            if broker_id_for(host) not in self.brokers:
                return host

    async def add_broker(self, host: str | None = None,
                         settings: Mapping[str, object] | None = None) -> Broker:
        """Start a broker on `host` (id `host:8080`), or with the id given as `host:port`.

        `settings`: broker.conf keys of this broker only (a broker restarted with an edited
        broker.conf, e.g. another loadManagerClassName during a migration): it gets a ServiceConfig
        of its own (`DynamicConfiguration.broker_conf`), and keeps them at its later restarts (its
        file stays edited; new settings go over them); a broker never given any shares the cluster's."""
        host = host or self._next_host()
        broker_id = host if ":" in host else broker_id_for(host)
        previous = self.brokers.get(broker_id)
        if previous is not None and previous.alive:
            raise ValueError(f"broker {broker_id} is already running")
        if previous is not None and previous.conf is not self.conf:
            self.dynamic.forget_broker_conf(previous.conf)
        conf, placement, shedder = self.conf, self.settings.placement, self.settings.shedder
        settings = {**self._broker_settings.get(broker_id, {}), **(settings or {})}
        if settings:
            self._broker_settings[broker_id] = settings
            conf = self.dynamic.broker_conf(settings, source=f"broker {broker_id} settings")
            named = {ServiceConfig.field_name(k) for k in settings}
            if "load_balancer_load_placement_strategy" in named:
                placement = None   # its own broker.conf names it
            if "load_balancer_load_shedding_strategy" in named:
                shedder = None
            if "load_manager_class_name" in named:
                self._check_class_not_overridden(broker_id, settings, conf)
        broker = Broker(
            broker_id, self.system, conf=conf, network=self.network,
            load_source=self.load_source, events=self.events,
            placement=placement, shedder=shedder, store_name=STORE_NAME,
            report_interval=self.settings.report_interval,
            decoded=self.decoded, latencies=self.latencies, capacity=self._broker_capacity(broker_id),
            cluster_name=self.name,
            load_manager_shared=self.load_manager_shared, bookies=self.bookies,
        )
        self.brokers[broker_id] = broker
        self.system.spawn(broker)
        with anyio.fail_after(self.settings.broker_start_timeout):
            await broker.started.wait()
        return broker

    def _broker_capacity(self, broker_id: str) -> Capacity:
        """The capacities a broker starts with: the cluster's, its JVM's cores from its host when
        `[capacity.broker] cores` leaves them to it (the load source's `available_processors`)."""
        if self.capacity.broker.cores is not None:
            return self.capacity
        processors = getattr(self.load_source, "available_processors", None)
        cores = DEFAULT_CORES if processors is None else processors(broker_id)
        return msgspec.structs.replace(self.capacity, broker=msgspec.structs.replace(self.capacity.broker,
                                                                                     cores=cores))

    def _check_class_not_overridden(self, broker_id: str, settings: Mapping[str, object],
                                    conf: ServiceConfig) -> None:
        """A broker restarted with another loadManagerClassName in its broker.conf runs the value of
        /admin/configuration instead when that key was set dynamically (updateDynamicServiceConfiguration
        at start): Pulsar's behaviour, which defeats the documented migration; said loudly."""
        key = next(k for k in settings if ServiceConfig.field_name(k) == "load_manager_class_name")
        requested = str(settings[key])
        if conf.load_manager_class_name == requested:
            return
        structlog.get_logger(actor=broker_id).warning(
            "loadManagerClassName of the broker's own settings is overridden by /admin/configuration "
            "(delete-dynamic-config loadManagerClassName first)", broker=broker_id,
            requested=requested, current=conf.load_manager_class_name, docs=MIGRATION_DOCS)
        self.events.emit(LoadManagerSwitchUnsupported(
            broker=broker_id, previous=requested, current=conf.load_manager_class_name,
            requested=requested, how="overridden", docs=MIGRATION_DOCS))

    def kill_broker(self, broker_id: str) -> None:
        """Crash: the process is gone, its metadata session expires after the session timeout."""
        broker = self._live_broker(broker_id)
        broker.crash()

    async def stop_broker(self, broker_id: str, mode: str = "graceful") -> bool:
        """Stop a broker: `graceful` (drain within brokerShutdownTimeoutMs), `sigterm` (the same drain
        cut short after `sigterm_timeout`, the rest left to session expiry) or `kill` (a crash).
        Returns True if the broker finished its shutdown in time."""
        broker = self._live_broker(broker_id)
        if mode == "graceful":
            return await broker.shutdown()
        if mode == "sigterm":
            return await broker.shutdown(self.settings.sigterm_timeout)
        if mode == "kill":
            broker.crash()
            return False
        raise ValueError(f"stop mode = {mode!r}; expected graceful, sigterm or kill")

    async def expire_session(self, broker_id: str) -> bool:
        """Fault: the broker's metadata session expires now (as after a long GC pause or partition).
        Its ephemeral nodes vanish at once; the broker then follows zookeeperSessionExpiredPolicy."""
        from .metadata_messages import ExpireSession

        broker = self._live_broker(broker_id)
        if broker.md.session_id is None:
            return False
        return await self.store.ask(ExpireSession(broker.md.session_id))

    # ------------------------------------------------------------------ admin operations

    def owner_of(self, bundle: str) -> str | None:
        return self.ownership().get(bundle)

    async def unload_bundle(self, bundle: str, destination: str | None = None) -> AdminResult:
        """pulsar-admin namespaces unload [--destinationBroker]: the leader records the destination
        (bundleBrokerAffinityMap), then the owner unloads."""
        owner = self.owner_of(bundle)
        if owner is None:
            return AdminResult(False, f"Bundle {bundle} is not currently owned")
        if destination is not None:
            if destination not in self.store.peek_children(paths.BROKERS):
                return AdminResult(False, "Not allowed unload namespace bundle to inactive "
                                          f"destination broker {destination}")
            leader = self.leader()
            b = self.brokers.get(leader) if leader else None
            if b is not None and b.alive:
                b.load_manager.set_namespace_bundle_affinity(bundle, destination)
        self.events.emit(AdminUnload(bundle=bundle, destination=destination))
        return await self._admin_call(owner, UnloadBundle(bundle, destination))

    async def unload_namespace(self, namespace: str) -> list[AdminResult]:
        """pulsar-admin namespaces unload <ns>: every owned bundle of the namespace, one by one."""
        nb = await self.namespace_bundles(namespace)
        owned = self.ownership()
        return [await self.unload_bundle(b) for b in nb.names if b in owned]

    async def split_bundle(self, bundle: str, algorithm: str | None = None, *, unload: bool = False,
                           boundaries: list[int] | None = None) -> AdminResult:
        """pulsar-admin namespaces split-bundle [--split-algorithm-name] [--unload]."""
        owner = self.owner_of(bundle)
        if owner is None:
            return AdminResult(False, f"Bundle {bundle} is not currently owned")
        self.events.emit(AdminSplit(bundle=bundle, algorithm=algorithm))
        return await self._admin_call(owner, SplitBundle(
            bundle, unload=unload, algorithm=algorithm,
            boundaries=tuple(boundaries) if boundaries else None))

    # dynamic configuration (dynamic_config.py): the operator's calls, as on the REST API

    def set_config(self, key: str, value: object) -> None:
        """pulsar-admin brokers update-dynamic-config (`DynamicConfiguration.set_config`)."""
        self.dynamic.set_config(key, value)

    def delete_config(self, key: str) -> None:
        """pulsar-admin brokers delete-dynamic-config (`DynamicConfiguration.delete_config`)."""
        self.dynamic.delete_config(key)

    def dynamic_configuration(self) -> dict[str, str]:
        """GET /admin/v2/brokers/configuration/values: the map in /admin/configuration."""
        return self.dynamic.dynamic_configuration()

    async def dynamic_configuration_written(self) -> None:
        """Wait until /admin/configuration holds every change made so far."""
        await self.dynamic.dynamic_configuration_written()

    async def acquire_bundle(self, bundle: str, broker_id: str) -> AdminResult:
        """Make `broker_id` the owner of an unowned bundle through its OwnershipCache path (the
        ephemeral /namespace/<bundle> lock on its session, then the bundle's topics are served
        there): the initial state of a scenario."""
        return await self._admin_call(broker_id, AcquireBundle(bundle))

    async def warm_broker(self, broker_id: str) -> AdminResult:
        """Warm start of one broker: its stats period and host sample hold the traffic of this instant
        as if it had been steady, and a load report carrying them is written now."""
        return await self._admin_call(broker_id, WarmStart())

    async def _admin_call(self, broker_id: str, op: object) -> AdminResult:
        try:
            return await self.network.broker(broker_id).ask(op, timeout=300.0)
        except (ActorDead, AskTimeout) as e:
            return AdminResult(False, str(e))

    def _leader_actor(self) -> Any:
        """The leader's load-manager actor (Modular's LoadManagerLeader), or None."""
        leader = self.leader()
        b = self.brokers.get(leader) if leader else None
        return b.leader_actor if b is not None and b.alive else None

    def _live_broker(self, broker_id: str) -> Broker:
        broker = self.brokers.get(broker_id)
        if broker is None or not broker.alive:
            known = ", ".join(self.live_brokers()) or "none"
            raise ValueError(f"no live broker {broker_id!r} (live: {known})")
        return broker

    def live_brokers(self) -> list[str]:
        return sorted(b for b, a in self.brokers.items() if a.alive)

    def leader(self) -> str | None:
        """The broker holding /loadbalance/leader (read from the store's tree, no message)."""
        data = self.store.peek(paths.LEADER)
        if data is None:
            return None
        return msgspec.json.decode(data, type=LeaderBroker).broker_id

    def ownership(self) -> dict[str, str]:
        """bundle -> broker id, from the ownership nodes in the store and, when a broker runs the
        Extensible load manager, the bundles its channel says are Owned (there are no nodes then)."""
        out = {}
        for path, data in self.store.peek_prefix(paths.NAMESPACE + "/"):
            if path.count("/") >= 4:
                out[path[len(paths.NAMESPACE) + 1:]] = msgspec.json.decode(data)["httpUrl"].split("://")[-1]
        for shared in self.load_manager_shared.values():
            out.update(shared.ownership())
        return out

    def _on_actor_failure(self, failure: ActorFailure) -> None:
        """An actor raised (an emulator bug, exit 3): reported as an event; a broker that raised is a
        dead process to the rest of the cluster, so its port closes and its clients' connections drop
        (as `Broker.crash`) and the summary counts their handles as down, not as connected."""
        self.events.emit(ActorFailed(actor=failure.actor, error=failure.error))
        if failure.actor in self.brokers:
            self.network.unlisten(failure.actor)
            self.network.drop_connections(failure.actor)

    # ------------------------------------------------------------------ clients

    def add_client(self, name: str | None = None, *, settings: ClientSettings | None = None,
                   service_urls: list[str] | None = None) -> PulsarClient:
        name = name or f"client-{len(self.clients) + 1}"
        if name in self.clients:
            raise ValueError(f"client {name!r} already exists")
        urls = service_urls or [service_url_of(b) for b in self.live_brokers()]
        client = PulsarClient(name, self.system, network=self.network, service_urls=urls,
                              events=self.events, settings=settings, latencies=self.latencies,
                              capacity=self.capacity)
        self.clients[name] = client
        self.system.spawn(client)
        self.network.register_client(name, client)
        return client

    # ------------------------------------------------------------------ waiting

    async def wait_until(self, predicate: Callable[[], bool], *, timeout: float | str = 300.0,
                         poll: float | str = 0.1, what: str = "condition") -> float:
        """Poll `predicate` on the cluster clock; returns the emulated time it became true.

        `timeout` and `poll` are emulated durations: seconds or text such as "5m", "90s", "1h30m".
        On timeout raises `WaitTimeout` (a TimeoutError) carrying `what` and the emulated time."""
        limit, step = parse_duration(timeout), parse_duration(poll)
        if step <= 0:
            raise ValueError(f"poll = {poll!r}; must be > 0 emulated seconds")
        started = self.system.clock.now()
        deadline = started + limit
        while not predicate():
            now = self.system.clock.now()
            if now >= deadline:
                raise WaitTimeout(what, limit, started, now)
            await anyio.sleep(step)
        return self.system.clock.now()

    async def wait_for_leader(self, timeout: float = 120.0) -> str:
        await self.wait_until(lambda: self.leader() is not None and any(
            b.is_leader and b.load_manager.leader_ready() for b in self.brokers.values() if b.alive),
            timeout=timeout, what="a leader")
        leader = self.leader()
        assert leader is not None
        return leader

    # ------------------------------------------------------------------ summaries

    def lookup_counts(self) -> dict[str, int]:
        totals = {"lookups": 0, "answers": 0, "redirects": 0, "failures": 0, "too_many": 0}
        for b in self.brokers.values():
            s = b.stats
            totals["lookups"] += s.lookups
            totals["answers"] += s.answers
            totals["redirects"] += s.redirects
            totals["failures"] += s.failures
            totals["too_many"] += s.too_many
        return totals


class _StoreLatency(TypedDict, total=False):
    op_latency: float
    latency_fn: Callable[[random.Random], float]


def _store_latency(latencies: Latencies) -> _StoreLatency:
    """The store's arguments for `metadata_op`: a constant as op_latency, else a draw per op."""
    d = latencies.metadata_op
    if isinstance(d, Constant):
        return {"op_latency": d.value}
    return {"latency_fn": d.sample}


class _AdminActor(Actor):
    """The operator's admin client: owns a metadata client for namespace set-up and reads."""

    async def receive(self, msg: object, reply: Reply) -> None:  # notifications are not used
        reply.ok(None)
