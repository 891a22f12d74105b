"""PolicyCache: a broker-side actor's view of the placement policies in the metadata store.

ModularLoadManagerImpl reads three kinds of policy, each through a cache the metadata store's watch
keeps fresh (ModularLoadManagerImpl.initialize, read in apache/pulsar):

* isolation policies: `SimpleResourceAllocationPolicies` reads
  `/admin/clusters/<cluster>/namespaceIsolationPolicies` (one node, a JSON map name ->
  NamespaceIsolationData) through `IsolationPolicyResources`' metadata cache on every decision;
* namespace anti-affinity groups: `LoadManagerShared.getNamespaceAntiAffinityGroup` reads the local
  policies `/admin/local-policies/<tenant>/<ns>` (`namespaceAntiAffinityGroup`) through their cache;
* failure domains: `LoadManagerShared.refreshBrokerToFailureDomainMap` lists
  `/admin/clusters/<cluster>/failureDomain/*` into `brokerToFailureDomainMap`, at `initialize` and again
  on every change (`FailureDomainResources.registerListener`), and leaves the map empty unless
  `failureDomainsEnabled`.

Here a notification marks the part it touches stale and `refresh()` re-reads only the stale parts
(the isolation node, the failure domains, or every namespace's local policies, as the leader read
them before cluster policies were wired in), then builds a new immutable `PolicyView` for the pure
placement code.
The leader refreshes on every notification, as Pulsar's caches reload; a follower refreshes when it has
to decide locally. A node that does not decode is left out with a warning, as Pulsar's caches log and
answer empty.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import msgspec

from emulator.model.config import ServiceConfig
from emulator.model.policies import (
    ClusterPolicies,
    FailureDomain,
    LocalPolicies,
    NamespaceIsolationPolicy,
    PolicyView,
)

from . import paths
from .metadata_messages import Notification

if TYPE_CHECKING:  # pragma: no cover
    from .metadata_client import MetadataClient

__all__ = ["PolicyCache", "decode_isolation_policies"]



def decode_isolation_policies(data: bytes) -> dict[str, NamespaceIsolationPolicy]:
    """The namespaceIsolationPolicies node: `{}` for an empty node (a parent written implicitly)."""
    if not data.strip():
        return {}
    return msgspec.json.decode(data, type=dict[str, NamespaceIsolationPolicy])


class PolicyCache:
    """Isolation policies, failure domains and local policies of one cluster, for one actor.

    `on_notification` is cheap and synchronous (call it from the actor's handler); `refresh` is the
    only reader of the store. The view is replaced, never mutated: a decision that holds the old one
    finishes on it.
    """

    def __init__(self, md: "MetadataClient", cluster: str, conf: ServiceConfig) -> None:
        self.md = md
        self.cluster = cluster
        self.conf = conf
        self.view = PolicyView()
        self._isolation_path = paths.isolation_policies_path(cluster)
        self._domains_root = paths.failure_domains_root(cluster)
        self._isolation: dict[str, NamespaceIsolationPolicy] = {}
        self._domains: dict[str, str] = {}
        self._local: dict[str, LocalPolicies] = {}
        self._stale_isolation = True
        self._stale_domains = True
        self._stale_local = True
        self._busy: anyio.Event | None = None  # set while a refresh reads: one at a time

    async def watch(self) -> None:
        """Watch what the view is built from: one prefix watch on /admin covers the local policies and
        the cluster's policies (Pulsar's ZKMetadataStore has one recursive watch on "/" anyway). Its
        answer (the children of /admin) tells whether any cluster policy exists to be read."""
        children = await self.md.watch(paths.ADMIN)
        if "clusters" not in children:
            # no cluster policies were ever written: nothing to read until a Created notification
            self._stale_isolation = self._stale_domains = False

    @property
    def stale(self) -> bool:
        return self._stale_isolation or self._stale_domains or self._stale_local

    def on_notification(self, note: Notification) -> bool:
        """Mark what `note` changed as stale; True if it concerns the policies."""
        path = note.path
        if path.startswith(paths.LOCAL_POLICIES + "/"):
            if note.type == "ChildrenChanged" or path.count("/") != 4:
                return False  # a tenant's node; each namespace node notifies for itself
            self._stale_local = True
            return True
        if path == self._isolation_path:
            self._stale_isolation = True
            return True
        if path == self._domains_root or path.startswith(self._domains_root + "/"):
            self._stale_domains = True
            return True
        return False

    async def refresh(self) -> PolicyView:
        """Re-read the stale parts and return the new view (the old one if nothing was stale).

        A caller that arrives while another reads waits for that read and looks again: the reader
        clears the stale marks before its reads answer, so `stale` alone would hand it the view from
        before the change (Pulsar's metadata cache answers such a caller with the load in flight)."""
        while True:
            busy = self._busy
            if busy is not None:  # another caller is reading: wait for it, then look again
                await busy.wait()
                continue
            if not self.stale:
                return self.view
            busy = self._busy = anyio.Event()
            try:
                await self._refresh()
            finally:
                self._busy = None
                busy.set()

    async def _refresh(self) -> None:
        if self._stale_isolation:
            self._stale_isolation = False
            self._isolation = await self._read_isolation()
        if self._stale_domains:
            self._stale_domains = False
            self._domains = await self._read_domains()
        if self._stale_local:
            self._stale_local = False
            self._local = {}
            for tenant in await self.md.children(paths.LOCAL_POLICIES):
                for ns in await self.md.children(f"{paths.LOCAL_POLICIES}/{tenant}"):
                    await self._read_local(f"{tenant}/{ns}")
        self.view = PolicyView(ClusterPolicies(isolation=dict(self._isolation), failure_domains=dict(self._domains)),
                               local_policies=self._local)

    async def _read_isolation(self) -> dict[str, NamespaceIsolationPolicy]:
        node = await self.md.get(self._isolation_path)
        if node is None:
            return {}
        try:
            return decode_isolation_policies(node.data)
        except (msgspec.ValidationError, msgspec.DecodeError) as e:
            self._warn("GetIsolationPolicies: Unable to get the namespaceIsolationPolicies", e)
            return {}

    async def _read_domains(self) -> dict[str, str]:
        """refreshBrokerToFailureDomainMap: broker id -> domain name; empty unless enabled. A broker
        listed in two domains ends in the one listed last (domain names in sorted order)."""
        if not self.conf.failure_domains_enabled:
            return {}
        out: dict[str, str] = {}
        for name in await self.md.children(self._domains_root):
            node = await self.md.get(f"{self._domains_root}/{name}")
            if node is None:
                continue
            try:
                domain = msgspec.json.decode(node.data, type=FailureDomain)
            except (msgspec.ValidationError, msgspec.DecodeError) as e:
                self._warn(f"Failed to get domain {name}", e)
                continue
            for broker in domain.brokers:
                out[broker] = name
        return out

    async def _read_local(self, namespace: str) -> None:
        node = await self.md.get(paths.local_policies_path(namespace))
        if node is None or not node.data:
            self._local.pop(namespace, None)
            return
        try:
            self._local[namespace] = msgspec.json.decode(node.data, type=LocalPolicies)
        except (msgspec.ValidationError, msgspec.DecodeError) as e:
            self._warn(f"Failed to read the local policies of {namespace}", e)
            self._local.pop(namespace, None)

    def _warn(self, message: str, error: Exception) -> None:
        self.md.owner.log.warning(message, cluster=self.cluster, error=str(error))
