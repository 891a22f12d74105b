"""Which broker SimpleLoadManagerImpl gives a bundle: `getLeastLoaded` and what it calls.

Follows `SimpleLoadManagerImpl.getLeastLoadedBroker`, `getAvailableBrokers(ServiceUnitId)`,
`getFinalCandidates`, `findBrokerForPlacement` (leastLoadedServer, leastMsgPerSecond) and
`WRRPlacementStrategy.findBrokerForPlacement` (weightedRandomSelection), with LoadManagerShared's
`applyNamespacePolicies` and `removeMostServicingBrokersForNamespace` from `emulator.model.filters`.

No clock, I/O or logging. Like Pulsar's leader, placement changes the manager's state: the chosen
broker gets the bundle pre-allocated (its ranking and `bundle_ranges`), a candidate that already has
the bundle loaded loses it from its ranking, and the rotation cursor advances. That state is a
`PlacementState` the caller owns; every change is made here, where Pulsar makes it.

Choices:
- `TreeMultimap<Long, ResourceUnit>` order is (rank, broker id): the candidates are a sorted list.
- `Collections.shuffle` of the unranked brokers is dropped: they go into a sorted set anyway.
- `WRRPlacementStrategy` owns `new Random()`; here the caller's `random.Random` (`randrange(n)`
  for `nextInt(n)`).
- Where Pulsar would throw (no ranked candidate: `selectedBroker.getResourceId()` on null; the
  weighted pick indexing past the rank-0 brokers) this returns None: that lookup fails.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping

from emulator.model.filters import (
    BundleRangeCache,
    apply_namespace_policies,
    remove_most_servicing_brokers_for_namespace,
)
from emulator.model.loaddata import BrokerData, LoadData, LocalBrokerData
from emulator.model.policies import PolicyView
from emulator.model.java_math import to_int, to_long
from .quota import QuotaStore, RealtimeQuotas
from .ranking import LoadRanking, ResourceUnitRanking
from .report import LoadReport
from .settings import (
    LEAST_LOADED_SERVER,
    LEAST_MSG_PER_SECOND,
    SimpleSettings,
)

__all__ = [
    "PlacementState",
    "available_brokers",
    "final_candidates",
    "find_broker_for_placement",
    "weighted_random_selection",
    "get_least_loaded_broker",
]

_ROTATION_MODULUS = 1000000
_BUNDLE_SUFFIX = re.compile(r"/0x[0-9a-fA-F]{8}_0x[0-9a-fA-F]{8}$")


class PlacementState:
    """What one SimpleLoadManagerImpl keeps between decisions (every broker keeps its own):
    `resourceUnitRankings`, `sortedRankings`, `brokerRotationCursor`, `brokerToNamespaceToBundleRange`."""

    __slots__ = ("rankings", "sorted_rankings", "rotation_cursor", "bundle_ranges")

    def __init__(self) -> None:
        self.rankings: dict[str, ResourceUnitRanking] = {}
        self.sorted_rankings: dict[int, set[str]] = {}
        self.rotation_cursor = 0
        self.bundle_ranges = BundleRangeCache()

    def install(self, ranking: LoadRanking | None) -> None:
        """Swap in a new `doLoadRanking` result (None: keep the old one, as Pulsar does)."""
        if ranking is not None:
            self.rankings = ranking.rankings
            self.sorted_rankings = ranking.sorted_rankings


def available_brokers(state: PlacementState, active_brokers: Iterable[str]) -> dict[int, list[str]]:
    """`getAvailableBrokers(serviceUnit)`: the sorted rankings, or every active broker at rank 0
    while nothing is ranked yet."""
    if state.sorted_rankings:
        return {rank: sorted(brokers) for rank, brokers in sorted(state.sorted_rankings.items())}
    return {0: sorted(set(active_brokers))}


def _topic_flags(reports: Mapping[str, LoadReport]) -> LoadData:
    """The broker topic-loading predicate reads `persistentTopicsEnabled` / `nonPersistentTopicsEnabled`
    of each broker's report; a broker without a report answers false (as in Pulsar)."""
    return LoadData(broker_data={
        broker: BrokerData(local_data=LocalBrokerData(
            persistent_topics_enabled=r.persistent_topics_enabled,
            non_persistent_topics_enabled=r.non_persistent_topics_enabled))
        for broker, r in reports.items()})


def final_candidates(
    service_unit: str,
    available: Mapping[int, Iterable[str]],
    reports: Mapping[str, LoadReport],
    policies: PolicyView,
    bundle_ranges: BundleRangeCache,
    *,
    non_persistent: bool = False,
) -> list[tuple[int, str]]:
    """`getFinalCandidates`: the policy-allowed brokers holding the fewest bundles of the namespace,
    as (rank, broker) in TreeMultimap order. If the policies fail, every available broker.

    `service_unit` is a bundle name or, for shedding's `isBrokerAvailableForRebalancing`, a namespace
    name: then, as in Pulsar, the even-distribution filter reads the namespace as a bundle name
    (`tenant/ns` -> namespace `tenant`), counts nothing and keeps every broker."""
    all_available = [(rank, b) for rank, brokers in available.items() for b in brokers]
    names = sorted({b for _, b in all_available})
    is_bundle = _BUNDLE_SUFFIX.search(service_unit) is not None
    policy_unit = service_unit if is_bundle else service_unit + "/0x00000000_0xffffffff"
    try:
        allowed = apply_namespace_policies(policy_unit, names, _topic_flags(reports), policies,
                                           non_persistent=non_persistent)
    except Exception:  # Pulsar: "Error when trying to apply policies" -> all available brokers
        return sorted(all_available)
    kept = set(remove_most_servicing_brokers_for_namespace(service_unit, allowed, bundle_ranges))
    return sorted((rank, b) for rank, b in all_available if b in kept)


