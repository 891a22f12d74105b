"""An actor's mailbox: an unbounded FIFO with one consumer, the actor's run loop.

Why not an anyio memory stream: its `receive()` runs a checkpoint (a full loop iteration) before
every wait, and each wait builds an Event, a receiver record and a TaskInfo; `send_nowait` then
inspects the receiver's task for pending cancellation. An actor goes idle and busy again on nearly
every request in a lookup storm, so that path dominated the cost of a hop. Here `put` is a deque
append, and the one waiting consumer is woken through a bare asyncio future (cancelled like any
other await when the actor's cancel scope is).
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

__all__ = ["Mailbox"]

T = TypeVar("T")


class Mailbox(Generic[T]):
    """`put` never blocks nor yields; `wait()` gives a future done once an item is queued or the box
    is closed. One consumer: a second `wait()` replaces the first waiter.

    A closed box accepts nothing more (the actor refuses messages before it closes it, so `put`
    on a closed box is a runtime bug and raises RuntimeError); what is already queued stays
    readable with `get_nowait` until drained.
    """

    __slots__ = ("_items", "_waiter", "closed")

    def __init__(self) -> None:
        self._items: deque[T] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self.closed = False

    def __len__(self) -> int:
        return len(self._items)

    def put(self, item: T) -> None:
        if self.closed:
            raise RuntimeError("put() on a closed mailbox: the actor is no longer running")
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None:
            self._wake(waiter)

    def get_nowait(self) -> T:
        """The oldest item; IndexError when empty."""
        return self._items.popleft()

    def close(self) -> None:
        """No more items; wakes the consumer so it can see it."""
        self.closed = True
        waiter = self._waiter
        if waiter is not None:
            self._wake(waiter)

    def wait(self, loop: asyncio.AbstractEventLoop | None = None) -> asyncio.Future[None]:
        """A future done once there is an item or the box is closed (done already if so). A plain
        future, not a coroutine: the run loop awaits it on every idle turn. `loop`: the running
        loop, if the caller has it at hand (asyncio.get_running_loop() makes a system call)."""
        waiter = (loop or asyncio.get_running_loop()).create_future()
        if self._items or self.closed:
            waiter.set_result(None)
        else:
            self._waiter = waiter
        return waiter

    def _wake(self, waiter: asyncio.Future[None]) -> None:
        self._waiter = None
        if not waiter.done():
            waiter.set_result(None)
