"""Capacity: the cluster's finite shared resources, one part per component (issue 27).

Latencies (`latency.py`) say how long one operation takes alone; capacities say how many can be served
at once, so that in a storm they queue. Each part is its own module and table:

    [capacity.metadata]    capacity_metadata.py    the ZooKeeper ensemble (leader writes, follower reads,
                                                   Pulsar's metadata batching, session expiry)
    [capacity.bookkeeper]  capacity_bookkeeper.py  bookies: journal and ledger device, ledger open and
                                                   recovery (fencing), ledger creation
    [capacity.broker]      capacity_broker.py      a broker's executors and permits
    [capacity.client]      capacity_client.py      the Java client's lookup and send limits

A scenario's `[capacity]` table overrides any field (emulator/workload/capacity_table.py); every
default states its source in its field's docstring. `Capacity.unlimited()` is the cost-free cluster
the cluster tests build by default, as `Latencies.zero()` is for latencies.
"""

from __future__ import annotations

import msgspec

from .capacity_bookkeeper import BookKeeperCapacity
from .capacity_broker import BrokerCapacity
from .capacity_client import ClientCapacity
from .capacity_metadata import MetadataStoreCapacity

__all__ = ["CAPACITY_PARTS", "BookKeeperCapacity", "BrokerCapacity", "Capacity", "ClientCapacity",
           "MetadataStoreCapacity"]


class Capacity(msgspec.Struct, frozen=True, kw_only=True):
    """Every part's calibrated defaults; a scenario's `[capacity.<part>]` tables override fields."""

    metadata: MetadataStoreCapacity = msgspec.field(default_factory=MetadataStoreCapacity)
    bookkeeper: BookKeeperCapacity = msgspec.field(default_factory=BookKeeperCapacity)
    broker: BrokerCapacity = msgspec.field(default_factory=BrokerCapacity)
    client: ClientCapacity = msgspec.field(default_factory=ClientCapacity)

    @classmethod
    def unlimited(cls) -> "Capacity":
        """No limit anywhere: every operation is served at once (the cluster tests' default)."""
        return cls(metadata=MetadataStoreCapacity.unlimited(), bookkeeper=BookKeeperCapacity.unlimited(),
                   broker=BrokerCapacity.unlimited(), client=ClientCapacity.unlimited())


CAPACITY_PARTS: dict[str, type[msgspec.Struct]] = {
    f.name: f.type for f in msgspec.structs.fields(Capacity)
}
"""`[capacity.<part>]` table name -> its Struct."""
