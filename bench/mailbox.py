"""Mailbox: messages per second through an actor's mailbox (`Actor.tell`) against a bare asyncio.Queue.

Both run on the emulator's virtual-time loop in the same process, with the same traffic shape: one
producer task sends N messages in chunks of `CHUNK`, yielding to the loop between chunks (so the
consumer runs interleaved, as in a live cluster); the consumer counts them and signals the last. The
baseline consumer is a plain task doing `await queue.get()`; the measured one is an actor whose
`receive` does the same counting. Target: actor / bare >= 0.5.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from emulator.runtime import Actor, ActorSystem, Reply, VirtualClock, run

from .harness import Options, Row, Target, interleaved

CHUNK = 100


class _Counter(Actor):
    def __init__(self, name: str, system: ActorSystem, n: int, done: asyncio.Future[float]) -> None:
        super().__init__(name, system)
        self.n = n
        self.seen = 0
        self.done = done

    async def receive(self, msg: Any, reply: Reply) -> None:
        self.seen += 1
        if self.seen == self.n:
            self.done.set_result(time.perf_counter())


async def _actor_rate(n: int) -> float:
    clock = VirtualClock()
    async with ActorSystem(0, clock, name="bench") as system:
        done: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        actor = system.spawn(_Counter("counter", system, n, done))
        await asyncio.sleep(0)  # let the actor's run loop start
        t = time.perf_counter()
        tell = actor.tell
        for start in range(0, n, CHUNK):
            for i in range(start, min(n, start + CHUNK)):
                tell(i)
            await asyncio.sleep(0)
        end = await done
        return n / (end - t)


async def _queue_rate(n: int) -> float:
    queue: asyncio.Queue[int] = asyncio.Queue()
    done: asyncio.Future[float] = asyncio.get_running_loop().create_future()

    async def consumer() -> None:
        seen = 0
        while True:
            await queue.get()
            seen += 1
            if seen == n:
                done.set_result(time.perf_counter())
                return

    task = asyncio.get_running_loop().create_task(consumer())
    await asyncio.sleep(0)
    t = time.perf_counter()
    put = queue.put_nowait
    for start in range(0, n, CHUNK):
        for i in range(start, min(n, start + CHUNK)):
            put(i)
        await asyncio.sleep(0)
    end = await done
    await task
    return n / (end - t)


def run_bench(opts: Options) -> list[Row]:
    n = 20_000 if opts.quick else 500_000
    reps = opts.repetitions(5, 3)
    clock = VirtualClock()
    base, base_values, figure, values = interleaved(lambda: run(_queue_rate, n, clock=clock),
                                                    lambda: run(_actor_rate, n, clock=clock), reps)
    return [Row(name="mailbox", figure=figure, unit="msg/s", baseline=base,
                baseline_unit="msg/s asyncio.Queue", ratio=figure / base,
                target=Target("ratio", ">=", 0.5), reps=reps, samples=values,
                details={"messages": n, "chunk": CHUNK, "baseline_samples": base_values})]
