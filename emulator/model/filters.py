"""Candidate filters of the Modular Load Manager (LoadManagerShared, BrokerFilter implementations).

Every function is pure: it takes a candidate collection and returns a new list sorted by broker id,
never mutating its input. Java mutates one HashSet in place and its iteration order decides nothing
here, because every decision below depends only on membership and counts; sorting keeps the strategies
that pick "any" of the result reproducible from a seed.
"""

from __future__ import annotations

import operator
import re
import sys
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING

from emulator.model.policies import PolicyView

if TYPE_CHECKING:
    from emulator.model.config import ServiceConfig
    from emulator.model.loaddata import LoadData

__all__ = [
    "BrokerFilterException",
    "BundleRangeCache",
    "SemanticVersion",
    "DEFAULT_DOMAIN",
    "anti_affinity_namespace_counts",
    "apply_namespace_policies",
    "broker_load_manager_class_filter",
    "broker_version_filter",
    "bundle_range_of",
    "filter_anti_affinity_group_owned_brokers",
    "filter_brokers_with_large_topic_count",
    "namespace_of_bundle",
    "parse_broker_host",
    "remove_most_servicing_brokers_for_namespace",
    "should_anti_affinity_namespace_unload",
    "should_namespace_policies_unload",
]

DEFAULT_DOMAIN = "default"


class BrokerFilterException(Exception):
    """A BrokerFilter gave up; MLMI then restores the full policy-allowed candidate set."""


# --------------------------------------------------------------------------- names


def namespace_of_bundle(bundle: str) -> str:
    """`tenant/ns/0x..._0x...` → `tenant/ns` (LoadManagerShared.getNamespaceNameFromBundleName)."""
    pos = bundle.rfind("/")
    if pos == -1:
        raise ValueError(f"bundle = {bundle!r}; expected '<namespace>/0x%08x_0x%08x'")
    return bundle[:pos]


def bundle_range_of(bundle: str) -> str:
    pos = bundle.rfind("/")
    if pos == -1:
        raise ValueError(f"bundle = {bundle!r}; expected '<namespace>/0x%08x_0x%08x'")
    return bundle[pos + 1 :]


def parse_broker_host(broker_id: str) -> str | None:
    """Host = everything before the last ':' (IPv6-safe); None for an id without a port (Pulsar skips it)."""
    idx = broker_id.rfind(":")
    return broker_id[:idx] if idx > -1 else None


# --------------------------------------------------------------------------- BundleRangeCache


class BundleRangeCache:
    """broker → namespace → bundle ranges, the even-distribution and anti-affinity bookkeeping (§1.9).

    As in Pulsar a broker's entry is never dropped when the broker dies (its namespaces keep counting
    for anti-affinity until the broker id reports again); `remove_broker` exists for callers that want
    otherwise. Namespaces keep insertion order so iteration is reproducible.
    """

    __slots__ = ("_data",)

    def __init__(self) -> None:
        self._data: dict[str, dict[str, set[str]]] = {}

    def reload_broker(self, broker: str, bundles: Iterable[str]) -> None:
        # One split per name (the leader reloads every broker's bundles on every report). Range
        # strings are interned: every load manager view in the process (the leader's and, while it
        # drains, each follower's) holds every range, and one copy of each string serves them all.
        ns_map: dict[str, set[str]] = {}
        intern = sys.intern
        for bundle in bundles:
            ns, slash, rng = bundle.rpartition("/")
            if not slash:
                raise ValueError(f"bundle = {bundle!r}; expected '<namespace>/0x%08x_0x%08x'")
            ranges = ns_map.get(ns)
            if ranges is None:
                ranges = ns_map[ns] = set()
            ranges.add(intern(rng))
        self._data[broker] = ns_map

    def add(self, broker: str, bundle: str) -> None:
        self._data.setdefault(broker, {}).setdefault(namespace_of_bundle(bundle), set()).add(
            sys.intern(bundle_range_of(bundle)))

    def count(self, broker: str, namespace: str) -> int:
        ranges = self._data.get(broker, {}).get(namespace)
        return len(ranges) if ranges else 0

    def namespaces(self, broker: str) -> list[str]:
        return [ns for ns, ranges in self._data.get(broker, {}).items() if ranges]

    def brokers(self) -> list[str]:
        return sorted(self._data)

    def remove_broker(self, broker: str) -> None:
        self._data.pop(broker, None)

    def ranges(self, broker: str, namespace: str) -> list[str]:
        return sorted(self._data.get(broker, {}).get(namespace, ()))


