"""OwnershipCache: the bundles a broker owns: acquire (the ephemeral lock), unload, split.

Pulsar's OwnershipCache holds the `/namespace/<bundle>` locks of this broker and their in-memory
OwnedBundle entries; NamespaceService.unloadNamespaceBundle and splitAndOwnBundle act on them
(pulsar-protocol.md §2, §5.2). A part of the broker actor (broker_base.py); the lookup path
(namespace_service.py) acquires through it, the admin messages unload and split through it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import msgspec

from emulator.model.bundles import parse_bundle, split_boundaries
from emulator.model.loaddata import NamespaceBundleStats
from emulator.model.policies import LocalPolicies
from emulator.runtime import ActorDead, AskTimeout

from . import paths
from .bundle_factory import NamespaceBundleFactory
from .bundle_owner import BundleOwner
from .events import BundleOwned, BundleSplit, BundleSplitSkipped, BundleUnloaded
from .messages import AdminError, CloseTopics, LookupFailure, ServerError
from .metadata_client import BadVersion, LockBusy, MetadataStoreError

__all__ = ["NamespaceEphemeralData", "OwnedBundle", "OwnedBundles", "OwnershipCache"]


class NamespaceEphemeralData(msgspec.Struct, rename="camel"):
    """Value of an ownership node `/namespace/<bundle>` (Pulsar's NamespaceEphemeralData JSON)."""

    native_url: str
    http_url: str
    native_url_tls: str = ""
    http_url_tls: str = ""
    disabled: bool = False
    advertised_listeners: dict[str, Any] = {}


class OwnedBundle:
    """Pulsar's OwnedBundle: the in-memory ownership entry, present while acquiring and while owned.

    Setting `active` or `actor` counts as a change of the broker's entries (`OwnedBundles.epoch`)."""

    __slots__ = ("bundle", "acquired", "_active", "_actor", "_box")

    def __init__(self, bundle: str, acquired: asyncio.Future[bool]) -> None:
        self.bundle = bundle
        self.acquired = acquired
        self._active = False
        self._actor: BundleOwner | None = None
        self._box: OwnedBundles | None = None

    @property
    def active(self) -> bool:
        return self._active

    @active.setter
    def active(self, value: bool) -> None:
        self._active = value
        if self._box is not None:
            self._box.epoch += 1

    @property
    def actor(self) -> BundleOwner | None:
        return self._actor

    @actor.setter
    def actor(self, value: BundleOwner | None) -> None:
        self._actor = value
        box = self._box
        if box is not None:
            if value is not None:
                value.topics.epoch_box = box
            box.epoch += 1


class OwnedBundles(dict[str, OwnedBundle]):
    """A broker's ownership entries (bundle -> OwnedBundle), with an `epoch` that changes whenever an
    entry is added or removed, an entry's `active` or `actor` is set, or the topic table of an
    entry's actor changes (TopicTable.version). The broker's report tick takes its bundles' tables
    afresh only when the epoch moved (local_data.py): walking every entry at every tick to find
    nothing changed was a quarter of the tick."""

    __slots__ = ("epoch",)

    def __init__(self) -> None:
        super().__init__()
        self.epoch = 0

    def _adopt(self, value: OwnedBundle) -> None:
        value._box = self
        if value._actor is not None:
            value._actor.topics.epoch_box = self

    def __setitem__(self, key: str, value: OwnedBundle) -> None:
        self._adopt(value)
        super().__setitem__(key, value)
        self.epoch += 1

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self.epoch += 1

    def pop(self, key: str, *default: Any) -> Any:
        self.epoch += 1
        return super().pop(key, *default)

    def popitem(self) -> tuple[str, OwnedBundle]:
        self.epoch += 1
        return super().popitem()

    def clear(self) -> None:
        self.epoch += 1
        super().clear()

    def setdefault(self, key: str, default: OwnedBundle) -> OwnedBundle:
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __ior__(self, other: Any) -> OwnedBundles:  # type: ignore[override,misc]
        self.update(other)
        return self


class OwnershipCache(NamespaceBundleFactory):
    """This broker's ownership entries and locks (see the module docstring)."""

    owned: OwnedBundles
    splitting: set[str]   # parents between their children's locks and their release
    _self_owner_info: bytes

    # ================================================================== acquire

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
        self._serve_bundle(owned)
        fut.set_result(True)

    def _serve_bundle(self, owned: OwnedBundle) -> None:
        """The bundle is this broker's from now on: its BundleOwner actor starts and the entry goes
        active (the end of tryAcquiringOwnership; the Extensible load manager's `own`)."""
        bundle = owned.bundle
        owner = BundleOwner(f"{self.broker_id}/{bundle}", self.system, bundle=bundle,
                            broker_id=self.broker_id, network=self.network,
                            close_time=self.close_time,
                            close_time_per_topic=self.close_time_per_topic, latency=self.latency,
                            bookies=self.bookies)
        self.system.spawn(owner, parent=self)
        owned.actor = owner
        owned.active = True
        self.stats.assignments += 1
        self.events.emit(BundleOwned(bundle=bundle, broker=self.broker_id))

    async def _still_a_bundle(self, bundle: str) -> bool:
        namespace = bundle.rsplit("/", 1)[0]
        node = await self.md.get(paths.local_policies_path(namespace))
        if node is None:
            return False
        return self._decode_bundles(namespace, node.data).contains(bundle)

    def owned_bundle_names(self) -> list[str]:
        return [b for b, o in self.owned.items() if o.active]

    async def _acquire_stated(self, bundle: str) -> dict[str, Any]:
        """A scenario's owner at t = 0: the lock and the bundle's owner, as a lookup that decided
        on this broker would make them (try_acquiring_ownership, validated against the ranges)."""
        try:
            await self.try_acquiring_ownership(bundle)
        except LookupFailure as e:
            raise AdminError(e.message) from None
        return {"bundle": bundle, "broker": self.broker_id}

    async def _revalidate_ownership(self) -> list[str]:
        """After a new metadata session (ResourceLockImpl on SessionReestablished): re-create each
        active bundle's lock with the same value; a lock another broker took meanwhile is lost and
        its bundle closed here. Returns the lost bundles."""
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
        return lost

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
            self._forget_namespace_bundles(namespace)
            parent_actor = owned.actor
            owned.active = False
            for child in children:
                child_owned = self.owned.get(child)
                if child_owned is not None and child_owned.actor is not None:
                    parent_actor.hand_over_range(child_owned.actor)
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
