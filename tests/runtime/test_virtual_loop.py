"""VirtualEventLoop: exact jumps, FIFO ties, stall detection, frozen clock around external work."""

from __future__ import annotations

import asyncio
import threading
import time

import anyio
import pytest

from emulator.runtime import DeadlockError, VirtualEventLoop, run_external


def run_virtual(fn, stall_timeout=1.0, watchdog=10.0):
    """anyio.run on a fresh virtual loop, in a thread: a loop that spins fails the test instead of
    hanging the suite."""
    outcome = {}

    def target():
        try:
            outcome["value"] = anyio.run(fn, backend="asyncio", backend_options={
                "loop_factory": lambda: VirtualEventLoop(stall_timeout)})
        except BaseException as exc:  # noqa: BLE001 - handed back to the test's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(watchdog)
    assert not thread.is_alive(), f"virtual loop still running after {watchdog}s of real time"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@pytest.mark.asyncio
async def test_loop_is_virtual_and_starts_at_zero():
    loop = asyncio.get_running_loop()
    assert isinstance(loop, VirtualEventLoop)
    assert loop.time() == 0.0


@pytest.mark.asyncio
async def test_sleep_an_hour_takes_exactly_an_hour_and_no_wall_time():
    start_real = time.perf_counter()
    start = anyio.current_time()
    await anyio.sleep(3600)
    assert anyio.current_time() - start == 3600.0
    assert time.perf_counter() - start_real < 0.5


@pytest.mark.asyncio
async def test_timers_fire_exactly_on_their_deadlines_in_deadline_order():
    fired = []

    async def sleeper(delay):
        await anyio.sleep(delay)
        fired.append((delay, anyio.current_time()))

    delays = [((i * 7919) % 300) / 10 + 0.1 for i in range(300)]
    async with anyio.create_task_group() as tg:
        for delay in delays:
            tg.start_soon(sleeper, delay)
    assert [d for d, _ in fired] == sorted(delays)
    assert all(t == d for d, t in fired)  # error 0.0: the clock lands on each deadline


@pytest.mark.asyncio
async def test_equal_deadlines_fire_in_creation_order():
    loop = asyncio.get_running_loop()
    order = []
    when = loop.time() + 5.0
    # interleave with other deadlines so the heap reshuffles; vanilla asyncio breaks the tie order
    for i in range(200):
        loop.call_at(when, order.append, i)
        loop.call_at(when - 1.0 - i * 1e-3, lambda: None)
    await anyio.sleep(6)
    assert order == list(range(200))


@pytest.mark.asyncio
async def test_tasks_sleeping_the_same_time_wake_in_start_order():
    woke = []

    async def sleeper(i):
        await anyio.sleep(10)
        woke.append(i)

    async with anyio.create_task_group() as tg:
        for i in range(50):
            tg.start_soon(sleeper, i)
    assert woke == list(range(50))


@pytest.mark.asyncio
async def test_timeouts_use_virtual_time():
    start = anyio.current_time()
    with anyio.move_on_after(60):
        await anyio.Event().wait()
    assert anyio.current_time() - start == 60.0
    with pytest.raises(TimeoutError):
        with anyio.fail_after(5):
            await anyio.sleep(10)
    assert anyio.current_time() - start == 65.0


def test_far_from_zero_the_clock_still_lands_on_deadlines():
    """At t=1e10 the float step exceeds asyncio's 1e-9 resolution; the loop must not spin."""
    async def main():
        await anyio.sleep(1e10)  # noqa: ASYNC116 (a far deadline on purpose, not forever)
        for _ in range(3):
            await anyio.sleep(1e-6)
        return anyio.current_time()

    assert run_virtual(main) > 1e10


def test_deadlock_raises_deadlock_error_out_of_anyio_run():
    async def main():
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.sleep_forever)  # sleep(inf) is no timer either
            await anyio.Event().wait()

    start = time.perf_counter()
    with pytest.raises(DeadlockError, match=r"simulation stalled: every task is waiting and no "
                                            r"timer is scheduled at t=0.0s"):
        run_virtual(main, stall_timeout=0.05)
    assert time.perf_counter() - start < 2.0


def test_deadlock_reports_the_virtual_time_it_happened_at():
    async def main():
        await anyio.sleep(42.5)
        await anyio.Event().wait()

    with pytest.raises(DeadlockError, match=r"t=42.5s"):
        run_virtual(main, stall_timeout=0.05)


