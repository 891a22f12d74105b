"""The scaled wall-clock event loop: emulated time = real elapsed time x `speed`.

Time flows on its own, `speed` times faster than real time, and the same actor code runs unchanged
because it only ever reads `loop.time()` and waits with anyio timers. Not deterministic, and on a
starved process timeouts fire before the work due ahead of them: `WallClock` (`--clock wall`) uses
`PacedEventLoop` instead, which keeps virtual time and only waits for the wall clock. Kept for callers
that want free-running real time.
"""

from __future__ import annotations

import asyncio
import math
import selectors
import time
from collections.abc import Callable

from .selector import DelegatingSelector

__all__ = ["ScaledWallEventLoop", "scaled_wall_loop_factory"]


def _check_speed(speed: float) -> float:
    if isinstance(speed, bool) or not isinstance(speed, (int, float)):
        raise TypeError(f"speed must be a number (emulated seconds per real second), got {speed!r}")
    if not (speed > 0 and math.isfinite(speed)):
        raise ValueError(f"speed must be a finite number > 0 (emulated seconds per real second), "
                         f"got {speed!r}")
    return float(speed)


class _ScaledSelector(DelegatingSelector):
    """The loop asks to wait in emulated seconds; really wait that long divided by the speed."""

    def __init__(self, real: selectors.BaseSelector, speed: float) -> None:
        super().__init__(real)
        self._speed = speed

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        return self._real.select(None if timeout is None else timeout / self._speed)


class ScaledWallEventLoop(asyncio.SelectorEventLoop):
    """An asyncio loop whose `time()` starts at 0.0 and runs `speed` times faster than real time."""

    _closed = True  # until asyncio's __init__ runs: a refused argument must not upset __del__
    _clock_resolution: float  # BaseEventLoop's, which typeshed leaves out

    def __init__(self, speed: float = 1.0) -> None:
        self.speed = _check_speed(speed)
        self._origin = time.monotonic()
        super().__init__(_ScaledSelector(selectors.DefaultSelector(), self.speed))
        self._clock_resolution *= self.speed  # one real clock tick, in emulated seconds

    def time(self) -> float:
        return (time.monotonic() - self._origin) * self.speed


def scaled_wall_loop_factory(speed: float) -> Callable[[], asyncio.AbstractEventLoop]:
    """A `loop_factory` for anyio.run / asyncio.Runner; checks `speed` now, not at loop creation."""
    speed = _check_speed(speed)
    return lambda: ScaledWallEventLoop(speed)
