"""ScaledWallEventLoop: emulated time is real time times the speed."""

from __future__ import annotations

import asyncio
import time

import anyio
import pytest

from emulator.runtime import ScaledWallEventLoop, scaled_wall_loop_factory


def test_speed_100_makes_an_emulated_second_last_about_10_ms():
    async def main():
        loop = asyncio.get_running_loop()
        assert isinstance(loop, ScaledWallEventLoop)
        start_emulated, start_real = anyio.current_time(), time.perf_counter()
        await anyio.sleep(1.0)
        return anyio.current_time() - start_emulated, time.perf_counter() - start_real

    emulated, real = anyio.run(main, backend="asyncio",
                               backend_options={"loop_factory": scaled_wall_loop_factory(100)})
    assert emulated >= 1.0
    assert 0.005 <= real < 0.5  # ~10 ms; generous for a noisy machine


def test_time_starts_at_zero_and_scales_with_speed():
    loop = ScaledWallEventLoop(1000)
    try:
        first = loop.time()
        time.sleep(0.02)
        second = loop.time()
    finally:
        loop.close()
    assert 0.0 <= first < 5.0
    assert second - first >= 20 * 0.9  # 20 ms real = 20 emulated s at speed 1000


def test_timeouts_are_in_emulated_seconds():
    async def main():
        start = time.perf_counter()
        with anyio.move_on_after(5):  # 5 emulated s = 10 ms real at speed 500
            await anyio.Event().wait()
        return time.perf_counter() - start

    real = anyio.run(main, backend="asyncio",
                     backend_options={"loop_factory": scaled_wall_loop_factory(500)})
    assert 0.005 <= real < 0.5


@pytest.mark.parametrize("bad", [0, -2.5, float("nan"), float("inf")])
def test_speed_must_be_positive(bad):
    with pytest.raises(ValueError, match=f"speed must be .* got {bad!r}"):
        ScaledWallEventLoop(bad)
    with pytest.raises(ValueError, match="speed"):
        scaled_wall_loop_factory(bad)


def test_speed_must_be_a_number():
    with pytest.raises(TypeError, match="speed must be a number"):
        scaled_wall_loop_factory("fast")
