"""Load-shedding strategies, created by name (`loadBalancerLoadSheddingStrategy`).

    h = shedders.create("ThresholdShedder", rng=random.Random(1))
    h = shedders.create("org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder", rng)
    h = shedders.create("my_pkg.my_module:MyShedder", rng)            # your own class
    placement, shedder = shedders.create_pair("AvgShedder", "AvgShedder", rng)   # one instance

The Extensible load manager's NamespaceUnloadStrategy (TransferShedder; another protocol, see
`shedders.extensible_base`) is in `BUILTINS` under Pulsar's full class name and is made with
`create_extensible`; `create` and `names` stay the Modular shedders. (Pulsar's UnloadScheduler reads
`loadBalancerLoadSheddingStrategy` too and falls back to TransferShedder when that class is not a
NamespaceUnloadStrategy, e.g. the default ThresholdShedder: the caller's choice to make.)

Built-ins are a constant table of import paths, loaded lazily. Extra names go on a `Registry`
object, never on module state. Unlike Pulsar, which falls back to OverloadShedder when the class
cannot be created, an unknown name is an error: a typo should not change the experiment quietly.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from shedders.base import BaseShedder, LoadSheddingStrategy
from shedders.extensible_base import NamespaceUnloadStrategy
from strategies.registry import EXTENSIONS_PACKAGE, PULSAR_PACKAGE, ClassRegistry, is_extensible_name

__all__ = [
    "BUILTINS",
    "BaseShedder",
    "EXTENSIBLE_BUILTINS",
    "EXTENSIONS_PACKAGE",
    "ExtensibleRegistry",
    "LoadSheddingStrategy",
    "MODULAR_BUILTINS",
    "NamespaceUnloadStrategy",
    "PULSAR_PACKAGE",
    "Registry",
    "create",
    "create_extensible",
    "create_pair",
    "extensible_names",
    "names",
]

BUILTINS: Mapping[str, str] = MappingProxyType(
    {
        "AvgShedder": "shedders.avg_shedder:AvgShedder",
        "OverloadShedder": "shedders.overload_shedder:OverloadShedder",
        "ThresholdShedder": "shedders.threshold_shedder:ThresholdShedder",
        "UniformLoadShedder": "shedders.uniform_load_shedder:UniformLoadShedder",
        EXTENSIONS_PACKAGE + "scheduler.TransferShedder": "shedders.transfer_shedder:TransferShedder",
    }
)
MODULAR_BUILTINS: Mapping[str, str] = MappingProxyType(
    {k: v for k, v in BUILTINS.items() if not is_extensible_name(k)})
EXTENSIBLE_BUILTINS: Mapping[str, str] = MappingProxyType(
    {k: v for k, v in BUILTINS.items() if is_extensible_name(k)})


class Registry(ClassRegistry):
    """Name → shedder class; starts with the built-ins, `register` adds more for this registry only."""

    def __init__(self, builtins: Mapping[str, str] = MODULAR_BUILTINS) -> None:
        super().__init__(builtins, kind="load shedding strategy", noun="shedder",
                         method="find_bundles_for_unloading",
                         signature="find_bundles_for_unloading(load_data, conf)")

    def resolve(self, name: str) -> type:
        if isinstance(name, str) and name.strip() in EXTENSIBLE_BUILTINS:
            raise ValueError(f"shedder {name!r} is the Extensible load manager's NamespaceUnloadStrategy "
                             "(find_bundles_for_unloading(context, recently_unloaded_bundles, "
                             "recently_unloaded_brokers)); make it with shedders.create_extensible")
        return super().resolve(name)


class ExtensibleRegistry(ClassRegistry):
    """Name → NamespaceUnloadStrategy class of the Extensible load manager."""

    def __init__(self, builtins: Mapping[str, str] = EXTENSIBLE_BUILTINS) -> None:
        super().__init__(builtins, kind="namespace unload strategy", noun="shedder",
                         method="find_bundles_for_unloading",
                         signature="find_bundles_for_unloading(context, recently_unloaded_bundles, "
                                   "recently_unloaded_brokers)")


def create(name: str, rng: random.Random) -> LoadSheddingStrategy:
    """A new Modular shedder instance from the built-ins (see `Registry` for your own names)."""
    return Registry().create(name, rng)


def create_extensible(name: str, rng: random.Random) -> NamespaceUnloadStrategy:
    """A new Extensible NamespaceUnloadStrategy: a full Pulsar class name or 'pkg.module:Class'."""
    return ExtensibleRegistry().create(name, rng)


def names() -> list[str]:
    """The built-in Modular shedder names, sorted."""
    return sorted(MODULAR_BUILTINS)


def extensible_names() -> list[str]:
    """The built-in Extensible NamespaceUnloadStrategy names (full class names), sorted."""
    return sorted(EXTENSIBLE_BUILTINS)


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
    if sheds.is_valid_class(placement_cls):
        if shedder_cls is not placement_cls:
            raise ValueError(
                f"load shedding strategy {shedding_name!r} can't work with the placement strategy "
                f"{placement_name!r}: a placement strategy that also sheds must be the shedding "
                f"strategy too (set loadBalancerLoadSheddingStrategy = {placement_name})"
            )
        both = placement_cls(rng)
        return both, both
    return placement_cls(rng), shedder_cls(rng)
