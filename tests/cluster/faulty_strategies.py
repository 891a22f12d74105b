"""A user's strategies and shedders that raise, loaded by name ("tests.cluster.faulty_strategies:X")."""

from __future__ import annotations

from typing import Any

from shedders.overload_shedder import OverloadShedder
from strategies.least_long_term_message_rate import LeastLongTermMessageRate


class FlakyPlacement(LeastLongTermMessageRate):
    """Raises on its first `FAILS` selections, then places as LeastLongTermMessageRate."""

    FAILS = 3

    def __init__(self, rng: Any) -> None:
        super().__init__(rng)
        self.calls = 0

    def select_broker(self, *args: Any, **kwargs: Any) -> str | None:
        self.calls += 1
        if self.calls <= self.FAILS:
            raise RuntimeError("flaky placement")
        return super().select_broker(*args, **kwargs)


class RaisingShedder(OverloadShedder):
    """Every shedding cycle raises."""

    def find_bundles_for_unloading(self, load_data: Any, conf: Any) -> Any:
        raise ZeroDivisionError("shedder bug")
