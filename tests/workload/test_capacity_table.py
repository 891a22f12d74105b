"""The [capacity] table: parts and keys checked, values read as their unit says."""

import pytest

from emulator.cluster.capacity import Capacity
from emulator.workload.capacity_table import capacity
from emulator.workload.errors import ScenarioError


def test_no_table_keeps_the_calibrated_defaults():
    assert capacity({}) == Capacity()


def test_an_unknown_part_is_one_line_with_a_suggestion():
    with pytest.raises(ScenarioError, match=r"capacity\.bokkeeper.*bookkeeper"):
        capacity({"bokkeeper": {}})


def test_a_part_must_be_a_table():
    with pytest.raises(ScenarioError, match=r"capacity\.broker.*expected a table"):
        capacity({"broker": 3})
