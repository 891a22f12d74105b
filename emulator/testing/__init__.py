"""Write your own async integration tests against an emulated cluster, on virtual time.

With pytest-asyncio (>= 1.4): a test that uses `pulsar_cluster` or `pulsar_scenario` runs on the
emulator's virtual-time loop by itself, so an emulated hour passes in seconds:

    import pytest

    @pytest.mark.asyncio
    async def test_my_strategy(pulsar_cluster):
        async with pulsar_cluster(brokers=3, seed=7) as cluster:
            client = cluster.add_client()
            client.create_handles([f"persistent://public/default/t{i}" for i in range(100)])
            await cluster.wait_until(lambda: client.connected_count() == 100, timeout="5m")

    @pytest.mark.asyncio
    async def test_a_scenario(pulsar_scenario):
        async with pulsar_scenario("broker-crash", seed=10, shedder="ThresholdShedder") as scenario:
            await scenario.run_until("10m")
            assert len(scenario.cluster.live_brokers()) == 3
            await scenario.run_until("20m")

`placement_strategy` and `load_shedder` are fixtures parametrized over every built-in name.

With anyio: give anyio the emulator's loop in your conftest.py and mark tests `@pytest.mark.anyio`:

    @pytest.fixture
    def anyio_backend():
        return emulator.testing.VIRTUAL_BACKEND

The invariant checker runs throughout (every `check_interval` emulated seconds) and once more at the end.
A violation (`InvariantViolation`), an actor that crashed (`ActorFailed`, an emulator bug) or a
`wait_until` that timed out (`WaitTimeout`) fails the test with a report: the emulated time, the brokers
and bundles involved, the last decisions that touched them, the seed and a command that reruns it.

This package is the pytest plugin (entry point `pulsar_lb_emulator`); the helpers work without pytest.
"""

from __future__ import annotations

from emulator.cluster.cluster import WaitTimeout as WaitTimeout
from emulator.observe.invariants import InvariantViolation as InvariantViolation
from emulator.runtime import VirtualEventLoop as VirtualEventLoop

from .harness import VIRTUAL_BACKEND as VIRTUAL_BACKEND
from .harness import ActorFailed as ActorFailed
from .harness import NotOnVirtualTime as NotOnVirtualTime
from .harness import emulated_cluster as emulated_cluster
from .report import failure_report as failure_report
from .scenario import ScenarioHandle as ScenarioHandle
from .scenario import emulated_scenario as emulated_scenario

try:  # the plugin part; the helpers above work without pytest
    import pytest as _pytest  # noqa: F401
except ImportError:  # pragma: no cover
    pass
else:
    from .plugin import load_shedder as load_shedder
    from .plugin import loop_factories as loop_factories
    from .plugin import placement_strategy as placement_strategy
    from .plugin import pulsar_cluster as pulsar_cluster
    from .plugin import pulsar_scenario as pulsar_scenario
    from .plugin import pytest_asyncio_loop_factories as pytest_asyncio_loop_factories

__all__ = [
    "VIRTUAL_BACKEND",
    "ActorFailed",
    "InvariantViolation",
    "NotOnVirtualTime",
    "ScenarioHandle",
    "VirtualEventLoop",
    "WaitTimeout",
    "emulated_cluster",
    "emulated_scenario",
    "failure_report",
]
