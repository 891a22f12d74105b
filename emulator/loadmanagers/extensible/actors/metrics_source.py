"""What one broker's Extensible load manager hands the metrics: `ExtensibleMetricsSource`, and the
counter snapshots Pulsar's schedulers keep for `getMetrics()` (`CounterSnapshot`).

Data, not rendering: the load manager (extensible_wrapper.py) fills them, the observers
(emulator/observe/extensible_metrics.py) render them as Pulsar's series. Kept here so the cluster
layer imports nothing from the observers.
"""

from __future__ import annotations

import copy
from typing import Generic, TypeVar

import msgspec

from ..model.counters import AssignCounter, SplitCounter, UnloadCounter
from ..model.load_data import BrokerLoadData

from .channel_types import ChannelCounters

__all__ = ["CounterSnapshot", "ExtensibleMetricsSource"]


class ExtensibleMetricsSource(msgspec.Struct, kw_only=True):
    """What one broker's Extensible load manager hands the metrics (`extensible_metrics()`).

    `unload_counter` / `split_counter`: the snapshots `getMetrics()` renders (`CounterSnapshot`), None
    before the first; the unload one is rendered from the leader's source only (only the leader's
    UnloadScheduler updates it). `broker_load_data`: what `brokerLoadDataReporter.generateLoadData()`
    gives now, None without a reporter. `owned_service_units`: the channel's
    `getTotalOwnedServiceUnitCnt()` (bundles Owned with this broker as dst)."""

    unload_counter: UnloadCounter | None
    split_counter: SplitCounter | None
    assign_counter: AssignCounter
    channel_counters: ChannelCounters
    broker_load_data: BrokerLoadData | None
    is_leader: bool
    owned_service_units: int = 0


C = TypeVar("C", UnloadCounter, SplitCounter)


class CounterSnapshot(Generic[C]):
    """`unloadMetrics` / `splitMetrics` with `counterLastUpdatedAt`: `refresh(counter)` at the end of
    a scheduler run keeps a copy when the counter's `updated_at` moved past the last copy's."""

    def __init__(self) -> None:
        self.counter: C | None = None
        self.last_updated_at = 0

    def refresh(self, counter: C) -> None:
        if counter.updated_at > self.last_updated_at:
            self.counter = copy.deepcopy(counter)
            self.last_updated_at = counter.updated_at
