"""The value types of `[capacity]` fields, so the table parser knows how to read each one."""

from __future__ import annotations

from typing import Annotated

import msgspec

__all__ = ["Count", "PerSecond", "Ratio", "Seconds"]

Seconds = Annotated[float, msgspec.Meta(ge=0, extra={"unit": "seconds"})]
"""A duration: "5ms", "2s" or a number of seconds in a scenario."""
Count = Annotated[int, msgspec.Meta(ge=0, extra={"unit": "count"})]
"""Servers, threads, permits, operations (0: unlimited where the field says so)."""
PerSecond = Annotated[float, msgspec.Meta(ge=0, extra={"unit": "per second"})]
"""A throughput: operations or bytes per second (0: unlimited where the field says so)."""
Ratio = Annotated[float, msgspec.Meta(ge=0, extra={"unit": "ratio"})]
"""A dimensionless factor."""
