"""The decision counters the Extensible load manager keeps, one per kind of decision.

Follows apache/pulsar `extensions/models/UnloadCounter.java` (@1a5df8f3), `SplitCounter.java`
(@6a01f9de) and `AssignCounter.java` (@2c746ef1). Each has exactly Pulsar's (label, reason) cells, so an
update outside them fails as Java's `Map.of(...).get(reason)` would (a KeyError here, a
NullPointerException there): a shedder that reports an uncounted reason is a bug, not a new series.

The counts are what `getMetrics()` renders as `pulsar_lb_unload_broker_breakdown_total{result,reason}`,
`pulsar_lb_unload_bundle_total`, `pulsar_lb_unload_broker_total`, `pulsar_lb_resource_usage_stats`,
`pulsar_lb_bundles_split_breakdown_total`, `pulsar_lb_bundles_split_total` and
`pulsar_lb_assign_broker_breakdown_total{result}`. `updated_at` is the caller's clock (ms), passed in.
"""

from __future__ import annotations

import msgspec

from .decisions import (
    SplitDecision,
    SplitLabel,
    SplitReason,
    UnloadDecision,
    UnloadLabel,
    UnloadReason,
)

__all__ = ["AssignCounter", "SplitCounter", "UnloadCounter"]

_U = UnloadReason


def _unload_cells() -> dict[UnloadLabel, dict[UnloadReason, int]]:
    return {
        UnloadLabel.SUCCESS: {_U.OVERLOADED: 0, _U.UNDERLOADED: 0, _U.ADMIN: 0},
        UnloadLabel.SKIP: {
            _U.HIT_COUNT: 0, _U.NO_BUNDLES: 0, _U.COOL_DOWN: 0, _U.OUT_DATED_DATA: 0,
            _U.NO_LOAD_DATA: 0, _U.NO_BROKERS: 0, _U.UNKNOWN: 0,
        },
        UnloadLabel.FAILURE: {_U.UNKNOWN: 0},
    }  # fmt: skip


class UnloadCounter(msgspec.Struct, kw_only=True):
    """UnloadCounter: per (label, reason) counts, bundles unloaded, brokers unloaded, the load stats.

    `load_avg` / `load_std` are the mean and the population standard deviation of the brokers'
    `weightedMaxEMA` from TransferShedder's last cycle that got that far (`updateLoadData`).
    """

    unload_broker_count: int = 0
    unload_bundle_count: int = 0
    breakdown: dict[UnloadLabel, dict[UnloadReason, int]] = msgspec.field(default_factory=_unload_cells)
    load_avg: float = 0.0
    load_std: float = 0.0
    updated_at: int = 0

    def update(self, label: UnloadLabel, reason: UnloadReason, now_ms: int = 0) -> None:
        """`update(label, reason)` / `update(decision)`: a Success also counts one unloaded bundle."""
        cells = self.breakdown[label]
        if reason not in cells:
            raise KeyError(f"UnloadCounter has no ({label.value}, {reason.value}) cell")
        if label is UnloadLabel.SUCCESS:
            self.unload_bundle_count += 1
        cells[reason] += 1
        self.updated_at = now_ms

    def update_decision(self, decision: UnloadDecision, now_ms: int = 0) -> None:
        self.update(decision.label, decision.reason, now_ms)

    def update_load_data(self, load_avg: float, load_std: float, now_ms: int = 0) -> None:
        self.load_avg = load_avg
        self.load_std = load_std
        self.updated_at = now_ms

    def update_unload_broker_count(self, count: int, now_ms: int = 0) -> None:
        """UnloadScheduler adds the number of distinct source brokers of each completed cycle."""
        self.unload_broker_count += count
        self.updated_at = now_ms

    def count(self, label: UnloadLabel, reason: UnloadReason) -> int:
        return self.breakdown[label][reason]


def _split_cells() -> dict[SplitLabel, dict[SplitReason, int]]:
    r = SplitReason
    return {
        SplitLabel.SUCCESS: {r.TOPICS: 0, r.SESSIONS: 0, r.MSG_RATE: 0, r.BANDWIDTH: 0, r.ADMIN: 0},
        SplitLabel.SKIP: {r.BALANCED: 0},
        SplitLabel.FAILURE: {r.UNKNOWN: 0},
    }


class SplitCounter(msgspec.Struct, kw_only=True):
    """SplitCounter: per (label, reason) counts and the number of successful splits."""

    split_count: int = 0
    breakdown: dict[SplitLabel, dict[SplitReason, int]] = msgspec.field(default_factory=_split_cells)
    updated_at: int = 0

    def update(self, label: SplitLabel, reason: SplitReason, now_ms: int = 0) -> None:
        cells = self.breakdown[label]
        if reason not in cells:
            raise KeyError(f"SplitCounter has no ({label.value}, {reason.value}) cell")
        if label is SplitLabel.SUCCESS:
            self.split_count += 1
        cells[reason] += 1
        self.updated_at = now_ms

    def update_decision(self, decision: SplitDecision, now_ms: int = 0) -> None:
        self.update(decision.label, decision.reason, now_ms)

    def count(self, label: SplitLabel, reason: SplitReason) -> int:
        return self.breakdown[label][reason]


class AssignCounter(msgspec.Struct, kw_only=True):
    """AssignCounter: lookups that assigned a broker (Success), found an owner already (Skip), or found
    no candidate (Empty)."""

    success: int = 0
    empty: int = 0
    skip: int = 0

    def increment_success(self) -> None:
        self.success += 1

    def increment_empty(self) -> None:
        self.empty += 1

    def increment_skip(self) -> None:
        self.skip += 1
