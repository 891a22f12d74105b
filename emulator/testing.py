"""Write your own async integration tests against an emulated cluster.

    import pytest
    from emulator.testing import emulated_cluster

    @pytest.mark.anyio
    async def test_my_strategy(pulsar_cluster):          # or: async with emulated_cluster(...) as cluster
        async with pulsar_cluster(brokers=3, seed=7) as cluster:
            client = cluster.add_client()
            client.create_handles([f"persistent://public/default/t{i}" for i in range(100)])
            await cluster.wait_until(lambda: client.connected_count() == 100)

The tests must run on the virtual clock: give anyio the emulator's loop, e.g. in your conftest.py

    @pytest.fixture
    def anyio_backend():
        return emulator.testing.VIRTUAL_BACKEND

The invariant checker runs throughout (every `check_interval` emulated seconds) and once more at the end;
any violation fails the block with an `InvariantViolation` that says which invariant broke, when and how.
An actor that crashed during the block (an emulator bug) fails it with an `ActorFailed` naming each actor,
when it crashed and the error (the traceback was logged at the crash).
This module is also a pytest plugin (entry point `pulsar_lb_emulator`) providing the `pulsar_cluster`
fixture.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import anyio

from emulator.runtime import VirtualEventLoop

VIRTUAL_BACKEND = ("asyncio", {"loop_factory": VirtualEventLoop})


class ActorFailed(AssertionError):
    """Actors crashed while the cluster ran: an emulator bug, whatever the test asserted."""

    def __init__(self, failures: list[Any]) -> None:
        self.failures = list(failures)
        lines = [f"  {f.actor} at t={f.time:.3f} s: {f.error}" for f in self.failures]
        super().__init__(f"{len(lines)} actor failure(s) (emulator bug; tracebacks in the log):\n"
                         + "\n".join(lines))


@asynccontextmanager
async def emulated_cluster(
    brokers: int = 3,
    *,
    seed: int = 0,
    check_invariants: bool = True,
    check_interval: float = 1.0,
    wait_for_leader: bool = True,
    strict: bool = True,
    **kwargs: Any,
) -> AsyncIterator[Any]:
    """Start an N-broker cluster on the running (virtual) loop, with the invariant checker on.

    `strict`: an actor failure or invariant violation fails the block on exit (the CLI's runner passes
    False: it reports both in the summary and the exit code instead).

    `cluster.decision_log` keeps every decision (assignments, shedding plans, unloads, skips, splits).

    Extra keyword arguments go to `Cluster.start` (conf, namespaces, load_source, settings, ...).
    """
    from emulator.cluster.cluster import Cluster
    from emulator.observe.decision_log import DecisionLog
    from emulator.observe.invariants import InvariantChecker

    async with Cluster.start(brokers, seed=seed, **kwargs) as cluster:
        checker = InvariantChecker(cluster, check_interval) if check_invariants else None
        cluster.invariants = checker
        cluster.decision_log = DecisionLog(cluster.events, log=False)
        async with anyio.create_task_group() as tg:
            if checker is not None:
                tg.start_soon(checker.run)
            try:
                if wait_for_leader:
                    await cluster.wait_for_leader()
                yield cluster
            finally:
                tg.cancel_scope.cancel()
        if checker is not None:
            checker.check_now()
        if strict:
            if cluster.system.failures:
                raise ActorFailed(cluster.system.failures)
            if checker is not None:
                checker.raise_if_violated()


try:  # the plugin part; the helpers above work without pytest
    import pytest
except ImportError:  # pragma: no cover
    pass
else:

    @pytest.fixture
    def pulsar_cluster():
        """Factory fixture: `async with pulsar_cluster(brokers=3, seed=1) as cluster: ...`."""
        return emulated_cluster
