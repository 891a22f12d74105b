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

Where each load manager lives: Modular: modular_wrapper.py (the broker side: report, local decisions,
leader hooks) + leader.py (the leader actor) + modular_load_manager.py (the pure core); Noop:
noop_load_manager.py; Simple: simple_load_manager.py (the broker side) + simple_load_manager_tasks.py
(its watches and timers) over emulator/loadmanagers/simple/model/ (the pure logic);
Extensible: extensible_wrapper.py (the broker side) over emulator/loadmanagers/extensible/actors/ (channel, stores,
reporters, schedulers) and emulator/loadmanagers/extensible/model/ (the pure logic).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Protocol

from emulator.model.config import LOAD_MANAGER_CLASSES

from . import paths
from .events import LoadManagerCreateFailed
from .metadata_client import MetadataStoreError

__all__ = ["ClusterShared", "EXTENSIBLE", "LOAD_MANAGERS", "LoadManager", "MODULAR", "NOOP", "SIMPLE", "create",
           "release_registration", "resolve_class_name"]

MODULAR = "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"
SIMPLE = "org.apache.pulsar.broker.loadbalance.impl.SimpleLoadManagerImpl"
NOOP = "org.apache.pulsar.broker.loadbalance.NoopLoadManager"
EXTENSIBLE = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
assert set(LOAD_MANAGER_CLASSES) == {MODULAR, SIMPLE, NOOP, EXTENSIBLE}


class LoadManager(Protocol):
    """What the broker asks of its load manager (LoadManager.java, as the broker uses it).

    One instance per broker; `broker` is the broker actor hosting it. Every method runs inside that
    actor's tasks. `class_name` is the Pulsar class it is; `requested` the `loadManagerClassName` it
    was created for (they differ after a fallback), which a live switch compares against."""

    class_name: str
    requested: str

    async def start(self) -> None:
        """LoadManager.start(): register this broker (its lock under /loadbalance/brokers)."""

    async def stop(self) -> None:
        """LoadManager.stop(): stop its tasks and release what it holds (the registration lock)."""

    def is_centralized(self) -> bool:
        """Only the leader assigns bundles (the lookup path redirects to it while it is active)."""

    def available_brokers(self) -> frozenset[str]:
        """getAvailableBrokers(): the brokers it would place on; the lookup path checks the leader
        is among them before redirecting to it."""

    async def get_least_loaded(self, bundle: str, non_persistent: bool) -> str | None:
        """getLeastLoaded(serviceUnit): the broker to own an unowned bundle (None: no broker)."""

    def leader_decides(self) -> None:
        """A lookup was redirected to the active leader (a hint: a view kept for leaderless
        decisions may go)."""

    async def write_load_report(self, force: bool = False) -> bool:
        """writeLoadReportOnZookeeper(force): True if a report was written."""

    # Optional: `report_tick(then)`, the broker's periodic `write_load_report(False)` as plain
    # callbacks that call `then()` once done (broker.py's report ticks: no task per tick). A load
    # manager without it ticks in a task that awaits write_load_report.

    def set_load_report_force_update_flag(self) -> None:
        """setLoadReportForceUpdateFlag(): the next write is forced."""

    def generate_load_report(self) -> Any:
        """generateLoadReport(): what GET /admin/v2/broker-stats/load-report shows (None: nothing)."""

    async def write_resource_quotas(self) -> None:
        """writeResourceQuotasToZooKeeper(): the leader's LoadResourceQuotaUpdaterTask."""

    async def do_load_shedding(self) -> list[tuple[str, str]]:
        """doLoadShedding(): the leader's LoadSheddingTask; the (broker, bundle) pairs unloaded."""

    async def do_namespace_bundle_split(self) -> list[str]:
        """doNamespaceBundleSplit(): the bundles split."""

    async def disable_broker(self) -> None:
        """disableBroker(): at shutdown, leave the registry before the bundles are drained."""

    async def on_session_reestablished(self) -> None:
        """A new metadata session: revalidate the locks it holds (ResourceLockImpl)."""

    def set_namespace_bundle_affinity(self, bundle: str, broker: str) -> None:
        """setNamespaceBundleAffinity(bundle, broker): unload with a destination broker."""

    def leadership_acquired(self) -> None:
        """The leader listener's brokerIsTheLeaderNow: start the leader-only work."""

    def leadership_lost(self) -> None:
        """brokerIsAFollowerNow: stop the leader-only work."""

    def leader_ready(self) -> bool:
        """The leader-only work runs (or this manager has none); read by `Cluster.wait_for_leader`."""

    @property
    def leader_actor(self) -> Any:
        """The actor running the leader-only work, or None (Modular's LoadManagerLeader)."""


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
    factory: Factory = getattr(importlib.import_module(module_name), attr)
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


async def release_registration(manager: Any) -> None:
    """Release a manager's `/loadbalance/brokers/<broker>` lock if it holds it (each manager's
    `stop()` / `disableBroker()`: `brokerDataLock.release()` / `lockManager.close()`); a store that is
    already gone (a broker shutting down with its session) is not an error here, as in Pulsar's
    close paths. `manager` has `registered` and `broker`."""
    if not manager.registered:
        return
    manager.registered = False
    try:
        await manager.broker.md.release_lock(paths.broker_path(manager.broker.broker_id))
    except MetadataStoreError:
        pass
