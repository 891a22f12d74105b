"""Actor and ActorSystem: messaging, request/reply, lifecycle, registry, misuse errors."""

from __future__ import annotations

from dataclasses import dataclass

import anyio
import pytest

from emulator.runtime import (NO_REPLY, Actor, ActorDead, ActorSystem, AskTimeout, Reply,
                              VirtualClock)
from emulator.runtime.actor import FAIRNESS_BATCH
import anyio.lowlevel


@dataclass
class Add:
    a: int
    b: int


@dataclass
class Fail:
    why: str


class Calculator(Actor):
    def __init__(self, name, system):
        super().__init__(name, system)
        self.seen = []

    async def receive(self, msg, reply):
        self.seen.append(msg)
        if isinstance(msg, Add):
            reply.ok(msg.a + msg.b)
        elif isinstance(msg, Fail):
            reply.error(ValueError(msg.why))
        elif msg == "slow":
            await anyio.sleep(10)
            reply.ok("slow done")
        elif msg == "ignore":
            pass
        elif msg == "boom":
            raise RuntimeError("boom")


def make_system(seed=1):
    return ActorSystem(seed, VirtualClock())


# --------------------------------------------------------------------------- tell / ask


@pytest.mark.asyncio
async def test_tell_delivers_in_order_and_never_awaits():
    async with make_system() as system:
        calc = system.spawn(Calculator("calc", system))
        for i in range(200):
            assert calc.tell(i) is None  # plain call: no coroutine to await
        assert await calc.ask(Add(1, 2)) == 3
        assert calc.seen[:200] == list(range(200))


@pytest.mark.asyncio
async def test_ask_returns_the_reply_value():
    async with make_system() as system:
        calc = system.spawn(Calculator("calc", system))
        assert await calc.ask(Add(20, 22)) == 42
        assert await calc.ask(Add(1, 1), timeout=5) == 2


@pytest.mark.asyncio
async def test_reply_error_raises_in_the_asker_and_the_actor_lives_on():
    async with make_system() as system:
        calc = system.spawn(Calculator("calc", system))
        with pytest.raises(ValueError, match="no such bundle"):
            await calc.ask(Fail("no such bundle"))
        assert calc.alive and system.failures == []
        assert await calc.ask(Add(2, 3)) == 5


@pytest.mark.asyncio
async def test_tell_passes_no_reply_and_ask_a_reply_that_expects():
    replies = []

    class Recorder(Actor):
        async def receive(self, msg, reply):
            replies.append(reply)
            reply.ok("ignored for a tell")

    async with make_system() as system:
        rec = system.spawn(Recorder("rec", system))
        rec.tell("t")
        await rec.ask("a")
    assert replies[0] is NO_REPLY and not replies[0].expects
    assert isinstance(replies[1], Reply) and replies[1].expects


@pytest.mark.asyncio
async def test_ask_times_out_on_the_virtual_clock():
    async with make_system() as system:
        calc = system.spawn(Calculator("calc", system))
        start = anyio.current_time()
        with pytest.raises(AskTimeout, match=r"'calc' with a str message got no reply within 5s"):
            await calc.ask("ignore", timeout=5)
        assert anyio.current_time() - start == 5.0
        with pytest.raises(TimeoutError):  # AskTimeout is a TimeoutError
            await calc.ask("slow", timeout=3)
        assert calc.alive


@pytest.mark.asyncio
async def test_asks_with_one_deadline_share_a_timer_and_expire_alone():
    class Holder(Actor):
        """Answers "now" at once and keeps every other ask's reply for later."""

        def __init__(self, name, system):
            super().__init__(name, system)
            self.held = []

        async def receive(self, msg, reply):
            if msg == "now":
                reply.ok("now")
            else:
                self.held.append(reply)

    async with make_system() as system:
        holder = system.spawn(Holder("holder", system))
        outcomes = {}

        async def ask(tag):
            try:
                outcomes[tag] = (await holder.ask(tag, timeout=5.0), anyio.current_time())
            except AskTimeout:
                outcomes[tag] = ("timeout", anyio.current_time())

        start = anyio.current_time()
        async with anyio.create_task_group() as tg:
            for tag in ("a", "b", "now", "c"):
                tg.start_soon(ask, tag)
            await anyio.sleep(1)
            assert len(system._deadlines) == 3  # "now" was answered and left its deadline
            holder.held[1].ok("b answered")      # answered before the shared deadline
        assert outcomes["now"] == ("now", start)
        assert outcomes["b"] == ("b answered", start + 1)
        assert outcomes["a"] == outcomes["c"] == ("timeout", start + 5)
        assert len(system._deadlines) == 0
        # every ask answered before its deadline: the shared timer is cancelled, the clock stays
        assert await holder.ask("now", timeout=30.0) == "now"
        t = anyio.current_time()
        await anyio.lowlevel.checkpoint()
        assert len(system._deadlines) == 0 and anyio.current_time() == t


