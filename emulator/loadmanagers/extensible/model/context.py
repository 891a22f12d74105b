"""What an Extensible decision sees of the cluster: Pulsar's `LoadManagerContext`, as plain data.

Pulsar hands TransferShedder, LeastResourceUsageWithWeight and the broker filters a `LoadManagerContext`
(extensions/LoadManagerContext.java): the broker configuration, the two load-data stores (table views
of system topics, so every broker holds a full, eventually consistent copy) and the broker registry.
The helpers behind the filters read the namespace policies and the service-unit state channel. Here
all of it is one immutable snapshot the caller builds, plus the clock reading Pulsar takes with
`System.currentTimeMillis()`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import msgspec

from emulator.model.config import ServiceConfig
from .load_data import (
    BrokerLoadData,
    BrokerLookupData,
    TopBundlesLoadData,
)
from emulator.model.policies import PolicyView

__all__ = ["LoadManagerContext"]

_EMPTY: Mapping[str, object] = MappingProxyType({})


class LoadManagerContext(msgspec.Struct, frozen=True, kw_only=True):
    """A snapshot for one decision.

    - `broker_load_data`: the broker load-data store (broker id → BrokerLoadData), in the table view's
      order; TransferShedder sorts brokers by load with a stable sort, so this order breaks ties.
    - `top_bundles_load_data`: the top-bundles store (broker id → TopBundlesLoadData).
    - `available_brokers`: `brokerRegistry().getAvailableBrokerLookupDataAsync()` (broker id → lookup
      data); None stands for a registry read that failed or timed out.
    - `owners`: bundle → owner broker for every bundle in state Owned on the service-unit state channel
      (`channel.isOwner`, `getOwnershipEntrySet` as the anti-affinity count reads it); None when there
      is no channel (Pulsar's test constructor of TransferShedder): no ownership check then.
    - `splitting`: the bundles in state Splitting (the split strategy skips their relatives).
    - `policies`: isolation policies, anti-affinity groups and the broker → failure-domain map.
    - `filter_pipeline`: the broker filters TransferShedder runs to check that a bundle can move
      (`filters.DEFAULT_PIPELINE` on a broker; empty by default, like Pulsar's test constructor).
    - `now_ms`: the decision's clock reading, in ms.
    - `broker_load_data_frozen`: True when `broker_load_data` is never changed once handed out
      (neither the mapping nor its values; the load-data store hands out one copy per change), so
      a strategy may key a cache on its identity; False (Pulsar's tests edit the values in place).
    """

    conf: ServiceConfig
    broker_load_data: Mapping[str, BrokerLoadData] = _EMPTY  # type: ignore[assignment]
    top_bundles_load_data: Mapping[str, TopBundlesLoadData] = _EMPTY  # type: ignore[assignment]
    available_brokers: Mapping[str, BrokerLookupData] | None = _EMPTY  # type: ignore[assignment]
    owners: Mapping[str, str] | None = None
    splitting: frozenset[str] = frozenset()
    policies: PolicyView = msgspec.field(default_factory=PolicyView)
    filter_pipeline: tuple[Callable[..., Any], ...] = ()
    now_ms: int = 0
    broker_load_data_frozen: bool = False

    def is_owner(self, bundle: str, broker: str) -> bool:
        """`ServiceUnitStateChannel.isOwner(bundle, broker)`: the bundle is Owned by `broker`."""
        return self.owners is not None and self.owners.get(bundle) == broker
