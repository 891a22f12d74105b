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

import random
from collections.abc import Mapping
from types import MappingProxyType

from emulator.model.class_registry import PULSAR_PACKAGE, ClassRegistry
from strategies.base import (
    BasePlacementStrategy,
    ExplainedPlacementStrategy,
    PlacementStrategy,
    Selection,
    select_broker_explained,
    select_broker_for_bundle,
)

__all__ = [
    "BUILTINS",
    "BasePlacementStrategy",
    "ExplainedPlacementStrategy",
    "PULSAR_PACKAGE",
    "PlacementStrategy",
    "Registry",
    "Selection",
    "create",
    "names",
    "select_broker_explained",
    "select_broker_for_bundle",
]

BUILTINS: Mapping[str, str] = MappingProxyType(
    {
        "AvgShedder": "shedders.avg_shedder:AvgShedder",
        "LeastLongTermMessageRate": "strategies.least_long_term_message_rate:LeastLongTermMessageRate",
        "LeastResourceUsageWithWeight": "strategies.least_resource_usage_with_weight:LeastResourceUsageWithWeight",
        "RoundRobinBrokerSelector": "strategies.round_robin:RoundRobinBrokerSelector",
    }
)


class Registry(ClassRegistry):
    """Name → strategy class; starts with the built-ins, `register` adds more for this registry only."""

    def __init__(self, builtins: Mapping[str, str] = BUILTINS) -> None:
        super().__init__(builtins, kind="placement strategy", noun="strategy", method="select_broker",
                         signature="select_broker(candidates, bundle_to_assign, load_data, conf)")


def create(name: str, rng: random.Random) -> PlacementStrategy:
    """A new strategy instance from the built-ins (see `Registry` for your own names)."""
    return Registry().create(name, rng)


def names() -> list[str]:
    """The built-in strategy names, sorted."""
    return sorted(BUILTINS)