@pytest.mark.asyncio
async def test_late_reply_after_a_timeout_is_dropped():
    async with make_system() as system:
        calc = system.spawn(Calculator("calc", system))
        with pytest.raises(AskTimeout):
            await calc.ask("slow", timeout=1)
        await anyio.sleep(20)  # the handler replies at t=10 into a finished future: no error
        assert calc.alive and system.failures == []
        assert await calc.ask(Add(1, 1)) == 2


@pytest.mark.asyncio
async def test_reply_can_be_answered_later_from_a_child_task():
    class Deferred(Actor):
        async def receive(self, msg, reply):
            self.start_soon(self.answer_later, reply, msg)

        async def answer_later(self, reply, msg):
            await anyio.sleep(msg)
            reply.ok(self.now)

    async with make_system() as system:
        d = system.spawn(Deferred("d", system))
        async with anyio.create_task_group() as tg:
            results = {}

            async def ask(delay):
                results[delay] = await d.ask(delay)

            for delay in (3, 1):
                tg.start_soon(ask, delay)
        assert results == {1: 1.0, 3: 3.0}  # both in flight at once: the mailbox did not block


@pytest.mark.asyncio
async def test_ask_with_a_bad_timeout_names_it():
    async with make_system() as system:
        calc = system.spawn(Calculator("calc", system))
        with pytest.raises(ValueError, match="timeout must be .* got -1"):
            await calc.ask(Add(1, 1), timeout=-1)


@pytest.mark.asyncio
async def test_asking_yourself_from_receive_is_refused_not_hung():
    class Narcissus(Actor):
        async def receive(self, msg, reply):
            try:
                await self.ask("again")
            except RuntimeError as exc:
                reply.ok(str(exc))

    async with make_system() as system:
        n = system.spawn(Narcissus("n", system))
        assert "asked itself" in await n.ask("go")


@pytest.mark.asyncio
async def test_a_flooded_actor_yields_to_others():
    progress = []

    class Busy(Actor):
        count = 0

        async def receive(self, msg, reply):
            self.count += 1  # never awaits

    class Observer(Actor):
        async def receive(self, msg, reply):
            progress.append(busy.count)

    async with make_system() as system:
        busy = system.spawn(Busy("busy", system))
        observer = system.spawn(Observer("observer", system))
        await anyio.lowlevel.checkpoint()
        for _ in range(10 * FAIRNESS_BATCH):
            busy.tell("work")
        observer.tell("look")
        await anyio.sleep(1)
        assert busy.count == 10 * FAIRNESS_BATCH
    assert progress and progress[0] < 10 * FAIRNESS_BATCH


# --------------------------------------------------------------------------- dead actors


@pytest.mark.asyncio
async def test_tell_and_ask_to_a_dead_actor_raise_immediately():
    async with make_system() as system:
        calc = system.spawn(Calculator("calc", system))
        await calc.stop()
        start = anyio.current_time()
        with pytest.raises(ActorDead, match=r"actor 'calc' is unreachable: stopped"):
            calc.tell(Add(1, 1))
        with pytest.raises(ActorDead) as info:
            await calc.ask(Add(1, 1), timeout=30)
        assert info.value.actor == "calc" and info.value.cause == "stopped"
        assert anyio.current_time() == start


