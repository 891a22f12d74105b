"""`emulated_cluster`: a cluster for a test, with the invariant checker on and failures that read like a report.

Three things fail the block, each with a report (`report.failure_report`) naming the emulated time, the
brokers and bundles involved, the last decisions that touched them, the seed and a command to rerun:
an invariant violation (`InvariantViolation`), an actor that raised (`ActorFailed`, an emulator bug) and
a `cluster.wait_until` that timed out (`WaitTimeout`, a TimeoutError). An exception of the test's own
(a failed assert) keeps its type and message and gets the same report as a note.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import anyio

from emulator.runtime import VirtualEventLoop

from .report import failure_report, names_in

__all__ = ["VIRTUAL_BACKEND", "ActorFailed", "NotOnVirtualTime", "emulated_cluster"]

VIRTUAL_BACKEND = ("asyncio", {"loop_factory": VirtualEventLoop})


class ActorFailed(AssertionError):
    """Actors crashed while the cluster ran: an emulator bug, whatever the test asserted."""

    def __init__(self, failures: list[Any], report: str | None = None) -> None:
        self.failures = list(failures)
        self.report = report
        lines = [f"  {f.actor} at t={f.time:.3f} s: {f.error}" for f in self.failures]
        super().__init__(f"{len(lines)} actor failure(s) (emulator bug; tracebacks in the log):\n"
                         + "\n".join(lines) + (f"\n{report}" if report else ""))


class NotOnVirtualTime(RuntimeError):
    """The test's event loop is not the emulator's: emulated minutes would take real minutes."""


_HOW_TO = """\
emulated_cluster needs the emulator's virtual-time loop, but this test runs on {loop}.
With pytest-asyncio, use a fixture of the plugin, which selects the loop for you:
    @pytest.mark.asyncio
    async def test_x(pulsar_cluster):                      # correct
        async with pulsar_cluster(brokers=3, seed=7) as cluster: ...
or answer pytest-asyncio's hook in your conftest.py:
    def pytest_asyncio_loop_factories(config, item):
        return {{"virtual": emulator.testing.VirtualEventLoop}}
With anyio: `def anyio_backend(): return emulator.testing.VIRTUAL_BACKEND`.
For a paced real-time run pass clock=WallClock(speed) to emulator.runtime.run."""


def _require_virtual_loop(clock: Any) -> None:
    if clock is not None and getattr(clock, "kind", "virtual") != "virtual":
        return
    loop = asyncio.get_running_loop()
    if not isinstance(loop, VirtualEventLoop):
        raise NotOnVirtualTime(_HOW_TO.format(loop=type(loop).__name__))


def _report_for_error(cluster: Any, error: Exception, context: dict[str, Any]) -> str:
    """The report of a failure inside the block: a `wait_until` that timed out, an assert of the test."""
    from emulator.cluster.cluster import WaitTimeout

    if isinstance(error, WaitTimeout):
        brokers, bundles = names_in(cluster, error.what)
        return failure_report(cluster, f"failed wait: {error.what}", time=error.time, brokers=brokers,
                              bundles=bundles, context=context)
    brokers, bundles = names_in(cluster, str(error))
    return failure_report(cluster, f"failed: {type(error).__name__} in the test", brokers=brokers,
                          bundles=bundles, context=context)


@asynccontextmanager
async def emulated_cluster(
    brokers: int = 3,
    *,
    seed: int = 0,
    check_invariants: bool = True,
    check_interval: float = 1.0,
    wait_for_leader: bool = True,
    strict: bool = True,
    report_context: dict[str, Any] | None = None,
    **kwargs: Any,
) -> AsyncIterator[Any]:
    """Start an N-broker cluster on the running (virtual) loop, with the invariant checker on.

    `strict`: an actor failure, an invariant violation or a `wait_until` timeout fails the block with
    a failure report (the CLI's runner passes False: it reports the first two in the summary and the
    exit code instead). `report_context`: what else reproduces the run (scenario, placement, shedder,
    `repro` command, `cli` command), shown in the report.

    `cluster.decision_log` keeps every decision (assignments, shedding plans, unloads, skips, splits).

    Extra keyword arguments go to `Cluster.start` (conf, namespaces, load_source, settings, clock, ...).
    """
    from emulator.cluster.cluster import Cluster
    from emulator.observe.decision_log import DecisionLog
    from emulator.observe.invariants import InvariantChecker, InvariantViolation

    _require_virtual_loop(kwargs.get("clock"))
    context = {"seed": seed, **(report_context or {})}
    async with Cluster.start(brokers, seed=seed, **kwargs) as cluster:
        checker = InvariantChecker(cluster, check_interval) if check_invariants else None
        cluster.invariants = checker
        cluster.decision_log = DecisionLog(cluster.events, log=False)
        error: Exception | None = None
        async with anyio.create_task_group() as tg:
            if checker is not None:
                tg.start_soon(checker.run)
            try:
                if wait_for_leader:
                    await cluster.wait_for_leader()
                yield cluster
            except Exception as e:  # raised below, outside the task group (no ExceptionGroup)
                error = e
            finally:
                tg.cancel_scope.cancel()
        if error is not None:
            if strict:
                error.add_note(_report_for_error(cluster, error, context))
            raise error
        if checker is not None:
            checker.check_now()
        if strict:
            if cluster.system.failures:
                first = cluster.system.failures[0]
                brokers_, bundles_ = names_in(cluster, f"{first.actor} {first.error}")
                raise ActorFailed(cluster.system.failures, failure_report(
                    cluster, f"failed: actor {first.actor} raised {first.error}", time=first.time,
                    brokers=brokers_, bundles=bundles_, context=context))
            if checker is not None and checker.violations:
                v = checker.violations[0]
                raise InvariantViolation(checker.violations, failure_report(
                    cluster, f"failed invariant {v.invariant} at t={v.time:.3f}s: {v.detail}", time=v.time,
                    brokers=v.brokers, bundles=v.bundles, context=context))
