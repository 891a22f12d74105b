"""PolicyAdmin: the pulsar-admin operations on isolation policies, failure domains and anti-affinity groups.

What `ClustersBase` and `NamespacesBase` do with the metadata store, with their answers (read in
apache/pulsar): each operation writes Pulsar's node at Pulsar's path, and the brokers' watches
(policy_cache.py) carry the change to the load managers. Errors are `PolicyAdminError(status, reason)`
with the HTTP status and message Pulsar's REST API gives.

* setNamespaceIsolationPolicy: `validate()` (namespaces and primary non-empty, regexes compile, failover
  policy `min_available`) else 400; read-modify-write of the one map node; then, with
  `unloadBundles` (Pulsar's default true), `filterAndUnloadMatchedNamespaceAsync`: every namespace whose
  name fully matches one of the policy's namespace regexes is unloaded, so its bundles are placed again
  under the new policy.
* deleteNamespaceIsolationPolicy: removes the name from the map (a missing name is no error).
* getNamespaceIsolationPolicies: 404 "NamespaceIsolationPolicies for cluster X does not exist" until one
  was ever set; getNamespaceIsolationPolicy: 404 for an unknown name.
* setFailureDomain: 409 "[b] already exists in <other>" for a broker of another domain (brokers are
  not checked against the live ones, as in Pulsar); deleteFailureDomain: 404 for an unknown domain;
  getFailureDomains: `{}` when none.
* set/get/removeNamespaceAntiAffinityGroup: 412 "antiAffinityGroup can't be empty" for a blank group;
  404 for a namespace without local policies (here a namespace exists through them); written with
  compare-and-set, as a split writes the same node.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from emulator.model.policies import FailureDomain, LocalPolicies, NamespaceIsolationPolicy

from . import paths
from .events import (
    AntiAffinityGroupSet,
    FailureDomainDeleted,
    FailureDomainSet,
    IsolationPolicyDeleted,
    IsolationPolicySet,
)
from .metadata_client import BadVersion, MetadataClient
from .policy_cache import decode_isolation_policies

if TYPE_CHECKING:  # pragma: no cover
    from .events import ClusterEvents
    from .metadata_store import MetadataStore

__all__ = ["PolicyAdmin", "PolicyAdminError", "isolation_policy_from"]

_CAS_ATTEMPTS = 7


class PolicyAdminError(ValueError):
    """An admin call Pulsar would refuse: `status` is its HTTP status, `reason` its message."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def isolation_policy_from(data: Any) -> NamespaceIsolationPolicy:
    """NamespaceIsolationData from JSON bytes or builtins, validated as Pulsar's `validate()`;
    ValueError names the problem."""
    try:
        if isinstance(data, (bytes, str)):
            policy = msgspec.json.decode(data, type=NamespaceIsolationPolicy)
        else:
            policy = msgspec.convert(data, NamespaceIsolationPolicy)
    except msgspec.ValidationError as e:
        raise ValueError(str(e)) from None
    except msgspec.DecodeError as e:
        raise ValueError(f"not JSON ({e})") from None
    policy.validate()
    return policy


class AdminTarget(Protocol):
    """What the admin uses of its cluster (`Cluster` is one): the store, to answer a GET at this instant,
    the event stream, and namespace unloads. A protocol, so that this module does not import cluster.py,
    which builds it."""

    @property
    def store(self) -> MetadataStore: ...

    @property
    def events(self) -> ClusterEvents: ...

    async def unload_namespace(self, namespace: str) -> Any: ...


