"""strategies.create / names / Registry."""

from __future__ import annotations

import random

import pytest

import strategies
from strategies.least_long_term_message_rate import LeastLongTermMessageRate
from strategies.round_robin import RoundRobinBrokerSelector


def test_short_name_and_pulsar_fqcn() -> None:
    rng = random.Random(1)
    assert isinstance(strategies.create("LeastLongTermMessageRate", rng), LeastLongTermMessageRate)
    fqcn = "org.apache.pulsar.broker.loadbalance.impl.LeastLongTermMessageRate"
    assert isinstance(strategies.create(fqcn, rng), LeastLongTermMessageRate)


def test_module_colon_class() -> None:
    s = strategies.create("strategies.round_robin:RoundRobinBrokerSelector", random.Random(1))
    assert isinstance(s, RoundRobinBrokerSelector)


def test_unknown_name_lists_known_ones() -> None:
    with pytest.raises(ValueError) as e:
        strategies.create("LeastLoadedServer", random.Random(1))
    for name in strategies.names():
        assert name in str(e.value)


@pytest.mark.parametrize("name,hint", [
    ("LeastLongTermMesageRate", "LeastLongTermMessageRate"),
    ("org.apache.pulsar.broker.loadbalance.impl.RoundRobinBrokerSelecter", "RoundRobinBrokerSelector"),
    ("leastresourceusagewithweight", "LeastResourceUsageWithWeight"),
])
def test_a_typo_gets_did_you_mean(name: str, hint: str) -> None:
    with pytest.raises(ValueError, match=rf"unknown placement strategy '{name}' \(did you mean {hint}\?\); known: "):
        strategies.create(name, random.Random(1))


def test_a_class_missing_from_a_module_gets_did_you_mean() -> None:
    hint = r"has no attribute 'RoundRobinSelector' \(did you mean RoundRobinBrokerSelector\?\)"
    with pytest.raises(ValueError, match=hint):
        strategies.create("strategies.round_robin:RoundRobinSelector", random.Random(1))


@pytest.mark.parametrize(
    "path",
    ["no_such_module_xyz:Thing", "strategies.round_robin:Nope", "random:Random", "strategies.round_robin:"],
)
def test_bad_import_paths_are_value_errors(path: str) -> None:
    with pytest.raises(ValueError, match="strategy"):
        strategies.create(path, random.Random(1))


def test_rng_must_be_a_random() -> None:
    with pytest.raises(TypeError, match="rng"):
        strategies.create("LeastLongTermMessageRate", 7)  # type: ignore[arg-type]


class MyStrategy(strategies.BasePlacementStrategy):
    def select_broker(self, candidates, bundle_to_assign, load_data, conf):  # type: ignore[no-untyped-def]
        return min(candidates) if candidates else None


def test_registry_register_is_local_to_the_registry() -> None:
    reg = strategies.Registry()
    reg.register("Mine", MyStrategy)
    assert "Mine" in reg.names()
    assert isinstance(reg.create("Mine", random.Random(0)), MyStrategy)
    assert "Mine" not in strategies.names()
    with pytest.raises(ValueError):
        strategies.create("Mine", random.Random(0))
    with pytest.raises(ValueError, match="not a placement strategy"):
        reg.register("Bad", int)
    with pytest.raises(ValueError, match="name"):
        reg.register("", MyStrategy)


def test_names_are_the_modular_builtins() -> None:
    assert strategies.names() == sorted(strategies.MODULAR_BUILTINS)
    assert set(strategies.BUILTINS) == set(strategies.MODULAR_BUILTINS) | set(strategies.EXTENSIBLE_BUILTINS)
    assert {"LeastLongTermMessageRate", "LeastResourceUsageWithWeight", "RoundRobinBrokerSelector"} <= set(
        strategies.names()
    )
