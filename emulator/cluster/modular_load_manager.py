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
* Reports handed to `update_all` are treated as immutable (the leader decodes a fresh one per
  notification): a broker's `last_stats` is turned into columns once, when the dict is new.
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
import numpy as np

from emulator.model import split_detection
from emulator.model.bundle_columns import BundleColumns, ReportColumns
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
    PreallocatedBundles,
    TimeAverageBrokerData,
    TimeAverageMessageData,
    default_bundle_stats,
    namespace_of,
)
from emulator.model.policies import PolicyView
from shedders.avg_shedder import AvgShedder
from strategies.base import placement_usage, select_broker_explained
from strategies.least_long_term_message_rate import LeastLongTermMessageRate
from strategies.least_resource_usage_with_weight import LeastResourceUsageWithWeight
from strategies.round_robin import RoundRobinBrokerSelector

from .events import SelectionTrace
from .user_faults import call_user

__all__ = ["ModularLoadManager", "SYSTEM_NAMESPACE", "SelectionTrace", "UpdateResult"]

SYSTEM_NAMESPACE = "pulsar/system"
_THROUGHPUT_RESOLUTION = 1e5
_MSG_RATE_RESOLUTION = 100.0
_LONG_MAX = 2**63 - 1

# Placement strategies (exact types) that read broker data, preallocated bundles and the bundle to
# assign, never another bundle's windows: for them a selection syncs one column row, not all.
_BROKER_LEVEL_STRATEGIES = (
    LeastLongTermMessageRate, LeastResourceUsageWithWeight, RoundRobinBrokerSelector, AvgShedder,
)


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