class PolicyAdmin:
    """The operator's admin client for one cluster's placement policies."""

    def __init__(self, md: MetadataClient, cluster_name: str, cluster: AdminTarget | None = None) -> None:
        self.md = md
        self.cluster_name = cluster_name
        self.cluster = cluster

    # ------------------------------------------------------------------ reads of the moment

    def peek(self, kind: str, name: str | None = None) -> Any:
        """What a GET answers, read from the store at this instant without an operation's latency, as
        every other read-only view of the HTTP server (a snapshot export reads these from a thread while
        the virtual clock waits for it, so a read that takes emulated time could never finish).
        `kind`: "isolation", "domains" or "anti_affinity" (name = the namespace). PolicyAdminError as
        the async getters."""
        assert self.cluster is not None, "peek needs the cluster's store"
        store = self.cluster.store
        if kind == "isolation":
            data = store.peek(paths.isolation_policies_path(self.cluster_name))
            if data is None:
                raise PolicyAdminError(
                    404, f"NamespaceIsolationPolicies for cluster {self.cluster_name} does not exist")
            policies = decode_isolation_policies(data)
            if name is None:
                return policies
            if name not in policies:
                raise PolicyAdminError(
                    404, f"Cannot find NamespaceIsolationPolicy {name} for cluster {self.cluster_name}")
            return policies[name]
        if kind == "domains":
            root = paths.failure_domains_root(self.cluster_name)
            if name is not None:
                data = store.peek(f"{root}/{name}")
                if data is None:
                    raise PolicyAdminError(404, f"Domain {name} for cluster {self.cluster_name} does not exist")
                return msgspec.json.decode(data, type=FailureDomain)
            out: dict[str, FailureDomain] = {}
            for child in store.peek_children(root):
                data = store.peek(f"{root}/{child}")
                if data:
                    out[child] = msgspec.json.decode(data, type=FailureDomain)
            return out
        assert name is not None
        data = store.peek(paths.local_policies_path(name))
        if data is None:
            raise PolicyAdminError(404, f"Namespace {name} does not exist")
        return msgspec.json.decode(data, type=LocalPolicies).namespace_anti_affinity_group

    # ------------------------------------------------------------------ isolation policies

    async def _isolation_map(self) -> tuple[dict[str, NamespaceIsolationPolicy], int] | None:
        node = await self.md.get(paths.isolation_policies_path(self.cluster_name))
        if node is None:
            return None
        return decode_isolation_policies(node.data), node.stat.version

    async def get_isolation_policies(self) -> dict[str, NamespaceIsolationPolicy]:
        current = await self._isolation_map()
        if current is None:
            raise PolicyAdminError(404, f"NamespaceIsolationPolicies for cluster {self.cluster_name} does not exist")
        return current[0]

    async def get_isolation_policy(self, name: str) -> NamespaceIsolationPolicy:
        policies = await self.get_isolation_policies()
        if name not in policies:
            raise PolicyAdminError(404, f"Cannot find NamespaceIsolationPolicy {name} for cluster {self.cluster_name}")
        return policies[name]

    async def _update_isolation(self, change: Any) -> None:
        path = paths.isolation_policies_path(self.cluster_name)
        for _ in range(_CAS_ATTEMPTS):
            current = await self._isolation_map()
            policies, version = current if current is not None else ({}, -1)
            updated = change(dict(policies))
            try:
                if version == -1:
                    await self.md.create(path, msgspec.json.encode(updated))
                else:
                    await self.md.set(path, msgspec.json.encode(updated), expected_version=version)
                return
            except BadVersion:  # also NodeExists: written meanwhile, read again
                continue
        raise PolicyAdminError(409, "Concurrent modification")

    async def set_isolation_policy(self, name: str, policy: NamespaceIsolationPolicy | Any, *,
                                   unload: bool = True) -> list[str]:
        """Create or replace one policy; returns the namespaces unloaded (with `unload`)."""
        if not isinstance(policy, NamespaceIsolationPolicy):
            try:
                policy = isolation_policy_from(policy)
            except ValueError as e:
                raise PolicyAdminError(400, f"Invalid format of input policy data. policy: {name}; {e}") from None
        else:
            try:
                policy.validate()
            except ValueError as e:
                raise PolicyAdminError(400, f"Invalid format of input policy data. policy: {name}; {e}") from None
        _check_name("policyName", name)

        def put(policies: dict[str, NamespaceIsolationPolicy]) -> dict[str, NamespaceIsolationPolicy]:
            policies[name] = policy
            return policies

        await self._update_isolation(put)
        if self.cluster is not None:
            self.cluster.events.emit(IsolationPolicySet(policy=name, data=msgspec.to_builtins(policy)))
        return await self._unload_matching(policy) if unload else []

    async def delete_isolation_policy(self, name: str) -> None:
        def drop(policies: dict[str, NamespaceIsolationPolicy]) -> dict[str, NamespaceIsolationPolicy]:
            policies.pop(name, None)
            return policies

        await self._update_isolation(drop)
        if self.cluster is not None:
            self.cluster.events.emit(IsolationPolicyDeleted(policy=name))

    async def _unload_matching(self, policy: NamespaceIsolationPolicy) -> list[str]:
        """filterAndUnloadMatchedNamespaceAsync: unload every namespace a namespace regex matches."""
        if self.cluster is None:
            return []
        matched = [ns for ns in await self.namespaces() if any(re.fullmatch(p, ns) for p in policy.namespaces)]
        for ns in matched:
            await self.cluster.unload_namespace(ns)
        return matched

    async def namespaces(self) -> list[str]:
        out = []
        for tenant in await self.md.children(paths.LOCAL_POLICIES):
            for ns in await self.md.children(f"{paths.LOCAL_POLICIES}/{tenant}"):
                out.append(f"{tenant}/{ns}")
        return out

    # ------------------------------------------------------------------ failure domains

    async def get_failure_domains(self) -> dict[str, FailureDomain]:
        root = paths.failure_domains_root(self.cluster_name)
        out: dict[str, FailureDomain] = {}
        for name in await self.md.children(root):
            node = await self.md.get(f"{root}/{name}")
            if node is not None and node.data:
                out[name] = msgspec.json.decode(node.data, type=FailureDomain)
        return out

    async def get_failure_domain(self, name: str) -> FailureDomain:
        node = await self.md.get(paths.failure_domain_path(self.cluster_name, name))
        if node is None:
            raise PolicyAdminError(404, f"Domain {name} for cluster {self.cluster_name} does not exist")
        return msgspec.json.decode(node.data, type=FailureDomain)

    async def set_failure_domain(self, name: str, domain: FailureDomain | list[str]) -> None:
        if not isinstance(domain, FailureDomain):
            domain = FailureDomain(brokers=list(domain))
        _check_name("domainName", name)
        for other, existing in (await self.get_failure_domains()).items():
            if other == name:
                continue
            duplicate = [b for b in existing.brokers if b in domain.brokers]
            if duplicate:
                raise PolicyAdminError(409, f"[{', '.join(duplicate)}] already exists in {other}")
        await self.md.set(paths.failure_domain_path(self.cluster_name, name), msgspec.json.encode(domain))
        if self.cluster is not None:
            self.cluster.events.emit(FailureDomainSet(domain=name, brokers=list(domain.brokers)))

    async def delete_failure_domain(self, name: str) -> None:
        path = paths.failure_domain_path(self.cluster_name, name)
        if await self.md.get(path) is None:
            raise PolicyAdminError(404, f"Domain-name {name} or cluster {self.cluster_name} does not exist")
        await self.md.delete(path)
        if self.cluster is not None:
            self.cluster.events.emit(FailureDomainDeleted(domain=name))

    # ------------------------------------------------------------------ anti-affinity groups

    async def get_anti_affinity_group(self, namespace: str) -> str | None:
        node = await self.md.get(paths.local_policies_path(namespace))
        if node is None:
            raise PolicyAdminError(404, f"Namespace {namespace} does not exist")
        return msgspec.json.decode(node.data, type=LocalPolicies).namespace_anti_affinity_group

    async def set_anti_affinity_group(self, namespace: str, group: str | None) -> None:
        """Set (or with None remove) the namespace's group in its local policies, compare-and-set."""
        if group is not None and not group.strip():
            raise PolicyAdminError(412, "antiAffinityGroup can't be empty")
        path = paths.local_policies_path(namespace)
        for _ in range(_CAS_ATTEMPTS):
            node = await self.md.get(path)
            if node is None:
                raise PolicyAdminError(404, f"Namespace {namespace} does not exist")
            policies = msgspec.json.decode(node.data, type=LocalPolicies)
            updated = msgspec.structs.replace(policies, namespace_anti_affinity_group=group)
            try:
                await self.md.set(path, msgspec.json.encode(updated), expected_version=node.stat.version)
            except BadVersion:
                continue
            if self.cluster is not None:
                self.cluster.events.emit(AntiAffinityGroupSet(namespace=namespace, group=group))
            return
        raise PolicyAdminError(409, "Concurrent modification")


def _check_name(key: str, name: str) -> None:
    """A policy or domain name is one metadata path segment."""
    if not isinstance(name, str) or not name or "/" in name or name.strip() != name:
        raise PolicyAdminError(412, f"{key} = {name!r}: expected a non-empty name without '/' or surrounding spaces")
