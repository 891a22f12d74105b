"""A scenario's `[capacity]` table: overrides of the calibrated shared capacities (issue 27).

    [capacity.metadata]
    write_service_time = "0.2ms"       # a duration field
    [capacity.bookkeeper]
    bookies = 5                        # a count

One sub-table per part of `emulator.cluster.capacity.Capacity` (`metadata`, `bookkeeper`, `broker`,
`client`); keys are that part's fields, whose docstrings give each default and its source. Durations are
read as in `[latency]` ("5ms", "2s" or seconds), distributions as `[latency]`'s; a key left out keeps
its default. Errors are one ScenarioError line naming `capacity.<part>.<key>` and the value.
"""

from __future__ import annotations

from typing import Any, Mapping, get_args, get_origin, get_type_hints

import msgspec

from emulator.cluster.capacity import CAPACITY_PARTS, Capacity
from emulator.cluster.latency import Distribution
from emulator.model.durations import parse_duration
from emulator.model.suggest import did_you_mean

from .errors import ScenarioError
from .latency_table import LatencyValueError, parse_distribution
from .schema import Scenario

__all__ = ["capacity", "scenario_capacity"]


def _unit(hint: Any) -> str | None:
    if get_origin(hint) is not None and hasattr(hint, "__metadata__"):
        for meta in hint.__metadata__:
            extra = getattr(meta, "extra", None)
            if extra:
                return str(extra.get("unit"))
    return None


def _value(key: str, hint: Any, value: Any, source: str) -> Any:
    where = f"capacity.{key}"
    if hint is Distribution or (get_args(hint) and set(get_args(hint)) == set(get_args(Distribution))):
        try:
            return parse_distribution(key, value)
        except LatencyValueError as e:
            raise ScenarioError(source, f"capacity.{e.path}", e.value, str(e)) from None
    if _unit(hint) == "seconds":
        try:
            seconds = parse_duration(value)
        except (TypeError, ValueError) as e:
            raise ScenarioError(source, where, value, str(e)) from None
        if seconds < 0:
            raise ScenarioError(source, where, value, "must be >= 0")
        value = seconds
    try:
        return msgspec.convert(value, hint, strict=False)
    except msgspec.ValidationError as e:
        raise ScenarioError(source, where, value, str(e).split(" - at")[0]) from None


def capacity(table: Mapping[str, Any], *, source: str = "<scenario>",
             base: Capacity | None = None) -> Capacity:
    """The run's Capacity: `base` (the calibrated defaults) with the [capacity] table's overrides."""
    result = base or Capacity()
    for part_name, values in table.items():
        part = CAPACITY_PARTS.get(part_name)
        if part is None:
            raise ScenarioError(source, f"capacity.{part_name}", values,
                                "unknown part" + did_you_mean(part_name, CAPACITY_PARTS) + "; known: "
                                + ", ".join(CAPACITY_PARTS))
        if not isinstance(values, Mapping):
            raise ScenarioError(source, f"capacity.{part_name}", values,
                                f"expected a table: [capacity.{part_name}] with its keys")
        hints = get_type_hints(part, include_extras=True)
        fields = [f.name for f in msgspec.structs.fields(part)]
        changes: dict[str, Any] = {}
        for key, value in values.items():
            if key not in fields:
                raise ScenarioError(source, f"capacity.{part_name}.{key}", value,
                                    "unknown key" + did_you_mean(key, fields) + "; known: "
                                    + ", ".join(fields))
            changes[key] = _value(f"{part_name}.{key}", hints[key], value, source)
        result = msgspec.structs.replace(
            result, **{part_name: msgspec.structs.replace(getattr(result, part_name), **changes)})
    return result


def scenario_capacity(scenario: Scenario, *, source: str | None = None) -> Capacity:
    """The calibrated capacities with the scenario's [capacity] table."""
    return capacity(scenario.capacity, source=source or scenario.name)
