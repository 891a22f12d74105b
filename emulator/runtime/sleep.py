"""`sleep`: asyncio.sleep's timer and wake-up, with fewer Python frames, for the loops that run on every
broker every few emulated seconds (report ticks, session heartbeats, stats periods).

asyncio.sleep goes through `call_later`, `create_future` and, once awake, cancels its spent timer
(three frames more); anyio.sleep adds a backend lookup on top. This one makes the same timer at the same
deadline (`loop.time() + delay`, the float `call_later` computes), at the same point of the task, with
the same callback (`_set_result_unless_cancelled`), so the timer's creation number, the instant it fires
and the round its task wakes in are asyncio's: the order of callbacks does not change. A spent timer is
not cancelled (that only drops its references), one still pending is, as asyncio does when the sleep is
cancelled. `delay <= 0` yields once, as asyncio.sleep(0).
"""

from __future__ import annotations

import asyncio
from asyncio import Future, get_running_loop

__all__ = ["sleep"]

_set_result_unless_cancelled = asyncio.futures._set_result_unless_cancelled  # type: ignore[attr-defined]


async def sleep(delay: float) -> None:
    """Suspend the task for `delay` seconds of the loop's time (see the module docstring)."""
    if delay <= 0:
        await asyncio.sleep(0)
        return
    loop = get_running_loop()
    future: Future[None] = Future(loop=loop)
    timer = loop.call_at(loop.time() + delay, _set_result_unless_cancelled, future, None)
    try:
        await future
    except BaseException:
        timer.cancel()
        raise
