"""`emulated_scenario`: run a built-in scenario or a scenario file up to a point, then hand the live cluster over.

    async with emulated_scenario("default", seed=3, placement="my_pkg.mod:MyStrategy") as scenario:
        await scenario.run_until("10m")          # emulated time from the run start
        assert ...                               # scenario.cluster is live: read it, act on it
        await scenario.run_until("20m")          # and continue

The scenario's own events (faults, traffic changes) keep running in the background as in
`pulsar-lb-emulator run`; the invariant checker and the decision log are on (`emulated_cluster`), and a
failure's report names the scenario, strategies and a CLI command that replays the run alone.
"""

from __future__ import annotations

import shlex
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, AsyncIterator

from emulator.model.durations import format_duration, parse_duration

from .harness import emulated_cluster

__all__ = ["ScenarioHandle", "emulated_scenario"]


class ScenarioHandle:
    """A running scenario: its live `cluster`, how far it has run, and a way to run further."""

    def __init__(self, run: Any, name: str) -> None:
        self._run = run
        self.name = name
        self.cluster = run.cluster
        self.scenario = run.scenario

    @property
    def elapsed(self) -> float:
        """Emulated seconds since the run start."""
        return self._run.elapsed

    async def run_until(self, offset: float | str) -> float:
        """Let the scenario run until `offset` ("10m", "1h30m" or seconds) after its start; returns
        the emulated time reached. Running backwards is an error: time only moves forward."""
        target = parse_duration(offset)
        if target < self.elapsed - 1e-9:
            raise ValueError(f"run_until({offset!r}): the scenario is already at "
                             f"{format_duration(round(self.elapsed))}; emulated time only moves forward")
        await self._run.sleep_until(target)
        return self.elapsed

    def broker_msg_rates(self) -> dict[str, float]:
        """msgRateIn + msgRateOut per live broker, from its last load report (what the leader sees)."""
        from emulator.observe.monitor import broker_rows

        return {row.broker: row.local.msg_rate_in + row.local.msg_rate_out
                for row in broker_rows(self.cluster)}


def _cli_command(name: str, seed: int, placement: str | None, shedder: str | None,
                 overrides: dict[str, Any]) -> str:
    # -m: the current folder is importable (your strategies)
    parts = ["python", "-m", "emulator", "run", name, "--seed", str(seed)]
    if placement:
        parts += ["--placement", placement]
    if shedder:
        parts += ["--shedder", shedder]
    for key, value in overrides.items():
        parts += ["--set", f"{key}={value}"]
    return shlex.join(parts)


@asynccontextmanager
async def emulated_scenario(
    scenario: str,
    *,
    seed: int | None = None,
    placement: str | None = None,
    shedder: str | None = None,
    overrides: dict[str, Any] | None = None,
    check_interval: float = 10.0,
    repro: str | None = None,
) -> AsyncIterator[ScenarioHandle]:
    """Boot `scenario` (a built-in name or a TOML path) with `seed` (default: the scenario's), the
    given placement strategy and shedder (names, Pulsar class names or "pkg.module:Class") and other
    `--set` style `overrides`; yield a handle whose `run_until` drives it forward.

    `check_interval`: emulated seconds between invariant checks (the CLI's 10 s: a check walks every
    bundle; it only reads, so its interval changes no decision). `repro`: the command a failure report
    shows (default: rerun the current pytest test)."""
    from emulator.workload.errors import ScenarioError
    from emulator.workload.library import load_scenario
    from emulator.workload.session import start_scenario

    try:
        loaded = load_scenario(scenario)
    except ScenarioError as e:
        raise ValueError(str(e)) from None
    run_seed = loaded.seed if seed is None else seed
    extra = dict(overrides or {})
    given = {**extra, **({"placement": placement} if placement else {}),
             **({"shedder": shedder} if shedder else {})}
    context = {"repro": repro, "scenario": scenario, "placement": placement, "shedder": shedder,
               "cli": _cli_command(scenario, run_seed, placement, shedder, extra)}
    start = partial(emulated_cluster, check_interval=check_interval, report_context=context)
    async with start_scenario(loaded, seed=run_seed, overrides=given, start=start) as run:
        yield ScenarioHandle(run, scenario)
