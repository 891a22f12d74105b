"""The pure core of ModularLoadManagerImpl: the leader's load data, preallocation and broker selection.

No actors, no I/O, no clock: the LoadManagerLeader actor feeds it what it read from the metadata store
(available brokers = lock holders under `/loadbalance/brokers`, their LocalBrokerData, the bundles the
leader itself owns) and applies what it returns (persisted bundle data to delete or write, the broker
chosen for a bundle). Method names are Pulsar's in snake_case (ModularLoadManagerImpl @009a9bf2).

Choices where Pulsar is open or would throw:
* Available brokers are those of the last `update_all` (Pulsar re-lists the locks on each call; the
  actor calls `update_all` on every `/loadbalance/brokers` notification, so both agree).
* A chosen broker without BrokerData (possible for isolation-policy candidates that have not reported
  yet) makes Java throw a NullPointerException in the overload check and in `preallocateBundle`; here
  the overload check is skipped and only the per-broker preallocation is skipped.
* The legacy ResourceQuota fallback of `getBundleDataOrDefault` is not modelled: persisted bundle data
  or the 50/50/50000/50000 defaults.
* `bundle_data_to_write` orders bundles by Pulsar's BundleData order (short-term window, then long-term;
  each by throughput in and out at 100 kB/s resolution, then msg rate at 100 msg/s resolution). Java's
  partition sort is not stable; ties here are broken by bundle name so the written set is reproducible.
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Callable

import msgspec

from emulator.model import split_detection
from emulator.model.config import ServiceConfig
from emulator.model.filters import (
    BrokerFilterException,
    BundleRangeCache,
    apply_namespace_policies,
    broker_load_manager_class_filter,
    broker_version_filter,
    filter_anti_affinity_group_owned_brokers,
    filter_brokers_with_large_topic_count,
    remove_most_servicing_brokers_for_namespace,
    should_anti_affinity_namespace_unload,
    should_namespace_policies_unload,
)
from emulator.model.loaddata import (
    BrokerData,
    BundleData,
    LoadData,
    LocalBrokerData,
    TimeAverageBrokerData,
    TimeAverageMessageData,
    default_bundle_stats,
    namespace_of,
)
from emulator.model.policies import PolicyView
from strategies.base import placement_usage, select_broker_for_bundle
from strategies.round_robin import RoundRobinBrokerSelector

__all__ = ["ModularLoadManager", "SYSTEM_NAMESPACE", "SelectionTrace", "UpdateResult"]

SYSTEM_NAMESPACE = "pulsar/system"
_THROUGHPUT_RESOLUTION = 1e5
_MSG_RATE_RESOLUTION = 100.0
_LONG_MAX = 2**63 - 1


class UpdateResult(msgspec.Struct):
    """What one `update_all` changed that the actor must act on (leader: delete persisted data)."""

    dead_brokers: list[str]
    """Brokers known at the previous update and gone now (their broker-time-average node goes)."""
    removed_bundles: list[str]
    """Bundles no broker reports any more (their `/loadbalance/bundle-data` node goes)."""
    brokers_without_report: list[str] = []
    """Lock holders without a readable LocalBrokerData (not placement candidates until they report)."""


class SelectionTrace(msgspec.Struct, omit_defaults=True):
    """How one `select_broker` decision was reached: the decision log's input.

    Candidate lists are sorted broker ids after each step of §3; None means the step did not run.
    """

    bundle: str
    non_persistent: bool = False
    preallocated: bool = False
    """True when an existing preallocation answered (no new decision was made)."""
    available: list[str] = []
    policies: list[str] = []
    max_topics: list[str] = []
    anti_affinity: list[str] = []
    even_distribution: list[str] | None = None
    filters: list[str] | None = None
    filter_exception: str | None = None
    fallback: str | None = None
    """"filter_exception" or "empty" when the candidates were reset to the policy-allowed set."""
    candidates: list[str] = []
    """What the selector finally saw."""
    selector: str = ""
    scores: dict[str, float | None] | None = None
    """The selector's `last_scores`, if it exposes them; +∞ (overloaded) is JSON `null`."""
    chosen: str | None = None
    overload_retry: bool = False
    overload_candidates: list[str] | None = None
    overload_scores: dict[str, float | None] | None = None


def _scores_of(selector: Any) -> dict[str, float | None] | None:
    scores = getattr(selector, "last_scores", None)
    return dict(scores) if scores is not None else None


def _java_long(x: float) -> int:
    """Java's `(long)` cast of a double: truncation, NaN → 0, saturating at the long range."""
    if x != x:
        return 0
    if math.isinf(x):
        return _LONG_MAX if x > 0 else -_LONG_MAX - 1
    return max(-_LONG_MAX - 1, min(_LONG_MAX, int(x)))


