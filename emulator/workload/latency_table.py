"""A scenario's `[latency]` table: overrides of the calibrated operation latencies.

    [latency]
    topic_load = { distribution = "lognormal", median = "20ms", p99 = "200ms" }
    admin_call = "5ms"                                       # a constant
    broker_start = { distribution = "uniform", low = "5s", high = "15s" }
    metadata_op = { distribution = "constant", value = "2ms" }

Keys are the fields of `emulator.cluster.latency.Latencies` (their docstrings give each default and its
source); a key left out keeps its default. The older keys still work and mean the same as their
`[latency]` name: `[metadata_store] latency` = metadata_op, `[cluster] bundle_close_time` =
bundle_close, `[cluster] topic_close_time` = topic_close (both given: an error). `[network] latency` is
the one-way wire time, added to every client round trip on top of these.
"""

from __future__ import annotations

from typing import Any, Mapping

import msgspec

from emulator.cluster.latency import LATENCY_NAMES, Constant, Distribution, Latencies, LogNormal, Uniform
from emulator.model.durations import parse_duration
from emulator.model.suggest import did_you_mean

from .errors import ScenarioError
from .schema import Scenario

__all__ = ["LEGACY_KEYS", "latencies", "parse_distribution", "scenario_latencies"]

_FIELDS: dict[str, tuple[str, ...]] = {
    "constant": ("value",),
    "lognormal": ("median", "p99"),
    "uniform": ("low", "high"),
}
LEGACY_KEYS: dict[str, tuple[str, str]] = {
    "metadata_op": ("metadata_store", "latency"),
    "bundle_close": ("cluster", "bundle_close_time"),
    "topic_close": ("cluster", "topic_close_time"),
}


class LatencyValueError(ValueError):
    """A bad [latency] value; `path` is the key path below [latency] (e.g. "topic_load.p99")."""

    def __init__(self, path: str, value: Any, reason: str) -> None:
        super().__init__(reason)
        self.path = path
        self.value = value


def _seconds(path: str, value: Any) -> float:
    try:
        seconds = parse_duration(value)
    except (TypeError, ValueError) as e:
        raise LatencyValueError(path, value, str(e)) from None
    if seconds < 0:
        raise LatencyValueError(path, value, "latencies must be >= 0")
    return seconds


def parse_distribution(key: str, value: Any) -> Distribution:
    """One [latency] entry: a duration (a constant) or a table with `distribution` and its fields."""
    if not isinstance(value, Mapping):
        return Constant(_seconds(key, value))
    kind = value.get("distribution", "constant" if "value" in value else None)
    if kind not in _FIELDS:
        raise LatencyValueError(f"{key}.distribution", value.get("distribution"),
                                "expected one of: " + ", ".join(_FIELDS)
                                + (did_you_mean(kind, _FIELDS) if isinstance(kind, str) else ""))
    fields = _FIELDS[kind]
    unknown = sorted(set(value) - set(fields) - {"distribution"})
    if unknown:
        raise LatencyValueError(f"{key}.{unknown[0]}", value[unknown[0]],
                                f"unknown key for a {kind} distribution{did_you_mean(unknown[0], fields)}; "
                                f"it takes: {', '.join(fields)}")
    missing = [f for f in fields if f not in value]
    if missing:
        raise LatencyValueError(f"{key}.{missing[0]}", value, f"a {kind} distribution needs "
                                + " and ".join(fields))
    v = {f: _seconds(f"{key}.{f}", value[f]) for f in fields}
    if kind == "constant":
        return Constant(v["value"])
    if kind == "lognormal":
        if v["median"] <= 0:
            raise LatencyValueError(f"{key}.median", value["median"], "must be > 0 for a lognormal "
                                    "(use a constant for 0)")
        if v["p99"] < v["median"]:
            raise LatencyValueError(f"{key}.p99", value["p99"],
                                    f"must be >= median ({value['median']})")
        return LogNormal(v["median"], v["p99"])
    if v["high"] < v["low"]:
        raise LatencyValueError(f"{key}.high", value["high"], f"must be >= low ({value['low']})")
    return Uniform(v["low"], v["high"])


def latencies(table: Mapping[str, Any], legacy: Mapping[str, float | None] | None = None, *,
              source: str = "<scenario>", base: Latencies | None = None) -> Latencies:
    """The run's Latencies: `base` (the calibrated defaults) < legacy keys < the [latency] table.
    Errors are one ScenarioError line naming the key and the value."""
    changes: dict[str, Distribution] = {}
    for name, value in (legacy or {}).items():
        if value is None:
            continue
        if name in table:
            section, key = LEGACY_KEYS[name]
            raise ScenarioError(source, f"latency.{name}", table[name],
                                f"also set as [{section}] {key}; give only one of them")
        changes[name] = Constant(float(value))
    for name, value in table.items():
        if name not in LATENCY_NAMES:
            raise ScenarioError(source, f"latency.{name}", value,
                                "unknown latency" + did_you_mean(name, LATENCY_NAMES) + "; known: "
                                + ", ".join(LATENCY_NAMES))
        try:
            changes[name] = parse_distribution(name, value)
        except LatencyValueError as e:
            raise ScenarioError(source, f"latency.{e.path}", e.value, str(e)) from None
    return msgspec.structs.replace(base or Latencies(), **changes)


def scenario_latencies(scenario: Scenario, *, source: str | None = None) -> Latencies:
    """The calibrated operation latencies, with the scenario's older keys and [latency] table."""
    legacy = {"metadata_op": scenario.metadata_store.latency,
              "bundle_close": scenario.cluster.bundle_close_time,
              "topic_close": scenario.cluster.topic_close_time}
    return latencies(scenario.latency, legacy, source=source or scenario.name)
