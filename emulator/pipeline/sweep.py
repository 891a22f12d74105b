"""Sweeps on Spark: every (configuration, seed) of a grid is one Spark task that runs the emulator.

    pulsar-lb-emulator sweep heterogeneous-brokers --grid placement=LeastLongTermMessageRate,AvgShedder \\
        --grid shedder=ThresholdShedder,AvgShedder --seeds 1-5 [--master spark://...]
    spark-submit emulator/pipeline/sweep.py heterogeneous-brokers --grid ... --out /shared/sweep

Each task calls `emulator.runner.run_recorded(scenario, overrides, seed, <out>/runs, duration)` inside the
executor, which records one run into a new folder and returns its path. The driver then rolls all the
runs up (`rollup.py`) into `<out>/rollup` and prints the comparison table (mean and 95 % CI over seeds,
one row per configuration). This is how a sweep outgrows one machine: the same command against a Spark
cluster, with the package installed on the executors and `--out` on a file system they all share.

A task that fails does not sink the sweep: the runs that finished are rolled up, and the failures are
listed (configuration, seed and the error's last line) and returned.
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import sys
import time
import traceback
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, Union

import msgspec

from emulator.model.errors import UsageError
from emulator.pipeline.options import (add_sweep_arguments, conf_from_args, options_from_args, parse_grid,
                                       parse_seeds, parse_window)
from emulator.pipeline.recording import config_label
from emulator.pipeline.rollup import RollupOptions, RollupResult, rollup
from emulator.pipeline.session import DEFAULT_MASTER, spark_session

DEFAULT_RUNNER = "emulator.runner:run_recorded"
Runner = Union[str, Callable[[str, dict, int, str, "float | None"], str]]


class SweepFailure(msgspec.Struct, frozen=True):
    config: str
    seed: int
    error: str


class SweepResult(msgspec.Struct, kw_only=True):
    out_dir: str
    run_dirs: list[str]
    failures: list[SweepFailure]
    rollup: RollupResult | None
    tasks_wall_seconds: float


def expand_grid(grid: Mapping[str, Sequence[str]]) -> list[dict[str, str]]:
    """The grid's points: the product of its value lists, in key order then value order."""
    if not isinstance(grid, Mapping):
        raise TypeError(f"grid = {grid!r}: expected a mapping key -> list of values")
    for key, values in grid.items():
        if isinstance(values, str) or not isinstance(values, Sequence) or not values:
            raise ValueError(f"grid[{key!r}] = {values!r}: expected a non-empty list of values")
    keys = list(grid)
    return [dict(zip(keys, (str(v) for v in combo))) for combo in itertools.product(*grid.values())]


def resolve_runner(runner: Runner) -> Callable[..., str]:
    """A callable, or 'package.module:function' imported where it is called (in the executor)."""
    if callable(runner):
        return runner
    module, sep, name = str(runner).partition(":")
    if not sep or not module or not name:
        raise ValueError(f"runner = {runner!r}: expected a callable or 'package.module:function'")
    return getattr(importlib.import_module(module), name)


def _run_task(task: tuple[int, str, dict[str, str], int, str, float | None, Runner]
              ) -> tuple[int, str | None, str | None]:
    """Executor side: one emulator run. Returns (index, run folder, None) or (index, None, error)."""
    index, scenario, overrides, seed, runs_dir, duration, runner = task
    try:
        folder = resolve_runner(runner)(scenario, dict(overrides), seed, runs_dir, duration)
        return index, str(folder), None
    except Exception as e:  # reported per task by the driver, with the configuration that failed
        last = traceback.format_exception_only(type(e), e)[-1].strip()
        return index, None, last


