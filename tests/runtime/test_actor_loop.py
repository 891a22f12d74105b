"""The actor hot paths read the system's loop, not asyncio.get_running_loop() (a getpid() call each)."""

from __future__ import annotations

import asyncio
import sys

import anyio
import anyio.lowlevel
import pytest

from emulator.runtime import ActorSystem, VirtualClock

from .test_actor import Add, Asker, Calculator


@pytest.mark.asyncio
async def test_entered_system_runs_its_actors_without_asking_asyncio_for_the_loop(monkeypatch):
    system = ActorSystem(1, VirtualClock())
    assert system._loop is None                      # not entered: asyncio's own lookup
    async with system:
        assert system._loop is asyncio.get_running_loop()
        calc = system.spawn(Calculator("calc", system))
        asker = system.spawn(Asker("asker", system))
        await anyio.lowlevel.checkpoint()             # both run loops up (their first wait)
        calls = []
        real = asyncio.get_running_loop

        def counted():
            caller = sys._getframe(1).f_code.co_filename
            if caller.endswith(("actor.py", "mailbox.py")):
                calls.append(caller)
            return real()

        monkeypatch.setattr("emulator.runtime.actor.asyncio.get_running_loop", counted)
        monkeypatch.setattr("emulator.runtime.mailbox.asyncio.get_running_loop", counted)
        ran = []

        async def child():
            ran.append("task")

        asker.call_later(1.0, lambda: ran.append("timer"))
        asker.start_soon(child)
        asker.wakeup(lambda: ran.append("wakeup")).at(2.0)
        calc.ask_then(Add(2, 3), asker.then, "add", asker=asker, timeout=5.0)
        assert await calc.ask(Add(1, 1), timeout=5.0) == 2
        await anyio.sleep(3)
        monkeypatch.undo()
        assert sorted(ran) == ["task", "timer", "wakeup"]
        assert asker.got == [("add", 5, None, 0.0)]
        # the actors' own paths (ask, ask_then, call_later, start_soon, wakeup, the mailbox's
        # wait and the task's end) never asked (the clock's reads in `then` may)
        assert calls == []
