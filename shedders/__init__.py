"""Load-shedding strategies, created by name (`loadBalancerLoadSheddingStrategy`).

    h = shedders.create("ThresholdShedder", rng=random.Random(1))
    h = shedders.create("org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder", rng)
    h = shedders.create("my_pkg.my_module:MyShedder", rng)            # your own class

The pair a load manager runs (one instance when the placement strategy also sheds, as AvgShedder) is
made above both packages, by `emulator.cluster.strategy_pair.create_pair`.

Built-ins are a constant table of import paths, loaded lazily. Extra names go on a `Registry`
object, never on module state. Unlike Pulsar, which falls back to OverloadShedder when the class
cannot be created, an unknown name is an error: a typo should not change the experiment quietly.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from types import MappingProxyType

from emulator.model.class_registry import PULSAR_PACKAGE, ClassRegistry
from shedders.base import (
    BaseShedder,
    ExplainedLoadSheddingStrategy,
    LoadSheddingStrategy,
    UnloadPlan,
    find_bundles_for_unloading_explained,
)

__all__ = [
    "BUILTINS",
    "BaseShedder",
    "ExplainedLoadSheddingStrategy",
    "LoadSheddingStrategy",
    "PULSAR_PACKAGE",
    "Registry",
    "UnloadPlan",
    "create",
    "find_bundles_for_unloading_explained",
    "names",
]

BUILTINS: Mapping[str, str] = MappingProxyType(
    {
        "AvgShedder": "shedders.avg_shedder:AvgShedder",
        "OverloadShedder": "shedders.overload_shedder:OverloadShedder",
        "ThresholdShedder": "shedders.threshold_shedder:ThresholdShedder",
        "UniformLoadShedder": "shedders.uniform_load_shedder:UniformLoadShedder",
    }
)


class Registry(ClassRegistry):
    """Name → shedder class; starts with the built-ins, `register` adds more for this registry only."""

    def __init__(self, builtins: Mapping[str, str] = BUILTINS) -> None:
        super().__init__(builtins, kind="load shedding strategy", noun="shedder",
                         method="find_bundles_for_unloading",
                         signature="find_bundles_for_unloading(load_data, conf)")


def create(name: str, rng: random.Random) -> LoadSheddingStrategy:
    """A new shedder instance from the built-ins (see `Registry` for your own names)."""
    return Registry().create(name, rng)


def names() -> list[str]:
    """The built-in shedder names, sorted."""
    return sorted(BUILTINS)
