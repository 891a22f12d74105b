"""The leader's time-averaged bundle data (`LoadData.bundle_data`) behind one interface, two ways.

Pulsar's `updateBundleData` (pulsar-algorithms.md §2.2) adds one sample to every reported bundle's
two windows on every report notification and recomputes each broker's TimeAverageBrokerData: O(all
bundles) per report. `BundleWindows` is what the load manager needs of that data; two classes keep it:

* `ObjectWindows`: the BundleData objects are the data, updated one by one as Pulsar walks them.
  Always current; the reference, and the choice where updates are rare (a follower's view).
* `ColumnWindows`: the windows live in numpy columns (`bundle_columns.py`), one vector pass per
  update with the same IEEE operations, so every value is bit-identical. The BundleData objects
  of `data` are written from the columns only when asked (`current`, `get`, `prepare_split_check`),
  so between two reads many updates cost numpy passes, not Python loops.

`make_bundle_windows` chooses once, by name. Both keep `data`'s membership and order current at all
times; only `ColumnWindows` lets the values of its objects lag until they are asked for.

Preallocated BundleData objects are never pending: `update` leaves every held object current, and a
bundle is made current (`get` / `admit`) before it is held.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Mapping
from operator import is_
from typing import Literal, Protocol

import numpy as np

from emulator.model.bundle_columns import BundleColumns, ReportColumns
from emulator.model.loaddata import BrokerData, BundleData, TimeAverageBrokerData, default_bundle_stats

__all__ = ["BundleWindows", "ColumnWindows", "ObjectWindows", "WindowsKind", "make_bundle_windows"]

WindowsKind = Literal["objects", "columns"]

BetweenBrokers = Callable[[str, BrokerData], None]
"""Called for each broker during `update`, after its new bundles joined `data` and before the next
broker's do: it may read `data`'s membership (not its values) and the broker's preallocations."""


class BundleWindows(Protocol):
    """The time-averaged bundle data of one load manager."""

    data: dict[str, BundleData]
    """`LoadData.bundle_data`: the bundles known, in the order they joined. Membership is always
    current; values are current after `current()` (`ObjectWindows`: always)."""

    def update(self, brokers: Mapping[str, BrokerData], between: BetweenBrokers,
               busy: Collection[str] | None = None) -> list[str]:
        """updateBundleData: for each broker in map order, its reported bundles never seen join
        (persisted data or the defaults, in report order), `between(broker, data)` runs; one sample
        per reported bundle (a bundle two brokers report gets two, in broker order) and each
        broker's `time_average_data` over its reported bundles (made after its own samples and
        before the next broker's). Bundles no broker reports leave; returns them, in `data` order.

        `busy` (None: every broker): the caller's promise that `between` does nothing for a broker
        outside it whose report is the one of the last update; such brokers may be skipped."""
        ...

    def admit(self, bundle: str) -> BundleData:
        """getBundleDataOrDefault, kept: the bundle's current data, joining `data` if unknown."""
        ...

    def get(self, bundle: str) -> BundleData | None:
        """The bundle's current data (without making every other bundle current), None if unknown."""
        ...

    def remove(self, bundle: str) -> None:
        """The bundle leaves `data` (its object keeps its last values: someone may hold it)."""
        ...

    def current(self) -> bool:
        """Make every object of `data` current; True if any object changed."""
        ...

    def prepare_split_check(self, brokers: Mapping[str, BrokerData], max_rate: float,
                            max_bandwidth: float) -> bool:
        """Make current what split detection may read: the long-term rate and throughput of the
        bundles reported with >= 2 topics, where either the current values or the ones the object
        shows exceed a threshold (below both, the answer is the same). True if any object changed."""
        ...

    def split_candidates(self, brokers: Mapping[str, BrokerData], max_topics: int, max_sessions: int,
                         max_rate: float, max_bandwidth: float) -> list[tuple[str, str]] | None:
        """After `prepare_split_check`: (broker, bundle) of every reported bundle that may be over a
        split threshold, in the detection's order (brokers in map order, bundles in report order), a
        superset of the hot ones that detection then checks one by one; None: check them all."""
        ...


