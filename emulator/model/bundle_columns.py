"""The leader's time-averaged bundle data as columns, so a load report costs numpy passes, not a
Python loop over every bundle of the cluster.

Pulsar's `updateBundleData` adds one sample to every reported bundle's two windows on every report
notification (pulsar-algorithms.md §2.2), whichever broker wrote: O(all bundles) per report. Here the
windows live in arrays, one row per bundle name, and each sample is the same double arithmetic as
`TimeAverageMessageData.update_values` applied elementwise: `(float(n - 1) * v + x) / float(n)`, one
IEEE operation at a time (numpy adds, multiplies and divides float64 exactly as Java does; nothing
is fused or reassociated), so every value is bit-identical to the per-object loop.

The storage of `bundle_windows.ColumnWindows`. The `BundleData` objects in `LoadData.bundle_data`
stay the public face: rows written since the last read are copied into their objects on `sync` /
`sync_row` (when the windows are asked for them), so strategies, shedders and JSON see exactly
what the object loop would have left.

A broker's report is turned into columns (`ReportColumns`) once per `last_stats` dict (the load
manager keeps its own copy of each report's, whose stats are frozen); an unchanged report costs
nothing but the vector passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import attrgetter
from typing import TYPE_CHECKING

import numpy as np

from emulator.model.loaddata import (
    DEFAULT_MESSAGE_RATE,
    DEFAULT_MESSAGE_THROUGHPUT,
    NUM_LONG_SAMPLES,
    NUM_SHORT_SAMPLES,
)

if TYPE_CHECKING:
    from emulator.model.loaddata import BundleData, NamespaceBundleStats

__all__ = ["BundleColumns", "ReportColumns"]

_SAMPLE = attrgetter("msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out")
_TOPICS = attrgetter("topics")
_SESSIONS = attrgetter("consumer_count", "producer_count")
_INITIAL_CAPACITY = 64
# BundleData.default() as a row: 50 msg/s and 50 kB/s each way in both windows, no samples yet
_RATE, _THROUGHPUT = DEFAULT_MESSAGE_RATE, DEFAULT_MESSAGE_THROUGHPUT
_DEFAULT_VALUES = (_RATE, _RATE, _THROUGHPUT, _THROUGHPUT) * 2
_DEFAULT_MAX_SAMPLES = (NUM_SHORT_SAMPLES, NUM_LONG_SAMPLES)
_DEFAULT_LONG_SUMS = (_RATE + _RATE, _THROUGHPUT + _THROUGHPUT)


class ReportColumns:
    """One broker report's `last_stats` as arrays: the bundles' rows and their samples, in map order."""

    __slots__ = ("stats", "size", "rows", "samples", "topics", "_sessions", "_splittable")

    def __init__(self, stats: Mapping[str, NamespaceBundleStats], rows: np.ndarray,
                 samples: np.ndarray, topics: np.ndarray) -> None:
        self.stats = stats
        """The dict these columns were made from (kept so that its identity stays meaningful)."""
        self.size = len(stats)
        self.rows = rows
        self.samples = samples
        """(k, 4) float64: msg rate in, out, throughput in, out (the column order of a window)."""
        self.topics = topics
        self._sessions: np.ndarray | None = None
        self._splittable: np.ndarray | None = None

    @property
    def splittable_rows(self) -> np.ndarray:
        """The rows of the bundles reported with >= 2 topics (the only ones detection may split)."""
        if self._splittable is None:
            self._splittable = self.rows[self.topics >= 2]
        return self._splittable

    @property
    def sessions(self) -> np.ndarray:
        """consumer_count + producer_count per bundle (the split check's session count), made once."""
        if self._sessions is None:
            pairs = np.array(list(map(_SESSIONS, self.stats.values())), dtype=np.int64).reshape(self.size, 2)
            self._sessions = pairs[:, 0] + pairs[:, 1]
        return self._sessions


class BundleColumns:
    """Rows of [short rate in, out, throughput in, out, long rate in, out, throughput in, out].

    A row belongs to one bundle name for good (a bundle that goes and comes back reuses it, reseeded
    from its new object). `present` rows have an object in the load manager's `bundle_data`; `seq`
    is the order in which they were put there, i.e. the dict's order.
    """

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.names: list[str] = []
        self.objects: list[BundleData | None] = []
        cap = _INITIAL_CAPACITY
        self.values = np.zeros((cap, 8), dtype=np.float64)
        self.samples = np.zeros((cap, 2), dtype=np.int64)
        """num_samples of the short and the long window."""
        self.max_samples = np.zeros((cap, 2), dtype=np.int64)
        self.topics = np.zeros(cap, dtype=np.int64)
        self.long_sums = np.zeros((cap, 2), dtype=np.float64)
        """What each row's object shows as long-term rate in + out and throughput in + out."""
        self.present = np.zeros(cap, dtype=bool)
        self.dirty = np.zeros(cap, dtype=bool)
        self.seq = np.zeros(cap, dtype=np.int64)
        self.present_count = 0
        self._next_seq = 0
        self._any_dirty = False

    # ------------------------------------------------------------------ rows

    def _grow(self, need: int) -> None:
        cap = len(self.present)
        if need <= cap:
            return
        cap = max(need, cap + cap // 2)  # x1.5: the spare rows cost memory in every view
        for name in ("values", "samples", "max_samples", "topics", "long_sums", "present", "dirty", "seq"):
            old = getattr(self, name)
            new = np.zeros((cap,) + old.shape[1:], dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    def row(self, bundle: str) -> int:
        """The bundle's row, reserved on first sight (not present until `attach`)."""
        r = self.index.get(bundle)
        if r is None:
            self.reserve([bundle])
            r = self.index[bundle]
        return r

    def reserve(self, bundles: list[str]) -> None:
        """Rows for bundles never seen (distinct, none of them known yet)."""
        start = len(self.names)
        self.index.update(zip(bundles, range(start, start + len(bundles))))
        self.names.extend(bundles)
        self.objects.extend([None] * len(bundles))
        self._grow(len(self.names))

    def attach(self, row: int, data: BundleData) -> None:
        """`data` was just put into `bundle_data` under this row's name: the row follows it."""
        self.attach_many([row], [data])

    def attach_many(self, rows: list[int], objects: list[BundleData],
                    defaults: list[bool] | None = None) -> None:
        """`attach` for several distinct rows at once, in the order they joined `bundle_data`.

        `defaults[i]` says that `objects[i]` is a fresh `BundleData.default()` (the common case
        after a restart: tens of thousands at once), whose row is written without reading it."""
        if not rows:
            return
        index = np.array(rows, dtype=np.int64)
        self.present_count += len(rows) - int(self.present[index].sum())
        self.present[index] = True
        self.dirty[index] = False
        self.seq[index] = np.arange(self._next_seq, self._next_seq + len(rows))
        self._next_seq += len(rows)
        objs = self.objects
        for row, data in zip(rows, objects):
            objs[row] = data
        if defaults is not None:
            mask = np.array(defaults, dtype=bool)
            fresh = index[mask]
            self.values[fresh] = _DEFAULT_VALUES
            self.samples[fresh] = 0
            self.max_samples[fresh] = _DEFAULT_MAX_SAMPLES
            self.topics[fresh] = 0
            self.long_sums[fresh] = _DEFAULT_LONG_SUMS
            if mask.all():
                return
            index = index[~mask]
            objects = [data for data, is_default in zip(objects, defaults) if not is_default]
        values, samples, max_samples, topics, long_sums = [], [], [], [], []
        for data in objects:
            s, lt = data.short_term_data, data.long_term_data
            values.append((s.msg_rate_in, s.msg_rate_out, s.msg_throughput_in, s.msg_throughput_out,
                           lt.msg_rate_in, lt.msg_rate_out, lt.msg_throughput_in, lt.msg_throughput_out))
            samples.append((s.num_samples, lt.num_samples))
            max_samples.append((s.max_samples, lt.max_samples))
            topics.append(data.topics)
            long_sums.append((lt.msg_rate_in + lt.msg_rate_out, lt.msg_throughput_in + lt.msg_throughput_out))
        self.values[index] = values
        self.samples[index] = samples
        self.max_samples[index] = max_samples
        self.topics[index] = topics
        self.long_sums[index] = long_sums

    def detach(self, row: int) -> None:
        """The row's bundle left `bundle_data`; its object keeps its last values (someone may hold it)."""
        self.sync_row(row)
        if self.present[row]:
            self.present_count -= 1
        self.present[row] = False
        self.dirty[row] = False
        self.objects[row] = None

    def rebuild(self, bundle_data: Mapping[str, BundleData]) -> None:
        """Follow `bundle_data` as it is now (after changes made behind the load manager's back)."""
        self.sync()
        for r in np.flatnonzero(self.present[: len(self.names)]).tolist():
            self.detach(r)
        for bundle, data in bundle_data.items():
            self.attach(self.row(bundle), data)

    def report_columns(self, stats: Mapping[str, NamespaceBundleStats]) -> ReportColumns:
        """Columns for one report's `last_stats` (rows reserved for bundles never seen)."""
        index = self.index
        unseen = [b for b in stats if b not in index]
        if unseen:
            self.reserve(unseen)
        rows = np.fromiter(map(index.__getitem__, stats), dtype=np.int64, count=len(stats))
        values = list(stats.values())
        samples = np.array(list(map(_SAMPLE, values)), dtype=np.float64).reshape(len(values), 4)
        topics = np.fromiter(map(_TOPICS, values), dtype=np.int64, count=len(values))
        return ReportColumns(stats, rows, samples, topics)

    # ------------------------------------------------------------------ samples

    def add_samples(self, rows: np.ndarray, samples: np.ndarray, topics: np.ndarray) -> np.ndarray:
        """`BundleData.update` for each row (no row twice); returns the rows' new values, (k, 8).

        Per window: n = min(num_samples + 1, max_samples); v = ((n - 1) * v + x) / n, in doubles,
        which is also Java's x/0 when n is 0 (IEEE division by +0.0)."""
        n = np.take(self.samples, rows, axis=0)
        n += 1
        np.minimum(n, np.take(self.max_samples, rows, axis=0), out=n)
        self.samples[rows] = n
        # each window's n spread over its 4 columns: whole contiguous rows instead of two strided
        # halves broadcast against a column (the same product, sum and quotient per element, ~10x faster)
        nf = np.repeat(n.astype(np.float64), 4, axis=1)
        mf = np.repeat((n - 1).astype(np.float64), 4, axis=1)
        v: np.ndarray = np.take(self.values, rows, axis=0)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            v *= mf
            v += np.tile(samples, 2)
            v /= nf
        self.values[rows] = v
        self.topics[rows] = topics
        self.dirty[rows] = True
        self._any_dirty = True
        return v

    @staticmethod
    def sums(values: np.ndarray) -> list[float]:
        """The 8 column sums in row order, left to right from 0.0, as TimeAverageBrokerData.reset.

        `cumsum` adds strictly in sequence (a plain `sum` would add pairwise); its first partial is
        x0 where the loop has 0.0 + x0, which differs only for -0.0, and the final `+ 0.0` maps that
        back (the loop's sum is never -0.0)."""
        if len(values) == 0:
            return [0.0] * 8
        with np.errstate(over="ignore", invalid="ignore"):
            sums: list[float] = (values.cumsum(0)[-1] + 0.0).tolist()
        return sums

    @staticmethod
    def segment_sums(values: np.ndarray, sizes: list[int]) -> list[list[float]]:
        """`sums` of consecutive segments of `values` (one per broker) in a few numpy calls.

        Position by position: every segment longer than p adds its p-th row to its running sums,
        which start at +0.0, so each sum is the loop's `0.0 + x0 + x1 + ...` in the same order (and
        never -0.0). Segments are visited longest first, so the ones still adding at step p are a
        prefix: `longest` steps over at most `len(sizes)` rows each, whatever the spread (a leader of
        1,000 brokers does this after each of their reports, while one of them holds hundreds of
        bundles in a restart)."""
        count = len(sizes)
        if count == 0:
            return []
        lengths = np.array(sizes, dtype=np.int64)
        longest = int(lengths.max())
        acc = np.zeros((count, values.shape[1] if values.ndim == 2 else 8), dtype=np.float64)
        if longest == 0:
            return acc.tolist()
        starts = np.zeros(count, dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        order = np.argsort(-lengths, kind="stable")
        sorted_lengths = lengths[order]
        sorted_starts = starts[order]
        # active[p]: how many segments are longer than p (a prefix of the longest-first order)
        active = np.searchsorted(-sorted_lengths, -np.arange(longest), side="left")
        part = np.zeros_like(acc)
        with np.errstate(over="ignore", invalid="ignore"):
            for p in range(longest):
                k = int(active[p])
                part[:k] += values[sorted_starts[:k] + p]
        acc[order] = part
        rows: list[list[float]] = acc.tolist()
        return rows

    # ------------------------------------------------------------------ objects

    def sync(self) -> bool:
        """Copy every row changed since the last sync into its BundleData; True if any was."""
        if not self._any_dirty:
            return False
        size = len(self.names)
        rows = np.flatnonzero(self.dirty[:size])
        self._any_dirty = False
        if rows.size == 0:
            return False
        self.dirty[rows] = False
        objects = self.objects
        block = self.values[rows]
        with np.errstate(over="ignore", invalid="ignore"):
            self.long_sums[rows] = np.stack((block[:, 4] + block[:, 5], block[:, 6] + block[:, 7]), axis=1)
        values = block.tolist()
        samples = self.samples[rows].tolist()
        topics = self.topics[rows].tolist()
        for r, v, n, t in zip(rows.tolist(), values, samples, topics):
            data = objects[r]
            if data is None:
                continue
            s = data.short_term_data
            s.num_samples = n[0]
            s.msg_rate_in, s.msg_rate_out, s.msg_throughput_in, s.msg_throughput_out = v[0:4]
            lt = data.long_term_data
            lt.num_samples = n[1]
            lt.msg_rate_in, lt.msg_rate_out, lt.msg_throughput_in, lt.msg_throughput_out = v[4:8]
            data.topics = t
        return True

    def sync_row(self, row: int) -> bool:
        """Sync one row (a single bundle about to be read); True if its object changed."""
        if self.dirty[row]:
            data = self.objects[row]
            self.dirty[row] = False
            if data is None:
                return False
            v = self.values[row].tolist()
            n = self.samples[row].tolist()
            self.long_sums[row] = (v[4] + v[5], v[6] + v[7])
            s, lt = data.short_term_data, data.long_term_data
            s.num_samples = n[0]
            s.msg_rate_in, s.msg_rate_out, s.msg_throughput_in, s.msg_throughput_out = v[0:4]
            lt.num_samples = n[1]
            lt.msg_rate_in, lt.msg_rate_out, lt.msg_throughput_in, lt.msg_throughput_out = v[4:8]
            data.topics = int(self.topics[row])
            return True
        return False
