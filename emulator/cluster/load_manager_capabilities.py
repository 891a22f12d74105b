"""What some load managers can do and others cannot: the seam's named capability interfaces.

Pulsar's broker asks most things of its load manager through `LoadManager` (load_manager.py), but a few
only of the Extensible one, and asks which it runs once, by type:
`ExtensibleLoadManagerImpl.isLoadManagerExtensionEnabled(pulsar)` is
`pulsar.getLoadManager().get() instanceof ExtensibleLoadManagerWrapper`, and NamespaceService,
ServerCnx and the admin endpoints branch on it. The emulator does the same for every such ability: a
manager declares it by subclassing one of the interfaces below (each an `abc.ABC` whose methods are
abstract, so a manager that declares one and misses a method cannot be created), and
`Capabilities.of(manager)` resolves them once, when the broker takes the manager (at start and at a
live switch). The broker and the observers read `broker.capabilities.<name>`, typed, and never probe a
manager's attributes by name.

Which manager has which (tests/loadmanagers/test_conformance.py holds each to its interfaces):

* `ChannelOwnership` (Extensible): lookups, ServerCnx's ownership check, admin unload and split, a
  scenario's stated owners (broker.py, namespace_service.py, server_cnx.py);
* `ReportTicks` (Modular, Noop): the 5 s LoadReportUpdaterTask as plain callbacks (broker.py);
* `LeaderLoadView` (Modular): the leader's LoadData and policies (the metrics' report age, the warm
  start, `Cluster.leader_policies`);
* `LoadBalancingMetrics` (Simple): `pulsar_lb_load_rank` and the quota gauges (observe/metrics.py);
* `ExtensibleMetrics` (Extensible): `getMetrics()` and the broker load-data table view
  (observe/metrics.py, observe/monitor.py).

A new capability is a new interface here, a field of `Capabilities` named as it is in snake_case and
an entry of `CAPABILITIES`; the conformance test checks the three agree.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from emulator.model.loaddata import LoadData
from emulator.model.policies import PolicyView

__all__ = ["CAPABILITIES", "Capabilities", "ChannelOwnership", "ExtensibleMetrics", "LeaderLoadView",
           "LoadBalancingMetrics", "ReportTicks"]


class ChannelOwnership(ABC):
    """Ownership kept by the load manager's service-unit state channel, not by the broker's
    `/namespace/<bundle>` locks (ExtensibleLoadManagerImpl, PIP-192): where Pulsar checks
    `isLoadManagerExtensionEnabled`, the broker hands the operation to these methods."""

    @abstractmethod
    async def find_broker_service_url(self, bundle: str) -> str:
        """LoadManager.findBrokerServiceUrl (NamespaceService.findBrokerServiceUrl with the extension
        enabled): the bundle's owner, assigned now if it has none; the lookup answers Connect(owner).
        A bundle being released here is the channel's to answer too (it waits for the new owner)."""

    @abstractmethod
    async def check_ownership(self, bundle: str) -> bool:
        """LoadManager.checkOwnershipAsync (ServerCnx's topic ownership check): the channel's owner of
        `bundle` is this broker, waiting while the bundle is in flight."""

    @abstractmethod
    async def unload_namespace_bundle(self, bundle: str, destination: str | None = None) -> dict[str, Any]:
        """ExtensibleLoadManagerImpl.unloadNamespaceBundleAsync: an Admin unload (a transfer with a
        destination) through the channel. Raises AdminError."""

    @abstractmethod
    async def split_namespace_bundle(self, bundle: str) -> dict[str, Any]:
        """ExtensibleLoadManagerImpl.splitNamespaceBundleAsync: an Admin split through the channel.
        Raises AdminError."""

    @abstractmethod
    async def assign_stated(self, bundle: str, broker: str) -> dict[str, Any]:
        """A scenario's owner at t = 0 (no Pulsar call): the assignment a lookup that selected
        `broker` would write to the channel, waited for until Owned. Raises AdminError."""


class ReportTicks(ABC):
    """The LoadReportUpdaterTask's tick without a task: a manager whose `write_load_report(False)` can
    run as plain callbacks is ticked by a wake-up of the broker (broker.py's report ticks), the same
    instants and order as a sleeping task at a fraction of its cost; the others tick in a task."""

    @abstractmethod
    def report_tick(self, then: Callable[[], None]) -> None:
        """`write_load_report(False)`, the same steps in the same order, calling `then()` once done
        (at once when nothing is written, after the metadata write otherwise)."""


class LeaderLoadView(ABC):
    """The leader's own view, kept by leader-only work (ModularLoadManagerImpl on the elected broker),
    for the observers and the warm start; None where this broker runs no leader-only work."""

    @abstractmethod
    def leader_load_data(self) -> LoadData | None:
        """ModularLoadManagerImpl.getLoadData(): the leader's LoadData (every broker's last report as
        it read it, the bundle data), once its leader-only work has built it."""

    @abstractmethod
    def leader_policies(self) -> PolicyView | None:
        """The isolation policies, failure domains and anti-affinity groups the leader's selection
        applies (its ModularLoadManagerImpl's policies)."""


class LoadBalancingMetrics(ABC):
    """Series the manager computes itself, per broker (SimpleLoadManagerImpl.updateLoadBalancingMetrics,
    rendered from LoadManager.getLoadBalancingMetrics); a cluster that has one renders its families
    on every scrape."""

    @abstractmethod
    def load_balancing_metrics(self) -> dict[str, float]:
        """LoadManager.getLoadBalancingMetrics: `load_rank` and the `quota_pct_*` allocation
        percentages of this broker (empty before the first ranking)."""


class ExtensibleMetrics(ABC):
    """ExtensibleLoadManagerImpl.getMetrics() and the load-data table view every broker keeps."""

    @abstractmethod
    def extensible_metrics(self) -> Any:
        """getMetrics(): this broker's ExtensibleMetricsSource
        (emulator.loadmanagers.extensible.actors.metrics_source; typed Any because the load managers
        sit above this layer), None while it is not running."""

    @abstractmethod
    def broker_load_data_view(self) -> Mapping[str, Any]:
        """The broker load-data table view as this broker reads it: broker -> BrokerLoadData
        (`monitor --extensions`)."""


CAPABILITIES: tuple[type[ABC], ...] = (ChannelOwnership, ReportTicks, LeaderLoadView, LoadBalancingMetrics,
                                       ExtensibleMetrics)
"""Every named capability, in the order of `Capabilities`' fields."""


@dataclass(frozen=True, slots=True)
class Capabilities:
    """The capabilities of one load manager, resolved once (`of`): each field is the manager itself
    if it declares that interface, else None."""

    channel_ownership: ChannelOwnership | None = None
    report_ticks: ReportTicks | None = None
    leader_load_view: LeaderLoadView | None = None
    load_balancing_metrics: LoadBalancingMetrics | None = None
    extensible_metrics: ExtensibleMetrics | None = None

    @classmethod
    def of(cls, manager: object) -> Capabilities:
        """What `manager` declares (isinstance, as isLoadManagerExtensionEnabled checks its class)."""
        return cls(
            channel_ownership=manager if isinstance(manager, ChannelOwnership) else None,
            report_ticks=manager if isinstance(manager, ReportTicks) else None,
            leader_load_view=manager if isinstance(manager, LeaderLoadView) else None,
            load_balancing_metrics=manager if isinstance(manager, LoadBalancingMetrics) else None,
            extensible_metrics=manager if isinstance(manager, ExtensibleMetrics) else None,
        )