def make_bundle_windows(kind: WindowsKind, persisted: Mapping[str, BundleData]) -> BundleWindows:
    """`persisted`: the bundle data read from the store, copied for a bundle when it joins."""
    if kind == "columns":
        return ColumnWindows(persisted)
    if kind == "objects":
        return ObjectWindows(persisted)
    raise ValueError(f"bundle windows = {kind!r}; expected 'objects' or 'columns'")


def _persisted_or_default(persisted: Mapping[str, BundleData], bundle: str) -> BundleData:
    """getBundleDataOrDefault: a private copy of the persisted data, or the defaults."""
    data = persisted.get(bundle)
    return copy.deepcopy(data) if data is not None else BundleData.default()


class ObjectWindows:
    """The BundleData objects are the data, updated as Pulsar walks them (the reference)."""

    def __init__(self, persisted: Mapping[str, BundleData]) -> None:
        self.data: dict[str, BundleData] = {}
        self.persisted = persisted

    def update(self, brokers: Mapping[str, BrokerData], between: BetweenBrokers,
               busy: Collection[str] | None = None) -> list[str]:
        bundle_data = self.data
        persisted = self.persisted
        default_stats = default_bundle_stats()
        active: set[str] = set()
        for broker, data in brokers.items():
            stats_map = data.local_data.last_stats
            for bundle, stats in stats_map.items():
                active.add(bundle)
                known = bundle_data.get(bundle)
                if known is None:
                    known = bundle_data[bundle] = _persisted_or_default(persisted, bundle)
                known.update(stats)
            between(broker, data)
            time_average = TimeAverageBrokerData()
            time_average.reset(stats_map.keys(), bundle_data, default_stats)
            data.time_average_data = time_average
        removed = [b for b in bundle_data if b not in active]
        for bundle in removed:
            del bundle_data[bundle]
        return removed

    def admit(self, bundle: str) -> BundleData:
        data = self.data.get(bundle)
        if data is None:
            data = self.data[bundle] = _persisted_or_default(self.persisted, bundle)
        return data

    def get(self, bundle: str) -> BundleData | None:
        return self.data.get(bundle)

    def remove(self, bundle: str) -> None:
        self.data.pop(bundle, None)

    def current(self) -> bool:
        return False

    def prepare_split_check(self, brokers: Mapping[str, BrokerData], max_rate: float,
                            max_bandwidth: float) -> bool:
        return False

    def split_candidates(self, brokers: Mapping[str, BrokerData], max_topics: int, max_sessions: int,
                         max_rate: float, max_bandwidth: float) -> list[tuple[str, str]] | None:
        return None


