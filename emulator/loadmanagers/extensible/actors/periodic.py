"""`ScheduledExecutorService.scheduleAtFixedRate` on the emulated clock.

The Extensible load manager's periodic jobs (the two reporters, UnloadScheduler, SplitScheduler) are
scheduled at a fixed rate: run number n starts at `initial + n * period`; a run that takes longer
than the period makes the next one start as soon as it ends (runs never overlap), and an exception
ends nothing (each job catches and logs, as Pulsar's lambdas do).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

__all__ = ["at_fixed_rate"]


async def at_fixed_rate(
    now: Callable[[], float],
    initial_s: float,
    period_s: float,
    job: Callable[[], Awaitable[None]],
    keep_going: Callable[[], bool] = lambda: True,
) -> None:
    """Run `job` at `initial_s`, then every `period_s` seconds, while `keep_going()` (checked
    before each run: `ScheduledFuture.cancel(false)` lets a running job finish)."""
    if period_s <= 0:
        raise ValueError(f"period = {period_s} s; a fixed-rate job needs a period > 0")
    next_at = now() + initial_s
    while True:
        await anyio.sleep(max(0.0, next_at - now()))
        if not keep_going():
            return
        await job()
        next_at += period_s