@pytest.mark.asyncio
async def test_external_work_freezes_the_clock():
    seen = {}

    async def thread_user():
        await run_external(time.sleep, 0.05)
        seen["thread_done"] = anyio.current_time()

    async def sleeper():
        await anyio.sleep(10)
        seen["sleeper_done"] = anyio.current_time()

    start = anyio.current_time()
    async with anyio.create_task_group() as tg:
        tg.start_soon(sleeper)
        tg.start_soon(thread_user)
    assert seen == {"thread_done": start, "sleeper_done": start + 10.0}


@pytest.mark.asyncio
async def test_unmarked_thread_work_lets_the_clock_jump_past_it():
    """The reason for the marker: without it, virtual time does not wait for threads."""
    seen = {}

    async def thread_user():
        await anyio.to_thread.run_sync(time.sleep, 0.05)
        seen["thread_done"] = anyio.current_time()

    async with anyio.create_task_group() as tg:
        tg.start_soon(anyio.sleep, 10)
        tg.start_soon(thread_user)
    assert seen["thread_done"] >= 10.0


@pytest.mark.asyncio
async def test_run_in_executor_counts_as_external_work():
    loop = asyncio.get_running_loop()
    seen = {}

    async def executor_user():
        await loop.run_in_executor(None, time.sleep, 0.05)
        seen["executor_done"] = loop.time()

    start = loop.time()
    async with anyio.create_task_group() as tg:
        tg.start_soon(anyio.sleep, 10)
        tg.start_soon(executor_user)
    assert seen["executor_done"] == start
    assert loop._external_in_flight == 0


def test_external_work_without_timers_is_not_a_deadlock():
    async def main():
        return await run_external(lambda: time.sleep(0.15) or "done")

    assert run_virtual(main, stall_timeout=0.05) == "done"


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "1", True])
def test_bad_stall_timeout_is_refused(bad):
    with pytest.raises(ValueError, match="stall_timeout"):
        VirtualEventLoop(bad)


@pytest.mark.parametrize("debug", [False, True])
def test_a_timer_has_every_field_asyncio_s_timer_handle_gives_it(debug):
    """`_FifoTimerHandle` sets TimerHandle's fields itself outside debug mode: the same values as
    asyncio's constructor, slot by slot (a Python upgrade that adds a field fails here)."""
    import contextvars

    from emulator.runtime.virtual_loop import _FifoTimerHandle

    def slots(cls: type) -> set[str]:
        return {s for k in cls.__mro__ for s in getattr(k, "__slots__", ()) if s != "__weakref__"}

    loop = VirtualEventLoop()
    loop.set_debug(debug)
    try:
        ctx = contextvars.copy_context()
        for context in (ctx, None):
            ours = _FifoTimerHandle(12.5, print, (1, 2), loop, context, 7)
            theirs = asyncio.TimerHandle(12.5, print, (1, 2), loop, context)
            assert slots(_FifoTimerHandle) - slots(asyncio.TimerHandle) == {"_seq"}
            for name in slots(asyncio.TimerHandle):
                mine, asyncio_s = getattr(ours, name), getattr(theirs, name)
                if name == "_context" and context is None:
                    assert type(mine) is type(asyncio_s)        # a fresh copy each
                elif name == "_source_traceback" and debug:
                    assert mine is not None and asyncio_s is not None
                else:
                    assert mine == asyncio_s, name
            assert ours._seq == 7
    finally:
        loop.close()


@pytest.mark.parametrize("debug", [False, True])
def test_equal_deadlines_fire_in_creation_order_and_debug_mode_runs_the_same_loop(debug):
    """The heap holds (deadline, creation number, timer): ties fire in creation order, cancelled
    timers never fire, and debug mode (asyncio's iteration cannot read that heap) runs the same
    rounds with the current handle set, as asyncio's debug loop does."""
    loop = VirtualEventLoop()
    loop.set_debug(debug)
    fired: list[tuple[int, float, bool]] = []

    def note(i: int) -> None:
        fired.append((i, loop.time(), loop._current_handle is not None))

    try:
        handles = [loop.call_at(5.0 if i % 2 else 2.5, note, i) for i in range(40)]
        handles[7].cancel()
        loop.call_at(9.0, loop.stop)
        loop.run_forever()
    finally:
        loop.close()
    evens = [(i, 2.5, debug) for i in range(0, 40, 2)]
    odds = [(i, 5.0, debug) for i in range(1, 40, 2) if i != 7]
    assert fired == evens + odds


