"""Actors: a name, a mailbox handled one message at a time, request/reply, and supervision.

An actor is an object with an anyio task in its system's task group. `tell` and `ask` enqueue
without awaiting (a `Mailbox`: a deque append, where an anyio stream's `send` always yields and its
`receive` checkpoints before every wait); the run loop drains the mailbox without yielding until it
is empty, checkpointing every `FAIRNESS_BATCH` messages so a flooded actor cannot starve the rest.

Failure is data, never a hang: an exception escaping `receive`, `on_start`, `on_stop` or a child
task crashes only that actor. It is marked dead, its children are killed, every ask it has not
answered fails with `ActorDead`, and the crash is logged, recorded in `system.failures` and passed
to `system.on_failure` listeners. The system and the other actors keep running.

Lifecycle: new -> running (spawn) -> stopping (stop) -> dead; kill and crash go straight to dead.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import random
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
import structlog
from anyio.abc import TaskGroup
from structlog.typing import FilteringBoundLogger

from .clock import ZERO_ORIGIN_LOOPS, Clock
from .deadlines import Deadlines
from .errors import ActorDead, AskTimeout
from .mailbox import Mailbox
from .reply import NO_REPLY, Reply, _check_exception
from .rng import derive_rng
from .supervision import ActorFailure, report_failure
from .wakeup import Wakeup

__all__ = ["FAIRNESS_BATCH", "Actor", "ActorDead", "ActorFailure", "ActorSystem", "AskTimeout",
           "NO_REPLY", "Reply"]

A = TypeVar("A", bound="Actor")
FAIRNESS_BATCH = 64  # messages handled back to back before yielding to other tasks

_NEW, _RUNNING, _STOPPING, _DEAD = "new", "running", "stopping", "dead"

# asyncio's loop -> running task map (what asyncio.current_task reads), read directly on the hot
# paths: asking costs one dict lookup instead of two calls; the public function where it is absent
_CURRENT_TASKS: dict[Any, asyncio.Task[Any]] | None = getattr(asyncio.tasks, "_current_tasks", None)


def _current_task(loop: asyncio.AbstractEventLoop) -> asyncio.Task[Any] | None:
    if _CURRENT_TASKS is not None:
        return _CURRENT_TASKS.get(loop)
    return asyncio.current_task(loop)


def _check_timeout(timeout: float | None) -> float | None:
    if timeout is None:
        return None
    if type(timeout) is float and 0.0 <= timeout < math.inf:  # the common case, checked cheaply
        return timeout
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
        raise ValueError(f"timeout must be a number of seconds >= 0 or None, got {timeout!r}")
    return None if timeout == math.inf else timeout


# --------------------------------------------------------------------------- Actor


class Actor:
    """Subclass, override `receive` (and `on_start` / `on_stop`), then `system.spawn(MyActor(...))`."""

    def __init__(self, name: str, system: ActorSystem) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"Actor(name, system): name must be a non-empty str, got {name!r}")
        if not isinstance(system, ActorSystem):
            raise TypeError(f"Actor(name, system): system must be an ActorSystem, got {system!r}")
        self.name = name
        self.system = system
        self.alive = False
        # made on first use: a cluster has one actor per owned bundle, tens of thousands of which
        # never draw a random number (a Mersenne Twister state is 2.5 KB) nor log a line
        self._rng: random.Random | None = None
        self._log: FilteringBoundLogger | None = None
        self._mailbox: Mailbox[tuple[object, Reply]] = Mailbox()
        self._open: dict[Reply, None] = {}  # unanswered asks to this actor, in arrival order
        self._state = _NEW
        self._cause = "not spawned yet: call system.spawn(actor) first"
        self._task: asyncio.Task[Any] | None = None
        self._scope: anyio.CancelScope | None = None
        self._serving = False  # the run loop is up: start_soon starts tasks at once
        self._early: list[tuple[Callable[..., Awaitable[object]], tuple[object, ...], str]] = []
        self._parent: Actor | None = None
        self._children: dict[Actor, None] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._finished = False
        self._stopped: asyncio.Event | None = None  # made when someone waits for the end
        self._wakeups: list[Wakeup] | None = None   # cancelled at death (made on first use)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} {self._state}>"

    @property
    def rng(self) -> random.Random:
        """This actor's own stream, derived from (system seed, name): the same whenever it is made."""
        rng = self._rng
        if rng is None:
            rng = self._rng = derive_rng(self.system.seed, self.name)
        return rng

    @rng.setter
    def rng(self, value: random.Random) -> None:
        self._rng = value

    @property
    def log(self) -> FilteringBoundLogger:
        """A structlog logger bound to `actor=name` (lazy: follows logging configured later)."""
        log = self._log
        if log is None:
            log = self._log = structlog.get_logger(actor=self.name)
        return log

    @log.setter
    def log(self, value: FilteringBoundLogger) -> None:
        self._log = value

    @property
    def now(self) -> float:
        return self.system.now()

    # ----------------------------------------------------------------------- to override

    async def on_start(self) -> None:
        """Runs before the first message; a good place to `start_soon` periodic tasks."""

    async def receive(self, msg: object, reply: Reply) -> None:
        """Handle one message; answer asks with `reply.ok(value)` / `reply.error(exc)`."""
        raise TypeError(f"{type(self).__name__} {self.name!r} does not handle {msg!r}: "
                        f"override receive(self, msg, reply)")

    async def on_stop(self) -> None:
        """Runs on a graceful `stop()` only (not on kill or crash), children still running."""

    # ----------------------------------------------------------------------- messaging

    def tell(self, msg: object) -> None:
        """Enqueue `msg` without waiting; raises ActorDead if the actor is not running."""
        if not self.alive:
            raise ActorDead(self.name, self._cause)
        self._mailbox.put((msg, NO_REPLY))

    async def ask(self, msg: object, timeout: float | None = None) -> Any:
        """Send `msg` and wait for the reply. Raises ActorDead (not running, or died before
        answering), AskTimeout after `timeout` seconds, or whatever the handler passed to
        `reply.error`."""
        if not self.alive:
            raise ActorDead(self.name, self._cause)
        timeout = _check_timeout(timeout)
        loop = self.system._loop or asyncio.get_running_loop()
        if self._task is not None and _current_task(loop) is self._task:
            raise RuntimeError(f"actor {self.name!r} asked itself from its own message loop, which "
                               f"would wait forever: use self.tell(msg), or ask from start_soon()")
        future = loop.create_future()
        reply = Reply(future)
        self._open[reply] = None
        self._mailbox.put((msg, reply))
        deadlines = self.system._deadlines
        when = None if timeout is None else deadlines.add(loop, future, self.name, msg, timeout)
        try:
            return await future
        finally:
            self._open.pop(reply, None)
            if when is not None:
                deadlines.discard(when, future)

    def ask_then(self, msg: object, then: Callable[..., object], *args: object, asker: Actor,
                 timeout: float | None = None) -> None:
        """`ask` for code written as callbacks: send `msg` and return at once; once it is answered
        (or fails: ActorDead, AskTimeout, an error reply) run `then(*args, value, error)` as a
        callback of `asker` (exactly one of value/error is meaningful: error is None on success).

        Nothing waits, so no task or coroutine is made per request: a client with 100,000 producers
        connecting at once holds one small record per request instead of a task and its frames.
        `then` is skipped if `asker` is dead by then, and an exception escaping it crashes
        `asker`. Raises ActorDead at once, like `ask`, if this actor is not running."""
        if not self.alive:
            raise ActorDead(self.name, self._cause)
        timeout = _check_timeout(timeout)
        loop = self.system._loop or asyncio.get_running_loop()
        reply = _ThenReply(loop, self, asker, then, args)
        self._open[reply] = None
        self._mailbox.put((msg, reply))
        if timeout is not None:
            reply._when = self.system._deadlines.add(loop, reply, self.name, msg, timeout)

    def call_later(self, delay: float, fn: Callable[..., object], *args: object) -> None:
        """Run the plain function `fn(*args)` after `delay` emulated seconds (0: on the next loop
        turn) as part of this actor: skipped if the actor is dead by then; an exception escaping
        it crashes the actor. A timer, not a task: for callback-style code (see `ask_then`)."""
        loop = self.system._loop or asyncio.get_running_loop()
        if delay > 0:
            loop.call_later(delay, self._call_guarded, fn, args)
        else:
            loop.call_soon(self._call_guarded, fn, args)

    def wakeup(self, fn: Callable[[], object]) -> Wakeup:
        """A re-armable timer that runs the plain function `fn()` as part of this actor where a task
        sleeping until then would wake (`Wakeup`: `at(when)`, `soon()`): for periodic work that
        runs often and rarely waits. Cancelled when the actor dies."""
        w = Wakeup(self, fn, self.system._loop or asyncio.get_running_loop())
        if self._wakeups is None:
            self._wakeups = []
        self._wakeups.append(w)
        return w

    def _call_guarded(self, fn: Callable[..., object], args: tuple[object, ...]) -> None:
        if self._state is _DEAD:
            return
        try:
            fn(*args)
        except Exception as exc:
            self._crash(exc)

    # ----------------------------------------------------------------------- lifecycle

    def start_soon(self, fn: Callable[..., Awaitable[object]], *args: object,
                   name: str | None = None) -> None:
        """Run `fn(*args)` as a child task of this actor: cancelled when the actor dies, and an
        exception escaping it crashes the actor."""
        if inspect.iscoroutine(fn):
            fn.close()
            raise TypeError("start_soon() takes an async function and its arguments:\n"
                            "  self.start_soon(self.tick(5))  # incorrect!\n"
                            "  self.start_soon(self.tick, 5)  # correct!")
        if not callable(fn):
            raise TypeError(f"start_soon() needs an async function as fn, got {fn!r}")
        if self._state is _DEAD:
            raise ActorDead(self.name, self._cause)
        if not self._serving:
            task_name = f"{self.name}:{name or getattr(fn, '__qualname__', repr(fn))}"
            self._early.append((fn, args, task_name))  # started once the run loop is up
        else:
            self._spawn_task(fn, args, name)

    def _spawn_task(self, fn: Callable[..., Awaitable[object]], args: tuple[object, ...],
                    name: str | None) -> None:
        """A bare asyncio task (not anyio's start_soon, ~4x dearer): brokers start one per bundle
        resolution and admin operation. It is tracked here and cancelled when the actor dies."""
        loop = self.system._loop or asyncio.get_running_loop()
        self._tasks.add(loop.create_task(self._guard(fn, args), name=name))

    async def stop(self) -> None:
        """Graceful stop: refuse new messages (queued asks fail with ActorDead), let the current
        message finish, run `on_stop`, stop the children (newest first), then die. Waits until the
        actor is dead, except when called from its own message loop, where it cannot wait."""
        if self._state is _NEW:
            self._terminate("stopped before it was spawned")
            return
        if self._state is _RUNNING:
            self._state = _STOPPING
            self.alive = False
            self._cause = "stopping"
            self._mailbox.close()  # wakes the idle run loop
            self._refuse_queued()
        if asyncio.current_task() is self._task:
            return
        await self.wait_stopped()

    def kill(self) -> None:
        """Crash-like stop, now: cancel everything, no `on_stop`; children are killed too."""
        self._terminate("killed")

    async def wait_stopped(self) -> None:
        """Return once the actor is dead and its task has finished."""
        if self._state is _NEW:
            raise RuntimeError(f"actor {self.name!r} was never spawned, so it will never stop: "
                               f"call system.spawn(actor) first")
        if self._finished:
            return
        if self._stopped is None:
            self._stopped = asyncio.Event()
        await self._stopped.wait()

    def _mark_finished(self) -> None:
        self._finished = True
        if self._stopped is not None:
            self._stopped.set()

    # ----------------------------------------------------------------------- run loop

    async def _run(self) -> None:
        self._task = asyncio.current_task()
        try:
            if self._state is _DEAD:
                return
            # Child tasks are bare asyncio tasks tracked in self._tasks (see _spawn_task), so the
            # run loop needs a cancel scope but no task group of its own.
            with anyio.CancelScope() as self._scope:
                self._serving = True
                for fn, args, task_name in self._early:
                    self._spawn_task(fn, args, task_name)
                self._early.clear()
                try:
                    await self.on_start()
                    await self._serve()
                    if self._state is _STOPPING:
                        await self.on_stop()
                        for child in reversed(list(self._children)):
                            await child.stop()
                        self._terminate("stopped")
                except Exception as exc:
                    self._crash(exc)
        finally:
            self._terminate("cancelled with the actor system")  # no-op unless cancelled from outside
            self._mark_finished()

    async def _serve(self) -> None:
        box = self._mailbox
        loop = self.system._loop or asyncio.get_running_loop()
        receive = self.receive
        batch = 0
        while self._state is _RUNNING:
            if not box:
                if box.closed:
                    return
                batch = 0
                # Straight to the wait: no extra loop turn before going idle. With operation
                # latencies an actor goes idle after nearly every message (each arrives at its own
                # instant), and the turn cost a task step each time (a few % of a 2 h default run's
                # CPU, measured back to back). Same-instant interleavings differ from the yielding
                # loop's; decisions are still a function of the seed.
                await box.wait(loop)
                continue  # re-check the state: a stop() may have woken us
            if batch >= FAIRNESS_BATCH:
                batch = 0
                await anyio.lowlevel.checkpoint()
                continue
            msg, reply = box.get_nowait()
            batch += 1
            await receive(msg, reply)

    async def _guard(self, fn: Callable[..., Awaitable[object]], args: tuple[object, ...]) -> None:
        # the task forgets itself (no done-callback: one loop callback less per task); a task
        # cancelled before it ever ran stays in the set, harmlessly, until the actor dies
        try:
            await fn(*args)
        except Exception as exc:
            self._crash(exc)
        finally:
            self._tasks.discard(_current_task(self.system._loop or asyncio.get_running_loop()))

    # ----------------------------------------------------------------------- death

    def _refuse_queued(self) -> None:
        """Empty the mailbox, failing the asks in it (a tell in it is simply lost)."""
        box = self._mailbox
        while box:
            _, reply = box.get_nowait()
            reply._fail(ActorDead(self.name, self._cause))

    def _terminate(self, cause: str, error: BaseException | None = None) -> None:
        """Mark dead and release everyone waiting on this actor. Idempotent, never awaits."""
        if self._state is _DEAD:
            return
        self._state = _DEAD
        self.alive = False
        self._cause = cause
        self._mailbox.close()
        self._refuse_queued()
        for reply in list(self._open):
            dead = ActorDead(self.name, cause)
            dead.__cause__ = error
            reply._fail(dead)
        self._open.clear()
        if self._scope is not None:
            self._scope.cancel()
        for task in list(self._tasks):
            task.cancel()
        if self._wakeups is not None:
            for w in self._wakeups:
                w.cancel()
        if self._task is None:  # the run loop never started, so it will not set this
            self._mark_finished()
        for child in reversed(list(self._children)):
            child._terminate(f"killed with its parent {self.name!r} ({cause})")
        if self._parent is not None:
            self._parent._children.pop(self, None)
        self.system._forget(self)

    def _crash(self, error: Exception) -> None:
        if self._state is _DEAD:
            self.log.warning("actor task failed after the actor died", error=repr(error))
            return
        self._terminate(f"crashed with {error!r}", error)
        self.system._crashed(self, error)


