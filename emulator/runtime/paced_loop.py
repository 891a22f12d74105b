"""The wall-paced event loop: virtual time, held back to the wall clock times `speed`.

`--clock wall` used to read `time()` from the wall clock: on a starved process emulated timeouts then
fired before the work due ahead of them had run (sessions expired, asks timed out), and the run decided
differently from the same seed on the virtual clock. This loop keeps the virtual loop's semantics and
changes one step, as SimPy's `simpy.rt.RealtimeEnvironment` replaces only `step()`: when every task is
idle and the virtual loop would jump to the next timer, it first waits until the wall clock (x speed)
reaches that timer. Timers fire in the same order and at the same emulated instants as on the virtual
clock, so the same seed gives the same decisions; emulated time never runs ahead of the work due.

When the process cannot keep up, the timer is reached late: the lag (wall time x speed minus the
timer's emulated time) is kept in `WallLag` (current and max, for a gauge and the summary), and a
warning is written on stderr once each time the lag crosses a threshold upwards (rate-limited). The
loop then runs without waiting until it has caught up (SimPy's non-strict mode), so a passing stall
does not shift the rest of the run.

Real events (the metrics server's requests, signals) wake the real wait at once and run at the current
emulated time, as they do on the virtual clock.
"""

from __future__ import annotations

import math
import selectors
import sys
import time
from collections.abc import Callable

from .virtual_loop import VirtualEventLoop, _JumpingSelector
from .wall_loop import _check_speed

__all__ = ["LAG_THRESHOLDS", "PacedEventLoop", "WallLag"]

LAG_THRESHOLDS: tuple[float, ...] = (0.5, 5.0, 60.0, 600.0)
"""Real seconds behind (lag / speed) at which a warning is written, once per upward crossing. Real, not
emulated: what the lag costs is a live view (dashboard, /metrics) that shows the past; decisions are
the same at any lag. Below half a second a scrape every 15 s cannot tell."""

REARM_SECONDS = 60.0
"""A threshold warns again only after the lag fell below half of it and this many real seconds passed
since its last warning: a run hovering around a threshold warns once a minute, not on every timer."""


def _stderr(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


class WallLag:
    """How far the run is behind wall time x speed, in emulated seconds (`current`, `max`).

    `observe` is called each time the loop reaches a timer; see `LAG_THRESHOLDS` and `REARM_SECONDS`
    for when it warns."""

    __slots__ = ("current", "max", "warnings", "_armed", "_last", "_thresholds", "_warn")

    def __init__(self, warn: Callable[[str], None] | None = _stderr,
                 thresholds: tuple[float, ...] = LAG_THRESHOLDS) -> None:
        self.current = 0.0
        self.max = 0.0
        self.warnings = 0
        self._thresholds = thresholds
        self._armed = [True] * len(thresholds)
        self._last = [-math.inf] * len(thresholds)
        self._warn = warn

    def observe(self, lag: float, now: float, speed: float, real: float) -> None:
        """`lag` emulated seconds behind when reaching the timer at `now`; `real` is time.monotonic()."""
        lag = max(0.0, lag)
        self.current = lag
        if lag > self.max:
            self.max = lag
        behind = lag / speed
        crossed = None
        for i, threshold in enumerate(self._thresholds):
            if behind >= threshold:
                if self._armed[i]:
                    self._armed[i] = False
                    self._last[i] = real
                    crossed = threshold
            elif behind < threshold / 2 and real - self._last[i] >= REARM_SECONDS:
                self._armed[i] = True
        if crossed is not None:
            self.warnings += 1
            if self._warn is not None:
                self._warn(f"warning: --clock wall: at t={now:.1f}s the run is {lag:.1f} emulated s "
                           f"({behind:.1f} real s, over {crossed:g}) behind real time x {speed:g}: "
                           f"the machine cannot keep up; decisions are unchanged (time waits for the "
                           f"work), the live view lags; lower --speed to watch in real time")


class _PacedSelector(_JumpingSelector):
    """Before the jump, wait (really) until wall time x speed reaches the next timer."""

    _loop: PacedEventLoop

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        loop = self._loop
        if timeout is not None and timeout > 0 and not loop._external_in_flight:
            target = loop._next_deadline()
            if target is not None and target > loop._virtual_now:
                wait = (target - loop.wall_now()) / loop.speed
                if wait > 0:
                    ready = self._real.select(wait)
                    if ready:
                        return ready  # a real event first: handle it at the current emulated time
                    if (target - loop.wall_now()) / loop.speed > 0:  # woke a hair early
                        return ready
                loop.lag.observe(loop.wall_now() - target, target, loop.speed, time.monotonic())
        return super().select(timeout)


class PacedEventLoop(VirtualEventLoop):
    """A `VirtualEventLoop` whose jumps wait for the wall clock: emulated time <= real time x speed.

    `speed` is emulated seconds per real second; `lag` is the `WallLag` of the run."""

    _selector_class = _PacedSelector
    _skip_polls = False   # every jump waits in the selector for the wall clock

    def __init__(self, speed: float = 1.0, stall_timeout: float | None = 1.0,
                 lag: WallLag | None = None) -> None:
        self.speed = _check_speed(speed)
        self.lag = lag if lag is not None else WallLag()
        self._origin: float | None = None
        super().__init__(stall_timeout)

    def wall_now(self) -> float:
        """Real time x speed since the run first waited: where emulated time may go up to.

        The wall clock starts when the loop is first idle, not when it is made: building the cluster
        is work due at t = 0, and counting its real time as lag would warn on every start."""
        real = time.monotonic()
        if self._origin is None:
            self._origin = real - self._virtual_now / self.speed
        return (real - self._origin) * self.speed
