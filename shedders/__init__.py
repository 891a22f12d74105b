"""Load-shedding strategies, created by name (`loadBalancerLoadSheddingStrategy`).

    h = shedders.create("ThresholdShedder", rng=random.Random(1))
    h = shedders.create("org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder", rng)
    h = shedders.create("my_pkg.my_module:MyShedder", rng)            # your own class

The pair a load manager runs (one instance when the placement strategy also sheds, as AvgShedder) is
made above both packages, by `emulator.cluster.strategy_pair.create_pair`.

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

from emulator.model.class_registry import EXTENSIONS_PACKAGE, PULSAR_PACKAGE, ClassRegistry, is_extensible_name
from shedders.base import (
    BaseShedder,
    ExplainedLoadSheddingStrategy,
    LoadSheddingStrategy,
    UnloadPlan,
    find_bundles_for_unloading_explained,
)
from shedders.extensible_base import NamespaceUnloadStrategy

__all__ = [
    "BUILTINS",
    "BaseShedder",
    "EXTENSIBLE_BUILTINS",
    "EXTENSIONS_PACKAGE",
    "ExplainedLoadSheddingStrategy",
    "ExtensibleRegistry",
    "LoadSheddingStrategy",
    "MODULAR_BUILTINS",
    "NamespaceUnloadStrategy",
    "PULSAR_PACKAGE",
    "Registry",
    "UnloadPlan",
    "create",
    "create_extensible",
    "extensible_names",
    "find_bundles_for_unloading_explained",
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
                         signature="find_bundles_for_unloading(load_data, conf)",
                         elsewhere=EXTENSIBLE_BUILTINS,
                         elsewhere_hint="is the Extensible load manager's NamespaceUnloadStrategy "
                                        "(find_bundles_for_unloading(context, recently_unloaded_bundles, "
                                        "recently_unloaded_brokers)); make it with shedders.create_extensible")


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

