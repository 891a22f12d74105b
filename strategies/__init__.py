"""Placement strategies, created by name (`loadBalancerLoadPlacementStrategy`).

    s = strategies.create("LeastLongTermMessageRate", rng=random.Random(7))
    s = strategies.create("org.apache.pulsar.broker.loadbalance.impl.LeastLongTermMessageRate", rng)
    s = strategies.create("my_pkg.my_module:MyStrategy", rng)        # your own class

The Extensible load manager's BrokerSelectionStrategy (a different protocol, `select(brokers, bundle,
context)`, see `strategies.extensible_base`) is in `BUILTINS` under Pulsar's full class name and is
made with `create_extensible`; `create` and `names` stay the Modular strategies
(ModularLoadManagerStrategy), so the short name "LeastResourceUsageWithWeight" is still the Modular one.

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
from emulator.model.class_registry import EXTENSIONS_PACKAGE, PULSAR_PACKAGE, ClassRegistry, is_extensible_name
from strategies.base import (
    BasePlacementStrategy,
    ExplainedPlacementStrategy,
    PlacementStrategy,
    Selection,
    select_broker_explained,
    select_broker_for_bundle,
)
from strategies.extensible_base import BrokerSelectionStrategy

__all__ = [
    "BUILTINS",
    "BasePlacementStrategy",
    "BrokerSelectionStrategy",
    "EXTENSIBLE_BUILTINS",
    "EXTENSIONS_PACKAGE",
    "ExplainedPlacementStrategy",
    "ExtensibleRegistry",
    "MODULAR_BUILTINS",
    "PULSAR_PACKAGE",
    "PlacementStrategy",
    "Registry",
    "Selection",
    "create",
    "create_extensible",
    "extensible_names",
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
        EXTENSIONS_PACKAGE + "strategy.LeastResourceUsageWithWeight":
            "strategies.extensible_least_resource_usage:LeastResourceUsageWithWeight",
    }
)
MODULAR_BUILTINS: Mapping[str, str] = MappingProxyType(
    {k: v for k, v in BUILTINS.items() if not is_extensible_name(k)})
EXTENSIBLE_BUILTINS: Mapping[str, str] = MappingProxyType(
    {k: v for k, v in BUILTINS.items() if is_extensible_name(k)})


class Registry(ClassRegistry):
    """Name → strategy class; starts with the built-ins, `register` adds more for this registry only."""

    def __init__(self, builtins: Mapping[str, str] = MODULAR_BUILTINS) -> None:
        super().__init__(builtins, kind="placement strategy", noun="strategy", method="select_broker",
                         signature="select_broker(candidates, bundle_to_assign, load_data, conf)",
                         elsewhere=EXTENSIBLE_BUILTINS,
                         elsewhere_hint="is the Extensible load manager's BrokerSelectionStrategy "
                                        "(select(brokers, bundle, context)); make it with strategies.create_extensible")


class ExtensibleRegistry(ClassRegistry):
    """Name → BrokerSelectionStrategy class of the Extensible load manager (`select`)."""

    def __init__(self, builtins: Mapping[str, str] = EXTENSIBLE_BUILTINS) -> None:
        super().__init__(builtins, kind="broker selection strategy", noun="strategy", method="select",
                         signature="select(brokers, bundle, context)")


def create(name: str, rng: random.Random) -> PlacementStrategy:
    """A new Modular strategy instance from the built-ins (see `Registry` for your own names)."""
    return Registry().create(name, rng)


def create_extensible(name: str, rng: random.Random) -> BrokerSelectionStrategy:
    """A new Extensible BrokerSelectionStrategy: a full Pulsar class name or 'pkg.module:Class'."""
    return ExtensibleRegistry().create(name, rng)


def names() -> list[str]:
    """The built-in Modular strategy names, sorted."""
    return sorted(MODULAR_BUILTINS)


def extensible_names() -> list[str]:
    """The built-in Extensible BrokerSelectionStrategy names (full class names), sorted."""
    return sorted(EXTENSIBLE_BUILTINS)