def _sorted_unique(items: Iterable[str]) -> list[str]:
    """`sorted(set(items))`, without the sort when `items` is a list in strictly increasing order
    already (the pipeline hands each filter the last one's sorted output: 1,000 brokers per step of
    every assignment)."""
    if isinstance(items, list) and all(map(operator.lt, items, items[1:])):
        return list(items)
    return sorted(set(items))


# --------------------------------------------------------------------------- §4.1 namespace policies


def _broker_flag(load_data: LoadData, broker: str, non_persistent: bool) -> bool:
    """BrokerTopicLoadingPredicate: a broker without BrokerData (no report yet) answers false."""
    bd = load_data.broker_data.get(broker)
    if bd is None or bd.local_data is None:
        return False
    local = bd.local_data
    return bool(local.non_persistent_topics_enabled if non_persistent else local.persistent_topics_enabled)


def apply_namespace_policies(
    bundle: str,
    available: Iterable[str],
    load_data: LoadData,
    policies: PolicyView,
    conf: ServiceConfig | None = None,
    non_persistent: bool = False,
) -> list[str]:
    """LoadManagerShared.applyNamespacePolicies (§4.1): the policy-allowed brokers, sorted.

    `non_persistent` is NamespaceBundle.hasNonPersistentTopic (set when the lookup came through a
    `non-persistent://` topic). With an isolation policy the topic-type predicate is not applied and
    brokers without a report can be candidates, exactly as in Pulsar.
    """
    namespace = namespace_of_bundle(bundle)
    iso = policies.isolation_policy(namespace)
    primaries: list[str] = []
    secondaries: list[str] = []
    for broker in _sorted_unique(available):
        if parse_broker_host(broker) is None:   # an id without a port: Pulsar skips it
            continue
        if iso is not None:
            if iso.is_primary_broker(broker):
                primaries.append(broker)
            elif iso.is_secondary_broker(broker):
                secondaries.append(broker)
        else:
            if not _broker_flag(load_data, broker, non_persistent):
                continue
            if policies.is_shared_broker(broker):
                secondaries.append(broker)
    if iso is not None:
        result = list(primaries)
        if iso.should_failover(len(primaries)):
            result.extend(secondaries)
        return sorted(result)
    return secondaries


# --------------------------------------------------------------------------- §4.2 max topics


def filter_brokers_with_large_topic_count(
    candidates: Iterable[str], load_data: LoadData, max_topics: int
) -> list[str]:
    """Keep brokers whose reported topics + preallocated bundles' topics ≤ max; nobody left → unchanged."""
    cands = _sorted_unique(candidates)
    kept = []
    for broker in cands:
        bd = load_data.broker_data.get(broker)
        total = 0
        if bd is not None:
            # in a lookup storm a broker holds thousands of preallocated bundles and every
            # assignment filters every candidate: BrokerData keeps the sum
            total = bd.preallocated_topics() + bd.local_data.num_topics
        if total <= max_topics:
            kept.append(broker)
    return kept if kept else cands


# --------------------------------------------------------------------------- §4.3 anti-affinity


def anti_affinity_namespace_counts(
    namespace: str, cache: BundleRangeCache, policies: PolicyView
) -> dict[str, int] | None:
    """Per broker, how many namespaces of `namespace`'s anti-affinity group it holds (0s absent).

    None when the namespace has no group (Pulsar's `null` map: nothing is filtered). Counts cover
    every broker in the cache, not only candidates; the group match is case-insensitive.
    """
    group = policies.anti_affinity_group(namespace)
    if group is None:
        return None
    target = group.lower()
    counts: dict[str, int] = {}
    for broker in cache.brokers():
        for ns in cache.namespaces(broker):
            g = policies.anti_affinity_group(ns)
            if g is not None and g.lower() == target:
                counts[broker] = counts.get(broker, 0) + 1
    return counts