class ColumnWindows:
    """The windows as numpy columns; objects written when asked for.

    A broker's report is turned into columns (`ReportColumns`) once per `last_stats` dict: the load
    manager hands over its own copy of each report, which nothing changes afterwards."""

    def __init__(self, persisted: Mapping[str, BundleData]) -> None:
        self.data: dict[str, BundleData] = {}
        self.persisted = persisted
        self.columns = BundleColumns()
        self._reports: dict[str, ReportColumns] = {}
        self._layout: _Layout | None = None

    # ------------------------------------------------------------------ update

    def update(self, brokers: Mapping[str, BrokerData], between: BetweenBrokers,
               busy: Collection[str] | None = None) -> list[str]:
        """The same walk over brokers as `ObjectWindows.update` (new bundles join in report order,
        `between` runs broker by broker), then every report's samples in one vector pass. A bundle
        reported by two brokers (mid-transfer) gets two samples in broker order, and each broker's
        sums must see only the samples before them: then the brokers are applied one by one.

        With `busy`, an update where the same brokers report the same bundles as the last one except
        for a few new reports without new bundles (the steady state: one report changed) patches the
        last layout and runs `between` only for the changed and busy brokers: a leader of 1,000
        brokers updates after each of their reports, and a Python step per broker per update made
        its cost grow with the square of the cluster."""
        columns = self.columns
        bundle_data = self.data
        if columns.present_count != len(bundle_data):  # changed behind our back: follow the dict
            columns.rebuild(bundle_data)
            self._reports = {}
            self._layout = None
        patched = None if busy is None else self._patched_layout(brokers, busy)
        if patched is not None:
            layout, visit = patched
            datas = list(brokers.values())
            for at in visit:
                between(layout.brokers[at], datas[at])
            held = [datas[at].preallocated_bundle_data for at in visit]
        else:
            walk = self._report_walk(brokers)
            names = columns.names
            layout = self._layout = _Layout([(broker, report) for broker, _, report in walk])
            any_new = not columns.present[layout.rows].all()
            for broker, data, report in walk:
                if any_new and report.rows.size:
                    self._admit_rows(report.rows, names)
                between(broker, data)
            datas = [data for _, data, _ in walk]
            held = [data.preallocated_bundle_data for data in datas]
        return self._add_samples(layout, datas, held)

    def _add_samples(self, layout: _Layout, datas: list[BrokerData],
                     held: list[dict[str, BundleData]]) -> list[str]:
        """The samples of every report and each broker's sums (see `update`); the bundles gone."""
        columns = self.columns
        bundle_data = self.data
        names = columns.names
        all_rows = layout.rows
        reported = np.bincount(all_rows, minlength=len(names))
        if all_rows.size and reported.max() > 1:
            for data, (_, report) in zip(datas, layout.walk):
                values = columns.add_samples(report.rows, report.samples, report.topics)
                data.time_average_data = TimeAverageBrokerData(*columns.sums(values))
        elif datas:
            values = columns.add_samples(all_rows, layout.samples(), layout.topics())
            totals = columns.segment_sums(values, layout.sizes)
            for data, sums in zip(datas, totals):
                data.time_average_data = TimeAverageBrokerData(*sums)

        removed: list[str] = []
        gone = np.flatnonzero(columns.present[:len(names)] & (reported == 0))
        if gone.size:
            gone = gone[np.argsort(columns.seq[gone], kind="stable")]  # dict order
            removed = [names[row] for row in gone.tolist()]
            for row, bundle in zip(gone.tolist(), removed):
                del bundle_data[bundle]
                columns.detach(row)
        for prealloc in held:  # preallocations that survived the update: their objects must not lag
            for bundle, held_data in prealloc.items():
                held_row = columns.index.get(bundle)
                if held_row is not None and columns.objects[held_row] is held_data:
                    columns.sync_row(held_row)
        return removed

    def _patched_layout(self, brokers: Mapping[str, BrokerData],
                        busy: Collection[str]) -> tuple[_Layout, list[int]] | None:
        """The last update's layout with the new reports in place, and the positions whose broker
        `between` must visit (changed or busy, in map order); None when the brokers are not the same
        ones in the same order, or a reported bundle has no data (new, or removed by a split: the
        full walk then, which admits it)."""
        layout = self._layout
        if layout is None or len(brokers) != len(layout.brokers) or layout.brokers != list(brokers):
            return None
        stats = [data.local_data.last_stats for data in brokers.values()]
        changed = [at for at, same in enumerate(map(is_, stats, layout.stats)) if not same]
        columns = self.columns
        reports = self._reports
        fresh: list[tuple[int, ReportColumns]] = []
        for at in changed:
            broker = layout.brokers[at]
            report = reports.get(broker)
            if report is None or report.stats is not stats[at]:
                report = reports[broker] = columns.report_columns(stats[at])
            fresh.append((at, report))
        if fresh:
            layout = self._layout = layout.replaced(fresh)
        if not columns.present[layout.rows].all():   # a new bundle, or one removed while reported
            return None
        position = layout.position()
        visit = set(changed)
        visit.update(position[b] for b in busy if b in position)
        return layout, sorted(visit)

    def _report_walk(self, brokers: Mapping[str, BrokerData]) -> list[tuple[str, BrokerData, ReportColumns]]:
        """(broker, data, its report's columns) in map order, columns made once per report."""
        previous = self._reports
        current: dict[str, ReportColumns] = {}
        walk = []
        for broker, data in brokers.items():
            stats_map = data.local_data.last_stats
            report = previous.get(broker)
            if report is None or report.stats is not stats_map:
                report = self.columns.report_columns(stats_map)
            current[broker] = report
            walk.append((broker, data, report))
        self._reports = current
        return walk

    def _admit_rows(self, rows: np.ndarray, names: list[str]) -> None:
        """The reported rows not yet in `data` join it, in report order (persisted or default)."""
        columns = self.columns
        new = ~columns.present[rows]
        if not new.any():
            return
        new_rows = rows[new].tolist()
        fresh: list[BundleData] = []
        defaults: list[bool] = []
        persisted = self.persisted
        for row in new_rows:
            bundle = names[row]
            made = _persisted_or_default(persisted, bundle)
            self.data[bundle] = made
            fresh.append(made)
            defaults.append(bundle not in persisted)
        columns.attach_many(new_rows, fresh, defaults)

    # ------------------------------------------------------------------ reads

    def admit(self, bundle: str) -> BundleData:
        data = self.get(bundle)
        if data is None:
            data = self.data[bundle] = _persisted_or_default(self.persisted, bundle)
            self.columns.attach(self.columns.row(bundle), data)
        return data

    def get(self, bundle: str) -> BundleData | None:
        row = self.columns.index.get(bundle)
        if row is not None:
            self.columns.sync_row(row)
        return self.data.get(bundle)

    def remove(self, bundle: str) -> None:
        if self.data.pop(bundle, None) is not None:
            self.columns.detach(self.columns.index[bundle])

    def current(self) -> bool:
        return self.columns.sync()

    def prepare_split_check(self, brokers: Mapping[str, BrokerData], max_rate: float,
                            max_bandwidth: float) -> bool:
        columns = self.columns
        layout = self._current_layout(brokers)
        if layout is None:
            return self.current()  # reports newer than the columns: make everything current
        if not layout.walk:
            return False
        rows = layout.splittable()
        rows = rows[columns.dirty[rows]]
        if rows.size == 0:
            return False
        values = columns.values[rows]
        shown = columns.long_sums[rows]  # what each object shows: the same additions detection makes
        with np.errstate(over="ignore", invalid="ignore"):
            hot = ((values[:, 4] + values[:, 5] > max_rate) | (values[:, 6] + values[:, 7] > max_bandwidth)
                   | (shown[:, 0] > max_rate) | (shown[:, 1] > max_bandwidth))
        wrote = False
        for row in rows[hot].tolist():
            wrote = columns.sync_row(row) or wrote
        return wrote

    def split_candidates(self, brokers: Mapping[str, BrokerData], max_topics: int, max_sessions: int,
                         max_rate: float, max_bandwidth: float) -> list[tuple[str, str]] | None:
        """One vector pass over every report instead of a Python step per bundle: a leader of 1,000
        brokers runs detection after each of their reports, ~10,000 times an emulated hour.

        Rate and throughput are read from `long_sums`, what each row's object shows: after
        `prepare_split_check` a row hot by its current values has been synced, so an object over
        a threshold shows it there. A bundle reported without a BundleData reads 0 (as detection
        does); a row whose object is not in `bundle_data` is left to the exact check. None when the
        columns do not follow the reports (detection then walks them all)."""
        columns = self.columns
        layout = self._current_layout(brokers)
        if layout is None or not layout.walk or columns.present_count != len(self.data):
            return None
        walk, rows, topics = layout.walk, layout.rows, layout.topics()
        present = columns.present[rows]
        shown = columns.long_sums[rows]
        with np.errstate(over="ignore", invalid="ignore"):
            maybe = (topics > max_topics) | (present & ((shown[:, 0] > max_rate) | (shown[:, 1] > max_bandwidth)))
            if max_sessions > 0:
                maybe |= layout.sessions() > max_sessions
        maybe &= topics >= 2
        picked = np.flatnonzero(maybe)
        if picked.size == 0:
            return []
        owners = layout.owners()[picked]
        names = columns.names
        return [(walk[b][0], names[r]) for b, r in zip(owners.tolist(), rows[picked].tolist())]

    def _current_layout(self, brokers: Mapping[str, BrokerData]) -> _Layout | None:
        """Every report's columns laid end to end in map order (made by the last `update` and kept while
        the same brokers hold the same reports), or None if a report is newer than its columns."""
        stats = [data.local_data.last_stats for data in brokers.values()]
        layout = self._layout
        if layout is not None and len(layout.stats) == len(stats) and all(map(is_, stats, layout.stats)) \
                and layout.brokers == list(brokers):
            return layout
        reports = self._reports
        walk = []
        for broker, data in brokers.items():
            report = reports.get(broker)
            if report is None or report.stats is not data.local_data.last_stats:
                return None
            walk.append((broker, report))
        layout = self._layout = _Layout(walk)
        return layout


