"""Scenario events: a scenario's event applied or failed, its initial state and its warm start."""

from __future__ import annotations

from typing import Any

from .base import Event, to_builtins

class ScenarioEvent(Event, kw_only=True):
    """A scenario event applied (workload/events.py): its verb and resolved arguments, which the
    record lists as fields of their own."""

    kind = "scenario_event"
    event: str
    arguments: dict[str, Any] = {}

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "t": self.t, "event": self.event}
        out.update(to_builtins(self.arguments))
        return out

    @classmethod
    def from_fields(cls, fields: dict[str, Any]) -> Event:
        rest = dict(fields)
        t = rest.pop("t", 0.0)
        return cls(t=t, event=rest.pop("event"), arguments=rest)


class ScenarioEventFailed(Event, kw_only=True):
    kind = "scenario_event_failed"
    event: str
    index: int
    error: str


class InitialState(Event, kw_only=True):
    """A scenario's initial owners placed; `msg_rate_max_min` is the planned max/min broker msg rate."""

    kind = "initial_state"
    bundles: int
    failed: int
    brokers: int
    warm: float
    msg_rate_max_min: float | None


class WarmBundleData(Event, kw_only=True):
    """A warm start wrote `bundles` persisted BundleData nodes of `samples` samples each."""

    kind = "warm_bundle_data"
    bundles: int
    samples: int
    warm: float


class WarmStarted(Event, kw_only=True):
    """A warm start done: reports, time averages and the shedder history as after `warm` seconds."""

    kind = "warm_start"
    brokers: int
    warm: float
    shedder_cycles: int
    leader: bool
