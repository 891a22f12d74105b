"""The Extensible load manager's broker filters: which registered brokers may own a bundle.

Follows apache/pulsar `extensions/filter/`: BrokerLoadManagerClassFilter @1e4087be,
BrokerMaxTopicCountFilter @2c746ef1, BrokerVersionFilter @442b4cd2, BrokerIsolationPoliciesFilter
@737ad6b4 (IsolationPoliciesHelper @2932edb3 → `LoadManagerShared.applyNamespacePoliciesAsync`) and
AntiAffinityGroupPolicyFilter @4bc48251 (→ `LoadManagerShared.filterAntiAffinityGroupOwnedBrokersAsync`
over the channel's ownership entries, LoadManagerShared as stored at id 7216294771), and their tests.

A filter is a pure function `(brokers, bundle, context, *, non_persistent=False) -> brokers` over a
broker id → BrokerLookupData map; it returns a new dict and never changes its input (Java edits the
map in place). It raises `BrokerFilterException` where Pulsar's future fails. `non_persistent` is
`NamespaceBundle.hasNonPersistentTopic()`, true when the lookup came through a `non-persistent://`
topic. `DEFAULT_PIPELINE` is ExtensibleLoadManagerImpl's order: the three built-in filters, then the
anti-affinity and the isolation filter it appends on start.

Differences from the Modular filters (emulator.model.filters): the topic count is the broker's
reported `topics` (no preallocation, `>=` removes), the class and version come from the registry's
lookup data, the topic-type flags too, and the anti-affinity count is per Owned bundle of the group's
namespaces (one per bundle, not one per namespace). Isolation regexes match the broker's host, as
`applyNamespacePoliciesAsync` does at that version (a newer test also matches `host:port` ids; not
ported).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from .context import LoadManagerContext
from .load_data import BrokerLookupData
from emulator.model.filters import (
    DEFAULT_DOMAIN,
    BrokerFilterException,
    SemanticVersion,
    namespace_of_bundle,
    parse_broker_host,
)

__all__ = [
    "DEFAULT_PIPELINE",
    "BrokerFilter",
    "BrokerFilterBadVersionException",
    "BrokerFilterException",
    "anti_affinity_bundle_counts",
    "anti_affinity_group_policy_filter",
    "apply_filters",
    "apply_isolation_policies",
    "broker_isolation_policies_filter",
    "broker_load_manager_class_filter",
    "broker_max_topic_count_filter",
    "broker_version_filter",
    "filter_by_anti_affinity_counts",
]

Brokers = Mapping[str, BrokerLookupData]


class BrokerFilterBadVersionException(BrokerFilterException):
    """BrokerFilterBadVersionException: the newest broker version cannot be determined."""


class BrokerFilter(Protocol):
    """`BrokerFilter.filterAsync(brokers, serviceUnit, context)` as a pure function."""

    def __call__(
        self, brokers: Brokers, bundle: str, context: LoadManagerContext, *, non_persistent: bool = False
    ) -> dict[str, BrokerLookupData]: ...


def broker_load_manager_class_filter(
    brokers: Brokers, bundle: str, context: LoadManagerContext, *, non_persistent: bool = False
) -> dict[str, BrokerLookupData]:
    """Keep the brokers registered with this broker's `loadManagerClassName` (a broker without one,
    an older version, never matches)."""
    wanted = context.conf.load_manager_class_name
    return {b: d for b, d in brokers.items() if d.load_manager_class_name == wanted}


def broker_max_topic_count_filter(
    brokers: Brokers, bundle: str, context: LoadManagerContext, *, non_persistent: bool = False
) -> dict[str, BrokerLookupData]:
    """Drop brokers whose reported `topics` reach `loadBalancerBrokerMaxTopics` (a broker without load
    data counts 0 topics)."""
    limit = context.conf.load_balancer_broker_max_topics
    kept = {}
    for broker, data in brokers.items():
        load = context.broker_load_data.get(broker)
        if (load.topics if load is not None else 0) < limit:
            kept[broker] = data
    return kept


def broker_version_filter(
    brokers: Brokers, bundle: str, context: LoadManagerContext, *, non_persistent: bool = False
) -> dict[str, BrokerLookupData]:
    """With `preferLaterVersions`, keep only the brokers on the newest version (build-aware order to
    find it, precedence equality to keep); a missing or unparsable version fails the filter."""
    if not context.conf.prefer_later_versions or not brokers:
        return dict(brokers)
    latest: SemanticVersion | None = None
    versions: dict[str, SemanticVersion] = {}
    for broker, data in brokers.items():
        text = data.broker_version
        if not text:
            raise BrokerFilterBadVersionException(f'No version string in lookup data for broker "{broker}"')
        try:
            version = SemanticVersion(text)
        except ValueError:
            raise BrokerFilterBadVersionException(
                f'Invalid version string in lookup data for broker "{broker}": "{text}")'
            ) from None
        versions[broker] = version
        if latest is None or latest.compare_build_aware(version) < 0:
            latest = version
    assert latest is not None
    return {b: d for b, d in brokers.items() if versions[b].compare(latest) == 0}


def apply_isolation_policies(
    brokers: Brokers, bundle: str, context: LoadManagerContext, *, non_persistent: bool = False
) -> list[str]:
    """`applyNamespacePoliciesAsync` with IsolationPoliciesHelper's predicate (the lookup data's topic
    flags): the brokers the namespace's isolation policy allows, or the shared brokers able to load
    the topic type when the namespace has no policy. A broker id without a port is skipped."""
    if not context.policies.isolation_policies:   # no policy at all: every shared broker able to load it
        if non_persistent:
            return [b for b, d in brokers.items() if ":" in b and d.non_persistent_topics_enabled]
        return [b for b, d in brokers.items() if ":" in b and d.persistent_topics_enabled]
    policy = context.policies.isolation_policy(namespace_of_bundle(bundle))
    primaries: list[str] = []
    secondaries: list[str] = []
    for broker, data in brokers.items():
        if parse_broker_host(broker) is None:   # an id without a port: Pulsar skips it
            continue
        if policy is not None:
            if policy.is_primary_broker(broker):
                primaries.append(broker)
            elif policy.is_secondary_broker(broker):
                secondaries.append(broker)
        elif non_persistent and not data.non_persistent_topics_enabled:
            continue
        elif not non_persistent and not data.persistent_topics_enabled:
            continue
        elif context.policies.is_shared_broker(broker):
            secondaries.append(broker)
    if policy is None:
        return secondaries
    if policy.should_failover(len(primaries)):
        return primaries + secondaries
    return primaries


def broker_isolation_policies_filter(
    brokers: Brokers, bundle: str, context: LoadManagerContext, *, non_persistent: bool = False
) -> dict[str, BrokerLookupData]:
    """Keep the brokers `apply_isolation_policies` allows (`retainAll`)."""
    allowed = set(apply_isolation_policies(brokers, bundle, context, non_persistent=non_persistent))
    return {b: d for b, d in brokers.items() if b in allowed}


def anti_affinity_bundle_counts(bundle: str, context: LoadManagerContext) -> dict[str, int] | None:
    """`getAntiAffinityNamespaceOwnedBrokers` over the ownership entries: per broker, the Owned
    bundles of namespaces in `bundle`'s anti-affinity group (case-insensitive); None without a group."""
    group = context.policies.anti_affinity_group(namespace_of_bundle(bundle))
    if group is None:
        return None
    target = group.lower()
    counts: dict[str, int] = {}
    for owned, owner in (context.owners or {}).items():
        g = context.policies.anti_affinity_group(namespace_of_bundle(owned))
        if owner and g is not None and g.lower() == target:
            counts[owner] = counts.get(owner, 0) + 1
    return counts


