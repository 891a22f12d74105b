"""Ask timeouts sharing one loop timer per distinct deadline.

Every ask with a timeout used to schedule its own `call_later` and cancel it on the answer: in a
lookup storm that is a heap push, a cancel and a heap pop per ask, for timers that almost never fire.
Asks made at the same emulated instant with the same timeout have the same deadline, so they share
one timer here; the timer is cancelled when the last of its asks is answered. An expiry fails the
pending asks of its deadline in the order they were made.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from .errors import AskTimeout

__all__ = ["Deadlines", "Pending"]


class Pending(Protocol):
    """What a deadline fails: an ask's future, or an `ask_then` reply."""

    def done(self) -> bool: ...

    def set_exception(self, exc: BaseException) -> object: ...


class _Bucket:
    __slots__ = ("handle", "waiting")

    def __init__(self) -> None:
        self.handle: asyncio.TimerHandle | None = None
        self.waiting: dict[Pending, tuple[str, object, float]] = {}


class Deadlines:
    """The pending ask timeouts of one actor system."""

    __slots__ = ("_buckets",)

    def __init__(self) -> None:
        self._buckets: dict[float, _Bucket] = {}

    def add(self, loop: asyncio.AbstractEventLoop, future: Pending, actor: str,
            msg: object, timeout: float) -> float:
        """Fail `future` with AskTimeout after `timeout` seconds unless `discard`ed first; returns
        the deadline to pass to `discard`."""
        when = loop.time() + timeout
        bucket = self._buckets.get(when)
        if bucket is None:
            bucket = self._buckets[when] = _Bucket()
            bucket.handle = loop.call_at(when, self._expire, when)
        bucket.waiting[future] = (actor, msg, timeout)
        return when

    def discard(self, when: float, future: Pending) -> None:
        bucket = self._buckets.get(when)
        if bucket is None or bucket.waiting.pop(future, None) is None or bucket.waiting:
            return
        del self._buckets[when]
        assert bucket.handle is not None
        bucket.handle.cancel()

    def _expire(self, when: float) -> None:
        bucket = self._buckets.pop(when, None)
        if bucket is None:
            return
        for future, (actor, msg, timeout) in bucket.waiting.items():
            if not future.done():
                future.set_exception(AskTimeout(actor, type(msg).__name__, timeout))

    def __len__(self) -> int:
        return sum(len(b.waiting) for b in self._buckets.values())
