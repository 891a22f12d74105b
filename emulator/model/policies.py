"""Namespace policies that steer placement: isolation, anti-affinity, failure domains, bundle layout.

The Structs keep Pulsar's JSON shapes so a scenario or an admin call can write exactly what Pulsar's
metadata store holds: `NamespaceIsolationData` (snake_case keys in Pulsar too: `auto_failover_policy`,
`policy_type`, `min_limit`) and `LocalPolicies` (camelCase: `namespaceAntiAffinityGroup`,
`bundles.numBundles`).

`PolicyView` is the read-only face the pure placement code sees (SimpleResourceAllocationPolicies +
`LoadManagerShared.getNamespaceAntiAffinityGroup` + the broker → failure-domain map). The actor builds a
new view whenever the store's policies change; the decision code never reads the store.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from itertools import repeat
from types import MappingProxyType

from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from emulator.model.bundles import NamespaceBundles

__all__ = [
    "AutoFailoverPolicyData",
    "BundlesData",
    "ClusterPolicies",
    "FailureDomain",
    "LocalPolicies",
    "NamespaceIsolationPolicy",
    "PolicyView",
    "bundles_data_from",
]

FULL_UPPER = 0xFFFFFFFF


def _check_regexes(field: str, patterns: list[str]) -> None:
    for p in patterns:
        try:
            re.compile(p)
        except re.error as e:
            raise ValueError(f"{field}: bad regex {p!r} ({e})") from None


class AutoFailoverPolicyData(msgspec.Struct, forbid_unknown_fields=True):
    """`{"policy_type": "min_available", "parameters": {"min_limit": "1", "usage_threshold": "80"}}`.

    Pulsar's only policy type is `min_available`; its parameters are strings in Pulsar's JSON, ints
    are accepted too. `usage_threshold` only matters to the SimpleLoadManager, so it is optional here.
    """

    policy_type: str = "min_available"
    parameters: dict[str, str | int] = msgspec.field(default_factory=lambda: {"min_limit": "1"})

    def __post_init__(self) -> None:
        if self.policy_type != "min_available":
            raise ValueError(
                f"auto_failover_policy.policy_type = {self.policy_type!r}; Pulsar only knows 'min_available'"
            )
        if "min_limit" not in self.parameters:
            raise ValueError("auto_failover_policy.parameters: 'min_limit' is required (e.g. {'min_limit': '1'})")
        try:
            int(self.parameters["min_limit"])
        except ValueError:
            raise ValueError(
                f"auto_failover_policy.parameters.min_limit = {self.parameters['min_limit']!r}; must be an integer"
            ) from None

    @property
    def min_limit(self) -> int:
        return int(self.parameters["min_limit"])

    def should_failover(self, primary_candidates: int) -> bool:
        """MinAvailablePolicy.shouldFailoverToSecondary(int): fewer primaries than min_limit."""
        return primary_candidates < self.min_limit


def _strip_port(broker: str) -> str | None:
    """The host of `host:port` (the last ':', so IPv6-safe), None without a numeric port."""
    idx = broker.rfind(":")
    if idx <= 0 or idx == len(broker) - 1 or not broker[idx + 1:].isdigit():
        return None
    return broker[:idx]


def _matches_broker(regexes: list[str], broker: str) -> bool:
    """NamespaceIsolationPolicyImpl.matchesBrokerRegex (apache/pulsar master): brokers are named by
    host or by `host:port` (as `pulsar-admin brokers list` prints them) and a policy may use either
    form, so a `host:port` is matched whole first and then by its host. Pulsar 3.0 matched the host
    only, so a policy naming `broker-1:8080` matched nothing there; the callers here pass the broker
    id (`host:port`), which keeps every host regex's answer and adds the `host:port` ones."""
    if any(re.fullmatch(p, broker) for p in regexes):
        return True
    host = _strip_port(broker)
    return host is not None and any(re.fullmatch(p, host) for p in regexes)


class NamespaceIsolationPolicy(msgspec.Struct, forbid_unknown_fields=True):
    """Pulsar's NamespaceIsolationData: regexes over namespaces and over brokers, as a host or as
    `host:port` (see `_matches_broker`).

    Every match is a Java `String.matches`, i.e. a full match.
    """

    namespaces: list[str]
    primary: list[str]
    secondary: list[str] = msgspec.field(default_factory=list)
    auto_failover_policy: AutoFailoverPolicyData = msgspec.field(default_factory=AutoFailoverPolicyData)

    def __post_init__(self) -> None:
        _check_regexes("namespaces", self.namespaces)
        _check_regexes("primary", self.primary)
        _check_regexes("secondary", self.secondary)

    def validate(self) -> None:
        """NamespaceIsolationDataImpl.validate: at least one namespace regex and one primary regex
        (the regexes and the failover policy are checked on construction)."""
        if not self.namespaces:
            raise ValueError("namespaces: empty; give at least one namespace regex, e.g. ['tenant/ns.*']")
        if not self.primary:
            raise ValueError("primary: empty; give at least one broker host regex, e.g. ['broker-1']")

    def matches_namespace(self, namespace: str) -> bool:
        return any(re.fullmatch(p, namespace) for p in self.namespaces)

    def is_primary_broker(self, broker: str) -> bool:
        """`broker` (a broker id `host:port`, or a host) matches a primary regex (`_matches_broker`)."""
        return _matches_broker(self.primary, broker)

    def is_secondary_broker(self, broker: str) -> bool:
        return _matches_broker(self.secondary, broker)

    def should_failover(self, primary_candidates: int) -> bool:
        return self.auto_failover_policy.should_failover(primary_candidates)