def _filter_domains_not_having_least(
    counts: dict[str, int], candidates: list[str], broker_to_domain: dict[str, str] | None
) -> list[str]:
    if not broker_to_domain:
        return candidates
    domain_count: dict[str, int] = {}
    for broker in candidates:
        domain = broker_to_domain.get(broker, DEFAULT_DOMAIN)
        domain_count[domain] = domain_count.get(domain, 0) + counts.get(broker, 0)
    if not domain_count:
        return candidates
    least = min(domain_count.values())
    return [b for b in candidates if domain_count[broker_to_domain.get(b, DEFAULT_DOMAIN)] == least]


def filter_anti_affinity_group_owned_brokers(
    bundle: str,
    candidates: Iterable[str],
    cache: BundleRangeCache,
    policies: PolicyView,
    conf: ServiceConfig,
) -> list[str]:
    """Spread an anti-affinity group over failure domains, then over brokers (§4.3).

    Domain step only with `failure_domains_enabled` and a non-empty broker → domain map; brokers not
    in the map are in domain "default".
    """
    cands = _sorted_unique(candidates)
    if not cands:
        return cands
    counts = anti_affinity_namespace_counts(namespace_of_bundle(bundle), cache, policies)
    if counts is None:
        return cands
    if conf.failure_domains_enabled:
        cands = _filter_domains_not_having_least(counts, cands, dict(policies.failure_domains))
    least: int | None = None
    for broker in cands:
        if broker not in counts:
            least = 0
            break
        least = counts[broker] if least is None else min(least, counts[broker])
    if least is None:  # no candidates left after the domain step
        return cands
    if least == 0:
        return [b for b in cands if not (b in counts and counts[b] > 0)]
    return [b for b in cands if counts.get(b) == least]


# --------------------------------------------------------------------------- §4.4 even distribution


def remove_most_servicing_brokers_for_namespace(
    bundle: str, candidates: Iterable[str], cache: BundleRangeCache
) -> list[str]:
    """Keep only the brokers holding the fewest bundles (preallocations included) of the namespace."""
    cands = _sorted_unique(candidates)
    if not cands:
        return cands
    namespace = namespace_of_bundle(bundle)
    counts = [cache.count(b, namespace) for b in cands]
    least = min(counts)
    return [b for b, count in zip(cands, counts) if count <= least]


# --------------------------------------------------------------------------- §3 step 6 filter pipeline


def broker_load_manager_class_filter(
    candidates: Iterable[str], load_data: LoadData, conf: ServiceConfig
) -> list[str]:
    """BrokerLoadManagerClassFilter: drop brokers whose report names another load manager class.

    Pulsar walks `loadData.brokerData`, so a candidate without a report is kept. A report without a
    class name would throw a NullPointerException in Java; here it simply does not match.
    """
    wanted = conf.load_manager_class_name
    out = []
    for broker in _sorted_unique(candidates):
        bd = load_data.broker_data.get(broker)
        if bd is not None and bd.local_data.load_manager_class_name != wanted:
            continue
        out.append(broker)
    return out


_SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)


def _ident_key(ident: str) -> tuple[int, int | str]:
    return (0, int(ident)) if ident.isdigit() else (1, ident)


def _ids_cmp(a: str | None, b: str | None, none_is_greater: bool) -> int:
    """Compare dot-separated identifiers by semver rules; a missing list is greater (release > pre)."""
    if a is None and b is None:
        return 0
    if a is None:
        return 1 if none_is_greater else -1
    if b is None:
        return -1 if none_is_greater else 1
    pa, pb = a.split("."), b.split(".")
    for x, y in zip(pa, pb):
        kx, ky = _ident_key(x), _ident_key(y)
        if kx != ky:
            return -1 if kx < ky else 1
    return (len(pa) > len(pb)) - (len(pa) < len(pb))