def _window_order_key(data: TimeAverageMessageData) -> tuple[int, int, int]:
    """TimeAverageMessageData.compareTo: bandwidth in, bandwidth out, then msg rate, bucketed."""
    return (
        _java_long(data.msg_throughput_in / _THROUGHPUT_RESOLUTION),
        _java_long(data.msg_throughput_out / _THROUGHPUT_RESOLUTION),
        _java_long((data.msg_rate_in + data.msg_rate_out) / _MSG_RATE_RESOLUTION),
    )


def bundle_data_order_key(data: BundleData) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """BundleData's natural order (short-term window first, then long-term), ascending."""
    return (_window_order_key(data.short_term_data), _window_order_key(data.long_term_data))


class ModularLoadManager:
    """The leader-side state and decisions of ModularLoadManagerImpl."""

    def __init__(
        self,
        conf: ServiceConfig,
        placement_strategy: Any,
        rng: random.Random,
        *,
        broker_id: str,
        policies: PolicyView | None = None,
        persisted_bundle_data: dict[str, BundleData] | None = None,
        shedding_strategy: Any = None,
    ) -> None:
        if not isinstance(conf, ServiceConfig):
            raise TypeError(f"conf must be a ServiceConfig, got {type(conf).__name__}")
        if not callable(getattr(placement_strategy, "select_broker", None)):
            raise TypeError(
                f"placement_strategy must have select_broker(...), got {type(placement_strategy).__name__}; "
                "use strategies.create(name, rng)"
            )
        if not isinstance(rng, random.Random):
            raise TypeError(f"rng must be a random.Random, got {type(rng).__name__}")
        if not isinstance(broker_id, str) or not broker_id:
            raise ValueError(f"broker_id = {broker_id!r}; expected the leader's 'host:port'")
        if policies is not None and not isinstance(policies, PolicyView):
            raise TypeError(f"policies must be a PolicyView, got {type(policies).__name__}")
        self.conf = conf
        self.broker_id = broker_id
        self.rng = rng
        self.placement_strategy = placement_strategy
        self.shedding_strategy = shedding_strategy
        self.policies = policies if policies is not None else PolicyView()
        self.persisted_bundle_data: dict[str, BundleData] = (
            persisted_bundle_data if persisted_bundle_data is not None else {}
        )
        self.load_data = LoadData()
        self.preallocated_bundle_to_broker: dict[str, str] = {}
        self.bundle_range_cache = BundleRangeCache()
        self.known_brokers: list[str] = []
        # PIP-380: namespaces excluded from shedding are placed round-robin, by a dedicated selector.
        self.excluded_namespace_selector = RoundRobinBrokerSelector(rng)

    # ----------------------------------------------------------------------------- update cycle

    def update_all(
        self,
        available_brokers: Iterable[str],
        reports: Mapping[str, LocalBrokerData | None],
        owned_by_self: Collection[str],
        *,
        is_leader: bool = True,
    ) -> UpdateResult:
        """cleanupDeadBrokersData + updateAllBrokerData + updateBundleData (split is separate).

        `reports` maps a broker to its LocalBrokerData (absent or None: no readable report);
        `owned_by_self` are the bundles the broker running this code owns (its ownership cache),
        which decides the preallocation clean-up. Strategies hear `on_active_brokers_change` on
        every call when `is_leader`, as in Pulsar.
        """
        active = sorted(set(available_brokers))
        active_set = set(active)
        dead = [b for b in self.known_brokers if b not in active_set]
        self.known_brokers = active
        if is_leader:
            if self.shedding_strategy is not None:
                self.shedding_strategy.on_active_brokers_change(set(active))
            self.placement_strategy.on_active_brokers_change(set(active))
        without_report = self.update_all_broker_data(active, reports)
        removed = self.update_bundle_data(owned_by_self)
        return UpdateResult(dead_brokers=dead, removed_bundles=removed, brokers_without_report=without_report)

    def update_all_broker_data(
        self, active: Iterable[str], reports: Mapping[str, LocalBrokerData | None]
    ) -> list[str]:
        """Replace each live broker's LocalBrokerData; drop brokers without a report or not alive.

        The map is rebuilt in broker-id order so that shedders walking "map order" are reproducible.
        """
        broker_data = self.load_data.broker_data
        fresh: dict[str, BrokerData] = {}
        without_report: list[str] = []
        for broker in sorted(set(active)):
            report = reports.get(broker)
            if report is None:
                without_report.append(broker)
                continue
            existing = broker_data.get(broker)
            if existing is not None:
                existing.local_data = report
                fresh[broker] = existing
            else:
                fresh[broker] = BrokerData(local_data=report)
        broker_data.clear()
        broker_data.update(fresh)
        return without_report

    def update_bundle_data(self, owned_by_self: Collection[str]) -> list[str]:
        """One sample per reported bundle, preallocation clean-up, broker time averages (§2.2 step 3).

        Returns the bundles no broker reports any more (removed from `load_data.bundle_data`).
        """
        bundle_data = self.load_data.bundle_data
        owned = set(owned_by_self)
        literal = self.conf.emulator_preallocation_literal_cleanup
        default_stats = default_bundle_stats()
        active_bundles: set[str] = set()
        for broker, data in self.load_data.broker_data.items():
            stats_map = data.local_data.last_stats
            for bundle, stats in stats_map.items():
                active_bundles.add(bundle)
                known = bundle_data.get(bundle)
                if known is not None:
                    known.update(stats)
                else:
                    fresh = self._bundle_data_or_default(bundle)
                    fresh.update(stats)
                    bundle_data[bundle] = fresh
            prealloc = data.preallocated_bundle_data
            for bundle in prealloc:
                self.preallocated_bundle_to_broker.pop(bundle, None)
            if literal:
                reported = data.local_data.bundles
                for bundle in list(prealloc):
                    if bundle not in owned or (bundle in reported and bundle in bundle_data):
                        del prealloc[bundle]
            else:
                prealloc.clear()
            time_average = TimeAverageBrokerData()
            time_average.reset(stats_map.keys(), bundle_data, default_stats)
            data.time_average_data = time_average
            self.bundle_range_cache.reload_broker(broker, [*stats_map, *prealloc])
        if not literal:
            self.preallocated_bundle_to_broker.clear()
        removed = [b for b in bundle_data if b not in active_bundles]
        for bundle in removed:
            del bundle_data[bundle]
        return removed

    def reap_dead_broker_preallocations(self, alive: Iterable[str]) -> list[str]:
        """Forget preallocations to brokers that lost their lock, so their bundles can go elsewhere.

        Like Pulsar, only brokers still present in `load_data.broker_data` are considered.
        Returns the bundles whose preallocation was dropped.
        """
        alive_set = set(alive)
        dropped: list[str] = []
        for broker in list(self.load_data.broker_data):
            if broker in alive_set:
                continue
            for bundle, target in list(self.preallocated_bundle_to_broker.items()):
                if target == broker:
                    del self.preallocated_bundle_to_broker[bundle]
                    dropped.append(bundle)
        return dropped

    def _bundle_data_or_default(self, bundle: str) -> BundleData:
        """getBundleDataOrDefault: a private copy of the persisted data, or the defaults."""
        persisted = self.persisted_bundle_data.get(bundle)
        return copy.deepcopy(persisted) if persisted is not None else BundleData.default()

    # ----------------------------------------------------------------------------- assignment

    def select_broker_for_assignment(
        self, bundle: str, *, non_persistent: bool = False
    ) -> tuple[str | None, SelectionTrace]:
        """selectBrokerForAssignment: reuse a preallocation, else select and preallocate (§3)."""
        prior = self.preallocated_bundle_to_broker.get(bundle)
        if prior is not None:
            return prior, SelectionTrace(bundle=bundle, non_persistent=non_persistent, preallocated=True, chosen=prior)
        chosen, trace = self.select_broker(bundle, non_persistent=non_persistent)
        if chosen is not None and self.conf.emulator_preallocation_enabled:
            self._preallocate(bundle, chosen)
        return chosen, trace

    def _preallocate(self, bundle: str, broker: str) -> None:
        data = self.load_data.bundle_data.get(bundle)
        if data is None:
            data = self._bundle_data_or_default(bundle)
            self.load_data.bundle_data[bundle] = data
        broker_data = self.load_data.broker_data.get(broker)
        if broker_data is not None:
            broker_data.preallocated_bundle_data[bundle] = data
        self.preallocated_bundle_to_broker[bundle] = broker
        self.bundle_range_cache.add(broker, bundle)

    def _policy_candidates(self, bundle: str, non_persistent: bool) -> list[str]:
        return apply_namespace_policies(
            bundle, self.known_brokers, self.load_data, self.policies, self.conf, non_persistent
        )

    def select_broker(self, bundle: str, *, non_persistent: bool = False) -> tuple[str | None, SelectionTrace]:
        """selectBroker: the full §3 pipeline, without preallocation (also the shedder's destination)."""
        conf = self.conf
        trace = SelectionTrace(bundle=bundle, non_persistent=non_persistent, available=list(self.known_brokers))
        data = self.load_data.bundle_data.get(bundle)
        if data is None:
            data = self._bundle_data_or_default(bundle)
            self.load_data.bundle_data[bundle] = data

        candidates = self._policy_candidates(bundle, non_persistent)
        trace.policies = candidates
        candidates = filter_brokers_with_large_topic_count(
            candidates, self.load_data, conf.load_balancer_broker_max_topics
        )
        trace.max_topics = candidates
        candidates = filter_anti_affinity_group_owned_brokers(
            bundle, candidates, self.bundle_range_cache, self.policies, conf
        )
        trace.anti_affinity = candidates
        namespace = namespace_of(bundle)
        if conf.load_balancer_distribute_bundles_evenly_enabled or namespace == SYSTEM_NAMESPACE:
            candidates = remove_most_servicing_brokers_for_namespace(bundle, candidates, self.bundle_range_cache)
            trace.even_distribution = candidates
        try:
            candidates = broker_load_manager_class_filter(candidates, self.load_data, conf)
            candidates = broker_version_filter(candidates, self.load_data, conf)
            trace.filters = candidates
        except BrokerFilterException as e:
            trace.filter_exception = str(e)
            trace.fallback = "filter_exception"
            candidates = self._policy_candidates(bundle, non_persistent)
        if not candidates:
            trace.fallback = "empty"
            candidates = self._policy_candidates(bundle, non_persistent)
        trace.candidates = candidates

        if namespace in conf.load_balancer_shedding_excluded_namespaces:
            selector = self.excluded_namespace_selector
        else:
            selector = self.placement_strategy
        trace.selector = type(selector).__name__
        chosen = select_broker_for_bundle(selector, set(candidates), bundle, data, self.load_data, conf)
        trace.scores = _scores_of(selector)
        if chosen is None:
            return None, trace

        chosen_data = self.load_data.broker_data.get(chosen)
        threshold = conf.load_balancer_broker_overloaded_threshold_percentage / 100.0
        if chosen_data is not None and placement_usage(chosen_data.local_data, conf) > threshold:
            # The filtered set was all overloaded: ask the placement strategy over the full policy set.
            trace.overload_retry = True
            retry_candidates = self._policy_candidates(bundle, non_persistent)
            trace.overload_candidates = retry_candidates
            retry = select_broker_for_bundle(
                self.placement_strategy, set(retry_candidates), bundle, data, self.load_data, conf
            )
            trace.overload_scores = _scores_of(self.placement_strategy)
            if retry is not None:
                chosen = retry
        trace.chosen = chosen
        return chosen, trace

    # ----------------------------------------------------------------------------- unload guards

    def should_namespace_policies_unload(self, bundle: str, current_broker: str) -> bool:
        return should_namespace_policies_unload(
            bundle, current_broker, self.known_brokers, self.load_data, self.policies
        )

    def should_anti_affinity_namespace_unload(self, bundle: str, current_broker: str) -> bool:
        return should_anti_affinity_namespace_unload(
            bundle, current_broker, self.known_brokers, self.load_data, self.policies, self.bundle_range_cache
        )

    # ----------------------------------------------------------------------------- split, persistence

    def find_bundles_to_split(self, bundle_count: Callable[[str], int]) -> dict[str, str]:
        """checkNamespaceBundleSplit's detection: off unless auto split is on and > 1 broker is known.

        Leadership is the caller's gate; executing the split is the actor's job (see
        `remove_bundle_data` for the "make sure it is not selected again" step).
        """
        if not self.conf.load_balancer_auto_bundle_split_enabled or len(self.known_brokers) <= 1:
            return {}
        return split_detection.find_bundles_to_split(self.load_data, self.conf, bundle_count)

    def remove_bundle_data(self, bundle: str) -> None:
        """Forget a bundle's data (before splitting it, so it is not selected again)."""
        self.load_data.bundle_data.pop(bundle, None)

    def bundle_data_to_write(self) -> dict[str, BundleData]:
        """The bundle data the 15-minute writer persists (§4.6 [B]), heaviest first.

        Top K = `load_balancer_max_number_of_bundles_in_bundle_load_report` × max(1, #brokers),
        ≤ 0 = all; namespaces excluded from shedding are never written. Call `update_bundle_data`
        first, as writeBundleDataOnZooKeeper does.
        """
        excluded = set(self.conf.load_balancer_shedding_excluded_namespaces)
        entries = [(b, d) for b, d in self.load_data.bundle_data.items() if namespace_of(b) not in excluded]
        per_broker = self.conf.load_balancer_max_number_of_bundles_in_bundle_load_report
        if per_broker <= 0:
            return dict(entries)
        k = min(per_broker * max(1, len(self.load_data.broker_data)), len(entries))
        entries.sort(key=lambda e: e[0])
        entries.sort(key=lambda e: bundle_data_order_key(e[1]), reverse=True)
        return dict(entries[:k])

    def time_average_data(self) -> dict[str, TimeAverageBrokerData]:
        """Each broker's TimeAverageBrokerData, for `/loadbalance/broker-time-average/<broker>`."""
        return {broker: data.time_average_data for broker, data in self.load_data.broker_data.items()}
