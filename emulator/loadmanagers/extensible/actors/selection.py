"""How one broker's Extensible load manager selects a broker: `selectAsync`, `getContext` and the broker
lookup-data cache, a part of ExtensibleLoadManagerWrapper (extensible_wrapper.py).

Follows apache/pulsar `loadbalance/extensions/ExtensibleLoadManagerImpl.java` (`selectAsync(bundle,
excludeBrokerSet)`: the registry's brokers minus the excluded ones, every BrokerFilter of the pipeline,
then LeastResourceUsageWithWeight; `getContext()`) and `BrokerRegistryImpl`'s
`brokerLookupDataMetadataCache`. A mixin of the wrapper, as the broker's services are of the broker
(emulator/cluster/broker_base.py): one object, one actor's tasks; the fields it reads are declared here
and set by the wrapper's constructor.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import msgspec

from emulator.cluster import paths
from emulator.cluster.messages import LookupFailure
from emulator.cluster.metadata_client import MetadataStoreError
from emulator.model.filters import namespace_of_bundle
from emulator.model.policies import PolicyView

from ..model.context import LoadManagerContext
from ..model.filters import DEFAULT_PIPELINE, BrokerFilterException
from ..model.load_data import BrokerLoadData, BrokerLookupData, TopBundlesLoadData
from .channel import ServiceUnitStateChannel
from .load_data_store import LoadDataStore
from .schedulers import channel_ownership

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.broker import Broker

__all__ = ["ExtensibleSelection"]


def _same_key(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """`_filter_key`s: the same objects (registry, store, policies), equal values (the rest)."""
    return a[0] is b[0] and a[1] is b[1] and a[2] is b[2] and a[3:] == b[3:]


class ExtensibleSelection:
    """Selection, its context and the lookup-data cache (see the module docstring)."""

    broker: "Broker"
    strategy: Any
    channel: ServiceUnitStateChannel | None
    broker_store: LoadDataStore[BrokerLoadData] | None
    top_store: LoadDataStore[TopBundlesLoadData] | None
    _lookup_data: dict[str, BrokerLookupData]
    _lookup_changes: int
    _lookup_loads: dict[str, asyncio.Future[None]]
    _available: tuple[tuple[frozenset[str], int] | None, dict[str, BrokerLookupData]]
    _policies: PolicyView
    _last_selection: tuple[int, bool]
    _filtered: tuple[tuple[Any, ...], dict[str, BrokerLookupData]] | None

    if TYPE_CHECKING:  # pragma: no cover
        def _now_ms(self) -> int: ...   # the wrapper's

    async def _refresh_lookup_data(self) -> None:
        """`brokerLookupDataMetadataCache`: each registered broker's BrokerLookupData, read once.
        A read in flight is shared by every caller that misses the same broker meanwhile (the
        cache's loading future, as Caffeine's AsyncLoadingCache dedupes loads): a restart storm's
        concurrent lookups on a broker would otherwise each read every new broker's node."""
        b = self.broker
        for broker in sorted(b.available_brokers):
            if broker in self._lookup_data:
                continue
            loading = self._lookup_loads.get(broker)
            if loading is not None:
                await asyncio.shield(loading)
                continue
            loading = self._lookup_loads[broker] = asyncio.get_running_loop().create_future()
            try:
                node = await b.md.get(paths.broker_path(broker))
            except MetadataStoreError:
                continue
            finally:
                del self._lookup_loads[broker]
                loading.set_result(None)
            if node is not None:
                self._lookup_data[broker] = msgspec.json.decode(node.data, type=BrokerLookupData)
                self._lookup_changes += 1

    async def _split_context(self) -> LoadManagerContext:
        """The split run's context, after loading the bundle ranges of every namespace this broker
        owns a bundle of (`getBundleCount` reads the bundle factory's cache, which loads on a miss;
        a split invalidates it)."""
        b = self.broker
        for namespace in sorted({bundle.rsplit("/", 1)[0] for bundle in b.owned}):
            try:
                await b.namespace_bundles(namespace)
            except LookupFailure:
                pass   # missing from bundle_counts: the strategy counts it Failure/Unknown
        return await self._context()

    async def _context(self) -> LoadManagerContext:
        """`getContext()` for one decision: the stores, the registry, the channel's ownership."""
        b = self.broker
        assert self.broker_store is not None and self.top_store is not None and self.channel is not None
        self._policies = await b.policy_cache.refresh()
        if not self._lookup_data.keys() >= b.available_brokers:
            # getAvailableBrokerLookupDataAsync reads through the metadata cache, which loads a miss
            await self._refresh_lookup_data()
        owners, splitting = channel_ownership(self.channel)
        key = (b.available_brokers, self._lookup_changes)
        if self._available[0] != key:   # one per registry or lookup-data change, not per decision
            self._available = (key, {x: self._lookup_data.get(x) or BrokerLookupData(broker_id=x)
                                     for x in sorted(b.available_brokers)})
        available = self._available[1]
        return LoadManagerContext(
            conf=b.conf, broker_load_data=self.broker_store.items(),
            top_bundles_load_data=self.top_store.items(), available_brokers=available, owners=owners,
            splitting=splitting, policies=self._policies, filter_pipeline=DEFAULT_PIPELINE,
            now_ms=self._now_ms(), broker_load_data_frozen=True)

    async def select(self, bundle: str, excluded: frozenset[str]) -> str | None:
        """selectAsync(bundle, excluded): the registry minus `excluded`, every filter (a filter that
        fails is logged and the candidates so far are kept), then the strategy."""
        context = await self._context()
        key = self._filter_key(bundle, excluded, context)
        cached = self._filtered
        if key is not None and cached is not None and _same_key(cached[0], key):
            candidates = cached[1]
        else:
            candidates = {x: d for x, d in (context.available_brokers or {}).items() if x not in excluded}
            failed = False
            for f in DEFAULT_PIPELINE:
                try:
                    candidates = f(candidates, bundle, context)
                except BrokerFilterException as e:
                    failed = True
                    self.broker.log.error("Failed to filter out brokers when select bundle", bundle=bundle,
                                          error=str(e))
            self._filtered = (key, candidates) if key is not None and not failed else None
        if not candidates:
            self._last_selection = (0, False)
            return None
        selected: str | None = self.strategy.select(set(candidates), bundle, context)
        self._last_selection = (len(candidates), bool(getattr(self.strategy, "last_fallback", False)))
        return selected

    @staticmethod
    def _filter_key(bundle: str, excluded: frozenset[str], context: LoadManagerContext) -> tuple[Any, ...] | None:
        """What the filter pipeline's answer depends on when the bundle's namespace has neither an
        isolation policy (none in the cluster) nor an anti-affinity group: the registry's lookup
        data, the load-data store (topic counts), the policies and three configuration keys, each
        object the same until it changes (`_context`); None when the answer depends on the bundle."""
        policies = context.policies
        if policies.isolation_policies or policies.anti_affinity_group(namespace_of_bundle(bundle)) is not None:
            return None
        conf = context.conf
        return (context.available_brokers, context.broker_load_data, policies, excluded,
                conf.load_manager_class_name, conf.load_balancer_broker_max_topics, conf.prefer_later_versions)