@pytest.mark.asyncio
async def test_tell_before_spawn_says_to_spawn():
    async with make_system() as system:
        calc = Calculator("calc", system)
        with pytest.raises(ActorDead, match=r"call system.spawn\(actor\) first"):
            calc.tell("x")


@pytest.mark.asyncio
async def test_lookup_and_get():
    async with make_system() as system:
        calc = system.spawn(Calculator("calc", system))
        assert system.get("calc") is calc and system.lookup("calc") is calc
        assert system.get("nobody") is None
        with pytest.raises(ActorDead, match=r"'nobody' is unreachable: no actor with this name"):
            system.lookup("nobody")
        calc.kill()
        assert system.get("calc") is None
        with pytest.raises(ActorDead, match="killed"):
            system.lookup("calc")


@pytest.mark.asyncio
async def test_a_name_can_be_reused_after_the_actor_died():
    async with make_system() as system:
        old = system.spawn(Calculator("broker-1", system))
        with pytest.raises(ValueError, match="'broker-1' is already running"):
            system.spawn(Calculator("broker-1", system))
        await old.stop()
        new = system.spawn(Calculator("broker-1", system))
        assert system.lookup("broker-1") is new and await new.ask(Add(1, 2)) == 3
        with pytest.raises(ActorDead):
            old.tell("still dead")


# --------------------------------------------------------------------------- lifecycle


class Lifecycle(Actor):
    def __init__(self, name, system, events):
        super().__init__(name, system)
        self.events = events

    async def on_start(self):
        self.events.append((self.name, "start"))

    async def receive(self, msg, reply):
        self.events.append((self.name, msg))
        if msg == "stop yourself":
            await self.stop()
            self.events.append((self.name, "still in receive"))
        reply.ok()

    async def on_stop(self):
        self.events.append((self.name, "on_stop"))


@pytest.mark.asyncio
async def test_graceful_stop_calls_on_stop_and_kill_does_not():
    events = []
    async with make_system() as system:
        a = system.spawn(Lifecycle("a", system, events))
        b = system.spawn(Lifecycle("b", system, events))
        await a.ask("hello")
        await b.ask("hello")
        await a.stop()
        assert not a.alive
        b.kill()
        assert not b.alive  # at once: kill never awaits
        await b.wait_stopped()
    assert ("a", "on_stop") in events
    assert ("b", "on_stop") not in events


@pytest.mark.asyncio
async def test_stop_from_inside_receive_finishes_the_message_first():
    events = []
    async with make_system() as system:
        a = system.spawn(Lifecycle("a", system, events))
        await a.ask("stop yourself")
        await a.wait_stopped()
    assert events == [("a", "start"), ("a", "stop yourself"), ("a", "still in receive"),
                      ("a", "on_stop")]


@pytest.mark.asyncio
async def test_stop_refuses_queued_asks_and_lets_the_current_message_finish():
    class Slow(Actor):
        async def receive(self, msg, reply):
            await anyio.sleep(5)
            reply.ok(msg)

    async with make_system() as system:
        slow = system.spawn(Slow("slow", system))
        results = {}

        async def ask(i):
            try:
                results[i] = await slow.ask(i)
            except ActorDead as exc:
                results[i] = exc.cause

        async with anyio.create_task_group() as tg:
            for i in range(3):
                tg.start_soon(ask, i)
            await anyio.sleep(1)  # message 0 is being handled, 1 and 2 are queued
            await slow.stop()
            assert anyio.current_time() == 5.0  # stop waited for message 0
    assert results == {0: 0, 1: "stopping", 2: "stopping"}


@pytest.mark.asyncio
async def test_system_exit_kills_remaining_actors_without_on_stop():
    events = []
    async with make_system() as system:
        a = system.spawn(Lifecycle("a", system, events))
        await a.ask("hello")
    assert not a.alive and ("a", "on_stop") not in events
    assert system.get("a") is None


