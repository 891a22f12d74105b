"""What the service-unit state channel needs of the broker it runs in: the `ChannelHost` protocol.

In Pulsar the channel (`ServiceUnitStateChannelImpl`) calls into its `PulsarService`: the namespace
service (`onNamespaceBundleOwned`, `updateNamespaceBundles` when it splits), the broker service
(`unloadServiceUnit` when it closes a bundle), the admin client (`brokers().healthcheckAsync` of
another broker), the load manager (`selectAsync` when it reassigns an orphan), the broker registry
(`getAvailableBrokersAsync`, `lookupAsync`) and the leader election (`readCurrentLeader`). The emulated
broker provides these as this protocol, so the channel can run in a real broker actor or, in tests,
next to a fake one.
"""

from __future__ import annotations

from collections.abc import Mapping, Set as AbstractSet
from typing import Protocol

__all__ = ["BundleSplitConflict", "ChannelHost"]


class BundleSplitConflict(Exception):
    """`MetadataStoreException.BadVersionException` from `updateNamespaceBundles`: another writer
    changed the namespace's bundles; `splitServiceUnitOnceAndRetry` retries (`split_retry`)."""


class ChannelHost(Protocol):
    """The broker side of one broker's channel; every method is Pulsar's call named in its docstring."""

    @property
    def broker_id(self) -> str:
        """`pulsar.getBrokerId()`: `host:port`, the id the channel's records name."""
        ...

    async def own(self, bundle: str) -> None:
        """`NamespaceService.onNamespaceBundleOwned`: this broker now serves `bundle` (an Owned record
        names it as dst, or it held the record when its channel started)."""
        ...

    async def close(self, bundle: str, disconnect_clients: bool, assigned_broker: str | None) -> int:
        """`BrokerService.unloadServiceUnit(bundle, disconnectClients, closeWithoutWaitingClientDisconnect
        = true, namespaceBundleUnloadingTimeoutMs)` then `onNamespaceBundleUnload`: close the bundle's
        topics; with `disconnect_clients` the clients are told to go (PIP-307: to `assigned_broker`,
        the channel's `getAssigned`, when there is one). Returns the number of topics closed."""
        ...

    async def split(self, parent: str, children: Mapping[str, str | None]) -> None:
        """`updateSplitNamespaceBundlesAsync`: replace `parent` by `children` (range -> destination)
        in the namespace's bundles (a no-op if that was done already); raises BundleSplitConflict on
        a concurrent change. The children's topics stay served here (Pulsar's split moves no topic)."""
        ...

    def split_underway(self, parent: str, underway: bool) -> None:
        """`splitServiceUnit` began (True) or ended (False) for `parent` on this broker: in between
        the children's Owned values may reach this broker before `split` hands the parent over, and
        it serves both a while, as Pulsar's does (the invariant checker's `splitting`)."""
        ...

    def splits_underway(self) -> "AbstractSet[str]":
        """The parents `split_underway` marked and did not unmark yet."""
        ...

    async def is_healthy(self, broker: str) -> bool:
        """One `admin.brokers().healthcheckAsync(V2, broker)`: False if it fails (a dead broker refuses
        the connection)."""
        ...

    async def select(self, bundle: str, excluded: frozenset[str]) -> str | None:
        """`ExtensibleLoadManagerImpl.selectAsync(bundle, excluded)`: filters + strategy, None if no
        broker is available."""
        ...

    async def available_brokers(self) -> list[str]:
        """`BrokerRegistry.getAvailableBrokersAsync()`: the registered brokers, in registry order."""
        ...

    async def channel_owner(self) -> str | None:
        """`LeaderElectionService.readCurrentLeader()`: the channel owner (the load-manager leader)."""
        ...