class ModularLoadManager:
    """The leader-side state and decisions of ModularLoadManagerImpl.

    `load_data` is synced on every read: with `columnar` (the default) the bundle windows are kept
    in `BundleColumns` and copied into the BundleData objects only when someone reads them, so hold
    on to `load_data`'s objects only as long as no `update_*` runs in between. `columnar=False`
    keeps the object-by-object loop (the reference the columns are tested against).
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
        columnar: bool = True,
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
        self._load_data = LoadData()
        self._columns: BundleColumns | None = BundleColumns() if columnar else None
        self._report_columns: dict[str, ReportColumns] = {}
        # broker -> (last_stats, preallocated bundles) of its last BundleRangeCache reload: an unchanged
        # pair reloads the same map (the manager is the cache's only writer; `add` clears the entry)
        self._range_reloads: dict[str, tuple[Any, tuple[str, ...]]] = {}
        self._report_namespaces: dict[str, tuple[Any, list[str]]] = {}
        self.preallocated_bundle_to_broker: dict[str, str] = {}
        self.bundle_range_cache = BundleRangeCache()
        self.known_brokers: list[str] = []
        # PIP-380: namespaces excluded from shedding are placed round-robin, by a dedicated selector.
        self.excluded_namespace_selector = RoundRobinBrokerSelector(rng)

    # ----------------------------------------------------------------------------- the view

    @property
    def load_data(self) -> LoadData:
        """Everything the strategies read, with every bundle window up to date."""
        self._sync()
        return self._load_data

    @load_data.setter
    def load_data(self, value: LoadData) -> None:
        self._load_data = value
        self._report_columns = {}
        self._range_reloads = {}
        if self._columns is not None:
            self._columns = BundleColumns()
            self._columns.rebuild(value.bundle_data)

    def _sync(self) -> None:
        """Copy pending column rows into their BundleData objects."""
        if self._columns is not None and self._columns.sync():
            self._invalidate_preallocated()

    def _sync_bundle(self, bundle: str) -> None:
        """Copy one bundle's pending row into its object (preallocated objects are never pending:
        `update_bundle_data` leaves them synced, see `_update_bundle_data_columns`)."""
        columns = self._columns
        if columns is not None:
            row = columns.index.get(bundle)
            if row is not None and columns.sync_row(row):
                self._invalidate_preallocated()

    def _decision_view(self, bundle: str) -> LoadData:
        """The LoadData a placement reads: all rows synced, unless the strategy is a built-in one
        that reads no other bundle's windows (then the bundle's own row is enough)."""
        if type(self.placement_strategy) in _BROKER_LEVEL_STRATEGIES:
            self._sync_bundle(bundle)
        else:
            self._sync()
        return self._load_data

    def _invalidate_preallocated(self) -> None:
        """Bundle windows changed: cached preallocation sums must be added up again."""
        for data in self._load_data.broker_data.values():
            prealloc = data.preallocated_bundle_data
            if isinstance(prealloc, PreallocatedBundles):
                prealloc.invalidate()

    def _put_bundle_data(self, bundle: str, data: BundleData) -> None:
        """Add a bundle to `bundle_data` (and to the columns, which follow the dict)."""
        self._load_data.bundle_data[bundle] = data
        if self._columns is not None:
            self._columns.attach(self._columns.row(bundle), data)

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
        broker_data = self._load_data.broker_data
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
                fresh[broker] = BrokerData(local_data=report,
                                           preallocated_bundle_data=PreallocatedBundles())
        broker_data.clear()
        broker_data.update(fresh)
        return without_report

    def update_bundle_data(self, owned_by_self: Collection[str]) -> list[str]:
        """One sample per reported bundle, preallocation clean-up, broker time averages (§2.2 step 3).

        Returns the bundles no broker reports any more (removed from `load_data.bundle_data`).
        """
        if self._columns is not None:
            removed = self._update_bundle_data_columns(owned_by_self)
        else:
            removed = self._update_bundle_data_objects(owned_by_self)
        self._invalidate_preallocated()
        reloads, live = self._range_reloads, self._load_data.broker_data
        if len(reloads) > len(live):  # forget the reports of brokers gone (a return reloads anyway)
            self._range_reloads = {b: key for b, key in reloads.items() if b in live}
        return removed

    def _clean_preallocations(self, data: BrokerData, owned: Collection[str], literal: bool) -> None:
        """The per-broker preallocation clean-up of updateBundleData (after the broker's samples)."""
        prealloc = data.preallocated_bundle_data
        for bundle in prealloc:
            self.preallocated_bundle_to_broker.pop(bundle, None)
        if literal:
            bundle_data = self._load_data.bundle_data
            reported = data.local_data.bundles
            for bundle in list(prealloc):
                if bundle not in owned or (bundle in reported and bundle in bundle_data):
                    del prealloc[bundle]
        else:
            prealloc.clear()

    def _reload_ranges(self, broker: str, stats_map: Mapping[str, Any], prealloc: Mapping[str, Any]) -> None:
        """bundleRangeCache.reloadBroker, skipped when it would rebuild the same map."""
        key = (stats_map, tuple(prealloc))
        last = self._range_reloads.get(broker)
        if last is not None and last[0] is stats_map and last[1] == key[1]:
            return
        self.bundle_range_cache.reload_broker(broker, [*stats_map, *prealloc])
        self._range_reloads[broker] = key

    def _update_bundle_data_columns(self, owned_by_self: Collection[str]) -> list[str]:
        """`_update_bundle_data_objects` on columns: the same walk over brokers (new bundles join
        `bundle_data` in report order, preallocations are cleaned broker by broker), then every
        report's samples in one vector pass. A bundle reported by two brokers (mid-transfer) gets
        two samples in broker order, and each broker's sums must see only the samples before
        them, so then the brokers are applied one after the other."""
        columns = self._columns
        assert columns is not None
        load_data = self._load_data
        bundle_data = load_data.bundle_data
        if columns.present_count != len(bundle_data):  # changed behind our back: follow the dict
            columns.rebuild(bundle_data)
            self._report_columns = {}
        literal = self.conf.emulator_preallocation_literal_cleanup
        owned = set(owned_by_self) if literal else ()
        previous = self._report_columns
        current: dict[str, ReportColumns] = {}
        walk: list[tuple[str, BrokerData, ReportColumns]] = []
        for broker, data in load_data.broker_data.items():
            stats_map = data.local_data.last_stats
            report = previous.get(broker)
            if report is None or report.stats is not stats_map or report.size != len(stats_map):
                report = columns.report_columns(stats_map)
            current[broker] = report
            walk.append((broker, data, report))
        self._report_columns = current
        names = columns.names
        size = len(names)
        if walk:
            all_rows = np.concatenate([report.rows for _, _, report in walk])
        else:
            all_rows = np.zeros(0, dtype=np.int64)
        any_new = not columns.present[all_rows].all()

        persisted_data = self.persisted_bundle_data
        for broker, data, report in walk:
            rows = report.rows
            if any_new and rows.size:
                new = ~columns.present[rows]
                if new.any():
                    new_rows = rows[new].tolist()
                    fresh: list[BundleData] = []
                    defaults: list[bool] = []
                    for row in new_rows:  # _bundle_data_or_default, telling the columns which is which
                        bundle = names[row]
                        persisted = persisted_data.get(bundle)
                        made = copy.deepcopy(persisted) if persisted is not None else BundleData.default()
                        bundle_data[bundle] = made
                        fresh.append(made)
                        defaults.append(persisted is None)
                    columns.attach_many(new_rows, fresh, defaults)
            self._clean_preallocations(data, owned, literal)
            self._reload_ranges(broker, data.local_data.last_stats, data.preallocated_bundle_data)
        if not literal:
            self.preallocated_bundle_to_broker.clear()

        reported = np.bincount(all_rows, minlength=size)
        if all_rows.size and reported.max() > 1:
            for _, data, report in walk:
                values = columns.add_samples(report.rows, report.samples, report.topics)
                data.time_average_data = TimeAverageBrokerData(*columns.sums(values))
        elif walk:
            values = columns.add_samples(all_rows, np.concatenate([r.samples for _, _, r in walk]),
                                         np.concatenate([r.topics for _, _, r in walk]))
            totals = columns.segment_sums(values, [report.size for _, _, report in walk])
            for (_, data, _), sums in zip(walk, totals):
                data.time_average_data = TimeAverageBrokerData(*sums)

        removed: list[str] = []
        gone = np.flatnonzero(columns.present[:size] & (reported == 0))
        if gone.size:
            gone = gone[np.argsort(columns.seq[gone], kind="stable")]  # dict order
            removed = [names[row] for row in gone.tolist()]
            for row, bundle in zip(gone.tolist(), removed):
                del bundle_data[bundle]
                columns.detach(row)
        if literal:  # preallocations that survive an update: their objects must not lag behind
            for data in load_data.broker_data.values():
                for bundle, held in data.preallocated_bundle_data.items():
                    row = columns.index.get(bundle)
                    if row is not None and columns.objects[row] is held:
                        columns.sync_row(row)
        return removed

    def _update_bundle_data_objects(self, owned_by_self: Collection[str]) -> list[str]:
        """updateBundleData object by object, as Pulsar walks it (the reference for the columns)."""
        bundle_data = self._load_data.bundle_data
        owned = set(owned_by_self)
        literal = self.conf.emulator_preallocation_literal_cleanup
        default_stats = default_bundle_stats()
        active_bundles: set[str] = set()
        for broker, data in self._load_data.broker_data.items():
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
            self._clean_preallocations(data, owned, literal)
            time_average = TimeAverageBrokerData()
            time_average.reset(stats_map.keys(), bundle_data, default_stats)
            data.time_average_data = time_average
            self._reload_ranges(broker, stats_map, data.preallocated_bundle_data)
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
        for broker in list(self._load_data.broker_data):
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
        self._sync_bundle(bundle)
        data = self._load_data.bundle_data.get(bundle)
        if data is None:
            data = self._bundle_data_or_default(bundle)
            self._put_bundle_data(bundle, data)
        broker_data = self._load_data.broker_data.get(broker)
        if broker_data is not None:
            broker_data.preallocated_bundle_data[bundle] = data
        self.preallocated_bundle_to_broker[bundle] = broker
        self.bundle_range_cache.add(broker, bundle)
        self._range_reloads.pop(broker, None)

    def _policy_candidates(self, bundle: str, non_persistent: bool) -> list[str]:
        return apply_namespace_policies(
            bundle, self.known_brokers, self._load_data, self.policies, self.conf, non_persistent
        )

    def select_broker(self, bundle: str, *, non_persistent: bool = False) -> tuple[str | None, SelectionTrace]:
        """selectBroker: the full §3 pipeline, without preallocation (also the shedder's destination)."""
        conf = self.conf
        trace = SelectionTrace(bundle=bundle, non_persistent=non_persistent, available=list(self.known_brokers))
        load_data = self._decision_view(bundle)
        data = load_data.bundle_data.get(bundle)
        if data is None:
            data = self._bundle_data_or_default(bundle)
            self._put_bundle_data(bundle, data)

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
        namespace = namespace_of(bundle)
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

        if namespace in conf.load_balancer_shedding_excluded_namespaces:
            selector = self.excluded_namespace_selector
        else:
            selector = self.placement_strategy
        trace.selector = type(selector).__name__
        selection = call_user("placement", selector, select_broker_explained,
                              selector, set(candidates), bundle, data, load_data, conf)
        chosen = selection.broker
        trace.scores = _scores_of(selection.scores)
        trace.explanation = selection.explanation
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
        self._sync_split_candidates()
        return split_detection.find_bundles_to_split(self._load_data, self.conf, bundle_count)

    def _sync_split_candidates(self) -> None:
        """Sync just the rows split detection's answer can depend on (it runs after every update).

        Detection reads a bundle's long-term rate and throughput only when its report shows >= 2
        topics, and only compares them with two thresholds: a row whose object and whose column
        both lie under both thresholds gives the same answer unsynced. `long_sums` holds the sums
        the objects carry (the same double additions the detection makes)."""
        columns = self._columns
        if columns is None:
            return
        reports = self._report_columns
        picked = []
        for broker, data in self._load_data.broker_data.items():
            report = reports.get(broker)
            if report is None or report.stats is not data.local_data.last_stats:
                self._sync()  # reports newer than the columns: sync everything
                return
            picked.append(report.rows[report.topics >= 2])
        if not picked:
            return
        rows = np.concatenate(picked)
        rows = rows[columns.dirty[rows]]
        if rows.size == 0:
            return
        conf = self.conf
        max_rate = conf.load_balancer_namespace_bundle_max_msg_rate
        max_bandwidth = conf.load_balancer_namespace_bundle_max_bandwidth_mbytes * split_detection.MIBI
        values = columns.values[rows]
        shown = columns.long_sums[rows]
        with np.errstate(over="ignore", invalid="ignore"):
            hot = ((values[:, 4] + values[:, 5] > max_rate) | (values[:, 6] + values[:, 7] > max_bandwidth)
                   | (shown[:, 0] > max_rate) | (shown[:, 1] > max_bandwidth))
        wrote = False
        for row in rows[hot].tolist():
            wrote = columns.sync_row(row) or wrote
        if wrote:
            self._invalidate_preallocated()

    def reported_namespaces(self) -> list[str]:
        """The namespaces of every reported bundle, in first-seen order (brokers in map order,
        bundles in report order), each report's list made once."""
        cache = self._report_namespaces
        fresh: dict[str, tuple[Any, list[str]]] = {}
        seen: dict[str, None] = {}
        for broker, data in self._load_data.broker_data.items():
            stats_map = data.local_data.last_stats
            entry = cache.get(broker)
            if entry is None or entry[0] is not stats_map:
                entry = (stats_map, list(dict.fromkeys(namespace_of(b) for b in stats_map)))
            fresh[broker] = entry
            for ns in entry[1]:
                seen[ns] = None
        self._report_namespaces = fresh
        return list(seen)

    def bundle_data_of(self, bundle: str) -> BundleData | None:
        """One bundle's data, up to date (without bringing every other bundle's up to date)."""
        self._sync_bundle(bundle)
        return self._load_data.bundle_data.get(bundle)

    def remove_bundle_data(self, bundle: str) -> None:
        """Forget a bundle's data (before splitting it, so it is not selected again)."""
        if self._load_data.bundle_data.pop(bundle, None) is not None and self._columns is not None:
            self._columns.detach(self._columns.index[bundle])

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
        return {broker: data.time_average_data for broker, data in self._load_data.broker_data.items()}
