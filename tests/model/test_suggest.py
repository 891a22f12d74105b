"""emulator.model.suggest: the one "did you mean" every unknown name gets."""

from __future__ import annotations

import pytest

from emulator.model.config import LOAD_MANAGER_CLASSES, ServiceConfig
from emulator.model.suggest import close_matches, did_you_mean

SCENARIOS = ["broker-crash", "default", "overloading", "pulsar3-scale-up", "scale-down", "scale-up"]
SHEDDERS = ["AvgShedder", "OverloadShedder", "ThresholdShedder", "UniformLoadShedder"]
KEYS = list(ServiceConfig().to_properties())


@pytest.mark.parametrize("word,choices,expected", [
    ("defualt", SCENARIOS, "default"),                       # swapped letters
    ("scale-upp", SCENARIOS, "scale-up"),                    # the closest of two alike
    ("wal", ["virtual", "wall"], "wall"),                    # a letter dropped
    ("warn", ["debug", "info", "warning", "error"], "warning"),  # a prefix of the known one
    ("rn", ["run", "scenarios", "monitor"], "run"),
    ("thresholdshedder", SHEDDERS, "ThresholdShedder"),      # case is ignored
    ("UniformShedder", SHEDDERS, "UniformLoadShedder"),      # a word left out
    ("org.apache.pulsar.broker.loadbalance.impl.ThresholdShedr", SHEDDERS, "ThresholdShedder"),
    ("ModularLoadManagerImp", LOAD_MANAGER_CLASSES, LOAD_MANAGER_CLASSES[0]),   # by the class's last part
    ("loadBalancerSheddingIntervalMinute", KEYS, "loadBalancerSheddingIntervalMinutes"),
])
def test_a_typo_finds_the_known_name(word, choices, expected):
    assert close_matches(word, choices) == [expected]
    assert did_you_mean(word, choices) == f" (did you mean {expected}?)"


@pytest.mark.parametrize("word,choices", [
    ("zzz", SCENARIOS),
    ("com.example.Missing", LOAD_MANAGER_CLASSES),
    ("loadBalancerFoo", KEYS),          # a long shared prefix is not a likeness (0.76 like ...Enabled)
    ("sine", ["steady", "ramp", "spike", "diurnal", "noise"]),
    ("", SCENARIOS),
    ("default", SCENARIOS),             # the name itself is never suggested
    ("defualt.toml", ["pyproject.toml"]),   # only a Java class name is compared by its last dotted part
])
def test_nothing_close_is_no_hint(word, choices):
    assert did_you_mean(word, choices) == ""


def test_two_hints_when_asked():
    assert did_you_mean("scale", SCENARIOS, n=2) == " (did you mean scale-up or scale-down?)"   # closest first
