"""The emulated broker as the channel's `ChannelHost`: own, close and split bundles without ownership locks.

Under the Extensible load manager a broker owns a bundle because the channel says so (state Owned, dst =
this broker), not because it holds `/namespace/<bundle>`: there is no ownership node at all. Pulsar's
calls and what they do here, on the broker's OwnershipCache entries (ownership.py) and bundle owners:

- `NamespaceService.onNamespaceBundleOwned` (`own`): an active OwnedBundle entry and its BundleOwner
  actor, so the broker serves the bundle's topics (ServerCnx checks the entry, as Pulsar's
  `checkTopicOwnership` asks the channel); idempotent (a split child may be owned by the split first).
- `BrokerService.unloadServiceUnit(bundle, disconnectClients, closeWithoutWaitingClientDisconnect=true,
  namespaceBundleUnloadingTimeoutMs)` (`close`): the entry goes inactive at once (new producers are
  refused), the topics close with the bundle's close latency (bundle_owner.py), at most the unloading
  timeout; with `disconnect_clients` the clients are told to go (to the assigned broker when there is
  one, PIP-307) and the entry and its actor are removed; without it (a transfer's first phase, PIP-307)
  the clients stay attached to a closed topic until the second call. Returns the topics closed.
- `NamespaceService.updateNamespaceBundles` for a split (`split`): the namespace's local policies
  written with compare-and-set (BadVersion -> BundleSplitConflict, which the channel retries), then
  the children's entries take the parent's topics with their clients attached (no reconnect: a split
  moves no topic) and the parent's entry goes.
- `admin.brokers().healthcheckAsync` (`is_healthy`): one admin round trip (`admin_call`), then whether
  the broker's port is open.
- `ExtensibleLoadManagerImpl.selectAsync`, `BrokerRegistry.getAvailableBrokersAsync`,
  `LeaderElectionService.readCurrentLeader`: the load manager's (extensible_wrapper.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Set as AbstractSet
from typing import Any

import anyio
import msgspec

from emulator.model.bundles import parse_bundle
from emulator.model.policies import LocalPolicies
from emulator.runtime import ActorDead, AskTimeout

from emulator.cluster import paths
from emulator.cluster.events import BundleSplit, BundleUnloaded
from emulator.cluster.metadata_client import BadVersion
from emulator.cluster.ownership import OwnedBundle
from .host import BundleSplitConflict

__all__ = ["BrokerChannelHost"]


class BrokerChannelHost:
    """`ChannelHost` over one emulated broker (`emulator.cluster.broker.Broker`, not imported: the
    broker imports this package); `manager` answers the selection questions."""

    def __init__(self, broker: Any, manager: Any) -> None:
        self.broker = broker
        self.manager = manager
        # bundles closed without disconnecting (a transfer's first phase): when, and how many topics
        self._fenced: dict[str, tuple[float, int, bool]] = {}
        self._available_of: frozenset[str] | None = None
        self._available: list[str] = []

    @property
    def broker_id(self) -> str:
        return self.broker.broker_id

    # ------------------------------------------------------------------ own

    async def own(self, bundle: str) -> None:
        self._own(bundle)

    def own_now(self, bundle: str) -> bool:
        """`own`, at once (the channel says this broker owns the bundle); False while a close of it
        is still under way here (nothing is served until it is done)."""
        return self._own(bundle).active

    def _own(self, bundle: str) -> OwnedBundle:
        b = self.broker
        owned = b.owned.get(bundle)
        if owned is not None and owned.active:
            return owned
        if owned is not None and owned.actor is not None and owned.actor.alive:
            # its close is under way: Pulsar's BrokerService still holds the closing topics, and a
            # producer that reaches them meanwhile is refused ("topic is being unloaded": the client
            # retries); once the close has dropped the bundle, the next `own` serves it again
            return owned
        fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        owned = b.owned[bundle] = OwnedBundle(bundle, fut)
        b._serve_bundle(owned)   # no lock to take: the channel's Owned value is the ownership
        fut.set_result(True)
        return owned

    # ------------------------------------------------------------------ close

    async def close(self, bundle: str, disconnect_clients: bool, assigned_broker: str | None) -> int:
        b = self.broker
        owned = b.owned.get(bundle)
        if owned is None:
            return 0
        started = b.now
        owned.active = False
        actor = owned.actor
        closed = 0
        timed_out = False
        if actor is not None and actor.alive:
            timeout = b.conf.namespace_bundle_unloading_timeout_ms / 1000.0
            with anyio.move_on_after(timeout) as scope:
                try:
                    closed = await actor.close_topics(disconnect=disconnect_clients,
                                                      assigned_broker=assigned_broker)
                except (ActorDead, AskTimeout):
                    pass
            if scope.cancelled_caught:
                timed_out = True
                b.log.warning("Unloading of bundle has timed out", bundle=bundle)
        if not disconnect_clients:
            self._fenced[bundle] = (started, closed, timed_out)
            return closed
        if b.owned.get(bundle) is owned:
            del b.owned[bundle]
        if actor is not None:
            actor.kill()
        first = self._fenced.pop(bundle, None)
        if first is not None:   # the unload began with the first phase's close
            started, closed, timed_out = first[0], first[1] + closed, first[2] or timed_out
        b.events.emit(BundleUnloaded(bundle=bundle, broker=b.broker_id, topics=closed,
                                     duration=b.now - started, timed_out=timed_out))
        return closed

    # ------------------------------------------------------------------ split

    async def split(self, parent: str, children: Mapping[str, str | None]) -> None:
        b = self.broker
        namespace, lower, upper = parse_bundle(parent)
        node = await b.md.get(paths.local_policies_path(namespace))
        if node is None:
            raise BundleSplitConflict(f"Namespace {namespace} does not exist")
        policies = msgspec.json.decode(node.data, type=LocalPolicies)
        current = policies.to_namespace_bundles(namespace)
        child_names = [f"{namespace}/{r}" for r in sorted(children, key=lambda r: parse_bundle(
            f"{namespace}/{r}")[1])]
        if current.contains(parent):
            bounds = [parse_bundle(c)[1] for c in child_names[1:]]
            new = current.split(parent, boundaries=bounds)
            updated = msgspec.structs.replace(policies, bundles=LocalPolicies.from_namespace_bundles(
                new).bundles)
            try:
                await b.md.set(paths.local_policies_path(namespace), msgspec.json.encode(updated),
                               expected_version=node.stat.version)
            except BadVersion:
                raise BundleSplitConflict(parent) from None
            b._invalidate_namespace(namespace)
        elif not all(current.contains(c) for c in child_names):
            raise BundleSplitConflict(f"{parent} is not a bundle of {namespace} any more")
        self._hand_over(parent, child_names)
        b.events.emit(BundleSplit(bundle=parent, broker=b.broker_id, children=child_names,
                                  algorithm="", boundaries=[parse_bundle(c)[1] for c in child_names[1:]],
                                  unload=False, attempt=1))

    def split_underway(self, parent: str, underway: bool) -> None:
        if underway:
            self.broker.splitting.add(parent)
        else:
            self.broker.splitting.discard(parent)

    def splits_underway(self) -> AbstractSet[str]:
        return self.broker.splitting

    def _hand_over(self, parent: str, children: list[str]) -> None:
        """The parent's topics go to the children's entries, clients attached; the parent's entry goes."""
        b = self.broker
        owned = b.owned.get(parent)
        if owned is None or owned.actor is None:
            return
        parent_actor = owned.actor
        owned.active = False
        for child in children:
            child_actor = self._own(child).actor
            assert child_actor is not None
            parent_actor.hand_over_range(child_actor)
        del b.owned[parent]
        parent_actor.kill()

    # ------------------------------------------------------------------ the rest of PulsarService

    async def is_healthy(self, broker: str) -> bool:
        took = self.broker.latency("admin_call")
        if took > 0:
            await anyio.sleep(took)
        return self.broker.network.is_listening(broker)

    async def select(self, bundle: str, excluded: frozenset[str]) -> str | None:
        """The channel owner's `overrideOwnership` selects here (a lookup's assignment goes through
        the Assigner): the override is forced, so the selection takes effect and is reported."""
        result: str | None = await self.manager.select(bundle, excluded)
        self.manager.report_assignment(bundle, result)
        return result

    async def available_brokers(self) -> list[str]:
        """The registry, sorted; one list per registry change (every owner lookup asks: the caller
        reads it, never changes it)."""
        brokers = self.broker.available_brokers
        if brokers is not self._available_of:
            self._available_of = brokers
            self._available = sorted(brokers)
        return self._available

    async def channel_owner(self) -> str | None:
        return self.broker.leader_id
