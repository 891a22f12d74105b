"""Run a scenario on a cluster: config, workload, cluster, and `drive` in the background.

    async with start_scenario(library.load("broker-crash"), overrides={"shedder": "UniformLoadShedder"}) as run:
        await run.sleep_until(600)        # emulated seconds from the run start
        ...                               # run.cluster, run.workload

The cluster comes from `start` (default `Cluster.start`); anything with its signature works, e.g.
`emulator.testing.emulated_cluster` to add the invariant checker and the decision log. Observers
(metrics, recorder, summary trackers) attach to `run.cluster.events` inside the block, before its first
await: `drive` only starts then, so they see every scenario event. The run start (`run.t0`, where
event times count from) is the emulated instant the cluster is up. Must run on the loop of the
clock (the virtual loop in tests).

Only the cluster and workload layers are used here: observing and summarising a run is the caller's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio

from emulator.cluster.cluster import Cluster
from emulator.model.config import ServiceConfig
from emulator.runtime import Clock, VirtualClock

from .build import Workload, cluster_settings, service_config
from .driver import drive
from .initial_state import before_brokers
from .schema import Scenario, start_epoch_ms

__all__ = ["ScenarioRun", "start_scenario"]


class ScenarioRun:
    """A running scenario: its cluster, its workload and the run start."""

    def __init__(self, scenario: Scenario, cluster: Any, workload: Workload, t0: float) -> None:
        self.scenario = scenario
        self.cluster = cluster
        self.workload = workload
        self.t0 = t0

    @property
    def elapsed(self) -> float:
        """Emulated seconds since the run start."""
        return self.cluster.system.clock.now() - self.t0

    async def sleep_until(self, offset: float) -> None:
        """Wait until `offset` emulated seconds after the run start."""
        delay = self.t0 + offset - self.cluster.system.clock.now()
        if delay > 0:
            await anyio.sleep(delay)


@asynccontextmanager
async def start_scenario(
    scenario: Scenario,
    *,
    seed: int | None = None,
    overrides: Mapping[str, Any] | None = None,
    base_conf: ServiceConfig | None = None,
    clock: Clock | None = None,
    name: str = "cluster",
    start: Callable[..., Any] | None = None,
) -> AsyncIterator[ScenarioRun]:
    """Boot the scenario's cluster, start driving it, and yield the run (torn down on exit).

    `overrides` are --set style keys (Pulsar names, plus "placement" / "shedder") over the scenario's
    settings; `base_conf` is a broker.conf's ServiceConfig under them (see `build.service_config`)."""
    seed = scenario.seed if seed is None else seed
    conf = service_config(scenario, base_conf, overrides)
    workload = Workload(scenario, seed=seed, conf=conf)
    if scenario.scenario.start is not None:   # the calendar time of t = 0 (load reports' lastUpdate)
        clock = clock if clock is not None else VirtualClock()
        clock.start_epoch_ms = start_epoch_ms(scenario)   # type: ignore[attr-defined]
    extra: dict[str, Any] = {} if clock is None else {"clock": clock}
    if workload.initial is not None and workload.initial.warm > 0:
        extra["before_brokers"] = before_brokers(workload.initial, conf, scenario.cluster.broker_count)
    factory = start or Cluster.start
    async with factory(scenario.cluster.broker_ids, seed=seed, conf=conf, namespaces={},
                       load_source=workload.load_source, settings=cluster_settings(scenario),
                       name=name, **extra) as cluster:
        workload.t0 = cluster.system.clock.now()
        run = ScenarioRun(scenario, cluster, workload, workload.t0)
        error: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(drive, cluster, scenario, workload)
            try:
                yield run
            except Exception as e:  # the block's own error, raised as itself (not an ExceptionGroup)
                error = e
            finally:
                tg.cancel_scope.cancel()
        if error is not None:
            raise error