def find_broker_for_placement(
    candidates: list[tuple[int, str]],
    bundle: str,
    state: PlacementState,
    quotas: RealtimeQuotas,
    store: QuotaStore,
    settings: SimpleSettings,
) -> str | None:
    """`findBrokerForPlacement` (leastLoadedServer / leastMsgPerSecond).

    First choice: the least loaded broker that is not idle; an idle broker instead when that one is
    above the underload threshold (or every candidate is idle). With bounded ranks (not
    leastMsgPerSecond): a broker at 100 % sends the bundle to the rotating "random" broker, and
    above the overload threshold to the broker with the most available capacity. The choice gets the
    bundle pre-allocated (unless it already has it) and the cursor advances."""
    default_quota = store.default_quota()
    unbounded = settings.strategy == LEAST_MSG_PER_SECOND
    min_load = 101.0
    max_availability = -1
    idle = max_available = rotating = selected = None
    selected_ranking: ResourceUnitRanking | None = None
    random_index = state.rotation_cursor % len(candidates) if candidates else 0
    for _rank, candidate in candidates:
        random_index -= 1
        ranking = state.rankings.get(candidate)
        if ranking is None:  # "should never happen except in unit test"
            continue
        if ranking.is_service_unit_loaded(bundle):
            ranking.remove_loaded_service_unit(bundle, quotas.quota(bundle, store))
        if random_index < 0 and rotating is None:
            rotating = candidate
        load = ranking.estimated_load_percentage
        availability = to_long(ranking.estimate_max_capacity(default_quota) * max(0.0, (100 - load) / 100))
        if availability > max_availability:
            max_availability, max_available = availability, candidate
        if ranking.is_idle():
            if idle is None:
                idle = candidate
        elif selected is None or selected_ranking is None:
            selected, selected_ranking, min_load = candidate, ranking, load
        else:
            better = (ranking.compare_message_rate_to(selected_ranking) if unbounded
                      else ranking.compare_to(selected_ranking))
            if better < 0:
                selected, selected_ranking, min_load = candidate, ranking, load
    if (min_load > settings.underload_threshold and idle is not None) or selected is None:
        selected = idle
    elif min_load >= 100.0 and rotating is not None and not unbounded:
        selected = rotating
    elif min_load > settings.overload_threshold and not unbounded:
        selected = max_available
    if selected is not None:
        state.rotation_cursor = (state.rotation_cursor + 1) % _ROTATION_MODULUS
        chosen = state.rankings[selected]
        if not chosen.is_service_unit_pre_allocated(bundle):
            state.bundle_ranges.add(selected, bundle)
            chosen.add_pre_allocated_service_unit(bundle, quotas.quota(bundle, store))
    return selected


def weighted_random_selection(candidates: list[tuple[int, str]], rng: random.Random) -> str | None:
    """`WRRPlacementStrategy.findBrokerForPlacement`: a broker with probability rank / total rank
    (ranks = available capacity); with no capacity anywhere, any broker of rank 0."""
    if not candidates:
        return None
    total = 0
    for rank, _ in candidates:
        total = to_int(total + to_int(rank))
    if total <= 0:
        zero = [b for rank, b in candidates if rank == 0]
        index = rng.randrange(len(candidates))
        return zero[index] if index < len(zero) else None  # Java: IndexOutOfBoundsException
    selector = rng.randrange(total)
    so_far = 0
    for rank, broker in candidates:
        so_far = to_int(so_far + to_int(rank))
        if selector < so_far:
            return broker
    return None


def get_least_loaded_broker(
    bundle: str,
    state: PlacementState,
    quotas: RealtimeQuotas,
    store: QuotaStore,
    reports: Mapping[str, LoadReport],
    active_brokers: Iterable[str],
    policies: PolicyView,
    settings: SimpleSettings,
    rng: random.Random,
    *,
    non_persistent: bool = False,
) -> str | None:
    """`getLeastLoaded(serviceUnit)`: the broker a bundle already is pre-allocated to, else the
    strategy's pick among the final candidates that are still registered (`active_brokers`: the
    children of `/loadbalance/brokers`). None: no broker available."""
    for broker in sorted(state.rankings):
        if state.rankings[broker].is_service_unit_pre_allocated(bundle):
            return broker
    active = set(active_brokers)
    candidates = [(rank, b) for rank, b in final_candidates(
        bundle, available_brokers(state, active), reports, policies, state.bundle_ranges,
        non_persistent=non_persistent) if b in active]
    if not candidates:
        return None
    if settings.strategy in (LEAST_LOADED_SERVER, LEAST_MSG_PER_SECOND):
        return find_broker_for_placement(candidates, bundle, state, quotas, store, settings)
    return weighted_random_selection(candidates, rng)
