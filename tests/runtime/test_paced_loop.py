"""PacedEventLoop (`--clock wall`): virtual time held back to real time x speed, never pushed by it."""

from __future__ import annotations

import asyncio
import time

import anyio
import pytest

from emulator.runtime import PacedEventLoop, WallClock, WallLag, run


def test_timers_fire_in_virtual_order_at_their_exact_instants_and_wait_for_the_wall_clock():
    fired: list[tuple[str, float]] = []

    async def main():
        loop = asyncio.get_running_loop()
        assert isinstance(loop, PacedEventLoop)
        start = time.monotonic()

        async def sleeper(name: str, delay: float) -> None:
            await anyio.sleep(delay)
            fired.append((name, loop.time()))

        async with anyio.create_task_group() as tg:
            for name, delay in (("c", 3.0), ("a", 1.0), ("b", 2.0), ("a2", 1.0)):
                tg.start_soon(sleeper, name, delay)
        return time.monotonic() - start

    real = run(main, clock=WallClock(speed=200))
    assert fired == [("a", 1.0), ("a2", 1.0), ("b", 2.0), ("c", 3.0)]   # FIFO ties, exact instants
    assert real >= 3.0 / 200 * 0.9   # 15 ms: the jumps waited for real time x speed


def test_a_starved_process_does_not_move_emulated_time_it_lags_instead():
    """Real time spent working is not emulated time: a timeout due after the work cannot fire before
    it (the old scaled wall clock let 100 emulated s pass during this block and the timeout fire)."""
    clock = WallClock(speed=1000)

    async def main():
        loop = asyncio.get_running_loop()
        await anyio.sleep(1.0)
        with anyio.fail_after(5.0):            # due at t = 6
            before = loop.time()
            time.sleep(0.1)  # noqa: ASYNC251 (blocking on purpose) 100 emulated s of real CPU starvation at speed 1000
            after = loop.time()
            await anyio.sleep(2.0)             # the work's own next step, due at t = 3
        return before, after, loop.time()

    before, after, end = run(main, clock=clock)
    assert before == after == 1.0 and end == 3.0
    assert clock.lag.max >= 50.0               # ~100 emulated s behind when t = 3 was reached


def test_lag_warns_once_per_threshold_crossing_and_rearms_after_recovery():
    lines: list[str] = []
    lag = WallLag(warn=lines.append, thresholds=(0.5, 5.0))
    speed = 100.0
    lag.observe(10.0, 1.0, speed, real=0.0)     # 0.1 real s behind: quiet
    assert lines == [] and lag.current == 10.0
    lag.observe(60.0, 2.0, speed, real=1.0)     # 0.6 s: over 0.5
    lag.observe(80.0, 3.0, speed, real=2.0)     # still over: no repeat
    assert len(lines) == 1 and "at t=2.0s" in lines[0] and "over 0.5" in lines[0]
    lag.observe(600.0, 4.0, speed, real=3.0)    # 6 s: over 5
    assert len(lines) == 2 and "over 5" in lines[1]
    lag.observe(0.0, 5.0, speed, real=4.0)      # caught up, but too soon to re-arm
    lag.observe(60.0, 6.0, speed, real=5.0)
    assert len(lines) == 2
    lag.observe(0.0, 7.0, speed, real=100.0)    # caught up a minute later: re-armed
    lag.observe(60.0, 8.0, speed, real=101.0)
    assert len(lines) == 3 and lag.warnings == 3
    assert lag.max == 600.0 and lag.current == 60.0


def test_negative_lag_is_on_time():
    lag = WallLag(warn=None)
    lag.observe(-3.0, 1.0, 10.0, real=0.0)
    assert lag.current == 0.0 and lag.max == 0.0


def test_a_deadlock_is_still_reported_on_the_wall_clock():
    from emulator.runtime import DeadlockError

    async def main():
        await anyio.Event().wait()

    with pytest.raises(DeadlockError):
        run(main, clock=WallClock(speed=100, stall_timeout=0.05))