@pytest.mark.asyncio
async def test_children_die_with_their_parent():
    events = []
    async with make_system() as system:
        parent = system.spawn(Lifecycle("parent", system, events))
        kids = [system.spawn(Lifecycle(f"kid-{i}", system, events), parent=parent)
                for i in range(3)]
        grandkid = system.spawn(Lifecycle("grandkid", system, events), parent=kids[0])
        unrelated = system.spawn(Lifecycle("unrelated", system, events))
        await anyio.sleep(0.1)
        parent.kill()
        assert not any(k.alive for k in kids) and not grandkid.alive
        assert unrelated.alive
        with pytest.raises(ActorDead, match=r"killed with its parent 'parent'"):
            kids[1].tell("x")
        with pytest.raises(ActorDead):
            system.spawn(Lifecycle("orphan", system, events), parent=parent)


@pytest.mark.asyncio
async def test_graceful_stop_stops_children_gracefully_newest_first():
    events = []
    async with make_system() as system:
        parent = system.spawn(Lifecycle("parent", system, events))
        for i in range(2):
            system.spawn(Lifecycle(f"kid-{i}", system, events), parent=parent)
        await anyio.sleep(0.1)
        await parent.stop()
    stops = [name for name, what in events if what == "on_stop"]
    assert stops == ["parent", "kid-1", "kid-0"]


@pytest.mark.asyncio
async def test_periodic_child_tasks_run_on_virtual_time_and_stop_with_the_actor():
    ticks = []

    class Ticker(Actor):
        async def on_start(self):
            self.start_soon(self.tick, 10, name="tick")

        async def tick(self, period):
            while True:
                await anyio.sleep(period)
                ticks.append(self.now)

    async with make_system() as system:
        ticker = system.spawn(Ticker("ticker", system))
        await anyio.sleep(35)
        ticker.kill()
        await ticker.wait_stopped()
        await anyio.sleep(100)
    assert ticks == [10.0, 20.0, 30.0]


@pytest.mark.asyncio
async def test_actor_has_a_derived_rng_and_reads_the_clock():
    async with ActorSystem(99, VirtualClock()) as system:
        a = system.spawn(Calculator("a", system))
        b = Calculator("a", ActorSystem(99, VirtualClock()))
        assert a.rng.random() == b.rng.random()
        await anyio.sleep(12.5)
        assert a.now == 12.5


# --------------------------------------------------------------------------- misuse


@pytest.mark.asyncio
async def test_spawning_a_class_shows_the_correct_form():
    async with make_system() as system:
        with pytest.raises(TypeError, match=r"system.spawn\(Calculator\)  # incorrect!"):
            system.spawn(Calculator)


@pytest.mark.asyncio
async def test_spawning_twice_or_outside_the_system_is_refused():
    system = make_system()
    with pytest.raises(RuntimeError, match="async with ActorSystem"):
        system.spawn(Calculator("calc", system))
    async with system:
        calc = system.spawn(Calculator("calc", system))
        with pytest.raises(ValueError, match="already spawned"):
            system.spawn(calc)
        other = make_system()
        with pytest.raises(ValueError, match="created for system"):
            system.spawn(Calculator("x", other))


@pytest.mark.asyncio
async def test_forgetting_super_init_is_explained():
    class Forgetful(Actor):
        def __init__(self, name, system):
            self.name = name

    async with make_system() as system:
        with pytest.raises(TypeError, match=r"must call super\(\).__init__\(name, system\)"):
            system.spawn(Forgetful("f", system))


@pytest.mark.asyncio
async def test_start_soon_with_a_coroutine_object_shows_the_fix():
    async with make_system() as system:
        calc = system.spawn(Calculator("calc", system))
        with pytest.raises(TypeError, match=r"self.start_soon\(self.tick, 5\)  # correct!"):
            calc.start_soon(anyio.sleep(1))


@pytest.mark.asyncio
async def test_reply_error_with_a_class_shows_the_fix():
    class Sloppy(Actor):
        async def receive(self, msg, reply):
            try:
                reply.error(KeyError)
            except TypeError as exc:
                reply.ok(str(exc))

    async with make_system() as system:
        s = system.spawn(Sloppy("s", system))
        assert "reply.error(KeyError('what went wrong'))  # correct!" in await s.ask("x")


def test_constructor_arguments_are_checked():
    system = make_system()
    with pytest.raises(TypeError, match="name must be a non-empty str, got <ActorSystem"):
        Calculator(system, "calc")
    with pytest.raises(TypeError, match="seed must be an int, got '7'"):
        ActorSystem("7", VirtualClock())
    with pytest.raises(TypeError, match="clock must be a Clock"):
        ActorSystem(7, clock=None)


