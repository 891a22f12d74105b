"""Which of a broker's bundles it reports: TopKBundles, the input of TransferShedder.

Follows apache/pulsar `extensions/models/TopKBundles.java` @028ed629 (`update`, `partitionSort`,
`hasPolicies`) and TopKBundlesTest @028ed629. K is `loadBalancerMaxNumberOfBundlesInBundleLoadReport`
(TopBundleLoadDataReporter passes it).

Bundles are ranked by `NamespaceBundleStats.compareTo` (bandwidth in, bandwidth out, msg rate, topics
and connections, cache size; differences under a threshold compare equal). The k biggest are found
with a quickselect and written **least loaded first**: `update` adds `arr[k-1]` down to `arr[0]`, so
TransferShedder, which walks the list in order, offers the lightest of the top k first (the spec's
"heaviest first" is corrected here; TransferShedderTest's expected unloads need this order).

Java walks a `HashMap` (the broker's bundle stats); we walk the given mapping in its order, so ties
(bundles whose stats compare equal) are ordered by the caller's insertion order, reproducibly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from emulator.model.config import ServiceConfig
from .load_data import BundleLoadData, TopBundlesLoadData
from emulator.model.filters import namespace_of_bundle
from emulator.model.java_sort import java_list_sort
from emulator.model.loaddata import NamespaceBundleStats, is_system_service_namespace
from emulator.model.policies import PolicyView
from emulator.model.bundle_order import compare_bundle_stats

__all__ = ["has_policies", "partition_sort", "top_k_bundles"]

T = TypeVar("T")


def has_policies(bundle: str, policies: PolicyView) -> bool:
    """`hasPolicies`: the bundle's namespace has an isolation policy or an anti-affinity group."""
    namespace = namespace_of_bundle(bundle)
    return policies.are_isolation_policies_present(namespace) or (
        policies.anti_affinity_group(namespace) is not None
    )


def top_k_bundles(
    bundle_stats: Mapping[str, NamespaceBundleStats],
    k: int,
    conf: ServiceConfig,
    policies: PolicyView | None = None,
) -> TopBundlesLoadData:
    """`TopKBundles.update(bundleStats, k)`: the k most loaded reportable bundles, least loaded first.

    Left out, as in Pulsar: system namespaces, namespaces in `loadBalancerSheddingExcludedNamespaces`,
    and (unless `loadBalancerSheddingBundlesWithPoliciesEnabled`) bundles whose namespace has an
    isolation policy or an anti-affinity group.
    """
    policies = policies if policies is not None else PolicyView()
    with_policies = conf.load_balancer_shedding_bundles_with_policies_enabled
    excluded = set(conf.load_balancer_shedding_excluded_namespaces)
    arr: list[tuple[str, NamespaceBundleStats]] = []
    reportable: dict[str, bool] = {}   # per namespace: every test above is the namespace's
    for bundle, stats in bundle_stats.items():
        namespace = namespace_of_bundle(bundle)
        keep = reportable.get(namespace)
        if keep is None:
            keep = reportable[namespace] = not (
                is_system_service_namespace(namespace)
                or (not with_policies and has_policies(bundle, policies))
                or namespace in excluded)
        if keep:
            arr.append((bundle, stats))
    if not arr:
        return TopBundlesLoadData()
    k = min(k, len(arr))
    partition_sort(arr, k, lambda a, b: compare_bundle_stats(a[1], b[1]))
    return TopBundlesLoadData(
        top_bundles_load_data=[BundleLoadData(bundle_name=b, stats=s) for b, s in reversed(arr[:k])]
    )


def partition_sort(arr: list[T], k: int, compare: Callable[[T, T], int]) -> None:
    """`TopKBundles.partitionSort`, in place: afterwards `arr[:k]` holds the k largest, largest first.

    A three-way quickselect with the last element as pivot, then `Collections.sort` of the prefix
    in descending order (Java's binary insertion sort below 32 elements, `_java_sort`).
    """
    start, end, target = 0, len(arr) - 1, k - 1
    while start < end:
        lo, hi, mid = start, end, start
        pivot = arr[hi]
        while mid <= hi:
            cmp = compare(pivot, arr[mid])
            if cmp < 0:
                arr[lo], arr[mid] = arr[mid], arr[lo]
                lo += 1
                mid += 1
            elif cmp > 0:
                arr[mid], arr[hi] = arr[hi], arr[mid]
                hi -= 1
            else:
                mid += 1
        if lo <= target < mid:
            end = lo
            break
        if target < lo:
            end = lo - 1
        else:
            start = mid
    arr[:end] = java_list_sort(arr[:end], lambda a, b: compare(b, a))
