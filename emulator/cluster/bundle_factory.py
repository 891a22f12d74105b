"""NamespaceBundleFactory: a broker's cache of every namespace's bundle ranges.

Pulsar's factory is an async loading cache over `/admin/local-policies/<ns>`, refreshed when the
metadata store's watch reports a change of that node. The lookup path (namespace_service.py) finds a
topic's bundle through it, ownership (ownership.py) validates an acquisition against it, and a split
drops the namespace's entry after writing new ranges.

A part of the broker actor (broker_base.py): the lowest of the parts, so that the lookup path and
ownership, which share it in Pulsar too, reach it as `self`.
"""

from __future__ import annotations

import asyncio

import msgspec

from emulator.model.bundles import NamespaceBundles
from emulator.model.policies import LocalPolicies
from . import paths
from .broker_base import BrokerBase
from .messages import LookupFailure, ServerError
from .metadata_client import MetadataStoreError

__all__ = ["NamespaceBundleFactory"]


class NamespaceBundleFactory(BrokerBase):
    """Cached ranges, read from /admin/local-policies, refreshed by watch (see the module docstring)."""

    _ns_bundles: dict[str, NamespaceBundles]
    _ns_loading: dict[str, asyncio.Future[NamespaceBundles]]
    _ns_invalidated: set[str]   # changed while a read was in flight: don't cache it
    namespace_bundles_version: int
    """Counts the changes of the cache (an entry made or dropped): an unchanged version means every
    cached answer is the one it was (the leader's split check reuses its bundle counts)."""

    def _init_bundle_factory(self) -> None:
        self._ns_bundles = {}
        self._ns_loading = {}
        self._ns_invalidated = set()
        self.namespace_bundles_version = 0

    def _forget_namespace_bundles(self, namespace: str) -> bool:
        """Drop the cached ranges of `namespace` (True if there were any)."""
        if self._ns_bundles.pop(namespace, None) is None:
            return False
        self.namespace_bundles_version += 1
        return True

    def cached_namespace_bundles(self, namespace: str) -> NamespaceBundles | None:
        """The cached ranges of `namespace`, or None: `namespace_bundles` would read them."""
        return self._ns_bundles.get(namespace)

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
            self.namespace_bundles_version += 1
        self._ns_invalidated.discard(namespace)
        return bundles

    def _decode_bundles(self, namespace: str, data: bytes) -> NamespaceBundles:
        """A namespace's bundle ranges from its /admin/local-policies bytes (decoded once per
        distinct value in the cluster: every acquisition re-validates against them)."""
        return self.decoded.get("bundles:" + namespace, data, lambda raw: msgspec.json.decode(
            raw, type=LocalPolicies).to_namespace_bundles(namespace))

    def _invalidate_namespace(self, namespace: str) -> None:
        """The watch saw the namespace's local policies change: the next lookup reads them again."""
        if namespace in self._ns_loading:
            self._ns_invalidated.add(namespace)
        if self._forget_namespace_bundles(namespace):
            self.log.debug("Policy updated for namespace, refreshing the bundle cache",
                           namespace=namespace)