def test_plain_with_is_refused():
    with pytest.raises(TypeError, match="use 'async with ActorSystem"):
        with make_system():
            pass


@pytest.mark.asyncio
async def test_an_error_in_the_system_block_propagates_as_itself():
    with pytest.raises(KeyError, match="body failed"):
        async with make_system() as system:
            calc = system.spawn(Calculator("calc", system))
            await calc.ask(Add(1, 1))
            raise KeyError("body failed")
    assert not calc.alive


# --------------------------------------------------------------------------- ask_then / call_later


class Asker(Actor):
    """Collects ask_then outcomes; `then` raises when told to, to crash this actor."""

    def __init__(self, name, system):
        super().__init__(name, system)
        self.got = []
        self.raise_in_then = False

    async def receive(self, msg, reply):
        pass

    def then(self, tag, value, error):
        if self.raise_in_then:
            raise RuntimeError("then failed")
        self.got.append((tag, value, None if error is None else type(error).__name__,
                         self.system.clock.now()))   # a loop callback: no task, so not anyio.current_time()


@pytest.mark.asyncio
async def test_ask_then_delivers_values_errors_timeouts_and_deaths_to_the_asker():
    async with make_system() as system:
        calc = system.spawn(Calculator("calc", system))
        asker = system.spawn(Asker("asker", system))
        calc.ask_then(Add(2, 3), asker.then, "add", asker=asker, timeout=5.0)
        calc.ask_then(Fail("no"), asker.then, "fail", asker=asker)
        calc.ask_then("ignore", asker.then, "ignored", asker=asker, timeout=2.0)
        await anyio.sleep(0.5)
        assert asker.got == [("add", 5, None, 0.0), ("fail", None, "ValueError", 0.0)]
        assert len(system._deadlines) == 1           # only the ignored ask still has a deadline
        await anyio.sleep(2.0)
        assert asker.got[2] == ("ignored", None, "AskTimeout", 2.0)
        assert len(system._deadlines) == 0
        calc.ask_then("slow", asker.then, "slow", asker=asker)
        await anyio.sleep(1.0)
        calc.kill()                                   # dies before answering
        await anyio.lowlevel.checkpoint()
        assert asker.got[3][:3] == ("slow", None, "ActorDead")
        assert not calc._open
        with pytest.raises(ActorDead):
            calc.ask_then(Add(1, 1), asker.then, "late", asker=asker)


@pytest.mark.asyncio
async def test_ask_then_skips_a_dead_asker_and_crashes_it_when_the_callback_raises():
    async with make_system() as system:
        calc = system.spawn(Calculator("calc", system))
        gone = system.spawn(Asker("gone", system))
        calc.ask_then("slow", gone.then, "x", asker=gone)
        gone.kill()
        await anyio.sleep(11)
        assert gone.got == []                         # answered after the asker died: skipped
        fragile = system.spawn(Asker("fragile", system))
        fragile.raise_in_then = True
        calc.ask_then(Add(1, 2), fragile.then, "y", asker=fragile)
        await anyio.sleep(0.1)
        assert not fragile.alive
        assert [f.actor for f in system.failures] == ["fragile"]


@pytest.mark.asyncio
async def test_call_later_runs_on_the_emulated_clock_only_while_the_actor_lives():
    async with make_system() as system:
        a = system.spawn(Asker("a", system))
        ran = []
        a.call_later(3.0, lambda tag: ran.append((tag, system.clock.now())), "three")
        a.call_later(0, lambda tag: ran.append((tag, system.clock.now())), "now")
        await anyio.sleep(5)
        assert ran == [("now", 0.0), ("three", 3.0)]
        a.call_later(1.0, lambda: ran.append("after death"))
        a.kill()
        await anyio.sleep(2)
        assert ran == [("now", 0.0), ("three", 3.0)]
        b = system.spawn(Asker("b", system))
        b.call_later(0, lambda: 1 / 0)
        await anyio.sleep(0.1)
        assert not b.alive and system.failures[-1].actor == "b"
