"""The seam between a broker and its load manager: Pulsar's `LoadManager` interface, and `create`.

Pulsar's broker holds its load manager in one `AtomicReference<LoadManager>` and talks to it only
through this interface (LoadManager.java); NamespaceService asks it whether it is centralized, for the
least-loaded broker of a bundle and for the available brokers, PulsarService's LoadReportUpdaterTask
calls its report write every 5 s, the leader's LoadSheddingTask and LoadResourceQuotaUpdaterTask its
shedding and quota writes. `LoadManager.create` picks the class by `loadManagerClassName`:

    instance = Reflections.createInstance(loadManagerClassName)
    a LoadManager                -> initialize(pulsar), used as is (SimpleLoadManagerImpl, NoopLoadManager)
    a ModularLoadManager         -> wrapped in ModularLoadManagerWrapper
    an ExtensibleLoadManager     -> wrapped in ExtensibleLoadManagerWrapper
    any exception                -> log.warn("Error when trying to create load manager: ", e)
    anything else                -> new SimpleLoadManagerImpl(pulsar)

A blank name means SimpleLoadManagerImpl. Here the classes are a table of Pulsar's full class names
(`LOAD_MANAGERS`, import paths loaded on first use); `create` follows the same rules and logs the same
warning on the broker's logger (once per creation: once per broker at start, again at a live switch).
Short names (`NoopLoadManager`) are not class names to Pulsar, so they fall back as an unknown class
does; `resolve_class_name` maps them for the CLI's `--load-manager`.

The seam is explicit: `LoadManager` is an abstract base class (as anyio's `AsyncBackend`), with the
methods every manager answers its own way abstract and Pulsar's default answers written once; what only
some managers can do is a named capability (load_manager_capabilities.py: `ChannelOwnership`,
`ReportTicks`, `LeaderLoadView`, `LoadBalancingMetrics`, `ExtensibleMetrics`), declared by subclassing
it and resolved once per manager into the broker's `capabilities` (`Capabilities.of`), as Pulsar checks
`isLoadManagerExtensionEnabled`. Nothing below the managers probes one by attribute name.

Where each load manager lives (one package each under emulator/loadmanagers/, its pure logic in
`model/`, its broker side in `actors/`):

* Modular: modular/actors/modular_wrapper.py (the broker side: report, local decisions, leader hooks;
  ReportTicks, LeaderLoadView) + leader.py (the leader actor) + modular_load_manager.py (its core);
* Simple: simple/actors/simple_load_manager.py (the broker side; LoadBalancingMetrics) +
  simple_load_manager_tasks.py (its watches and timers) over simple/model/;
* Noop: noop/actors/noop_load_manager.py (ReportTicks);
* Extensible: extensible/actors/extensible_wrapper.py (the broker side; ChannelOwnership,
  ExtensibleMetrics) over extensible/actors/ (channel, stores, reporters, schedulers, selection,
  admin operations) and extensible/model/.

To add a load manager: a package `emulator/loadmanagers/<name>/` with `actors/` (and `model/` for its
pure logic), whose class subclasses `LoadManager` (and the capabilities it has), takes
`(broker, requested)` and sets `class_name`; its Pulsar class name in `LOAD_MANAGERS` below and in
`emulator.model.config.LOAD_MANAGER_CLASSES`; its packages in the layers contract and a forbidden
contract of its own in pyproject.toml (and the README's layout table, which tests/test_layout.py holds
equal). tests/loadmanagers/test_conformance.py then runs the shared behaviours against it.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from typing import Any, Callable, ClassVar, Protocol

from emulator.model.config import LOAD_MANAGER_CLASSES

from . import paths
from .events import LoadManagerCreateFailed
from .load_manager_capabilities import (
    CAPABILITIES,
    Capabilities,
    ChannelOwnership,
    ExtensibleMetrics,
    LeaderLoadView,
    LoadBalancingMetrics,
    ReportTicks,
)
from .metadata_client import MetadataStoreError

__all__ = ["CAPABILITIES", "Capabilities", "ChannelOwnership", "ClusterShared", "EXTENSIBLE", "ExtensibleMetrics",
           "LOAD_MANAGERS", "LeaderLoadView", "LoadBalancingMetrics", "LoadManager", "MODULAR", "NOOP",
           "ReportTicks", "SIMPLE", "create", "release_registration", "resolve_class_name"]

MODULAR = "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"
SIMPLE = "org.apache.pulsar.broker.loadbalance.impl.SimpleLoadManagerImpl"
NOOP = "org.apache.pulsar.broker.loadbalance.NoopLoadManager"
EXTENSIBLE = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
assert set(LOAD_MANAGER_CLASSES) == {MODULAR, SIMPLE, NOOP, EXTENSIBLE}


class LoadManager(ABC):
    """What the broker asks of its load manager (LoadManager.java, as the broker uses it): the base
    every load manager subclasses.

    One instance per broker; `broker` is the broker actor hosting it, and every method runs inside that
    actor's tasks. `class_name` is the Pulsar class it is; `requested` the `loadManagerClassName` it
    was created for (they differ after a fallback), which a live switch compares against;
    `registered` whether it holds its `/loadbalance/brokers/<broker>` registration
    (`release_registration`).

    The abstract methods are what every manager answers its own way. The others have a body: what
    Pulsar does where a manager has nothing of its own to do (LoadManager.java's default methods,
    NoopLoadManager's empty ones), which a manager overrides when it does more. What only some
    managers can do is not here but in a named capability (load_manager_capabilities.py), which the
    broker resolves once per manager instead of probing attributes."""

    class_name: ClassVar[str]
    broker: Any
    requested: str
    registered: bool

    def __init__(self, broker: Any, requested: str) -> None:
        self.broker = broker
        self.requested = requested
        self.registered = False

    # ------------------------------------------------------------------ every manager its own way

    @abstractmethod
    async def start(self) -> None:
        """LoadManager.start(): register this broker (its lock under /loadbalance/brokers)."""

    @abstractmethod
    async def stop(self) -> None:
        """LoadManager.stop(): stop its tasks and release what it holds (the registration lock)."""

    @abstractmethod
    async def disable_broker(self) -> None:
        """disableBroker(): at shutdown, leave the registry before the bundles are drained."""

    @abstractmethod
    async def on_session_reestablished(self) -> None:
        """A new metadata session: revalidate the locks it holds (ResourceLockImpl)."""

    @abstractmethod
    def is_centralized(self) -> bool:
        """isCentralized(): only the leader assigns bundles (the lookup path redirects to it while it
        is active)."""

    @abstractmethod
    async def get_least_loaded(self, bundle: str, non_persistent: bool) -> str | None:
        """getLeastLoaded(serviceUnit): the broker to own an unowned bundle (None: no broker)."""

    @abstractmethod
    async def write_load_report(self, force: bool = False) -> bool:
        """writeLoadReportOnZookeeper(force): True if a report was written."""

    @abstractmethod
    def generate_load_report(self) -> Any:
        """generateLoadReport(): what GET /admin/v2/broker-stats/load-report shows (None: nothing)."""

    @abstractmethod
    async def do_load_shedding(self) -> list[tuple[str, str]]:
        """doLoadShedding(): the leader's LoadSheddingTask; the (broker, bundle) pairs unloaded."""

    # ------------------------------------------------------------------ Pulsar's defaults

    def available_brokers(self) -> frozenset[str]:
        """getAvailableBrokers(): the brokers it would place on, by default the registry's lock
        holders under /loadbalance/brokers (the broker's watch of it), as ModularLoadManagerImpl,
        SimpleLoadManagerImpl and BrokerRegistry answer. The lookup path checks the leader is among
        them before redirecting to it."""
        available: frozenset[str] = self.broker.available_brokers
        return available

    def leader_decides(self) -> None:
        """A lookup was redirected to the active leader: a hint that a view kept for leaderless
        decisions may go (no Pulsar method; by default there is no such view)."""
        return None

    def set_load_report_force_update_flag(self) -> None:
        """setLoadReportForceUpdateFlag(): the next write is forced; by default nothing to force
        (ModularLoadManagerWrapper's and NoopLoadManager's are empty)."""
        return None

    async def write_resource_quotas(self) -> None:
        """writeResourceQuotasToZooKeeper(): the leader's LoadResourceQuotaUpdaterTask; by default
        nothing to write (NoopLoadManager, ExtensibleLoadManagerWrapper)."""
        return None

    async def do_namespace_bundle_split(self) -> list[str]:
        """doNamespaceBundleSplit(): the bundles split; by default none (NoopLoadManager, and
        ExtensibleLoadManagerWrapper, whose split scheduler runs on its own)."""
        return []

    def set_namespace_bundle_affinity(self, bundle: str, broker: str) -> None:
        """setNamespaceBundleAffinity(bundle, broker): an unload with a destination; by default the
        destination is ignored (NoopLoadManager returns null)."""
        return None

    def leadership_acquired(self) -> None:
        """The leader listener's brokerIsTheLeaderNow: start the leader-only work (by default none)."""
        return None

    def leadership_lost(self) -> None:
        """brokerIsAFollowerNow: stop the leader-only work (by default none)."""
        return None

    def leader_ready(self) -> bool:
        """The leader-only work runs, or this manager has none (the default, as LoadManager.started()
        answers `true` by default; no Pulsar method asks exactly this); read by `Cluster.wait_for_leader`."""
        return True

    leader_actor: Any = None
    """The actor running the leader-only work (Modular's LoadManagerLeader), or None (the default)."""

    def on_session_lost(self) -> None:
        """The metadata session was lost (PulsarService.handleMetadataSessionEvent's listeners,
        before the broker reconnects or shuts down); by default nothing listens."""
        return None

    def on_broker_registry_event(self, broker: str, created: bool) -> None:
        """A broker joined (`created`) or left /loadbalance/brokers: BrokerRegistry.addListener's
        listeners, which ExtensibleLoadManagerImpl registers (its channel's
        handleBrokerRegistrationEvent); by default nothing listens."""
        return None


class ClusterShared(Protocol):
    """What a load manager keeps once per cluster and its brokers share (`Cluster.load_manager_shared`,
    keyed by the manager's class name): the Extensible manager's system topics, which in Pulsar are
    topics of the cluster, not of one broker."""

    def ownership(self) -> dict[str, str]:
        """bundle -> owner broker, for the bundles this state says are owned (the observers' view)."""


Factory = Callable[[Any, str], LoadManager]
"""(broker, requested class name) -> a load manager for that broker, not started."""

LOAD_MANAGERS: dict[str, str] = {
    MODULAR: "emulator.loadmanagers.modular.actors.modular_wrapper:ModularLoadManagerWrapper",
    NOOP: "emulator.loadmanagers.noop.actors.noop_load_manager:NoopLoadManager",
    SIMPLE: "emulator.loadmanagers.simple.actors.simple_load_manager:SimpleLoadManagerImpl",
    EXTENSIBLE: "emulator.loadmanagers.extensible.actors.extensible_wrapper:ExtensibleLoadManagerWrapper",
}
"""Pulsar's full class name -> 'module:Class' of the emulator's implementation (loaded on first use, so
that no load manager's module is imported by a cluster that does not run it). The Extensible load
manager is ExtensibleLoadManagerWrapper (extensible_wrapper.py)."""


class ClassNotFoundException(LookupError):
    """Reflections.createInstance of a name no load manager here has (Java's exception, by name)."""


def _factory(class_name: str) -> Factory:
    """Reflections.createInstance: the class of that name, or an error saying why not."""
    if not class_name.strip():
        class_name = SIMPLE   # StringUtils.isBlank(loadManagerClassName) -> SimpleLoadManagerImpl
    path = LOAD_MANAGERS.get(class_name)
    if path is None:
        raise ClassNotFoundException(f"{class_name} (known load managers: {', '.join(LOAD_MANAGERS)})")
    module_name, _, attr = path.partition(":")
    factory = getattr(importlib.import_module(module_name), attr)
    if not (isinstance(factory, type) and issubclass(factory, LoadManager)):
        raise TypeError(f"LOAD_MANAGERS[{class_name!r}] = {path!r} is not a LoadManager subclass")
    return factory


def create(class_name: str, broker: Any) -> LoadManager:
    """LoadManager.create: the load manager `class_name` names, for `broker` (not started yet).

    A name that is not a load manager here, or one whose construction raises, is logged with Pulsar's
    warning on the broker's logger and gives the SimpleLoadManagerImpl entry instead."""
    try:
        return _factory(class_name)(broker, class_name)
    except Exception as e:   # LoadManager.create catches Exception, not Error
        error = f"{type(e).__name__}: {e}"
        broker.log.warning("Error when trying to create load manager: ", requested=class_name,
                           error=error)
    fallback = _factory(SIMPLE)(broker, class_name)
    broker.events.emit(LoadManagerCreateFailed(broker=broker.broker_id, requested=class_name,
                                               fallback=fallback.class_name, error=error))
    return fallback


def resolve_class_name(name: str) -> str:
    """`--load-manager`: a Pulsar class name as is, a short name (`NoopLoadManager`) as its class name;
    anything else unchanged (LoadManager.create then falls back and says why)."""
    key = name.strip()
    for full in LOAD_MANAGER_CLASSES:
        if key == full or key == full.rsplit(".", 1)[1]:
            return full
    return key


async def release_registration(manager: LoadManager) -> None:
    """Release a manager's `/loadbalance/brokers/<broker>` lock if it holds it (each manager's
    `stop()` / `disableBroker()`: `brokerDataLock.release()` / `lockManager.close()`); a store that is
    already gone (a broker shutting down with its session) is not an error here, as in Pulsar's
    close paths."""
    if not manager.registered:
        return
    manager.registered = False
    try:
        await manager.broker.md.release_lock(paths.broker_path(manager.broker.broker_id))
    except MetadataStoreError:
        pass
