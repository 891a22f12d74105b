"""shedders.create / names / Registry, and AvgShedder in the placement registry."""

from __future__ import annotations

import random

import pytest

import shedders
import strategies
from emulator.cluster.strategy_pair import create_pair
from emulator.model.config import ServiceConfig
from shedders.avg_shedder import AvgShedder
from shedders.threshold_shedder import ThresholdShedder


def test_names() -> None:
    assert shedders.names() == ["AvgShedder", "OverloadShedder", "ThresholdShedder", "UniformLoadShedder"]


def test_short_name_fqcn_and_module_colon_class() -> None:
    rng = random.Random(1)
    assert isinstance(shedders.create("ThresholdShedder", rng), ThresholdShedder)
    fqcn = "org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder"
    assert isinstance(shedders.create(fqcn, rng), ThresholdShedder)
    assert isinstance(shedders.create("shedders.threshold_shedder:ThresholdShedder", rng), ThresholdShedder)


def test_default_config_names_resolve() -> None:
    conf = ServiceConfig()
    default = shedders.create(conf.load_balancer_load_shedding_strategy, random.Random(1))
    assert isinstance(default, ThresholdShedder)
    b26609 = ServiceConfig.for_profile("B+26609")
    placement, shedder = create_pair(
        b26609.load_balancer_load_placement_strategy,
        b26609.load_balancer_load_shedding_strategy,
        random.Random(1),
    )
    assert placement is shedder and isinstance(shedder, AvgShedder)


def test_unknown_name_lists_known_ones() -> None:
    with pytest.raises(ValueError) as e:
        shedders.create("LeastLongTermMessageRate", random.Random(1))
    for name in shedders.names():
        assert name in str(e.value)


@pytest.mark.parametrize("name,hint", [
    ("ThresholdShedr", "ThresholdShedder"),
    ("org.apache.pulsar.broker.loadbalance.impl.UniformShedder", "UniformLoadShedder"),
    ("overloadshedder", "OverloadShedder"),
])
def test_a_typo_gets_did_you_mean(name: str, hint: str) -> None:
    with pytest.raises(ValueError, match=rf"unknown load shedding strategy '{name}' \(did you mean {hint}\?\); "):
        shedders.create(name, random.Random(1))


def test_an_extensible_typo_gets_the_full_class_name() -> None:
    with pytest.raises(ValueError, match=r"\(did you mean org\.apache\.pulsar\.broker\.loadbalance\.extensions\."
                                         r"scheduler\.TransferShedder\?\)"):
        shedders.create_extensible("TransferShedr", random.Random(1))


@pytest.mark.parametrize(
    "path",
    ["no_such_module_xyz:Thing", "shedders.base:Nope", "random:Random", "shedders.base:", ":X"],
)
def test_bad_import_paths_are_value_errors(path: str) -> None:
    with pytest.raises(ValueError, match="shedder"):
        shedders.create(path, random.Random(1))


def test_rng_and_name_types() -> None:
    with pytest.raises(TypeError, match="rng"):
        shedders.create("ThresholdShedder", 7)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="name"):
        shedders.create(None, random.Random(1))  # type: ignore[arg-type]


class Never(shedders.BaseShedder):
    def find_bundles_for_unloading(self, load_data, conf):  # type: ignore[no-untyped-def]
        return []


def test_registry_register_is_local() -> None:
    reg = shedders.Registry()
    reg.register("Never", Never)
    assert isinstance(reg.create("Never", random.Random(0)), Never)
    assert "Never" not in shedders.names()
    with pytest.raises(ValueError):
        shedders.create("Never", random.Random(0))
    with pytest.raises(ValueError, match="not a load shedding strategy"):
        reg.register("Bad", int)
    with pytest.raises(ValueError, match="name"):
        reg.register("a:b", Never)


# --- One instance, two roles -------------------------------------------------------------------------


def test_avg_shedder_is_registered_as_a_placement_strategy() -> None:
    assert strategies.BUILTINS["AvgShedder"] == "shedders.avg_shedder:AvgShedder"
    assert "AvgShedder" in strategies.names()
    for obj in (
        strategies.create("AvgShedder", random.Random(1)),
        strategies.create("org.apache.pulsar.broker.loadbalance.impl.AvgShedder", random.Random(1)),
        shedders.create("AvgShedder", random.Random(1)),
    ):
        assert isinstance(obj, AvgShedder)
        assert callable(obj.select_broker) and callable(obj.find_bundles_for_unloading)
        assert isinstance(obj, strategies.PlacementStrategy)
        assert isinstance(obj, shedders.LoadSheddingStrategy)
