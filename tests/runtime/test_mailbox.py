"""Mailbox: the actor's FIFO, and how its one consumer waits and wakes."""

from __future__ import annotations

import asyncio

import pytest

from emulator.runtime.mailbox import Mailbox


@pytest.mark.asyncio
async def test_items_come_out_in_order_and_put_never_yields():
    box: Mailbox[int] = Mailbox()
    for i in range(5):
        assert box.put(i) is None
    assert len(box) == 5
    assert [box.get_nowait() for _ in range(5)] == [0, 1, 2, 3, 4]
    with pytest.raises(IndexError):
        box.get_nowait()


@pytest.mark.asyncio
async def test_wait_is_done_at_once_when_an_item_is_queued():
    box: Mailbox[str] = Mailbox()
    box.put("x")
    assert box.wait().done()


@pytest.mark.asyncio
async def test_a_put_wakes_the_waiting_consumer():
    box: Mailbox[str] = Mailbox()
    woken = []

    async def consumer() -> None:
        await box.wait()
        woken.append(box.get_nowait())

    task = asyncio.get_running_loop().create_task(consumer())
    await asyncio.sleep(0)
    assert not woken
    box.put("hello")
    await task
    assert woken == ["hello"]


@pytest.mark.asyncio
async def test_close_wakes_the_consumer_keeps_what_is_queued_and_refuses_more():
    box: Mailbox[str] = Mailbox()
    waiter = box.wait()
    assert not waiter.done()
    box.put("last")
    box.close()
    assert waiter.done() and box.closed
    assert box.wait().done()  # a closed box never blocks
    assert box.get_nowait() == "last"
    with pytest.raises(RuntimeError, match="closed mailbox"):
        box.put("late")


@pytest.mark.asyncio
async def test_a_cancelled_wait_does_not_break_the_next_put():
    box: Mailbox[int] = Mailbox()
    waiter = box.wait()
    waiter.cancel()
    box.put(1)  # must not raise InvalidStateError on the cancelled waiter
    assert box.wait().done()