class _ThenReply(Reply):
    """The reply of an `ask_then`: answering schedules the asker's callback directly, with no
    future in between (an asyncio future would add its own object, a done-callback registration
    and three calls per request; the callback runs at the same loop turn either way).

    It is a `Deadlines` `Pending` (`done()`, `set_exception()`), so a timeout fails it like any
    ask; the callback runs as the asker's `call_later` functions do."""

    __slots__ = ("_done", "_loop", "_target", "_when", "_asker", "_then", "_args")

    def __init__(self, loop: asyncio.AbstractEventLoop, target: Actor, asker: Actor,
                 then: Callable[..., object], args: tuple[object, ...]) -> None:
        self._done = False
        self._loop = loop
        self._target = target
        self._when: float | None = None
        self._asker = asker
        self._then = then
        self._args = args

    def done(self) -> bool:
        return self._done

    def ok(self, value: object = None) -> None:
        if not self._done:
            self._finish(value, None)

    def error(self, exc: BaseException) -> None:
        _check_exception(exc)
        if not self._done:
            self._finish(None, exc)

    def _fail(self, exc: BaseException) -> None:
        if not self._done:
            self._finish(None, exc)

    set_exception = _fail

    def _finish(self, value: object, error: BaseException | None) -> None:
        self._done = True
        self._loop.call_soon(self._deliver, value, error)

    def _deliver(self, value: object, error: BaseException | None) -> None:
        target = self._target
        target._open.pop(self, None)
        if self._when is not None:
            target.system._deadlines.discard(self._when, self)
        self._asker._call_guarded(self._then, (*self._args, value, error))

    def __repr__(self) -> str:
        return f"<Reply {'answered' if self._done else 'pending'}>"


