"""Wakeup: an actor's plain callback woken where a sleeping task would be, cancelled with the actor."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from emulator.runtime import Actor, ActorSystem, VirtualClock, run, sleep

DELAYS = ([0.5, 0.5, 1.0, 0.0, 0.5], [1.0, 0.0, 1.0, 0.5, 0.5], [0.0, 2.0, 0.25, 0.25, 0.0])


def _trace(wakeups: bool) -> list[tuple[float, str]]:
    """Six actors each run a list of delays, half of them (when `wakeups`) as Wakeup callbacks and
    the rest as tasks sleeping with emulator.runtime.sleep; plain loop callbacks and asks at the same
    instants. Returns who ran when, in the order they ran."""

    async def main() -> list[tuple[float, str]]:
        loop = asyncio.get_running_loop()
        out: list[tuple[float, str]] = []
        async with ActorSystem(1, VirtualClock()) as system:
            actors = [system.spawn(Actor(f"a{i}", system)) for i in range(6)]

            async def sleeper(name: str, delays: list[float]) -> None:
                for d in delays:
                    await sleep(d)
                    out.append((loop.time(), name))

            async def woken(actor: Actor, name: str, delays: list[float]) -> None:
                left = list(delays)

                def step() -> None:
                    out.append((loop.time(), name))
                    if left:
                        wakeup.after(left.pop(0))

                wakeup = actor.wakeup(step)
                wakeup.after(left.pop(0))

            for t in (0.5, 1.0, 2.0, 2.5):
                loop.call_at(t, lambda t=t: out.append((loop.time(), f"cb{t}")))
            for i, actor in enumerate(actors):
                delays = DELAYS[i % 3]
                if wakeups and i % 2:
                    actor.start_soon(woken, actor, actor.name, delays)
                else:
                    actor.start_soon(sleeper, actor.name, delays)
            await anyio.sleep(10.0)
        return out

    return run(main, clock=VirtualClock())


def test_wakeups_run_where_sleeping_tasks_would():
    """Same instants, same order of every callback, equal deadlines and sleep(0) included."""
    with_tasks, with_wakeups = _trace(False), _trace(True)
    assert len(with_tasks) == 6 * 5 + 4
    assert with_wakeups == with_tasks


@pytest.mark.asyncio
async def test_a_dead_actor_s_wakeup_is_cancelled():
    loop = asyncio.get_running_loop()
    async with ActorSystem(1, VirtualClock()) as system:
        actor = system.spawn(Actor("a", system))
        runs: list[float] = []
        w = actor.wakeup(lambda: runs.append(loop.time()))
        w.after(1.0)
        await anyio.sleep(2.0)
        w.after(1.0)
        assert w.pending
        actor.kill()
        assert not w.pending
        await anyio.sleep(2.0)
    assert runs == [pytest.approx(1.0)]


@pytest.mark.asyncio
async def test_an_exception_in_a_wakeup_crashes_its_actor_only():
    async with ActorSystem(1, VirtualClock()) as system:
        actor = system.spawn(Actor("a", system))
        other = system.spawn(Actor("b", system))

        def boom() -> None:
            raise ValueError("boom")

        actor.wakeup(boom).after(1.0)
        await anyio.sleep(2.0)
        assert not actor.alive and other.alive
        assert [f.actor for f in system.failures] == ["a"]
