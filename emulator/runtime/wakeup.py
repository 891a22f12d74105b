"""`Wakeup`: a plain callback of an actor, woken where a task sleeping until then would wake.

The hot periodic loops of a cluster (a broker's 5 s report tick, its session heartbeat, stats periods,
host-usage samples: about a million wake-ups in an emulated day of `default`) did their work in tasks
that slept between two rounds. A sleeping task's wake-up is a future, a timer whose callback sets it,
the future's done-callback that schedules the task, and a task step that resumes the coroutine's
frames. A `Wakeup` is the timer and one scheduled plain callback:

* `at(when)`: the loop's timer at `when` (a handle made at the same point and the same deadline as
  `sleep`'s); when it fires, it schedules the callback with `call_soon`, as the future's set_result
  schedules the task's step, so the callback runs in the round the task would have resumed in;
* `soon()`: `call_soon` of the callback, as `asyncio.sleep(0)`'s yield reschedules the task;
* `after(delay)`: either, as `emulator.runtime.sleep(delay)` would wait.

So the order of every callback of the loop is the same as with the sleeping task (the test checks it
against `sleep`). The callback runs as part of the actor: skipped once it is dead, an exception
escaping it crashes the actor (`Actor._call_guarded`). It must not await: work that has to wait (a
metadata write) goes on with `ask_then` callbacks, or in a task it starts. A pending wake-up is
cancelled when the actor dies, as a sleeping task's timer is when the task is cancelled.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections import deque
from collections.abc import Callable
from typing import Protocol

__all__ = ["Wakeup"]


class _Guarded(Protocol):
    """What a wake-up needs of its actor (`Actor._call_guarded`); a protocol, so that this module does
    not import `actor`, which imports it (the runtime package has no import cycles)."""

    def _call_guarded(self, fn: Callable[..., object], args: tuple[object, ...]) -> object: ...


class Wakeup:
    """One re-armable wake-up of `fn()` for `actor` (see the module docstring); made by
    `Actor.wakeup(fn)`, which cancels it when the actor dies. One pending wake-up at a time:
    arming again replaces (and cancels) the previous one."""

    __slots__ = ("_actor", "_fn", "_handle", "_loop", "_context", "_hop", "_ready")

    def __init__(self, actor: _Guarded, fn: Callable[[], object], loop: asyncio.AbstractEventLoop) -> None:
        self._actor = actor
        self._fn = fn
        self._loop = loop
        self._handle: asyncio.Handle | None = None
        # the context every run shares, as a task's steps share the task's (no copy per timer)
        self._context = contextvars.copy_context()
        # the scheduled run: one Handle, queued again each time (call_soon makes one per call);
        # made anew after a cancel, which drops a Handle's callback. Not in debug mode, where
        # call_soon's checks run.
        self._hop: asyncio.Handle | None = None
        self._ready: deque[asyncio.Handle] | None = None if loop.get_debug() else getattr(loop, "_ready", None)

    def after(self, delay: float) -> None:
        """Wake where a task calling `emulator.runtime.sleep(delay)` now would: at `loop.time() +
        delay` (the same float), or on the next turn for `delay <= 0`."""
        if delay <= 0:
            self.soon()
        else:
            self.at(self._loop.time() + delay)

    def at(self, when: float) -> None:
        """Wake at loop time `when`, where a task sleeping until `when` would."""
        self.cancel()
        self._handle = self._loop.call_at(when, self._fire, context=self._context)

    def soon(self) -> None:
        """Wake on the next loop turn, where a task yielding once (`asyncio.sleep(0)`) would."""
        self.cancel()
        self._handle = self._call_soon()

    @property
    def pending(self) -> bool:
        """True while a wake-up is armed and has not run yet."""
        return self._handle is not None

    def cancel(self) -> None:
        handle = self._handle
        if handle is not None:
            self._handle = None
            handle.cancel()

    def _fire(self) -> None:
        self._handle = self._call_soon()

    def _call_soon(self) -> asyncio.Handle:
        """`loop.call_soon(self._run)`: the same place in the ready queue, without a new Handle."""
        ready = self._ready
        if ready is None:
            return self._loop.call_soon(self._run, context=self._context)
        hop = self._hop
        if hop is None or hop.cancelled():
            hop = self._hop = asyncio.Handle(self._run, (), self._loop, self._context)
        ready.append(hop)
        return hop

    def _run(self) -> None:
        self._handle = None
        self._actor._call_guarded(self._fn, ())
