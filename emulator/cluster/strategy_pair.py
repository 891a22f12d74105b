"""The (placement strategy, shedder) pair a load manager runs, as MLMI's `initialize` builds them.

Above both `strategies/` and `shedders/` (which do not import each other): one instance serves both
roles when the placement class also sheds (AvgShedder).
"""

from __future__ import annotations

import random
from typing import Any

import shedders
import strategies

__all__ = ["create_pair"]


def create_pair(
    placement_name: str,
    shedding_name: str,
    rng: random.Random,
    *,
    placement_registry: strategies.Registry | None = None,
    shedder_registry: shedders.Registry | None = None,
) -> tuple[Any, shedders.LoadSheddingStrategy]:
    """(placement strategy, shedder) as MLMI's `initialize` builds them.

    A placement class that also sheds (AvgShedder) must be the shedding strategy too, and then one
    instance serves both roles; otherwise Pulsar throws IllegalArgumentException, here ValueError.
    Pulsar compares the two class-name strings; we compare the resolved classes, so "AvgShedder"
    and its FQCN match. Two distinct strategies are two instances sharing `rng`.
    """
    if not isinstance(rng, random.Random):
        raise TypeError(f"rng must be a random.Random, got {type(rng).__name__}")
    placements = placement_registry if placement_registry is not None else strategies.Registry()
    sheds = shedder_registry if shedder_registry is not None else shedders.Registry()
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
