"""The virtual-time event loop: the emulator's default clock (spec toolchain.md §4, option b).

`loop.time()` is a virtual "now" that starts at 0.0 and moves only when every task is waiting: the
selector then jumps it exactly onto the earliest timer's deadline, so a day of cluster life passes in
seconds and a seed decides the run. Three additions over a bare jump make it safe to build on:

- equal deadlines fire in creation order (vanilla asyncio's heap does not, which breaks determinism);
- a run where every task waits and no timer exists cannot ever wake up, so instead of hanging it
  raises `DeadlockError` after a short real grace period (`stall_timeout`);
- threads and real I/O take real time the virtual clock cannot see: marked as external work, they
  freeze the clock until they return (otherwise time would jump past them).

Relies on asyncio's private `_scheduled`, `_clock_resolution` and `TimerHandle._when`, checked on
CPython 3.11; `tests/runtime/test_virtual_loop.py` guards them on every Python upgrade. `_scheduled`
holds `(when, creation number, handle)` tuples rather than handles, so the heap compares in C (a
handle's `__lt__` is a Python call, a few per push and pop); asyncio's own `_run_once`, which reads
handles there, is therefore never used, debug mode included. On virtual time the real selector (the
self-pipe, sockets) is polled at most once per millisecond of wall time, not at every instant.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import heapq
import itertools
import math
import selectors
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from contextvars import Context
from typing import Any, TypeVar, TypeVarTuple, Unpack

import anyio.to_thread

from .selector import DelegatingSelector

__all__ = ["DeadlockError", "VirtualEventLoop", "run_external"]

T = TypeVar("T")
_Ts = TypeVarTuple("_Ts")
_MIN_CLOCK_RESOLUTION = 1e-9
_ROUNDS_PER_POLL = 16
# asyncio's own thresholds for purging cancelled timers (base_events.py), read rather than copied
_MIN_SCHEDULED_TIMER_HANDLES: int = asyncio.base_events._MIN_SCHEDULED_TIMER_HANDLES  # type: ignore[attr-defined]
_MIN_CANCELLED_TIMER_HANDLES_FRACTION: float = (
    asyncio.base_events._MIN_CANCELLED_TIMER_HANDLES_FRACTION)  # type: ignore[attr-defined]
_MAXIMUM_SELECT_TIMEOUT: float = asyncio.base_events.MAXIMUM_SELECT_TIMEOUT  # type: ignore[attr-defined]
_format_handle: Callable[[asyncio.Handle], str] = asyncio.base_events._format_handle  # type: ignore[attr-defined]
_asyncio_logger = asyncio.base_events.logger  # type: ignore[attr-defined]
_format_callback_source: Callable[..., str] = asyncio.format_helpers._format_callback_source  # type: ignore[attr-defined]


_POLL_EVERY = 0.001
"""Real seconds between two polls of the real selector (sockets, the self-pipe of signals and threads)
while the loop runs on virtual time: a poll is a system call and several Python frames, and a day of
`default` has 730,000 distinct instants. A request or signal waits at most this long more; a thread's
`call_soon_threadsafe` puts its callback in the ready queue itself, and external work polls as before."""
_perf_counter = time.perf_counter


def _callback_failed(handle: asyncio.Handle, exc: BaseException) -> None:
    """asyncio.Handle._run's except clause: the loop's exception handler gets the failed callback."""
    context: dict[str, Any] = {
        "message": f"Exception in callback {_format_callback_source(handle._callback, handle._args)}",  # type: ignore[attr-defined]
        "exception": exc,
        "handle": handle,
    }
    if handle._source_traceback:  # type: ignore[attr-defined]
        context["source_traceback"] = handle._source_traceback  # type: ignore[attr-defined]
    handle._loop.call_exception_handler(context)  # type: ignore[attr-defined]


class DeadlockError(RuntimeError):
    """Every task waits on something only another task could provide, and no timer is left."""


# --------------------------------------------------------------------------- FIFO timers


class _FifoTimerHandle(asyncio.TimerHandle):
    """A timer and its creation number: the loop's heap orders `(deadline, number, timer)`, since
    heapq is not stable and without the number equal deadlines would fire in an order that depends
    on the heap's history. Handles compare the same way."""

    __slots__ = ("_seq",)
    _when: float  # TimerHandle's private fields (typeshed leaves them out)
    _scheduled: bool

    def __init__(self, when: float, callback: Callable[..., object], args: tuple[object, ...],
                 loop: asyncio.AbstractEventLoop, context: Context | None, seq: int) -> None:
        if loop.get_debug():
            super().__init__(when, callback, args, loop, context)
        else:
            # TimerHandle.__init__'s fields set here, without its two super() frames: every sleep
            # and timeout makes a timer (a tenth of a sleep's cost; checked field by field against
            # asyncio's in tests/runtime/test_virtual_loop.py)
            self._context = contextvars.copy_context() if context is None else context
            self._loop = loop
            self._callback = callback
            self._args = args
            self._cancelled = False
            self._repr = None
            self._source_traceback = None
            self._when = when
            self._scheduled = False
        self._seq = seq

    def __lt__(self, other: _FifoTimerHandle) -> bool:  # type: ignore[override]
        mine, theirs = self._when, other._when
        return mine < theirs or (mine == theirs and self._seq < other._seq)


