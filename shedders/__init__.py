"""Load-shedding strategies, created by name (`loadBalancerLoadSheddingStrategy`).

    h = shedders.create("ThresholdShedder", rng=random.Random(1))
    h = shedders.create("org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder", rng)
    h = shedders.create("my_pkg.my_module:MyShedder", rng)            # your own class
    placement, shedder = shedders.create_pair("AvgShedder", "AvgShedder", rng)   # one instance

Built-ins are a constant table of import paths, loaded lazily. Extra names go on a `Registry`
object, never on module state. Unlike Pulsar, which falls back to OverloadShedder when the class
cannot be created, an unknown name is an error: a typo should not change the experiment quietly.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from shedders.base import BaseShedder, LoadSheddingStrategy

__all__ = [
    "BUILTINS",
    "BaseShedder",
    "LoadSheddingStrategy",
    "PULSAR_PACKAGE",
    "Registry",
    "create",
    "create_pair",
    "names",
]

PULSAR_PACKAGE = "org.apache.pulsar.broker.loadbalance.impl."

BUILTINS: Mapping[str, str] = MappingProxyType(
    {
        "AvgShedder": "shedders.avg_shedder:AvgShedder",
        "OverloadShedder": "shedders.overload_shedder:OverloadShedder",
        "ThresholdShedder": "shedders.threshold_shedder:ThresholdShedder",
        "UniformLoadShedder": "shedders.uniform_load_shedder:UniformLoadShedder",
    }
)


def _is_shedder_class(cls: Any) -> bool:
    return isinstance(cls, type) and callable(getattr(cls, "find_bundles_for_unloading", None))


def _check_class(name: str, cls: Any) -> None:
    if not _is_shedder_class(cls):
        raise ValueError(
            f"shedder {name!r}: {cls!r} is not a load-shedding strategy class "
            "(it needs find_bundles_for_unloading(load_data, conf))"
        )


def _import_class(path: str) -> type:
    module_name, _, class_name = path.partition(":")
    if not module_name or not class_name:
        raise ValueError(f"shedder {path!r}: expected 'pkg.module:Class'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"shedder {path!r}: cannot import module {module_name!r} ({e})") from None
    cls = getattr(module, class_name, None)
    if cls is None:
        raise ValueError(f"shedder {path!r}: module {module_name!r} has no attribute {class_name!r}")
    _check_class(path, cls)
    return cls


class Registry:
    """Name → shedder class; starts with the built-ins, `register` adds more for this registry only."""

    def __init__(self, builtins: Mapping[str, str] = BUILTINS) -> None:
        self._entries: dict[str, str | type] = dict(builtins)

    def register(self, name: str, cls: type) -> None:
        if not isinstance(name, str) or not name or ":" in name:
            raise ValueError(f"shedder name = {name!r}; use a non-empty short name without ':'")
        _check_class(name, cls)
        self._entries[name] = cls

    def names(self) -> list[str]:
        return sorted(self._entries)

    def resolve(self, name: str) -> type:
        """Short name, Pulsar FQCN of a known shedder, or 'pkg.module:Class'."""
        if not isinstance(name, str):
            raise TypeError(f"shedder name must be a str, got {type(name).__name__}")
        key = name.strip()
        if key.startswith(PULSAR_PACKAGE):
            key = key[len(PULSAR_PACKAGE) :]
        entry = self._entries.get(key)
        if entry is None:
            if ":" in key:
                return _import_class(key)
            raise ValueError(
                f"unknown load shedding strategy {name!r}; known: {', '.join(self.names())} "
                "(or give your own class as 'pkg.module:Class')"
            )
        if isinstance(entry, str):
            entry = _import_class(entry)
            self._entries[key] = entry
        return entry

    def create(self, name: str, rng: random.Random) -> LoadSheddingStrategy:
        if not isinstance(rng, random.Random):
            raise TypeError(f"rng must be a random.Random, got {type(rng).__name__}")
        return self.resolve(name)(rng)


def create(name: str, rng: random.Random) -> LoadSheddingStrategy:
    """A new shedder instance from the built-ins (see `Registry` for your own names)."""
    return Registry().create(name, rng)


def names() -> list[str]:
    """The built-in shedder names, sorted."""
    return sorted(BUILTINS)


def create_pair(
    placement_name: str,
    shedding_name: str,
    rng: random.Random,
    *,
    placement_registry: Any = None,
    shedder_registry: Registry | None = None,
) -> tuple[Any, LoadSheddingStrategy]:
    """(placement strategy, shedder) as MLMI's `initialize` builds them.

    A placement class that also sheds (AvgShedder) must be the shedding strategy too, and then one
    instance serves both roles; otherwise Pulsar throws IllegalArgumentException, here ValueError.
    Pulsar compares the two class-name strings; we compare the resolved classes, so "AvgShedder"
    and its FQCN match. Two distinct strategies are two instances sharing `rng`.
    """
    import strategies  # same layer; imported here so that `import shedders` stays light

    if not isinstance(rng, random.Random):
        raise TypeError(f"rng must be a random.Random, got {type(rng).__name__}")
    placements = placement_registry if placement_registry is not None else strategies.Registry()
    sheds = shedder_registry if shedder_registry is not None else Registry()
    placement_cls = placements.resolve(placement_name)
    shedder_cls = sheds.resolve(shedding_name)
    if _is_shedder_class(placement_cls):
        if shedder_cls is not placement_cls:
            raise ValueError(
                f"load shedding strategy {shedding_name!r} can't work with the placement strategy "
                f"{placement_name!r}: a placement strategy that also sheds must be the shedding "
                f"strategy too (set loadBalancerLoadSheddingStrategy = {placement_name})"
            )
        both = placement_cls(rng)
        return both, both
    return placement_cls(rng), shedder_cls(rng)
