"""Placement strategies, created by name (`loadBalancerLoadPlacementStrategy`).

    s = strategies.create("LeastLongTermMessageRate", rng=random.Random(7))
    s = strategies.create("org.apache.pulsar.broker.loadbalance.impl.LeastLongTermMessageRate", rng)
    s = strategies.create("my_pkg.my_module:MyStrategy", rng)        # your own class

Built-ins are a constant table of import paths, loaded lazily so a strategy living elsewhere (e.g.
AvgShedder, which is also a shedder) is one line in `BUILTINS`. Extra names go on a `Registry`
object, never on module state. Unlike Pulsar, which silently falls back to LeastLongTermMessageRate
on an unknown class name, an unknown name is an error: a typo in a scenario should not change the
experiment quietly.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from strategies.base import BasePlacementStrategy, PlacementStrategy, select_broker_for_bundle

__all__ = [
    "BUILTINS",
    "BasePlacementStrategy",
    "PULSAR_PACKAGE",
    "PlacementStrategy",
    "Registry",
    "create",
    "names",
    "select_broker_for_bundle",
]

PULSAR_PACKAGE = "org.apache.pulsar.broker.loadbalance.impl."

BUILTINS: Mapping[str, str] = MappingProxyType(
    {
        "AvgShedder": "shedders.avg_shedder:AvgShedder",
        "LeastLongTermMessageRate": "strategies.least_long_term_message_rate:LeastLongTermMessageRate",
        "LeastResourceUsageWithWeight": "strategies.least_resource_usage_with_weight:LeastResourceUsageWithWeight",
        "RoundRobinBrokerSelector": "strategies.round_robin:RoundRobinBrokerSelector",
    }
)


def _import_class(path: str) -> type:
    module_name, _, class_name = path.partition(":")
    if not module_name or not class_name:
        raise ValueError(f"strategy {path!r}: expected 'pkg.module:Class'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"strategy {path!r}: cannot import module {module_name!r} ({e})") from None
    cls = getattr(module, class_name, None)
    if cls is None:
        raise ValueError(f"strategy {path!r}: module {module_name!r} has no attribute {class_name!r}")
    _check_class(path, cls)
    return cls


def _check_class(name: str, cls: Any) -> None:
    if not isinstance(cls, type) or not callable(getattr(cls, "select_broker", None)):
        raise ValueError(
            f"strategy {name!r}: {cls!r} is not a placement strategy class "
            "(it needs select_broker(candidates, bundle_to_assign, load_data, conf))"
        )


class Registry:
    """Name → strategy class; starts with the built-ins, `register` adds more for this registry only."""

    def __init__(self, builtins: Mapping[str, str] = BUILTINS) -> None:
        self._entries: dict[str, str | type] = dict(builtins)

    def register(self, name: str, cls: type) -> None:
        if not isinstance(name, str) or not name or ":" in name:
            raise ValueError(f"strategy name = {name!r}; use a non-empty short name without ':'")
        _check_class(name, cls)
        self._entries[name] = cls

    def names(self) -> list[str]:
        return sorted(self._entries)

    def resolve(self, name: str) -> type:
        """Short name, Pulsar FQCN of a known strategy, or 'pkg.module:Class'."""
        if not isinstance(name, str):
            raise TypeError(f"strategy name must be a str, got {type(name).__name__}")
        key = name.strip()
        if key.startswith(PULSAR_PACKAGE):
            key = key[len(PULSAR_PACKAGE) :]
        entry = self._entries.get(key)
        if entry is None:
            if ":" in key:
                return _import_class(key)
            raise ValueError(
                f"unknown placement strategy {name!r}; known: {', '.join(self.names())} "
                "(or give your own class as 'pkg.module:Class')"
            )
        if isinstance(entry, str):
            entry = _import_class(entry)
            self._entries[key] = entry
        return entry

    def create(self, name: str, rng: random.Random) -> PlacementStrategy:
        if not isinstance(rng, random.Random):
            raise TypeError(f"rng must be a random.Random, got {type(rng).__name__}")
        return self.resolve(name)(rng)


def create(name: str, rng: random.Random) -> PlacementStrategy:
    """A new strategy instance from the built-ins (see `Registry` for your own names)."""
    return Registry().create(name, rng)


def names() -> list[str]:
    """The built-in strategy names, sorted."""
    return sorted(BUILTINS)
