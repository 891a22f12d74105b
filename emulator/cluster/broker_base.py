"""What the parts of the broker actor share: identity, metadata client, config, counters, the load manager.

Pulsar's broker is a set of services that hold each other (PulsarService -> NamespaceService ->
OwnershipCache, BrokerService, LeaderElectionService, the LoadManager reference). The emulator keeps one
actor per broker, so that every step of every part runs in that actor's tasks and dies with it, and
writes each service as a class of its own module: NamespaceBundleFactory (bundle_factory.py) <-
OwnershipCache (ownership.py) <- NamespaceService (namespace_service.py), ServerCnx (server_cnx.py),
LeaderElection (leader_election.py), the local load data (local_data.py), wired in broker.py. This base
declares, once, the fields they share; broker.py sets them.
"""

from __future__ import annotations

from emulator.model.config import ServiceConfig
from emulator.runtime import Actor

from .bookkeeper import Bookies
from .capacity import Capacity
from .decoded import DecodeCache
from .events import ClusterEvents
from .latency import LatencySampler
from .load_manager import Capabilities, LoadManager
from .load_source import LoadSource
from .metadata_client import MetadataClient
from .network import Network
from .redirect_manager import RedirectView

__all__ = ["BrokerBase", "BrokerStats"]


class BrokerStats:
    """Plain counters the observers read (Pulsar's lookup metrics are derived from these)."""

    __slots__ = ("lookups", "answers", "redirects", "failures", "too_many", "pending", "assignments",
                 "lookup_seconds")

    def __init__(self) -> None:
        self.lookups = self.answers = self.redirects = self.failures = 0
        self.too_many = self.pending = self.assignments = 0
        self.lookup_seconds = 0.0   # emulated time spent answering lookups (pulsar_broker_lookup sum)


class BrokerBase(Actor):
    """The fields every part of the broker reads (set by `Broker.__init__`)."""

    broker_id: str
    conf: ServiceConfig
    md: MetadataClient
    network: Network
    events: ClusterEvents
    load_source: LoadSource
    decoded: DecodeCache
    latency: LatencySampler
    capacity: Capacity      # the shared capacities (capacity.py): this broker's executors' part
    bookies: Bookies        # the cluster's bookies (bookkeeper.py): managed-ledger opens and fencing
    stats: BrokerStats
    closing: bool
    report_interval: float
    close_time: float
    close_time_per_topic: float
    # leader election (leader_election.py) and the broker registry under /loadbalance/brokers
    election_started: bool
    is_leader: bool
    leader_id: str | None
    available_brokers: frozenset[str]
    redirect_view: RedirectView   # RedirectManager's view of the registrations (redirect_manager.py)
    # the load manager in use (load_manager.py): replaced as a whole when loadManagerClassName changes,
    # and its capabilities (load_manager_capabilities.py), resolved once with it (`Broker._use_load_manager`)
    load_manager: LoadManager
    capabilities: Capabilities