_PLAIN_HANDLES = frozenset({asyncio.Handle, asyncio.TimerHandle, _FifoTimerHandle})
"""Handles whose `_run` is asyncio.Handle's: `_run_once` runs their callback inline."""


# --------------------------------------------------------------------------- the jumping selector


class _JumpingSelector(DelegatingSelector):
    """Decides, on each loop iteration, between a real wait, a virtual jump and a stall."""

    def __init__(self, real: selectors.BaseSelector, loop: VirtualEventLoop) -> None:
        super().__init__(real)
        self._loop = loop

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self._real.select(0)  # the self-pipe and sockets always come first
        if ready or timeout == 0:
            return ready
        loop = self._loop
        if loop._external_in_flight:
            return self._real.select(timeout)  # clock frozen until the outside world answers
        if timeout is None or loop._next_deadline() == math.inf:  # sleep_forever() is sleep(inf)
            return self._stall()
        loop._jump(timeout)
        return ready

    def _stall(self) -> list[tuple[selectors.SelectorKey, int]]:
        """No finite timer: only another thread could still wake the loop. Wait for it a little."""
        loop = self._loop
        ready = self._real.select(loop.stall_timeout)
        if ready or loop.stall_timeout is None:
            return ready
        waiting = sorted(task.get_name() for task in asyncio.all_tasks(loop))
        shown = ", ".join(waiting[:10]) + (f", ... ({len(waiting)} in all)"
                                           if len(waiting) > 10 else "")
        raise DeadlockError(
            f"simulation stalled: every task is waiting and no timer is scheduled at "
            f"t={loop.time()}s (waiting tasks: {shown or 'none'}); a task awaits something no "
            f"task will ever provide, or a thread/real I/O ran without loop.external_work()")


# --------------------------------------------------------------------------- the loop


def _check_stall_timeout(stall_timeout: float | None) -> float | None:
    if stall_timeout is not None and (
            isinstance(stall_timeout, bool) or not isinstance(stall_timeout, (int, float))
            or not 0 <= stall_timeout < math.inf):
        raise ValueError(f"stall_timeout must be a finite number of real seconds >= 0, or None "
                         f"(never stall), got {stall_timeout!r}")
    return stall_timeout


