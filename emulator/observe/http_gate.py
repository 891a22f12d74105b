"""The one door from the HTTP server's threads to the event loop: a bounded queue served at a fixed budget.

The admin views and `/metrics` read live actor state, which only the loop's thread may read consistently,
so every request is answered on the loop. Answering each as it arrives (one `call_soon_threadsafe` per
request) let fifty scraping clients take nearly all of the loop's time: emulated time almost stopped.
Here the HTTP threads put requests into a bounded queue and one dispatcher thread hands the loop a
*batch* at a time:

- identical GETs waiting together are answered by one computation (fifty scrapes of `/metrics`, one
  exposition);
- after a batch that took `d` wall seconds the next waits `d * (1 - share) / share`, so serving takes at
  most `share` of the loop's wall time however hard it is scraped (emulated time keeps at least
  `1 - share` of its pace);
- more than `max_pending` distinct waiting requests: the newest is refused (`GateFull`, a 503).

Writes are coroutines: the batch starts them as tasks on the loop (they take emulated time, as before).
An idle gate costs the loop nothing: the dispatcher sleeps on a condition variable.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from typing import Any, Awaitable, Callable

__all__ = ["GateClosed", "GateFull", "LoopGate"]

Response = tuple[int, str, bytes] | tuple[int, str, bytes, dict[str, str]]
"""Status, content type, body (and a redirect's extra headers)."""


class GateClosed(Exception):
    """The loop is gone or the server is stopping: nothing can be answered any more."""


class GateFull(Exception):
    """Too many requests wait for the loop already."""


class _Job:
    __slots__ = ("fn", "coro", "futures")

    def __init__(self, fn: Callable[[], Response] | None, coro: Callable[[], Awaitable[Response]] | None) -> None:
        self.fn = fn
        self.coro = coro
        self.futures: list[concurrent.futures.Future[Response]] = []


class LoopGate:
    """Requests from any thread, answered on `loop` in batches; `share` bounds the loop time they take."""

    def __init__(self, loop: asyncio.AbstractEventLoop, *, share: float = 0.2, max_pending: int = 256) -> None:
        if not 0 < share <= 1:
            raise ValueError(f"share = {share!r}: expected a fraction in (0, 1]")
        self._loop = loop
        self.share = share
        self.max_pending = max_pending
        self._cond = threading.Condition()
        self._reads: dict[str, _Job] = {}      # coalesced by key
        self._writes: list[_Job] = []
        self._closed = False
        self._not_before = 0.0                 # perf_counter: the next batch's earliest start
        self.batches = 0                       # for tests and the pace measure
        self.busy_seconds = 0.0                # wall time the loop spent on batches
        self._thread = threading.Thread(target=self._dispatch, name="observe-http-gate", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ HTTP threads

    def read(self, key: str, fn: Callable[[], Response]) -> concurrent.futures.Future[Response]:
        """`fn()` on the loop; callers with the same `key` waiting together share one call."""
        with self._cond:
            self._check_open()
            job = self._reads.get(key)
            if job is None:
                self._check_room()
                job = self._reads[key] = _Job(fn, None)
            future: concurrent.futures.Future[Response] = concurrent.futures.Future()
            job.futures.append(future)
            self._cond.notify()
        return future

    def task(self, coro: Callable[[], Awaitable[Response]]) -> concurrent.futures.Future[Response]:
        """`await coro()` as a task on the loop (never coalesced: the writable routes, reads included)."""
        with self._cond:
            self._check_open()
            self._check_room()
            job = _Job(None, coro)
            future: concurrent.futures.Future[Response] = concurrent.futures.Future()
            job.futures.append(future)
            self._writes.append(job)
            self._cond.notify()
        return future

    def close(self) -> None:
        """Refuse what waits and what comes; the dispatcher ends."""
        with self._cond:
            self._closed = True
            jobs = list(self._reads.values()) + self._writes
            self._reads, self._writes = {}, []
            self._cond.notify_all()
        for job in jobs:
            for f in job.futures:
                f.set_exception(GateClosed())
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)

    def _check_open(self) -> None:
        if self._closed or self._loop.is_closed():
            raise GateClosed()

    def _check_room(self) -> None:
        if len(self._reads) + len(self._writes) >= self.max_pending:
            raise GateFull()

    # ------------------------------------------------------------------ the dispatcher thread

    def _dispatch(self) -> None:
        while True:
            with self._cond:
                while not self._closed and not (self._reads or self._writes):
                    self._cond.wait()
                if self._closed:
                    return
            wait = self._not_before - time.perf_counter()
            if wait > 0:
                time.sleep(wait)        # the budget: let the emulation run
            with self._cond:
                if self._closed:
                    return
                reads, writes = list(self._reads.values()), self._writes
                self._reads, self._writes = {}, []
            done = threading.Event()
            try:
                self._loop.call_soon_threadsafe(self._serve, reads, writes, done)
            except RuntimeError:        # the loop closed meanwhile
                for job in reads + writes:
                    for f in job.futures:
                        f.set_exception(GateClosed())
                continue
            while not done.wait(0.1):
                if self._closed or self._loop.is_closed():
                    return

    def _serve(self, reads: list[_Job], writes: list[_Job], done: threading.Event) -> None:
        """On the loop: one batch. Reads answered now; writes started as tasks."""
        start = time.perf_counter()
        try:
            for job in reads:
                assert job.fn is not None
                try:
                    answer: Response | None = job.fn()
                    error: BaseException | None = None
                except Exception as e:  # reported to the HTTP thread, never raised into the loop
                    answer, error = None, e
                for f in job.futures:
                    if error is not None:
                        f.set_exception(error)
                    else:
                        f.set_result(answer)  # type: ignore[arg-type]
            for job in writes:
                assert job.coro is not None
                task = self._loop.create_task(_as_coroutine(job.coro))
                task.add_done_callback(_settle(job.futures))
        finally:
            took = time.perf_counter() - start
            self.batches += 1
            self.busy_seconds += took
            self._not_before = time.perf_counter() + took * (1 - self.share) / self.share
            done.set()


async def _as_coroutine(coro: Callable[[], Awaitable[Response]]) -> Response:
    return await coro()


def _settle(futures: list[concurrent.futures.Future[Response]]) -> Callable[[asyncio.Task[Response]], Any]:
    def done(task: asyncio.Task[Response]) -> None:
        for f in futures:
            if task.cancelled():
                f.set_exception(GateClosed())
            elif (error := task.exception()) is not None:
                f.set_exception(error)
            else:
                f.set_result(task.result())
    return done
