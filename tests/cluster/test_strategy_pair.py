"""create_pair: the (placement, shedder) pair of MLMI's `initialize`; one AvgShedder for both roles."""

from __future__ import annotations

import random

import pytest

from emulator.cluster.strategy_pair import create_pair
from shedders.avg_shedder import AvgShedder
from shedders.threshold_shedder import ThresholdShedder
from strategies.least_long_term_message_rate import LeastLongTermMessageRate


def test_create_pair_shares_one_avg_shedder() -> None:
    placement, shedder = create_pair(
        "AvgShedder", "org.apache.pulsar.broker.loadbalance.impl.AvgShedder", random.Random(1)
    )
    assert placement is shedder and isinstance(placement, AvgShedder)


def test_create_pair_rejects_avg_placement_with_another_shedder() -> None:
    """Pulsar: IllegalArgumentException("The load shedding strategy: ... can't work with ...")."""
    with pytest.raises(ValueError, match="can't work with the placement strategy 'AvgShedder'"):
        create_pair("AvgShedder", "ThresholdShedder", random.Random(1))


def test_create_pair_of_distinct_strategies_gives_two_instances() -> None:
    placement, shedder = create_pair(
        "LeastLongTermMessageRate", "ThresholdShedder", random.Random(1)
    )
    assert isinstance(placement, LeastLongTermMessageRate) and isinstance(shedder, ThresholdShedder)
    # AvgShedder as the shedder only: a separate instance, whose plan placement never sees (as Pulsar).
    placement, shedder = create_pair("LeastLongTermMessageRate", "AvgShedder", random.Random(1))
    assert isinstance(placement, LeastLongTermMessageRate) and isinstance(shedder, AvgShedder)


def test_create_pair_bad_arguments() -> None:
    with pytest.raises(TypeError, match="rng"):
        create_pair("AvgShedder", "AvgShedder", None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown placement strategy"):
        create_pair("Nope", "ThresholdShedder", random.Random(1))
    with pytest.raises(ValueError, match="unknown load shedding strategy"):
        create_pair("LeastLongTermMessageRate", "Nope", random.Random(1))