def filter_by_anti_affinity_counts(
    candidates: Iterable[str],
    counts: Mapping[str, int] | None,
    failure_domains_enabled: bool,
    broker_to_domain: Mapping[str, str],
) -> list[str]:
    """`LoadManagerShared.filterAntiAffinityGroupOwnedBrokers(pulsar, candidates, domains, counts)`:
    first the failure domains holding the fewest of the group (with `failureDomainsEnabled` and a
    non-empty domain map), then the brokers holding the fewest (a broker absent from `counts` holds 0)."""
    cands = list(candidates)
    if counts is None or not cands:
        return cands
    if failure_domains_enabled and broker_to_domain:
        per_domain: dict[str, int] = {}
        for broker in cands:
            domain = broker_to_domain.get(broker, DEFAULT_DOMAIN)
            per_domain[domain] = per_domain.get(domain, 0) + counts.get(broker, 0)
        fewest = min(per_domain.values())
        cands = [b for b in cands if per_domain[broker_to_domain.get(b, DEFAULT_DOMAIN)] == fewest]
    least = 2**31 - 1
    for broker in cands:
        if broker not in counts:
            least = 0
            break
        least = min(least, counts[broker])
    if least == 0:
        return [b for b in cands if counts.get(b, 0) <= 0]
    return [b for b in cands if counts.get(b) == least]


def anti_affinity_group_policy_filter(
    brokers: Brokers, bundle: str, context: LoadManagerContext, *, non_persistent: bool = False
) -> dict[str, BrokerLookupData]:
    """Spread an anti-affinity group: keep the brokers (in the domains) owning the fewest of its
    bundles. A namespace without a group keeps every broker."""
    kept = set(filter_by_anti_affinity_counts(
        brokers, anti_affinity_bundle_counts(bundle, context),
        context.conf.failure_domains_enabled, context.policies.failure_domains,
    ))
    return {b: d for b, d in brokers.items() if b in kept}


DEFAULT_PIPELINE: tuple[BrokerFilter, ...] = (
    broker_load_manager_class_filter,
    broker_max_topic_count_filter,
    broker_version_filter,
    anti_affinity_group_policy_filter,
    broker_isolation_policies_filter,
)
"""ExtensibleLoadManagerImpl's `brokerFilterPipeline`, in its order."""


def apply_filters(
    pipeline: Iterable[BrokerFilter | Callable[..., dict[str, BrokerLookupData]]],
    brokers: Brokers,
    bundle: str,
    context: LoadManagerContext,
    *,
    non_persistent: bool = False,
) -> dict[str, BrokerLookupData]:
    """Run the filters in order, each on the previous one's result (exceptions propagate)."""
    result = dict(brokers)
    for f in pipeline:
        result = f(result, bundle, context, non_persistent=non_persistent)
    return result
