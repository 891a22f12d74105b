"""The clock interface: what "now" means for a run, and which event loop provides it.

Actors never read `time.time()`: they ask the cluster's `Clock`, which reads the running loop's
`time()` (virtual or scaled wall). The clock also makes the loop, so `run(main, clock=...)` picks
the kind of time for a whole run in one place (trio's `run(clock=...)`).
"""

from __future__ import annotations

import asyncio
import inspect
import math
import weakref
from threading import get_ident
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar, runtime_checkable

import anyio

from .gc_policy import RUN_GC_THRESHOLD, gc_tuned
from .huge_page_policy import huge_pages
from .paced_loop import PacedEventLoop, WallLag
from .virtual_loop import VirtualEventLoop, _check_stall_timeout
from .wall_loop import ScaledWallEventLoop, _check_speed

__all__ = ["Clock", "DEFAULT_START_EPOCH_MS", "VirtualClock", "WallClock", "epoch_ms", "run"]

T = TypeVar("T")
ZERO_ORIGIN_LOOPS = (VirtualEventLoop, ScaledWallEventLoop)


@runtime_checkable
class Clock(Protocol):
    def now(self) -> float:
        """Emulated seconds since the run started."""
        ...

    def now_ms(self) -> int:
        """`now()` in whole milliseconds, as Pulsar's timestamps."""
        ...

    def loop_factory(self) -> asyncio.AbstractEventLoop:
        """A new event loop for this clock (anyio.run's `loop_factory` backend option)."""
        ...


DEFAULT_START_EPOCH_MS = 1_704_067_200_000
"""2024-01-01T00:00:00Z: the calendar time of t = 0 when a run states none. Fixed, not "now", so that
a seed alone decides every recorded byte (load reports carry it in `lastUpdate`)."""


def epoch_ms(clock: Clock) -> int:
    """The calendar time of `clock.now()`, in epoch milliseconds (Pulsar's `System.currentTimeMillis()`):
    the clock's `start_epoch_ms` (default `DEFAULT_START_EPOCH_MS`) plus `now_ms()`."""
    return getattr(clock, "start_epoch_ms", DEFAULT_START_EPOCH_MS) + clock.now_ms()


class _LoopClock:
    """now() = the running loop's time() since the loop started. Our loops start at 0.0; any other
    loop (a test on plain asyncio) gets its origin recorded on the first read.

    The loop this clock made last is read without asking asyncio which loop runs: when it runs in
    this thread it is the running one (a thread runs one loop at a time). `get_running_loop()` makes
    a getpid() system call on every read (CPython checks for a fork), and a day's run reads the
    clock a few million times.

    `start_epoch_ms`: the calendar time of t = 0 (`epoch_ms`); it moves no timer."""

    kind = "abstract"
    start_epoch_ms: int = DEFAULT_START_EPOCH_MS

    def __init__(self) -> None:
        self._origins: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, float] = (
            weakref.WeakKeyDictionary())
        self._made: weakref.ref[VirtualEventLoop] | None = None

    def _made_loop(self, loop: VirtualEventLoop) -> VirtualEventLoop:
        self._made = weakref.ref(loop)
        return loop

    def now(self) -> float:
        made = self._made
        if made is not None:
            mine = made()
            if mine is not None and mine._thread_id == get_ident():
                return mine._virtual_now
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                f"{type(self).__name__}.now() reads the running event loop's time: call it from "
                f"inside the run (emulator.runtime.run(main, clock=clock) or an anyio test)") from None
        if isinstance(loop, ZERO_ORIGIN_LOOPS):
            return loop.time()
        origin = self._origins.get(loop)
        if origin is None:
            origin = self._origins[loop] = loop.time()
        return loop.time() - origin

    def now_ms(self) -> int:
        # floor, as currentTimeMillis(); the nanosecond nudge keeps 4.35 s at 4350 ms, not 4349
        return math.floor(self.now() * 1000.0 + 1e-6)


class VirtualClock(_LoopClock):
    """Virtual time (`VirtualEventLoop`): deterministic, jumps over idle periods."""

    kind = "virtual"

    def __init__(self, stall_timeout: float | None = 1.0) -> None:
        super().__init__()
        self.stall_timeout = _check_stall_timeout(stall_timeout)

    def loop_factory(self) -> asyncio.AbstractEventLoop:
        return self._made_loop(VirtualEventLoop(self.stall_timeout))

    def __repr__(self) -> str:
        return f"VirtualClock(stall_timeout={self.stall_timeout!r})"


class WallClock(_LoopClock):
    """Virtual time paced by real time x `speed` (`PacedEventLoop`): for live runs. Timers fire in the
    virtual clock's order, so a seed decides as on `VirtualClock`; only how late the run is behind the
    wall clock varies (`lag`, the `WallLag` of the loop made last)."""

    kind = "wall"

    def __init__(self, speed: float = 1.0, stall_timeout: float | None = 1.0) -> None:
        super().__init__()
        self.speed = _check_speed(speed)
        self.stall_timeout = _check_stall_timeout(stall_timeout)
        self.lag = WallLag()

    def loop_factory(self) -> asyncio.AbstractEventLoop:
        self.lag = WallLag()
        return self._made_loop(PacedEventLoop(self.speed, self.stall_timeout, lag=self.lag))

    def __repr__(self) -> str:
        return f"WallClock(speed={self.speed!r})"


def run(fn: Callable[..., Awaitable[T]], *args: object, clock: Clock,
        gc_threshold: int | None = RUN_GC_THRESHOLD, collapse_huge_pages: bool = True) -> T:
    """Run `await fn(*args)` on a new event loop made by `clock`; return its result.

    During the run the garbage collector's first threshold is raised to `gc_threshold` and its
    second to `RUN_GC_THRESHOLD1` (None: both untouched), which more than halves the wall time of
    large clusters (see `gc_policy`); with `collapse_huge_pages`, a heap past 1 GiB is moved onto
    2 MiB pages as it grows (see `huge_page_policy`: -10 to -18 % of CPU at a million topics)."""
    if inspect.iscoroutine(fn):
        fn.close()
        raise TypeError("run() takes an async function and its arguments, not a coroutine:\n"
                        "  run(main(arg), clock=clock)  # incorrect!\n"
                        "  run(main, arg, clock=clock)  # correct!")
    if not callable(fn):
        raise TypeError(f"run() needs an async function as fn, got {fn!r}")
    if not isinstance(clock, Clock):
        raise TypeError(f"clock must be a Clock (VirtualClock() or WallClock(speed)), got {clock!r}")
    with gc_tuned(gc_threshold), huge_pages(collapse_huge_pages):
        return anyio.run(fn, *args, backend="asyncio",
                         backend_options={"loop_factory": clock.loop_factory})
