"""Deliberately broken placement strategies, loaded by name ("tests.testing.broken_strategies:X")."""

from __future__ import annotations

from typing import Any

from strategies.least_long_term_message_rate import LeastLongTermMessageRate


class PicksAGhost(LeastLongTermMessageRate):
    """Places every bundle on a broker that is not in the candidates (and does not exist)."""

    GHOST = "broker-99:8080"

    def select_broker(self, *args: Any, **kwargs: Any) -> str | None:
        return self.GHOST
