"""Clock, VirtualClock, WallClock and run()."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from emulator.runtime import (Clock, PacedEventLoop, VirtualClock, VirtualEventLoop,
                              WallClock, run)


def test_kinds_and_protocol():
    assert VirtualClock().kind == "virtual"
    assert WallClock(speed=10).kind == "wall"
    assert isinstance(VirtualClock(), Clock) and isinstance(WallClock(), Clock)


def test_loop_factory_makes_a_new_loop_of_the_right_kind():
    virtual, wall = VirtualClock(stall_timeout=0.5), WallClock(speed=7)
    loops = [virtual.loop_factory(), virtual.loop_factory(), wall.loop_factory()]
    try:
        assert loops[0] is not loops[1]
        assert isinstance(loops[0], VirtualEventLoop) and loops[0].stall_timeout == 0.5
        assert isinstance(loops[2], PacedEventLoop) and loops[2].speed == 7.0
    finally:
        for loop in loops:
            loop.close()


def test_run_uses_the_clock_and_returns_the_result():
    clock = VirtualClock()

    async def main(delay, tag):
        await anyio.sleep(delay)
        return tag, clock.now(), clock.now_ms()

    assert run(main, 4.35, "x", clock=clock) == ("x", 4.35, 4350)


def test_now_works_from_any_task_of_the_run():
    clock = VirtualClock()

    async def main():
        seen = []

        async def worker(delay):
            await anyio.sleep(delay)
            seen.append(clock.now())

        async with anyio.create_task_group() as tg:
            for delay in (3, 1, 2):
                tg.start_soon(worker, delay)
        return seen

    assert run(main, clock=clock) == [1.0, 2.0, 3.0]


def test_wall_clock_now_is_emulated_seconds():
    clock = WallClock(speed=200)

    async def main():
        await anyio.sleep(2.0)  # 10 ms real
        return clock.now()

    assert 2.0 <= run(main, clock=clock) < 100


@pytest.mark.asyncio
async def test_now_on_a_foreign_loop_counts_from_its_first_read(monkeypatch):
    clock = VirtualClock()
    loop = asyncio.get_running_loop()
    monkeypatch.setattr("emulator.runtime.clock.ZERO_ORIGIN_LOOPS", ())  # pretend it is foreign
    await anyio.sleep(100)
    assert clock.now() == 0.0
    await anyio.sleep(5)
    assert clock.now() == 5.0 and loop.time() >= 105.0


def test_now_outside_a_run_says_where_to_call_it():
    with pytest.raises(RuntimeError, match="call it from inside the run"):
        VirtualClock().now()


def test_run_refuses_a_coroutine_object_with_the_fix():
    async def main():
        return 1

    with pytest.raises(TypeError, match=r"run\(main, arg, clock=clock\)  # correct!"):
        run(main(), clock=VirtualClock())


def test_run_refuses_a_non_clock():
    async def main():
        return 1

    with pytest.raises(TypeError, match="clock must be a Clock"):
        run(main, clock="virtual")


def test_bad_clock_arguments():
    with pytest.raises(ValueError, match="speed must be a finite number > 0.*got 0"):
        WallClock(speed=0)
    with pytest.raises(ValueError, match="stall_timeout.*got -1"):
        VirtualClock(stall_timeout=-1)


def test_actors_run_unchanged_on_the_scaled_wall_clock():
    import time

    from emulator.runtime import Actor, ActorSystem

    clock = WallClock(speed=100)

    class Ticker(Actor):
        ticks: list[float] = []

        async def on_start(self):
            self.start_soon(self.tick)

        async def tick(self):
            for _ in range(5):
                await anyio.sleep(1.0)
                self.ticks.append(self.now)

    async def main():
        async with ActorSystem(1, clock) as system:
            ticker = system.spawn(Ticker("ticker", system))
            await anyio.sleep(8.0)  # margin: on a busy machine each real-time tick may wake late
            return ticker.ticks

    start = time.perf_counter()
    ticks = run(main, clock=clock)
    assert len(ticks) == 5 and all(t >= i + 1 for i, t in enumerate(ticks))
    assert time.perf_counter() - start < 5.0  # 8 emulated s at speed 100 is ~80 ms