class _Version:
    """The part of jsemver's Version that BrokerVersionFilter uses."""

    __slots__ = ("core", "pre", "build")

    def __init__(self, text: str) -> None:
        m = _SEMVER.fullmatch(text)
        if m is None:
            raise ValueError(f"invalid semantic version {text!r}")
        self.core = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        self.pre = m.group(4)
        self.build = m.group(5)

    def compare(self, other: _Version) -> int:
        """Precedence: build metadata ignored (jsemver compareTo, also used by equals)."""
        if self.core != other.core:
            return -1 if self.core < other.core else 1
        return _ids_cmp(self.pre, other.pre, none_is_greater=True)

    def compare_build_aware(self, other: _Version) -> int:
        """Version.BUILD_AWARE_ORDER: on equal precedence a version with build metadata is greater."""
        c = self.compare(other)
        if c != 0:
            return c
        return _ids_cmp(self.build, other.build, none_is_greater=False)


SemanticVersion = _Version
"""jsemver's Version as both load managers' BrokerVersionFilter compares it."""


def broker_version_filter(candidates: Iterable[str], load_data: LoadData, conf: ServiceConfig) -> list[str]:
    """BrokerVersionFilter (only with `prefer_later_versions`): keep brokers on the newest version.

    Raises BrokerFilterException when the newest version cannot be determined: no candidates, a
    candidate without a report, an empty or unparsable version string. Version equality ignores build
    metadata, as jsemver's `equals` does.
    """
    cands = _sorted_unique(candidates)
    if not conf.prefer_later_versions:
        return cands
    if not cands:
        raise BrokerFilterException("Cannot determine newest broker version: broker set was empty")
    versions: dict[str, _Version] = {}
    latest: _Version | None = None
    for broker in cands:
        bd = load_data.broker_data.get(broker)
        if bd is None:
            raise BrokerFilterException(f'Cannot determine newest broker version: no broker data for "{broker}"')
        text = bd.local_data.broker_version_string
        if not text:
            raise BrokerFilterException(f'Cannot determine newest broker version: no version string for "{broker}"')
        try:
            v = _Version(text)
        except ValueError:
            raise BrokerFilterException(
                f'Cannot determine newest broker version: invalid version string for "{broker}": "{text}"'
            ) from None
        versions[broker] = v
        if latest is None or latest.compare_build_aware(v) < 0:
            latest = v
    assert latest is not None
    return [b for b in cands if versions[b].compare(latest) == 0]


# --------------------------------------------------------------------------- §4.5 unload guards


def should_namespace_policies_unload(
    bundle: str,
    current_broker: str,
    available: Iterable[str],
    load_data: LoadData,
    policies: PolicyView,
) -> bool:
    """Unload only if the policies allow some broker other than the current owner."""
    cands = apply_namespace_policies(bundle, available, load_data, policies)
    return any(b != current_broker for b in cands)


def should_anti_affinity_namespace_unload(
    bundle: str,
    current_broker: str,
    available: Iterable[str],
    load_data: LoadData,
    policies: PolicyView,
    cache: BundleRangeCache,
) -> bool:
    """Refuse to unload an anti-affinity namespace that would land back on an equally loaded broker."""
    namespace = namespace_of_bundle(bundle)
    if policies.anti_affinity_group(namespace) is None:
        return True
    candidates: Collection[str] = apply_namespace_policies(bundle, available, load_data, policies)
    counts = anti_affinity_namespace_counts(namespace, cache, policies)
    if not counts:
        return True
    least = 2**31 - 1  # Integer.MAX_VALUE, kept when there are no candidates
    current = 0
    for broker in candidates:
        n = counts.get(broker, 0)
        if broker == current_broker:
            current = n
        least = min(least, n)
    if least == 0 or current > least:
        return True
    owners_of_least = sum(1 for b in candidates if counts.get(b, 0) == least)
    return len(candidates) != owners_of_least