class VirtualEventLoop(asyncio.SelectorEventLoop):
    """An asyncio loop on virtual time. Pass the class as anyio's `loop_factory`.

    `stall_timeout` is the real time (s) to wait for outside events before declaring a deadlock;
    None waits forever, as a plain loop would.
    """

    _closed = True  # until asyncio's __init__ runs: a refused argument must not upset __del__
    _selector_class: type[_JumpingSelector] = _JumpingSelector  # the paced wall loop waits first

    # asyncio.BaseEventLoop's private state and helpers, used by `_run_once` and `call_at` as asyncio's
    # own versions use them; typeshed leaves them out (annotations only: nothing is defined here)
    _debug: bool
    _ready: collections.deque[asyncio.Handle]
    _scheduled: list[tuple[float, int, _FifoTimerHandle]]  # (when, seq, timer): made by `call_at` below
    _current_handle: asyncio.Handle | None
    _stopping: bool
    _thread_id: int | None  # the thread running the loop (None when it does not run)
    _timer_cancelled_count: int
    _clock_resolution: float
    _selector: selectors.BaseSelector
    _process_events: Callable[[list[tuple[selectors.SelectorKey, int]]], None]
    _check_closed: Callable[[], None]
    _check_thread: Callable[[], None]
    _check_callback: Callable[[Callable[..., object], str], None]

    _skip_polls = True
    """Jump without asking the real selector when it was asked less than `_POLL_EVERY` ago (False
    on the paced wall loop, whose selector waits for the wall clock)."""

    def __init__(self, stall_timeout: float | None = 1.0) -> None:
        self.stall_timeout = _check_stall_timeout(stall_timeout)
        self._virtual_now = 0.0
        self._next_poll = 0.0
        self._external_in_flight = 0
        self._timer_seq = itertools.count()
        super().__init__(self._selector_class(selectors.DefaultSelector(), self))

    def time(self) -> float:
        return self._virtual_now

    def _next_deadline(self) -> float | None:
        return self._scheduled[0][0] if self._scheduled else None

    def _jump(self, timeout: float) -> None:
        """Land exactly on the earliest deadline: `now + timeout` would drift by float rounding."""
        target = self._next_deadline()
        if target is None:
            target = self._virtual_now + timeout
        if target > self._virtual_now:
            self._virtual_now = target
            # _run_once fires timers with `when < now + resolution`; far from 0.0 a fixed 1e-9 is
            # below one float step, the timer at `now` would never fire, and the loop would spin.
            self._clock_resolution = max(_MIN_CLOCK_RESOLUTION, math.ulp(target))

    def _run_once(self) -> None:
        """asyncio's iteration, with the rounds of one instant run back to back.

        asyncio polls the selector between every two rounds of ready callbacks. Here the rounds
        that follow each other at one virtual instant (callbacks scheduling callbacks, timers due
        now) run without a poll in between, up to `_ROUNDS_PER_POLL` of them: the order of the
        callbacks is asyncio's exactly (ready ones first, then the timers due, each round), only
        real I/O (the self-pipe, sockets) is looked at less often, and a thread's
        `call_soon_threadsafe` lands in `_ready` directly anyway. Debug mode runs the same rounds with
        asyncio's current-handle and slow-callback warning (`_run_debug`): asyncio's own iteration
        cannot read this heap of tuples."""
        scheduled = self._scheduled
        sched_count = len(scheduled)
        if (sched_count > _MIN_SCHEDULED_TIMER_HANDLES
                and self._timer_cancelled_count / sched_count > _MIN_CANCELLED_TIMER_HANDLES_FRACTION):
            kept = []
            for entry in scheduled:
                if entry[2]._cancelled:
                    entry[2]._scheduled = False
                else:
                    kept.append(entry)
            heapq.heapify(kept)
            self._scheduled = scheduled = kept
            self._timer_cancelled_count = 0
        else:
            while scheduled and scheduled[0][2]._cancelled:
                self._timer_cancelled_count -= 1
                heapq.heappop(scheduled)[2]._scheduled = False
        ready = self._ready
        timeout: float | None = None
        if ready or self._stopping:
            timeout = 0
        elif scheduled:
            timeout = min(max(0.0, scheduled[0][0] - self.time()), _MAXIMUM_SELECT_TIMEOUT)
        if (self._skip_polls and timeout is not None and not self._external_in_flight
                and _perf_counter() < self._next_poll):
            # the real selector was asked less than _POLL_EVERY ago: no poll, and a jump (as
            # _JumpingSelector.select would make it) straight onto the earliest deadline
            if timeout:
                target = scheduled[0][0]
                if target == math.inf:        # sleep_forever(): the selector's stall check
                    self._poll(timeout)
                elif target > self._virtual_now:
                    self._virtual_now = target
                    self._clock_resolution = max(_MIN_CLOCK_RESOLUTION, math.ulp(target))
        else:
            self._poll(timeout)
        heappop = heapq.heappop
        debug = self._debug
        for _ in range(_ROUNDS_PER_POLL):
            scheduled = self._scheduled
            end_time = self._virtual_now + self._clock_resolution
            while scheduled and scheduled[0][0] < end_time:
                timer = heappop(scheduled)[2]
                timer._scheduled = False
                ready.append(timer)
            ntodo = len(ready)
            if not ntodo:
                return
            popleft = ready.popleft
            for _ in range(ntodo):
                handle = popleft()
                if handle._cancelled:
                    continue
                if debug:
                    self._run_debug(handle)
                elif type(handle) in _PLAIN_HANDLES:
                    # Handle._run's body, without its frame (two million callbacks a day of `default`)
                    try:
                        handle._context.run(handle._callback, *handle._args)  # type: ignore[attr-defined]
                    except (SystemExit, KeyboardInterrupt):
                        raise
                    except BaseException as exc:
                        _callback_failed(handle, exc)
                else:
                    handle._run()
            if self._stopping:
                return

    def _poll(self, timeout: float | None) -> None:
        """Ask the selector (real I/O first, then the jump or the stall: `_JumpingSelector.select`)."""
        self._next_poll = _perf_counter() + _POLL_EVERY
        self._process_events(self._selector.select(timeout))

    def _run_debug(self, handle: asyncio.Handle) -> None:
        """asyncio's debug-mode call of one callback: the current handle set, a slow one warned."""
        try:
            self._current_handle = handle
            t0 = self.time()
            handle._run()
            dt = self.time() - t0
            if dt >= self.slow_callback_duration:
                _asyncio_logger.warning("Executing %s took %.3f seconds", _format_handle(handle), dt)
        finally:
            self._current_handle = None

    def call_at(self, when: float, callback: Callable[[Unpack[_Ts]], object], *args: Unpack[_Ts],
                context: Context | None = None) -> asyncio.TimerHandle:
        """As asyncio's, but the handle orders ties by creation (see `_FifoTimerHandle`)."""
        if when is None:
            raise TypeError("when cannot be None")
        self._check_closed()
        if self._debug:
            self._check_thread()
            self._check_callback(callback, "call_at")
        seq = next(self._timer_seq)
        timer = _FifoTimerHandle(when, callback, args, self, context, seq)
        heapq.heappush(self._scheduled, (when, seq, timer))
        timer._scheduled = True
        return timer

    # ----------------------------------------------------------------------- external work

    @contextlib.contextmanager
    def external_work(self) -> Iterator[None]:
        """Freeze the virtual clock while the body waits on a thread or real I/O."""
        self._external_in_flight += 1
        try:
            yield
        finally:
            self._external_in_flight -= 1

    def run_in_executor(self, executor: Executor | None, func: Callable[[Unpack[_Ts]], T],
                        *args: Unpack[_Ts]) -> asyncio.Future[T]:
        """Executor calls (asyncio.to_thread, getaddrinfo) count as external work by themselves."""
        future = super().run_in_executor(executor, func, *args)
        self._external_in_flight += 1
        future.add_done_callback(self._external_done)
        return future

    def _external_done(self, _future: asyncio.Future[Any]) -> None:
        self._external_in_flight -= 1

    async def shutdown_default_executor(self, *args: Any) -> None:
        with self.external_work():  # joins real threads
            await super().shutdown_default_executor(*args)


async def run_external(fn: Callable[..., T], *args: object) -> T:
    """Run `fn(*args)` in a worker thread (anyio.to_thread) with the virtual clock frozen.

    On any other loop this is plain `anyio.to_thread.run_sync`.
    """
    loop = asyncio.get_running_loop()
    if not isinstance(loop, VirtualEventLoop):
        return await anyio.to_thread.run_sync(fn, *args)
    with loop.external_work():
        return await anyio.to_thread.run_sync(fn, *args)
