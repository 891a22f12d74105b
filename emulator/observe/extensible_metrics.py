"""The Extensible load manager's own series, as `ExtensibleLoadManagerImpl.getMetrics()` renders them.

Pure: each renderer takes a counter (or the broker's load data) and gives the series Pulsar's
`toMetrics` builds from it, after the `brk_` -> `pulsar_` rename of the Prometheus export (spec
pulsar-metrics.md §A.2), every one typed gauge there. A series' labels are the Metrics object's
dimensions in Pulsar's order (Metrics keeps them sorted by name); `metrics.py` puts `cluster` first.
Follows apache/pulsar `extensions/ExtensibleLoadManagerImpl.getMetrics` (@00e97aef) and
`ExtensibleLoadManagerImplTest.testGetMetrics`, which pins every dimension and value:

* `BrokerLoadData.toMetrics(broker)` `{broker, metric="loadBalancing"}`: `pulsar_lb_{cpu,memory,
  directMemory,bandwidth_in,bandwidth_out}_usage` (percentUsage(), float), and
  `pulsar_lb_resource_usage{feature="max_ema"|"max"}` (weightedMaxEMA, maxResourceUsage: fractions);
* `UnloadCounter.toMetrics(broker)` `{broker, metric="bundleUnloading"}`: `pulsar_lb_unload_broker_total`,
  `pulsar_lb_unload_bundle_total`, `pulsar_lb_unload_broker_breakdown_total{result,reason}` (every
  cell, zeros included), and `pulsar_lb_resource_usage_stats{feature="max_ema",stat="avg"|"std"}` only
  when both the average and the std are > 0;
* `SplitCounter.toMetrics(broker)` `{broker, metric="bundlesSplit"}` (@765653da: with `broker`):
  `pulsar_lb_bundles_split_total`, `pulsar_lb_bundles_split_breakdown_total{result,reason}`;
* `AssignCounter.toMetrics(broker)` `{broker, metric="assign"}`:
  `pulsar_lb_assign_broker_breakdown_total{result}` (Success, Empty, Skip, as @2c746ef1 counts);
* `ServiceUnitStateChannelImpl.getMetrics()` `{broker, metric="sunitStateChn"}`:
  `pulsar_sunit_state_chn_owner_lookup_total{result,state}`, `..._event_publish_ops_total{event,result}`,
  `..._subscribe_ops_total{event,result}` (the handler counters, `event` = the state handled),
  `..._cleanup_ops_total{result="Failure"}`, `..._inactive_broker_cleanup_ops_total{result=Skip|Cancel|
  Schedule|Success}`, `..._orphan_su_cleanup_ops_total`, `..._su_tombstone_cleanup_ops_total`,
  `..._owned_su_total`.

The `updated_at` gate: Pulsar renders the unload and split counters from a snapshot
(`unloadMetrics` / `splitMetrics`), which UnloadScheduler and SplitScheduler replace at the end of a
run only when the counter's `updatedAt` moved past the last snapshot's (`counterLastUpdatedAt`);
before the first one nothing of that counter is rendered. `CounterSnapshot` is that gate, for the
wiring to refresh at the end of each run and pass on as `ExtensibleMetricsSource.unload_counter` /
`split_counter` (None before the first snapshot).

Left out: `pulsar_lb_ignored_{send,ack}_total` (newer Pulsar counts producer sends and acks it
ignores while a bundle is transferred; the emulator does not count them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple


from emulator.loadmanagers.extensible.actors.channel_types import ChannelCounters
from emulator.loadmanagers.extensible.actors.metrics_source import CounterSnapshot, ExtensibleMetricsSource
from emulator.loadmanagers.extensible.model.counters import AssignCounter, SplitCounter, UnloadCounter
from emulator.loadmanagers.extensible.model.load_data import BrokerLoadData

__all__ = [
    "DOCS",
    "CounterSnapshot",
    "ExtensibleMetricsSource",
    "Series",
    "assign_counter_series",
    "broker_load_data_series",
    "channel_series",
    "extensible_series",
    "group_by_name",
    "load_data_percents",
    "split_counter_series",
    "unload_counter_series",
]

Labels = tuple[tuple[str, str], ...]


class Series(NamedTuple):
    """One sample as Pulsar exports it: name (`pulsar_` already), the Metrics dimensions (sorted by
    name, as Metrics keeps them; without `cluster`), the value (an int where Java has a long)."""

    name: str
    labels: Labels
    value: float


_USAGE_NAMES = (
    ("pulsar_lb_cpu_usage", "cpu"),
    ("pulsar_lb_memory_usage", "memory"),
    ("pulsar_lb_directMemory_usage", "direct_memory"),
    ("pulsar_lb_bandwidth_in_usage", "bandwidth_in"),
    ("pulsar_lb_bandwidth_out_usage", "bandwidth_out"),
)

DOCS: dict[str, str] = {
    "pulsar_lb_resource_usage": "Extensible: the broker's weightedMaxEMA (feature=max_ema) and "
                                "maxResourceUsage (feature=max), fractions",
    "pulsar_lb_unload_broker_total": "Extensible: brokers unloaded from, summed over the leader's "
                                     "UnloadScheduler runs (Pulsar types it gauge)",
    "pulsar_lb_unload_bundle_total": "Extensible: bundles the leader's unload decisions moved (Pulsar "
                                     "types it gauge)",
    "pulsar_lb_unload_broker_breakdown_total": "Extensible: unload decisions by result and reason",
    "pulsar_lb_resource_usage_stats": "Extensible: mean and std of the brokers' weightedMaxEMA in "
                                      "TransferShedder's last cycle",
    "pulsar_lb_bundles_split_total": "Extensible: bundles this broker split (Pulsar types it gauge)",
    "pulsar_lb_bundles_split_breakdown_total": "Extensible: split decisions by result and reason",
    "pulsar_lb_assign_broker_breakdown_total": "Extensible: lookups that assigned (Success), found an "
                                               "owner (Skip) or no candidate (Empty)",
    "pulsar_sunit_state_chn_owner_lookup_total": "Service-unit state channel: owner lookups by state",
    "pulsar_sunit_state_chn_event_publish_ops_total": "Service-unit state channel: events published",
    "pulsar_sunit_state_chn_subscribe_ops_total": "Service-unit state channel: values handled, by state",
    "pulsar_sunit_state_chn_cleanup_ops_total": "Service-unit state channel: clean-up errors",
    "pulsar_sunit_state_chn_inactive_broker_cleanup_ops_total": "Service-unit state channel: inactive "
                                                                "broker clean-ups by result",
    "pulsar_sunit_state_chn_orphan_su_cleanup_ops_total": "Service-unit state channel: orphan bundles "
                                                          "cleaned up",
    "pulsar_sunit_state_chn_su_tombstone_cleanup_ops_total": "Service-unit state channel: bundles "
                                                             "tombstoned",
    "pulsar_sunit_state_chn_owned_su_total": "Service-unit state channel: bundles Owned by this broker",
}
DOCS.update({name: f"{attr} usage, percent (BrokerLoadData)" for name, attr in _USAGE_NAMES})
"""Each family's help text (Pulsar's Metrics carry none; these say what the value is)."""


def _dims(**dims: str) -> Labels:
    return tuple(sorted(dims.items()))


def load_data_percents(data: BrokerLoadData) -> dict[str, float]:
    """The five `percentUsage()` of a BrokerLoadData, by field name (as `LocalBrokerData.percent_usages`)."""
    return {attr: getattr(data, attr).percent_usage() for _, attr in _USAGE_NAMES}


def broker_load_data_series(broker: str, data: BrokerLoadData) -> list[Series]:
    """`BrokerLoadData.toMetrics(advertisedBrokerAddress)`."""
    dims = _dims(broker=broker, metric="loadBalancing")
    percents = load_data_percents(data)
    out = [Series(name, dims, percents[attr]) for name, attr in _USAGE_NAMES]
    out.append(Series("pulsar_lb_resource_usage", _dims(broker=broker, metric="loadBalancing",
                                                        feature="max_ema"), data.weighted_max_ema))
    out.append(Series("pulsar_lb_resource_usage", _dims(broker=broker, metric="loadBalancing",
                                                        feature="max"), data.max_resource_usage))
    return out


def unload_counter_series(broker: str, counter: UnloadCounter) -> list[Series]:
    """`UnloadCounter.toMetrics(advertisedBrokerAddress)`."""
    dims = _dims(broker=broker, metric="bundleUnloading")
    out = [Series("pulsar_lb_unload_broker_total", dims, counter.unload_broker_count),
           Series("pulsar_lb_unload_bundle_total", dims, counter.unload_bundle_count)]
    for label, cells in counter.breakdown.items():
        for reason, count in cells.items():
            out.append(Series("pulsar_lb_unload_broker_breakdown_total",
                              _dims(broker=broker, metric="bundleUnloading", result=label.value,
                                    reason=reason.value), count))
    if counter.load_avg > 0 and counter.load_std > 0:
        for stat, value in (("avg", counter.load_avg), ("std", counter.load_std)):
            out.append(Series("pulsar_lb_resource_usage_stats",
                              _dims(broker=broker, metric="bundleUnloading", feature="max_ema", stat=stat),
                              value))
    return out


def split_counter_series(broker: str, counter: SplitCounter) -> list[Series]:
    """`SplitCounter.toMetrics(advertisedBrokerAddress)`."""
    out = [Series("pulsar_lb_bundles_split_total", _dims(broker=broker, metric="bundlesSplit"),
                  counter.split_count)]
    for label, cells in counter.breakdown.items():
        for reason, count in cells.items():
            out.append(Series("pulsar_lb_bundles_split_breakdown_total",
                              _dims(broker=broker, metric="bundlesSplit", result=label.value,
                                    reason=reason.value), count))
    return out


def assign_counter_series(broker: str, counter: AssignCounter) -> list[Series]:
    """`AssignCounter.toMetrics(advertisedBrokerAddress)`: one series per label."""
    return [Series("pulsar_lb_assign_broker_breakdown_total",
                   _dims(broker=broker, metric="assign", result=result), count)
            for result, count in (("Success", counter.success), ("Empty", counter.empty),
                                  ("Skip", counter.skip))]


def channel_series(broker: str, counters: ChannelCounters, owned_service_units: int = 0) -> list[Series]:
    """`ServiceUnitStateChannelImpl.getMetrics()`."""
    base = {"broker": broker, "metric": "sunitStateChn"}
    out: list[Series] = []
    for state, c in counters.owner_lookup.items():
        for result, value in (("Total", c.total), ("Failure", c.failure)):
            out.append(Series("pulsar_sunit_state_chn_owner_lookup_total",
                              _dims(**base, state=state.value, result=result), value))
    for event, c in counters.event_publish.items():
        for result, value in (("Total", c.total), ("Failure", c.failure)):
            out.append(Series("pulsar_sunit_state_chn_event_publish_ops_total",
                              _dims(**base, event=event.value, result=result), value))
    for state, c in counters.handler.items():
        for result, value in (("Total", c.total), ("Failure", c.failure)):
            out.append(Series("pulsar_sunit_state_chn_subscribe_ops_total",
                              _dims(**base, event=state.value, result=result), value))
    out.append(Series("pulsar_sunit_state_chn_cleanup_ops_total", _dims(**base, result="Failure"),
                      counters.cleanup_errors))
    for result, value in (("Skip", counters.inactive_broker_cleanup_ignored),
                          ("Cancel", counters.inactive_broker_cleanup_cancelled),
                          ("Schedule", counters.inactive_broker_cleanup_scheduled),
                          ("Success", counters.inactive_broker_cleanup)):
        out.append(Series("pulsar_sunit_state_chn_inactive_broker_cleanup_ops_total",
                          _dims(**base, result=result), value))
    dims = _dims(**base)
    out.append(Series("pulsar_sunit_state_chn_orphan_su_cleanup_ops_total", dims,
                      counters.orphan_service_unit_cleanup))
    out.append(Series("pulsar_sunit_state_chn_su_tombstone_cleanup_ops_total", dims,
                      counters.service_unit_tombstone_cleanup))
    out.append(Series("pulsar_sunit_state_chn_owned_su_total", dims, owned_service_units))
    return out


def extensible_series(broker: str, source: ExtensibleMetricsSource) -> list[Series]:
    """`getMetrics()` of one broker, in its order: load data, unload (the leader's), split, assign,
    channel."""
    out: list[Series] = []
    if source.broker_load_data is not None:
        out += broker_load_data_series(broker, source.broker_load_data)
    if source.is_leader and source.unload_counter is not None:
        out += unload_counter_series(broker, source.unload_counter)
    if source.split_counter is not None:
        out += split_counter_series(broker, source.split_counter)
    out += assign_counter_series(broker, source.assign_counter)
    out += channel_series(broker, source.channel_counters, source.owned_service_units)
    return out


def group_by_name(series: Iterable[Series]) -> dict[str, list[Series]]:
    """Series by name, names in order of first appearance (one family each, as Pulsar writes one
    `# TYPE` per name); a name whose series disagree on their label names is a bug."""
    out: dict[str, list[Series]] = {}
    for s in series:
        rows = out.setdefault(s.name, [])
        if rows and _names(rows[0].labels) != _names(s.labels):
            raise AssertionError(f"{s.name}: label names {_names(s.labels)} after {_names(rows[0].labels)}")
        rows.append(s)
    return out


def _names(labels: Labels) -> Sequence[str]:
    return tuple(k for k, _ in labels)
