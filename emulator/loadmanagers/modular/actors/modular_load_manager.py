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
* A report handed to `update_all` gets a `last_stats` of the manager's own when it is new (its
  bundle stats are frozen Structs), so the caches keyed by that dict (bundle columns, namespaces,
  range reloads) are made from data nothing else can change.
* `bundle_data_to_write` orders bundles by Pulsar's BundleData order (short-term window, then long-term;
  each by throughput in and out at 100 kB/s resolution, then msg rate at 100 msg/s resolution). Java's
  partition sort is not stable; ties here are broken by bundle name so the written set is reproducible.
"""

from __future__ import annotations

import math
import random
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Callable

import msgspec

import strategies
from emulator.model import split_detection
from emulator.model.bundle_windows import WindowsKind, make_bundle_windows
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
    namespace_of,
)
from emulator.model.policies import PolicyView
from strategies.base import placement_usage, select_broker_explained

from emulator.cluster.events import SelectionTrace
from emulator.cluster.user_faults import call_user

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


def _scores_of(scores: Mapping[str, float] | None) -> dict[str, float | None] | None:
    """A selection's scores as the trace keeps them (a copy: a user's strategy may reuse its dict)."""
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


def _own_copy(report: LocalBrokerData) -> LocalBrokerData:
    """The report with a `last_stats` of the load manager's own: the caches keyed by that dict
    (bundle columns, namespaces, range reloads) then hold by construction, as the stats in it are
    frozen. The other fields are read afresh on every use and keyed by nothing."""
    return msgspec.structs.replace(report, last_stats=dict(report.last_stats))


def _reads_bundle_data(reader: Any, role: str) -> bool:
    """Whether a strategy or shedder declared that its `role` method reads other bundles' windows
    (`placement_reads_bundle_data` / `shedding_reads_bundle_data`, see `strategies.base` and
    `shedders.base`); undeclared means it may."""
    return getattr(reader, f"{role}_reads_bundle_data", True) is not False


class ModularLoadManager:
    """The leader-side state and decisions of ModularLoadManagerImpl.

    `load_data` is the LoadData the strategies read. Its broker data is always current; its bundle
    windows (`bundle_data`, kept by a `BundleWindows`) may lag with `windows="columns"` (the
    default) until `view()` makes them current. `windows="objects"` keeps them as objects, always
    current (a follower's view, and the reference the columns are tested against).
    """

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
        windows: WindowsKind = "columns",
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
        self.windows = make_bundle_windows(windows, self.persisted_bundle_data)
        self.load_data = LoadData(bundle_data=self.windows.data)
        # broker -> the report last handed over and the leader's own copy of it (`update_all_broker_data`)
        self._received: dict[str, tuple[LocalBrokerData, LocalBrokerData]] = {}
        # broker -> (last_stats, preallocated bundles) of its last BundleRangeCache reload: an unchanged
        # pair reloads the same map (the manager is the cache's only writer; `add` clears the entry)
        self._range_reloads: dict[str, tuple[Any, tuple[str, ...]]] = {}
        # the brokers for which updateBundleData's per-broker step may do something although their
        # report did not change: holding preallocations at their last reload, or preallocated since
        self._busy: set[str] = set()
        # the last update's available brokers as handed over, sorted, and as a set
        self._active: tuple[list[str], list[str], set[str]] | None = None
        self._report_namespaces: dict[str, tuple[Any, list[str]]] = {}
        self._namespace_union: list[str] | None = None   # the last answer of reported_namespaces
        # the brokers whose report changed since that answer (None: the brokers changed, or unknown)
        self._namespaces_dirty: set[str] | None = None
        self.preallocated_bundle_to_broker: dict[str, str] = {}
        self.bundle_range_cache = BundleRangeCache()
        self.known_brokers: list[str] = []
        # PIP-380: namespaces excluded from shedding are placed round-robin, by a dedicated selector.
        self.excluded_namespace_selector = strategies.create("RoundRobinBrokerSelector", rng)

    # ----------------------------------------------------------------------------- the view

    def view(self, *, reads_bundle_data: bool = True) -> LoadData:
        """`load_data` for a reader: with `reads_bundle_data` every bundle window is made current
        first; without, the caller reads only broker data (always current) or one bundle it got
        from `bundle_data_of`."""
        if reads_bundle_data and self.windows.current():
            self._preallocated_data_changed()
        return self.load_data

    def shedding_view(self, shedder: Any) -> LoadData:
        """The LoadData `shedder` is handed: windows made current unless it declared it reads none."""
        return self.view(reads_bundle_data=_reads_bundle_data(shedder, "shedding"))

    def bundle_data_of(self, bundle: str) -> BundleData | None:
        """One bundle's data, current (without making every other bundle's current)."""
        return self.windows.get(bundle)

    def _preallocated_data_changed(self, brokers: Iterable[str] | None = None) -> None:
        """Held bundle windows changed: the brokers (None: all; else those that may hold any) add
        their preallocation sums up again."""
        broker_data = self.load_data.broker_data
        for data in broker_data.values() if brokers is None else map(broker_data.__getitem__, brokers):
            if data.preallocated_bundle_data:   # the sums over none stay 0 whatever changed
                data.preallocated_data_changed()

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
        last = self._active
        if last is not None and isinstance(available_brokers, list) and available_brokers == last[0]:
            _, active, active_set = last   # the same brokers as the last update (the steady state)
            dead: list[str] = []
        else:
            active = sorted(set(available_brokers))
            active_set = set(active)
            dead = [b for b in self.known_brokers if b not in active_set]
            self._active = (list(available_brokers), active, active_set) \
                if isinstance(available_brokers, list) else None
        self.known_brokers = active
        if is_leader:
            if self.shedding_strategy is not None:
                self.shedding_strategy.on_active_brokers_change(set(active_set))
            self.placement_strategy.on_active_brokers_change(set(active_set))
        without_report = self.update_all_broker_data(active, reports)
        removed = self.update_bundle_data(owned_by_self)
        return UpdateResult(dead_brokers=dead, removed_bundles=removed, brokers_without_report=without_report)

    def update_all_broker_data(
        self, active: Iterable[str], reports: Mapping[str, LocalBrokerData | None]
    ) -> list[str]:
        """Replace each live broker's LocalBrokerData; drop brokers without a report or not alive.

        A report is copied when it is handed over (`_own_copy`; the same object handed over again is
        the same report), so the bundle stats the leader keeps, and every cache it keys by them,
        cannot change behind it. The map is rebuilt in broker-id order so that shedders walking
        "map order" are reproducible.
        """
        broker_data = self.load_data.broker_data
        received = self._received
        if isinstance(active, list) and len(active) == len(received) == len(broker_data) \
                and list(received) == active and list(broker_data) == active:
            # the same brokers, each with a report (the steady state): only new reports to copy
            changed = [b for b, (last, _) in received.items() if reports.get(b) is not last]
            if all(reports.get(b) is not None for b in changed):
                if self._namespaces_dirty is not None:
                    self._namespaces_dirty.update(changed)
                for broker in changed:
                    report = reports[broker]
                    assert report is not None
                    own = _own_copy(report)
                    received[broker] = (report, own)
                    broker_data[broker].local_data = own
                return []
        self._namespaces_dirty = None
        fresh: dict[str, BrokerData] = {}
        kept: dict[str, tuple[LocalBrokerData, LocalBrokerData]] = {}
        without_report: list[str] = []
        for broker in sorted(set(active)):
            report = reports.get(broker)
            if report is None:
                without_report.append(broker)
                continue
            last = received.get(broker)
            own = last[1] if last is not None and last[0] is report else _own_copy(report)
            kept[broker] = (report, own)
            existing = broker_data.get(broker)
            if existing is not None:
                existing.local_data = own
                fresh[broker] = existing
            else:
                fresh[broker] = BrokerData(local_data=own)
        self._received = kept
        broker_data.clear()
        broker_data.update(fresh)
        return without_report

    def update_bundle_data(self, owned_by_self: Collection[str]) -> list[str]:
        """One sample per reported bundle, preallocation clean-up, broker time averages (§2.2 step 3).

        Returns the bundles no broker reports any more (removed from `load_data.bundle_data`).
        """
        literal = self.conf.emulator_preallocation_literal_cleanup
        owned = set(owned_by_self) if literal else ()
        bundle_data = self.load_data.bundle_data

        def between(broker: str, data: BrokerData) -> None:  # after the broker's samples, in Pulsar
            self._clean_preallocations(data, owned, literal, bundle_data)
            self._reload_ranges(broker, data.local_data.last_stats, data.preallocated_bundle_data)

        busy = self._busy
        holding = [b for b in busy if b in self.load_data.broker_data]
        removed = self.windows.update(self.load_data.broker_data, between, busy)
        if not literal:
            self.preallocated_bundle_to_broker.clear()
        self._preallocated_data_changed(holding)
        reloads, live = self._range_reloads, self.load_data.broker_data
        if len(reloads) > len(live):  # forget the reports of brokers gone (a return reloads anyway)
            self._range_reloads = {b: key for b, key in reloads.items() if b in live}
            self._busy = {b for b in self._busy if b in live}
        return removed

    def _clean_preallocations(self, data: BrokerData, owned: Collection[str], literal: bool,
                              bundle_data: Mapping[str, BundleData]) -> None:
        """The per-broker preallocation clean-up of updateBundleData (after the broker's samples)."""
        prealloc = data.preallocated_bundle_data
        for bundle in prealloc:
            self.preallocated_bundle_to_broker.pop(bundle, None)
        if literal:
            reported = data.local_data.bundles
            for bundle in list(prealloc):
                if bundle not in owned or (bundle in reported and bundle in bundle_data):
                    data.release_preallocation(bundle)
        else:
            data.clear_preallocations()

    def _reload_ranges(self, broker: str, stats_map: Mapping[str, Any], prealloc: Mapping[str, Any]) -> None:
        """bundleRangeCache.reloadBroker, skipped when it would rebuild the same map."""
        last = self._range_reloads.get(broker)
        if prealloc:
            self._busy.add(broker)
        else:
            self._busy.discard(broker)
        if last is not None and last[0] is stats_map and (not prealloc and not last[1]
                                                          or last[1] == tuple(prealloc)):
            return
        self.bundle_range_cache.reload_broker(broker, [*stats_map, *prealloc])
        self._range_reloads[broker] = (stats_map, tuple(prealloc))

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

    def preallocate_destination(self, bundle: str, broker: str) -> None:
        """An unload's destination answered a lookup: preallocate it there (when preallocation is on),
        so that the bundle's next lookups before the owner takes it get the same answer."""
        if self.conf.emulator_preallocation_enabled and bundle not in self.preallocated_bundle_to_broker:
            self._preallocate(bundle, broker)

    def _preallocate(self, bundle: str, broker: str) -> None:
        data = self.windows.admit(bundle)
        broker_data = self.load_data.broker_data.get(broker)
        if broker_data is not None:
            broker_data.preallocate(bundle, data)
        self.preallocated_bundle_to_broker[bundle] = broker
        self.bundle_range_cache.add(broker, bundle)
        self._range_reloads.pop(broker, None)
        self._busy.add(broker)

    def _policy_candidates(self, bundle: str, non_persistent: bool) -> list[str]:
        return apply_namespace_policies(
            bundle, self.known_brokers, self.load_data, self.policies, self.conf, non_persistent
        )

    def select_broker(self, bundle: str, *, non_persistent: bool = False) -> tuple[str | None, SelectionTrace]:
        """selectBroker: the full §3 pipeline, without preallocation (also the shedder's destination)."""
        conf = self.conf
        trace = SelectionTrace(bundle=bundle, non_persistent=non_persistent, available=list(self.known_brokers))
        namespace = namespace_of(bundle)
        if namespace in conf.load_balancer_shedding_excluded_namespaces:
            selector = self.excluded_namespace_selector
        else:
            selector = self.placement_strategy
        # every bundle's windows made current only for a strategy that may read them (see view())
        load_data = self.view(reads_bundle_data=_reads_bundle_data(selector, "placement")
                              or _reads_bundle_data(self.placement_strategy, "placement"))
        data = self.windows.admit(bundle)

        candidates = self._policy_candidates(bundle, non_persistent)
        trace.policies = candidates
        candidates = filter_brokers_with_large_topic_count(
            candidates, load_data, conf.load_balancer_broker_max_topics
        )
        trace.max_topics = candidates
        candidates = filter_anti_affinity_group_owned_brokers(
            bundle, candidates, self.bundle_range_cache, self.policies, conf
        )
        trace.anti_affinity = candidates
        if conf.load_balancer_distribute_bundles_evenly_enabled or namespace == SYSTEM_NAMESPACE:
            candidates = remove_most_servicing_brokers_for_namespace(bundle, candidates, self.bundle_range_cache)
            trace.even_distribution = candidates
        try:
            candidates = broker_load_manager_class_filter(candidates, load_data, conf)
            candidates = broker_version_filter(candidates, load_data, conf)
            trace.filters = candidates
        except BrokerFilterException as e:
            trace.filter_exception = str(e)
            trace.fallback = "filter_exception"
            candidates = self._policy_candidates(bundle, non_persistent)
        if not candidates:
            trace.fallback = "empty"
            candidates = self._policy_candidates(bundle, non_persistent)
        trace.candidates = candidates
        trace.selector = type(selector).__name__
        selection = call_user("placement", selector, select_broker_explained,
                              selector, set(candidates), bundle, data, load_data, conf)
        chosen = selection.broker
        trace.scores = _scores_of(selection.scores)
        trace.explanation = selection.explanation
        trace.selector_fallback = getattr(selection, "fallback", None)
        if chosen is None:
            return None, trace

        chosen_data = load_data.broker_data.get(chosen)
        threshold = conf.load_balancer_broker_overloaded_threshold_percentage / 100.0
        if chosen_data is not None and placement_usage(chosen_data.local_data, conf) > threshold:
            # The filtered set was all overloaded: ask the placement strategy over the full policy set.
            trace.overload_retry = True
            retry_candidates = self._policy_candidates(bundle, non_persistent)
            trace.overload_candidates = retry_candidates
            retried = call_user(
                "placement", self.placement_strategy, select_broker_explained,
                self.placement_strategy, set(retry_candidates), bundle, data, load_data, conf
            )
            retry = retried.broker
            trace.overload_scores = _scores_of(retried.scores)
            trace.overload_explanation = retried.explanation
            trace.overload_selector_fallback = getattr(retried, "fallback", None)
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
        conf = self.conf
        max_bandwidth = conf.load_balancer_namespace_bundle_max_bandwidth_mbytes * split_detection.MIBI
        max_rate = conf.load_balancer_namespace_bundle_max_msg_rate
        brokers = self.load_data.broker_data
        if self.windows.prepare_split_check(brokers, max_rate, max_bandwidth):
            self._preallocated_data_changed()
        candidates = self.windows.split_candidates(
            brokers, conf.load_balancer_namespace_bundle_max_topics,
            conf.load_balancer_namespace_bundle_max_sessions, max_rate, max_bandwidth)
        return split_detection.find_bundles_to_split(self.load_data, conf, bundle_count, candidates)

    def reported_namespaces(self) -> list[str]:
        """The namespaces of every reported bundle, in first-seen order (brokers in map order,
        bundles in report order), each report's list made once."""
        cache = self._report_namespaces
        dirty = self._namespaces_dirty
        if dirty is not None and self._namespace_union is not None:
            # only these brokers have new reports since the last answer (the steady state)
            brokers = self.load_data.broker_data
            same = True
            for broker in dirty:
                stats_map = brokers[broker].local_data.last_stats
                kept = cache[broker]
                if kept[0] is not stats_map:
                    names = list(dict.fromkeys(namespace_of(b) for b in stats_map))
                    same = same and kept[1] == names
                    cache[broker] = (stats_map, names)
            dirty.clear()
            if same:
                return list(self._namespace_union)
            self._namespace_union = None   # a report lists other namespaces: the union again
        fresh: dict[str, tuple[Any, list[str]]] = {}
        same = True   # every report lists the namespaces it listed last time: the union is the last one
        for broker, data in self.load_data.broker_data.items():
            stats_map = data.local_data.last_stats
            entry = cache.get(broker)
            if entry is None or entry[0] is not stats_map:
                names = list(dict.fromkeys(namespace_of(b) for b in stats_map))
                if entry is None or entry[1] != names:
                    same = False
                entry = (stats_map, names)
            fresh[broker] = entry
        self._report_namespaces = fresh
        self._namespaces_dirty = set()
        if same and self._namespace_union is not None and list(fresh) == list(cache):
            return list(self._namespace_union)
        seen: dict[str, None] = {}
        for _, names in fresh.values():
            for ns in names:
                seen[ns] = None
        self._namespace_union = list(seen)
        return list(seen)

    def remove_bundle_data(self, bundle: str) -> None:
        """Forget a bundle's data (before splitting it, so it is not selected again)."""
        self.windows.remove(bundle)

    def bundle_data_to_write(self) -> dict[str, BundleData]:
        """The bundle data the 15-minute writer persists (§4.6 [B]), heaviest first.

        Top K = `load_balancer_max_number_of_bundles_in_bundle_load_report` × max(1, #brokers),
        ≤ 0 = all; namespaces excluded from shedding are never written. Call `update_bundle_data`
        first, as writeBundleDataOnZooKeeper does.
        """
        excluded = set(self.conf.load_balancer_shedding_excluded_namespaces)
        entries = [(b, d) for b, d in self.view().bundle_data.items() if namespace_of(b) not in excluded]
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