# --------------------------------------------------------------------------- ActorSystem


class ActorSystem:
    """Owns the actors' task group, the name registry and the crash records. Use it as
    `async with ActorSystem(seed, clock) as system:`; leaving the block kills the actors left."""

    def __init__(self, seed: int, clock: Clock, name: str = "system") -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"ActorSystem(seed, clock): seed must be an int, got {seed!r}")
        if not isinstance(clock, Clock):
            raise TypeError(f"ActorSystem(seed, clock): clock must be a Clock (VirtualClock() or "
                            f"WallClock(speed)), got {clock!r}")
        if not isinstance(name, str) or not name:
            raise TypeError(f"ActorSystem name must be a non-empty str, got {name!r}")
        self.seed = seed
        self.clock = clock
        self.name = name
        self.failures: list[ActorFailure] = []
        self.on_failure: list[Callable[[ActorFailure], None]] = []
        self._actors: dict[str, Actor] = {}  # running and stopping actors, in spawn order
        self._last_cause: dict[str, str] = {}
        self._tg: TaskGroup | None = None
        self._closed = False
        self._deadlines = Deadlines()
        # the loop the system was entered in, which runs every one of its actors: read on the hot
        # paths instead of asyncio.get_running_loop(), which makes a getpid() system call per call
        # (2-4 % of a large run's CPU, measured side by side). Actor methods are called from that
        # loop only (None before the block is entered: asyncio's own lookup, and its error).
        self._loop: asyncio.AbstractEventLoop | None = None
        # the clock's reading; bound to the loop's own time() once running on a zero-origin loop
        self.now: Callable[[], float] = clock.now

    def __repr__(self) -> str:
        return f"<ActorSystem {self.name!r} seed={self.seed} actors={len(self._actors)}>"

    @property
    def closed(self) -> bool:
        """The block was left: the actors are gone (a timer of an observer stops rearming)."""
        return self._closed

    async def __aenter__(self) -> ActorSystem:
        if self._tg is not None or self._closed:
            raise RuntimeError(f"ActorSystem {self.name!r} can be entered only once; "
                               f"create a new one for a new run")
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        loop = self._loop = asyncio.get_running_loop()
        if isinstance(loop, ZERO_ORIGIN_LOOPS):  # now() is loop.time(): skip two calls per read
            self.now = loop.time
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> bool | None:
        self._closed = True
        for actor in reversed(list(self._actors.values())):
            actor._terminate("killed: the actor system closed")
        assert self._tg is not None
        try:
            return await self._tg.__aexit__(exc_type, exc, tb)
        except BaseExceptionGroup as group:
            # actor tasks never raise into this group, so a lone member is the body's own error:
            # let it propagate as itself (a failed assert reads as one, not as an ExceptionGroup)
            if exc is not None and group.exceptions == (exc,):
                return None
            raise

    def __enter__(self) -> None:
        raise TypeError("use 'async with ActorSystem(...) as system:', not 'with ActorSystem(...)'")

    def __exit__(self, *exc_info: object) -> None:  # pragma: no cover - __enter__ always raises
        pass

    # ----------------------------------------------------------------------- registry

    def spawn(self, actor: A, parent: Actor | None = None) -> A:
        """Start `actor`'s run loop. With `parent`, the actor dies whenever the parent does."""
        if isinstance(actor, type):
            raise TypeError(f"spawn() takes an actor instance, not a class:\n"
                            f"  system.spawn({actor.__name__})  # incorrect!\n"
                            f"  system.spawn({actor.__name__}('name', system))  # correct!")
        if not isinstance(actor, Actor):
            raise TypeError(f"spawn() takes an Actor instance, got {actor!r}")
        if getattr(actor, "_state", None) is None:
            raise TypeError(f"{type(actor).__name__}.__init__ must call "
                            f"super().__init__(name, system) before the actor can be spawned")
        if actor.system is not self:
            raise ValueError(f"actor {actor.name!r} was created for system {actor.system.name!r} "
                             f"and cannot be spawned in system {self.name!r}")
        if self._tg is None or self._closed:
            raise RuntimeError(f"spawn() needs a running system: spawn inside "
                               f"'async with ActorSystem(...) as system:' (system {self.name!r} "
                               f"is {'closed' if self._closed else 'not entered yet'})")
        if actor._state is not _NEW:
            raise ValueError(f"actor {actor.name!r} was already spawned ({actor._cause}); create "
                             f"a new instance to run it again")
        if actor.name in self._actors:
            raise ValueError(f"an actor named {actor.name!r} is already running in system "
                             f"{self.name!r}; names must be unique")
        if parent is not None:
            if not isinstance(parent, Actor) or parent.system is not self:
                raise ValueError(f"parent must be an actor of system {self.name!r}, got {parent!r}")
            if not parent.alive:
                raise ActorDead(parent.name, parent._cause)
            parent._children[actor] = None
            actor._parent = parent
        actor._state = _RUNNING
        actor.alive = True
        actor._cause = "running"
        self._actors[actor.name] = actor
        self._tg.start_soon(actor._run, name=actor.name)
        return actor

    def get(self, name: str) -> Actor | None:
        """The running actor called `name`, or None."""
        actor = self._actors.get(name)
        return actor if actor is not None and actor.alive else None

    def lookup(self, name: str) -> Actor:
        """The running actor called `name`; ActorDead (with the reason, if known) otherwise."""
        actor = self._actors.get(name)
        if actor is not None and actor.alive:
            return actor
        cause = actor._cause if actor is not None else self._last_cause.get(
            name, f"no actor with this name in system {self.name!r}")
        raise ActorDead(name, cause)

    def _forget(self, actor: Actor) -> None:
        if self._actors.get(actor.name) is actor:
            del self._actors[actor.name]
            self._last_cause[actor.name] = actor._cause

    def _crashed(self, actor: Actor, error: Exception) -> None:
        report_failure(self.failures, self.on_failure, actor.log, actor.name, self.clock.now(),
                       error)
