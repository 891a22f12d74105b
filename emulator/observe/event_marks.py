"""Counts of the events a dashboard marks on its graphs: scenario events, decisions, broker changes.

Grafana draws annotations from a Prometheus query, so the marks are a counter,
`pulsar_lb_emulator_events_total{cluster, kind, name}`, and the dashboard's annotation queries select
the scrapes where it grew (`x - x offset $__interval > 0`). `kind` is the event's recorded kind
(events.jsonl); `name` is the scenario verb, the leader's decision, the admin operation, or the kind
again. Only events worth a mark are counted (not the per-producer ones, not the leader's every
shedding plan), so the series stay few.

Every series is there from the start at 0, for every scenario verb and every counted type: a counter
that first appears at 1 has no earlier sample to differ from, and its first mark would be lost.

Scrapes only (see `metrics.py`): a recording already holds each of these events with its time in
events.jsonl and decisions.jsonl, and its samples stay what they were.

The brokers start and the first leader is elected while the cluster boots, before any observer can
attach: `BootEvents` keeps those events from the first broker's start on and hands them to the
observers once they are attached, so events.jsonl and this counter have them too.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Callable

import msgspec

from emulator.cluster.events import (
    AdminAction,
    BrokerCrashed,
    BrokerStartFailed,
    BrokerStarted,
    BrokerStopped,
    ConfigChanged,
    Event,
    LeaderElected,
    LeaderStarted,
    ScenarioEvent,
    SessionLost,
    Split,
    Unload,
    event_types,
)
from emulator.workload.schema import EVENT_TYPES

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster

__all__ = ["BOOT_EVENTS", "EVENTS_METRIC", "BootEvents", "EventMarks"]

EVENTS_METRIC = "pulsar_lb_emulator_events"
"""The counter's family name; its samples are `pulsar_lb_emulator_events_total`."""

_FIXED: tuple[type[Event], ...] = (
    Unload, Split,                                            # the leader's decisions that move bundles
    BrokerStarted, BrokerStartFailed, BrokerCrashed, BrokerStopped, SessionLost, LeaderElected,
    ConfigChanged,
)


def _marked_types() -> dict[type[Event], tuple[str, str]]:
    """Event type -> (kind, name) for every counted type but ScenarioEvent (its name is per event)."""
    keys: dict[type[Event], tuple[str, str]] = {}
    for cls in (*_FIXED, *(t for t in event_types() if issubclass(t, AdminAction))):
        name = getattr(cls, "decision", None) or getattr(cls, "op", None) or cls.kind
        keys[cls] = (cls.kind, name)
    return keys


def _scenario_verbs() -> list[str]:
    """Every `do = "..."` a scenario event can have."""
    return [str(spec.__struct_config__.tag) for spec in EVENT_TYPES if issubclass(spec, msgspec.Struct)]


class EventMarks:
    """Listens on `cluster.events` from construction on; `family` builds the counter at collect time."""

    def __init__(self, cluster: "Cluster") -> None:
        self._keys = _marked_types()
        self.counts: dict[tuple[str, str], int] = {key: 0 for key in self._keys.values()}
        for verb in _scenario_verbs():
            self.counts[(ScenarioEvent.kind, verb)] = 0
        self._unsubscribe = cluster.events.subscribe(self._on_event)

    def close(self) -> None:
        self._unsubscribe()

    def _on_event(self, event: Event) -> None:
        if type(event) is ScenarioEvent:
            key = (ScenarioEvent.kind, event.event)
        else:
            found = self._keys.get(type(event))
            if found is None or (type(event) is Split and not event.ok):   # as pulsar_lb_bundles_split_total
                return
            key = found
        self.counts[key] = self.counts.get(key, 0) + 1

    def family(self, counter: Callable[..., Any], cluster_name: str) -> Any:
        """The counter family, built with `counter` (prometheus_client's CounterMetricFamily)."""
        f = counter(EVENTS_METRIC, "Cluster events a dashboard marks: scenario events, unloads and splits, "
                    "broker and leader changes, admin actions, config changes", labels=("cluster", "kind", "name"))
        for (kind, name), n in sorted(self.counts.items()):
            f.add_metric((cluster_name, kind, name), n)
        return f


BOOT_EVENTS: tuple[type[Event], ...] = (BrokerStarted, BrokerStartFailed, BrokerCrashed, LeaderElected,
                                        LeaderStarted)
"""What happens while the cluster boots that the observers report: its brokers' starts and the first
election."""


class BootEvents:
    """The boot's lifecycle events, kept until the observers attach.

        boot = BootEvents()
        async with Cluster.start(..., before_brokers=boot.before_brokers()) as cluster:
            ...attach the observers to cluster.events...
            boot.replay(cluster.events)

    `replay` hands each kept event, with its time, to every listener then subscribed, and stops
    keeping: an event after it reaches the listeners as any other."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._unsubscribe: Callable[[], None] | None = None

    def before_brokers(self, then: Callable[["Cluster"], Awaitable[None]] | None = None
                       ) -> Callable[["Cluster"], Awaitable[None]]:
        """The cluster's `before_brokers` hook: start keeping, then run `then` (a warm start's)."""

        async def hook(cluster: "Cluster") -> None:
            self._unsubscribe = cluster.events.subscribe(self._keep)
            if then is not None:
                await then(cluster)

        return hook

    def _keep(self, event: Event) -> None:
        if type(event) in BOOT_EVENTS:
            self.events.append(event)

    def replay(self, events: Any) -> None:
        """Stop keeping; hand every kept event to each listener of `events` (the ClusterEvents)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        kept, self.events = self.events, []
        for event in kept:
            for listener in tuple(events.listeners):
                listener(event)