class BundlesData(msgspec.Struct, rename="camel"):
    """`{"boundaries": ["0x00000000", ..., "0xffffffff"], "numBundles": 4}` as in LocalPolicies."""

    boundaries: list[str]
    num_bundles: int

    def __post_init__(self) -> None:
        if len(self.boundaries) != self.num_bundles + 1:
            raise ValueError(
                f"bundles: {len(self.boundaries)} boundaries for numBundles={self.num_bundles}; "
                "need numBundles + 1"
            )
        try:
            self.boundary_values()
        except (ValueError, TypeError):
            for b in self.boundaries:
                try:
                    int(b, 16)
                except (ValueError, TypeError):
                    raise ValueError(
                        f"bundles.boundaries: {b!r} is not a hex boundary like '0x40000000'") from None
            raise

    def boundary_values(self) -> list[int]:
        # map at C speed: brokers decode a namespace's policies on every ownership check
        return list(map(int, self.boundaries, repeat(16, len(self.boundaries))))


def bundles_data_from(bundles: NamespaceBundles) -> BundlesData:
    """NamespaceBundles → the JSON Pulsar stores after a split (`0x%08x`, lower-case)."""
    bounds = list(bundles.boundaries)
    return BundlesData(boundaries=[f"0x{b:08x}" for b in bounds], num_bundles=len(bounds) - 1)


class LocalPolicies(msgspec.Struct, rename="camel", omit_defaults=True):
    """What `/admin/local-policies/<tenant>/<ns>` holds (bookie affinity is not modelled)."""

    bundles: BundlesData | None = None
    namespace_anti_affinity_group: str | None = None

    def anti_affinity_group(self) -> str | None:
        """Pulsar ignores a blank group (`StringUtils.isNotBlank`)."""
        g = self.namespace_anti_affinity_group
        return g if g is not None and g.strip() else None

    def to_namespace_bundles(self, namespace: str) -> NamespaceBundles:
        """No bundle layout stored means one full bundle, as for a namespace without policies."""
        from emulator.model.bundles import NamespaceBundles

        if self.bundles is None:
            return NamespaceBundles.from_boundaries(namespace, [0, FULL_UPPER])
        return NamespaceBundles.from_boundaries(namespace, self.bundles.boundary_values())

    @classmethod
    def from_namespace_bundles(
        cls, bundles: NamespaceBundles, namespace_anti_affinity_group: str | None = None
    ) -> LocalPolicies:
        return cls(bundles=bundles_data_from(bundles), namespace_anti_affinity_group=namespace_anti_affinity_group)


class FailureDomain(msgspec.Struct, forbid_unknown_fields=True):
    """Pulsar's FailureDomainImpl, stored at /admin/clusters/<cluster>/failureDomain/<name>:
    `{"brokers": ["broker-1:8080", ...]}` (broker ids, host:port, as the load manager names them)."""

    brokers: list[str] = msgspec.field(default_factory=list)


class ClusterPolicies(msgspec.Struct):
    """Cluster-wide policies: isolation policies by name, and failure domain by broker id."""

    isolation: dict[str, NamespaceIsolationPolicy] = msgspec.field(default_factory=dict)
    failure_domains: dict[str, str] = msgspec.field(default_factory=dict)


class PolicyView:
    """Read-only policies for the pure placement code.

    Isolation policies are searched in insertion order and the first match wins (Pulsar iterates a
    HashMap and also takes the first match; overlapping policies are a misconfiguration).
    """

    __slots__ = ("_isolation", "_failure_domains", "_local")

    def __init__(
        self,
        cluster: ClusterPolicies | None = None,
        local_policies: Mapping[str, LocalPolicies] | None = None,
    ) -> None:
        if cluster is not None and not isinstance(cluster, ClusterPolicies):
            raise TypeError(f"cluster must be a ClusterPolicies, got {type(cluster).__name__}")
        cluster = cluster if cluster is not None else ClusterPolicies()
        self._isolation = tuple(cluster.isolation.values())
        self._failure_domains = MappingProxyType(dict(cluster.failure_domains))
        self._local = MappingProxyType(dict(local_policies or {}))

    # -- isolation (SimpleResourceAllocationPolicies) --------------------------------------------

    def isolation_policy(self, namespace: str) -> NamespaceIsolationPolicy | None:
        for policy in self._isolation:
            if policy.matches_namespace(namespace):
                return policy
        return None

    @property
    def isolation_policies(self) -> tuple[NamespaceIsolationPolicy, ...]:
        return self._isolation

    def are_isolation_policies_present(self, namespace: str) -> bool:
        """SimpleResourceAllocationPolicies.areIsolationPoliciesPresent (the Extensible load manager's
        TopKBundles and TransferShedder skip such bundles)."""
        return self.isolation_policy(namespace) is not None

    def is_shared_broker(self, broker: str) -> bool:
        """A broker is shared iff no isolation policy lists it as primary (true with no policies)."""
        if not self._isolation:   # asked per broker per decision: most clusters have no policy
            return True
        return not any(p.is_primary_broker(broker) for p in self._isolation)

    # -- local policies --------------------------------------------------------------------------

    def local_policies(self, namespace: str) -> LocalPolicies | None:
        return self._local.get(namespace)

    def anti_affinity_group(self, namespace: str) -> str | None:
        lp = self._local.get(namespace)
        return lp.anti_affinity_group() if lp is not None else None

    # -- failure domains -------------------------------------------------------------------------

    @property
    def failure_domains(self) -> Mapping[str, str]:
        return self._failure_domains

    def failure_domain(self, broker: str) -> str | None:
        return self._failure_domains.get(broker)
