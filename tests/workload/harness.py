"""Scenario runs for tests: invariant checker on, decision log kept, unavailability tracked, summary.

The workload layer's `start_scenario` builds a plain cluster; observing is the caller's job, so the
tests' observing wrapper lives here, with the tests.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from emulator.observe.summary import RunSummary, UnavailabilityTracker, summarize
from emulator.testing import emulated_cluster
from emulator.workload import Scenario, start_scenario
from emulator.workload.session import ScenarioRun


class Observed:
    """A ScenarioRun plus what the tests read: `unavailable` and `summary()`."""

    def __init__(self, run: ScenarioRun, unavailable: UnavailabilityTracker) -> None:
        self.run = run
        self.scenario = run.scenario
        self.cluster = run.cluster
        self.workload = run.workload
        self.t0 = run.t0
        self.unavailable = unavailable

    async def sleep_until(self, offset: float) -> None:
        await self.run.sleep_until(offset)

    def summary(self) -> RunSummary:
        return summarize(self.cluster, self.cluster.decision_log, self.unavailable,
                         scenario=self.scenario.name, seed=self.workload.seed,
                         event_errors=self.workload.errors)


@asynccontextmanager
async def observed(scenario: Scenario, *, check_interval: float = 1.0, check_invariants: bool = True,
                   **kwargs: Any) -> AsyncIterator[Observed]:
    start = functools.partial(emulated_cluster, check_invariants=check_invariants,
                              check_interval=check_interval)
    async with start_scenario(scenario, start=start, **kwargs) as run:
        tracker = UnavailabilityTracker(run.cluster.events)
        try:
            yield Observed(run, tracker)
        finally:
            tracker.close()