def test_a_failing_callback_reaches_the_exception_handler_as_from_asyncio_s_handle():
    """`_run_once` runs a plain handle's callback inline: a failure must still reach the loop's
    exception handler with Handle._run's context, and the loop must go on."""
    loop = VirtualEventLoop()
    seen: list[dict] = []
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    after: list[float] = []

    def boom() -> None:
        raise ZeroDivisionError("x")

    try:
        loop.call_soon(boom)
        timer = loop.call_at(3.0, boom)
        loop.call_at(4.0, lambda: after.append(loop.time()))
        loop.call_at(5.0, loop.stop)
        loop.run_forever()
    finally:
        loop.close()
    assert [type(c["exception"]) for c in seen] == [ZeroDivisionError, ZeroDivisionError]
    assert seen[0]["message"].startswith("Exception in callback ") and "boom" in seen[0]["message"]
    assert seen[1]["handle"] is timer
    assert after == [4.0]


def test_the_real_selector_is_polled_by_wall_time_not_at_every_instant():
    """A poll is a system call: thousands of instants in a millisecond of wall time need one, yet a
    real event (here a socket's data, written by a thread) is still seen while the clock runs on."""
    import socket

    polls = 0

    async def main():
        nonlocal polls
        loop = asyncio.get_running_loop()
        real = loop._selector._real
        select = real.select

        def counting(timeout=None):
            nonlocal polls
            polls += 1
            return select(timeout)

        real.select = counting
        for _ in range(5000):            # 5,000 instants
            await asyncio.sleep(1.0)
        instants_polls = polls
        a, b = socket.socketpair()
        got = asyncio.Event()
        loop.add_reader(a.fileno(), got.set)
        n = 0
        while not got.is_set():          # the clock keeps jumping; real data arrives meanwhile
            if n == 100:
                # written on the socket directly (not from a timer thread, whose start on a loaded
                # machine could take longer than the test's real-time limit): only a poll of the
                # real selector can tell the loop
                b.send(b"x")
            await asyncio.sleep(1.0)
            n += 1
        loop.remove_reader(a.fileno())
        a.close()
        b.close()
        return instants_polls, n

    instants_polls, n = run_virtual(main)
    assert instants_polls < 1000
    assert n > 100                       # seen after it was written, by a later poll


def test_runtime_sleep_keeps_asyncio_sleep_s_order_of_callbacks():
    """`emulator.runtime.sleep` makes asyncio.sleep's timer at the same point: tasks mixing both, with
    equal deadlines and plain callbacks at the same instants, run in the same order as with asyncio's."""
    from emulator.runtime import sleep as fast_sleep

    def trace(use_fast: bool) -> list[tuple[float, str]]:
        async def main():
            loop = asyncio.get_running_loop()
            out: list[tuple[float, str]] = []

            async def worker(name: str, delays: list[float], fast: bool) -> None:
                for d in delays:
                    await (fast_sleep(d) if fast else asyncio.sleep(d))
                    out.append((loop.time(), name))

            for t in (1.0, 2.0, 2.5, 3.0):
                loop.call_at(t, lambda t=t: out.append((loop.time(), f"cb{t}")))
            async with anyio.create_task_group() as tg:
                for i in range(6):
                    delays = [0.5, 0.5, 1.0, 0.0, 0.5] if i % 2 else [1.0, 0.0, 1.0, 0.5, 0.5]
                    tg.start_soon(worker, f"w{i}", delays, use_fast and i % 3 != 0)
            return out

        return run_virtual(main)

    assert trace(True) == trace(False)
    assert len(trace(True)) == 6 * 5 + 4


def test_runtime_sleep_cancelled_leaves_no_timer():
    from emulator.runtime import sleep as fast_sleep

    async def main():
        loop = asyncio.get_running_loop()
        with anyio.move_on_after(2.0):
            await fast_sleep(10.0)
        t = loop.time()
        return t, [e for e in loop._scheduled if not e[2]._cancelled]

    t, pending = run_virtual(main)
    assert t == 2.0 and pending == []