def sweep(scenario: str, grid: Mapping[str, Sequence[str]], seeds: Sequence[int], out_dir: str | Path,
          master: str | None = DEFAULT_MASTER, duration: float | None = None, *,
          runner: Runner = DEFAULT_RUNNER, options: RollupOptions | None = None,
          show: bool = True, spark: Any = None, conf: Mapping[str, str] | None = None) -> SweepResult:
    """Run every (grid point, seed) as one Spark task, then roll up all the runs.

    Runs go to `<out_dir>/runs/`, the roll-up to `<out_dir>/rollup/`. `runner` replaces
    `emulator.runner.run_recorded` (same signature) for tests and dry runs. With `spark` given, or a
    session already active, that session is used and left running; otherwise one is started on
    `master` with `conf` (Spark settings) and stopped."""
    if not isinstance(scenario, str) or not scenario:
        raise ValueError(f"scenario = {scenario!r}: expected a scenario name or TOML path")
    points = expand_grid(grid)
    seeds = list(seeds)
    if not seeds or any(isinstance(s, bool) or not isinstance(s, int) for s in seeds):
        raise ValueError(f"seeds = {seeds!r}: expected a non-empty list of integers")
    if duration is not None and not duration > 0:
        raise ValueError(f"duration = {duration!r}: must be > 0 (emulated seconds) or None")
    out = Path(out_dir).resolve()
    runs_dir = out / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    labels = [config_label(p, scenario) for p in points]
    tasks = [(i, scenario, p, seed, str(runs_dir), duration, runner)
             for i, (p, seed) in enumerate(itertools.product(points, seeds))]
    task_label = {i: (labels[i // len(seeds)], seeds[i % len(seeds)]) for i in range(len(tasks))}

    with ExitStack() as stack:
        session = spark if spark is not None else stack.enter_context(spark_session(master, conf=conf))
        started = time.perf_counter()
        results = session.sparkContext.parallelize(tasks, len(tasks)).map(_run_task).collect()
        tasks_wall = time.perf_counter() - started
        run_dirs: list[str] = []
        run_labels: dict[str, str] = {}
        failures: list[SweepFailure] = []
        for index, folder, error in sorted(results, key=lambda r: r[0]):
            label, seed = task_label[index]
            if folder is None:
                failures.append(SweepFailure(config=label, seed=seed, error=error or "unknown error"))
            else:
                run_dirs.append(folder)
                run_labels[folder] = label
        result_rollup = None
        if run_dirs:
            result_rollup = rollup(run_dirs, out / "rollup", spark=session, options=options,
                                   labels=run_labels, show=show)
    if show:
        print(f"\nsweep: {len(tasks)} task(s) ({len(points)} configuration(s) x {len(seeds)} seed(s)) "
              f"in {tasks_wall:.1f} s; runs in {runs_dir}")
        for f in failures:
            print(f"  FAILED {f.config} seed {f.seed}: {f.error}")
    return SweepResult(out_dir=str(out), run_dirs=run_dirs, failures=failures, rollup=result_rollup,
                       tasks_wall_seconds=tasks_wall)


def sweep_from_args(args: argparse.Namespace) -> int:
    """The parsed sweep flags -> sweep(); exit code 1 if a task failed."""
    if not args.grid:
        raise UsageError("--grid: give at least one, e.g. --grid placement=LeastLongTermMessageRate,"
                         "AvgShedder")
    grid = parse_grid(args.grid)
    seeds = parse_seeds(args.seeds)
    duration = None if args.duration is None else parse_window(args.duration, flag="--duration")
    result = sweep(args.scenario, grid, seeds, args.out, args.master, duration,
                   options=options_from_args(args), conf=conf_from_args(args))
    return 1 if result.failures else 0


def main(argv: Sequence[str] | None = None) -> int:
    """`spark-submit sweep.py SCENARIO --grid ... --out DIR`: no master unless given, so spark-submit
    decides; `--out` must be on storage every executor can write and the driver can read."""
    p = argparse.ArgumentParser(prog="sweep.py", description="Run a scenario over a config grid and "
                                "seeds as Spark tasks, then roll the runs up.")
    add_sweep_arguments(p, master_default=None)
    args = p.parse_args(argv)
    try:
        return sweep_from_args(args)
    except (UsageError, ValueError) as e:
        sys.stderr.write(f"sweep: error: {e}\n")
        return 2


if __name__ == "__main__":  # spark-submit .../sweep.py: run the installed module, not a __main__ copy
    from emulator.pipeline.sweep import main as _installed_main

    sys.exit(_installed_main())
