"""Supervision: a crash isolates the actor, fails its askers, and is recorded and reported."""

from __future__ import annotations

import anyio
import pytest

from emulator.runtime import Actor, ActorDead, ActorFailure, ActorSystem, VirtualClock


class Fragile(Actor):
    async def receive(self, msg, reply):
        if msg == "boom":
            raise ValueError("boom")
        if msg == "hold":
            self.held = reply  # answered later (never, here): an ask in flight, not in the mailbox
            return
        if msg == "crash later":
            self.start_soon(self.explode_in, 3)
            reply.ok("scheduled")
            return
        reply.ok(msg)

    async def explode_in(self, delay):
        await anyio.sleep(delay)
        raise KeyError("child task")


@pytest.mark.asyncio
async def test_crash_fails_pending_asks_records_the_failure_and_spares_others():
    notified = []
    async with ActorSystem(1, VirtualClock()) as system:
        system.on_failure.append(notified.append)
        fragile = system.spawn(Fragile("fragile", system))
        other = system.spawn(Fragile("other", system))
        results = {}

        async def ask(key, msg):
            try:
                results[key] = await fragile.ask(msg)
            except ActorDead as exc:
                results[key] = exc

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, "held", "hold")  # in flight when the crash happens
            await anyio.sleep(1)
            tg.start_soon(ask, "crasher", "boom")
            tg.start_soon(ask, "queued", "after")  # still in the mailbox
        for key in ("held", "crasher", "queued"):
            assert isinstance(results[key], ActorDead), key
            assert "crashed with ValueError('boom')" in str(results[key])
        assert isinstance(results["crasher"].__cause__, ValueError)
        assert not fragile.alive and system.get("fragile") is None
        assert await other.ask("still here") == "still here"
        with pytest.raises(ActorDead, match="crashed with ValueError"):
            fragile.tell("anyone?")
    expected = ActorFailure(actor="fragile", time=1.0, error="ValueError('boom')")
    assert system.failures == [expected] and notified == [expected]


@pytest.mark.asyncio
async def test_child_task_exception_crashes_the_actor():
    async with ActorSystem(1, VirtualClock()) as system:
        fragile = system.spawn(Fragile("fragile", system))
        assert await fragile.ask("crash later") == "scheduled"
        await anyio.sleep(5)
        assert not fragile.alive
    assert system.failures == [ActorFailure("fragile", 3.0, "KeyError('child task')")]


@pytest.mark.asyncio
async def test_crash_in_on_start_and_on_stop_is_a_failure_too():
    class BadStart(Actor):
        async def on_start(self):
            raise RuntimeError("no config")

    class BadStop(Actor):
        async def receive(self, msg, reply):
            reply.ok()

        async def on_stop(self):
            raise RuntimeError("unclean")

    async with ActorSystem(1, VirtualClock()) as system:
        bad_start = system.spawn(BadStart("bad-start", system))
        bad_stop = system.spawn(BadStop("bad-stop", system))
        await bad_start.wait_stopped()
        await bad_stop.stop()
    assert [f.actor for f in system.failures] == ["bad-start", "bad-stop"]


@pytest.mark.asyncio
async def test_unhandled_message_crashes_with_a_type_error():
    class Mute(Actor):
        pass

    async with ActorSystem(1, VirtualClock()) as system:
        mute = system.spawn(Mute("mute", system))
        with pytest.raises(ActorDead, match="does not handle 'hi'"):
            await mute.ask("hi")


@pytest.mark.asyncio
async def test_crash_kills_children_and_a_broken_listener_does_not_hide_it():
    def broken_listener(failure):
        raise RuntimeError("listener bug")

    seen = []
    async with ActorSystem(1, VirtualClock()) as system:
        system.on_failure.extend([broken_listener, seen.append])
        parent = system.spawn(Fragile("parent", system))
        child = system.spawn(Fragile("child", system), parent=parent)
        with pytest.raises(ActorDead):
            await parent.ask("boom")
        assert not child.alive
        with pytest.raises(ActorDead, match="killed with its parent 'parent'"):
            await child.ask("x")
    assert [f.actor for f in seen] == ["parent"]  # the child was killed, not crashed


@pytest.mark.asyncio
async def test_crash_is_logged_with_the_actor_name(capsys):
    import structlog

    with structlog.testing.capture_logs() as logs:
        async with ActorSystem(1, VirtualClock()) as system:
            fragile = system.spawn(Fragile("fragile", system))
            with pytest.raises(ActorDead):
                await fragile.ask("boom")
    crash = [entry for entry in logs if entry["event"] == "actor crashed"]
    assert crash and crash[0]["actor"] == "fragile" and crash[0]["error"] == "ValueError('boom')"