class _Layout:
    """The reports of one update end to end: their rows and sizes, and, joined when first asked,
    their samples, topics, sessions and splittable rows, each row's broker (its position in `walk`)
    and each broker's position. `replaced` makes the next update's layout from this one."""

    __slots__ = ("walk", "brokers", "stats", "rows", "sizes", "_joined", "_position")

    def __init__(self, walk: list[tuple[str, ReportColumns]]) -> None:
        self.walk = walk
        self.brokers = [broker for broker, _ in walk]
        self.stats = [report.stats for _, report in walk]
        self.sizes = [report.size for _, report in walk]
        self.rows = np.concatenate([report.rows for _, report in walk]) if walk else np.zeros(0, dtype=np.int64)
        self._joined: dict[str, np.ndarray] = {}
        self._position: dict[str, int] | None = None

    def replaced(self, fresh: list[tuple[int, ReportColumns]]) -> _Layout:
        """This layout with the report at each position of `fresh` replaced: the joined columns are
        patched in place when every new report has its old one's size, else joined again."""
        walk = self.walk.copy()
        for at, report in fresh:
            walk[at] = (walk[at][0], report)
        if any(report.size != self.sizes[at] for at, report in fresh):
            layout = _Layout(walk)
            layout._position = self._position
            return layout
        layout = _Layout.__new__(_Layout)
        layout.walk, layout.brokers, layout.sizes, layout._position = walk, self.brokers, self.sizes, self._position
        layout.stats = self.stats.copy()
        starts = self._starts()
        joined = {"starts": starts}
        for column in ("samples", "topics", "sessions", "owners"):
            if column in self._joined:
                joined[column] = self._joined[column]
        rows = self.rows
        for at, report in fresh:
            layout.stats[at] = report.stats
            start, end = int(starts[at]), int(starts[at]) + report.size
            rows[start:end] = report.rows
            for column in ("samples", "topics", "sessions"):
                if column in joined:
                    joined[column][start:end] = getattr(report, column)
        layout.rows = rows
        layout._joined = joined
        self._joined = {}   # this layout's arrays now hold the new reports: it must not be read again
        return layout

    def _starts(self) -> np.ndarray:
        starts = self._joined.get("starts")
        if starts is None:
            starts = np.zeros(len(self.sizes), dtype=np.int64)
            if len(self.sizes) > 1:
                np.cumsum(self.sizes[:-1], out=starts[1:])
            self._joined["starts"] = starts
        return starts

    def position(self) -> dict[str, int]:
        if self._position is None:
            self._position = {broker: at for at, broker in enumerate(self.brokers)}
        return self._position

    def _join(self, column: str) -> np.ndarray:
        joined = self._joined.get(column)
        if joined is None:
            joined = self._joined[column] = np.concatenate([getattr(report, column) for _, report in self.walk])
        return joined

    def samples(self) -> np.ndarray:
        return self._join("samples")

    def topics(self) -> np.ndarray:
        return self._join("topics")

    def sessions(self) -> np.ndarray:
        return self._join("sessions")

    def splittable(self) -> np.ndarray:
        splittable = self._joined.get("splittable")
        if splittable is None:
            splittable = self._joined["splittable"] = self.rows[self.topics() >= 2]
        return splittable

    def owners(self) -> np.ndarray:
        owners = self._joined.get("owners")
        if owners is None:
            owners = self._joined["owners"] = np.repeat(np.arange(len(self.walk)), self.sizes)
        return owners
