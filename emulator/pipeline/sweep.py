"""Sweeps on Spark: every (configuration, seed) of a grid is one Spark task that runs the emulator.

    pulsar-lb-emulator sweep heterogeneous-brokers --grid placement=LeastLongTermMessageRate,AvgShedder \\
        --grid shedder=ThresholdShedder,AvgShedder --seeds 1-5 [--master spark://HOST:7077]
    pulsar-lb-emulator sweep default --seeds 1-100 --run-timeout 10m     # a seeds-only study
    spark-submit emulator/pipeline/sweep.py heterogeneous-brokers --grid ... --out /shared/sweep

One Spark task per run (partitions = runs). Each task runs `emulator.runner.run_recorded_status`
(scenario, overrides, seed, `<out>/runs/<key>`, duration) in a child process on the worker and writes
its result row to `<out>/results/<key>.json` when the run ends (`runs.py`), so results land as runs
finish and a sweep cut short keeps them: the same command again runs only what has no final row. The
driver then rolls the complete runs up (`rollup.py`) into `<out>/rollup`, writes every row to
`<out>/results.csv` and prints the comparison table. The workers need nothing installed but an
interpreter with the emulator's dependencies: the project goes with the job (`shipping.py`).

A run that fails (exit 1 or 3, a `--run-timeout`, an exception, a killed child) is a row with its status
and reason, never a lost sweep; the command lists them and exits 1. A worker that cannot import the
project fails the job with one line (`worker.py`): exit 3.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import itertools
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, Union

import msgspec

from emulator.model.errors import UsageError
from emulator.pipeline.options import (add_sweep_arguments, conf_from_args, options_from_args, parse_grid,
                                       parse_seeds, parse_window)
from emulator.pipeline.recording import config_label
from emulator.pipeline.rollup import RollupOptions, RollupResult, rollup
from emulator.pipeline.runs import (FINAL, RESULTS_DIR, ROLLED_UP, RUNS_DIR, RunRow, read_rows, resolve_runner,
                                    run_key)
from emulator.pipeline.session import DEFAULT_MASTER, spark_session
from emulator.pipeline.worker import job_error_line, worker_task_function

__all__ = ["DEFAULT_RUNNER", "SparkJobError", "SweepFailure", "SweepResult", "expand_grid", "resolve_runner",
           "sweep", "sweep_from_args"]

DEFAULT_RUNNER = "emulator.runner:run_recorded_status"
Runner = Union[str, Callable[..., Any]]
RESULTS_CSV = "results.csv"


class SparkJobError(RuntimeError):
    """The Spark job itself failed (not one run): one line, e.g. a worker that cannot import the project."""


class SweepFailure(msgspec.Struct, frozen=True):
    config: str
    seed: int
    error: str
    status: str = "error"


class SweepResult(msgspec.Struct, kw_only=True):
    out_dir: str
    run_dirs: list[str]
    failures: list[SweepFailure]
    rollup: RollupResult | None
    tasks_wall_seconds: float
    rows: list[RunRow] = []
    ran: int = 0
    skipped: int = 0


def expand_grid(grid: Mapping[str, Sequence[str]]) -> list[dict[str, str]]:
    """The grid's points: the product of its value lists, in key order then value order."""
    if not isinstance(grid, Mapping):
        raise TypeError(f"grid = {grid!r}: expected a mapping key -> list of values")
    for key, values in grid.items():
        if isinstance(values, str) or not isinstance(values, Sequence) or not values:
            raise ValueError(f"grid[{key!r}] = {values!r}: expected a non-empty list of values")
    keys = list(grid)
    return [dict(zip(keys, (str(v) for v in combo))) for combo in itertools.product(*grid.values())]


def _scenario_id(scenario: str) -> str:
    """The scenario's name, or for a TOML file its path and the hash of its bytes (an edit reruns)."""
    path = Path(scenario)
    if path.is_file():
        return f"{path.name}:{hashlib.sha256(path.read_bytes()).hexdigest()[:16]}"
    return scenario


def _write_csv(path: Path, rows: Sequence[RunRow]) -> None:
    fields = ["config", "seed", "status", "exit_code", "reason", "run_dir", "wall_seconds", "host", "key"]
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(fields)
        for r in rows:
            w.writerow(["" if getattr(r, k) is None else getattr(r, k) for k in fields])
    tmp.replace(path)


def _run_tasks(session: Any, tasks: list[dict[str, Any]]) -> list[RunRow]:
    """One Spark task per run; a failed job (not a failed run) becomes SparkJobError, one line."""
    if not tasks:
        return []
    try:
        encoded = session.sparkContext.parallelize(tasks, len(tasks)).map(worker_task_function()).collect()
    except Exception as e:   # Py4JJavaError / PythonException: the job, not a run
        raise SparkJobError(job_error_line(e)) from None
    return [msgspec.json.decode(b, type=RunRow) for b in encoded]


def sweep(scenario: str, grid: Mapping[str, Sequence[str]], seeds: Sequence[int], out_dir: str | Path,
          master: str | None = DEFAULT_MASTER, duration: float | None = None, *,
          runner: Runner = DEFAULT_RUNNER, options: RollupOptions | None = None,
          show: bool = True, spark: Any = None, conf: Mapping[str, str] | None = None,
          run_timeout: float | None = None) -> SweepResult:
    """Run every (grid point, seed) that has no final row in `out_dir` as one Spark task, then roll up
    all the complete runs.

    An empty `grid` is one configuration (the scenario's own). Runs go to `<out_dir>/runs/<key>/`, rows
    to `<out_dir>/results/`, the roll-up to `<out_dir>/rollup/`. `runner` replaces
    `emulator.runner.run_recorded_status` (same arguments; returning a folder, or (folder, exit code,
    reason)) for tests and dry runs. `run_timeout` kills a run after that many wall seconds. With `spark`
    given, or a session already active, that session is used and left running; otherwise one is started
    on `master` with `conf` (Spark settings; `spark.pyspark.python` the workers' interpreter) and stopped."""
    if not isinstance(scenario, str) or not scenario:
        raise ValueError(f"scenario = {scenario!r}: expected a scenario name or TOML path")
    points = expand_grid(grid)
    seeds = list(seeds)
    if not seeds or any(isinstance(s, bool) or not isinstance(s, int) for s in seeds):
        raise ValueError(f"seeds = {seeds!r}: expected a non-empty list of integers")
    if duration is not None and not duration > 0:
        raise ValueError(f"duration = {duration!r}: must be > 0 (emulated seconds) or None")
    if run_timeout is not None and not run_timeout > 0:
        raise ValueError(f"run_timeout = {run_timeout!r}: must be > 0 (wall seconds) or None")
    if not callable(runner) and ":" not in str(runner):
        resolve_runner(runner)   # raises its one-line ValueError here, not in every task
    out = Path(out_dir).resolve()
    (out / RUNS_DIR).mkdir(parents=True, exist_ok=True)
    scenario_id = _scenario_id(scenario)
    tasks: list[dict[str, Any]] = [
        {"index": i, "key": run_key(scenario_id, p, seed, duration), "config": config_label(p, scenario),
         "scenario": scenario, "overrides": dict(p), "seed": seed, "duration": duration,
         "out": str(out), "timeout": run_timeout, "runner": runner}
        for i, (p, seed) in enumerate(itertools.product(points, seeds))]
    # a repeated seed or grid value is one run, not two tasks recording into one folder at once
    tasks = list({t["key"]: t for t in tasks[::-1]}.values())
    tasks.sort(key=lambda t: t["index"])
    done = read_rows(out / RESULTS_DIR)
    todo = [t for t in tasks if t["key"] not in done or done[t["key"]].status not in FINAL]

    with ExitStack() as stack:
        session = spark if spark is not None else stack.enter_context(
            spark_session(master, conf=conf))
        started = time.perf_counter()
        fresh = {r.key: r for r in _run_tasks(session, todo)}
        tasks_wall = time.perf_counter() - started
        rows: list[RunRow] = []
        for t in tasks:
            row = fresh.get(t["key"]) or done.get(t["key"])
            if row is not None:   # index and config follow this command's grid order
                rows.append(msgspec.structs.replace(row, index=t["index"], config=t["config"]))
        _write_csv(out / RESULTS_CSV, rows)
        complete = [r for r in rows if r.status in ROLLED_UP and r.run_dir and Path(r.run_dir).is_dir()]
        run_dirs = [r.run_dir for r in complete if r.run_dir]
        failures = [SweepFailure(config=r.config, seed=r.seed, error=r.reason or r.status, status=r.status)
                    for r in rows if r.status != "ok"]
        result_rollup = None
        if run_dirs:
            result_rollup = rollup(run_dirs, out / "rollup", spark=session, options=options,
                                   labels={r.run_dir: r.config for r in complete if r.run_dir}, show=show)
    if show:
        rate = f", {len(todo) / tasks_wall:.2f} tasks/s" if todo and tasks_wall > 0 else ""
        skipped = len(tasks) - len(todo)
        print(f"\nsweep: {len(tasks)} run(s) ({len(points)} configuration(s) x {len(seeds)} seed(s)); "
              f"{len(todo)} ran in {tasks_wall:.1f} s{rate}"
              + (f"; {skipped} already done in {out}" if skipped else "")
              + f"; rows in {out / RESULTS_CSV}")
        for f in failures:
            print(f"  FAILED {f.config} seed {f.seed} ({f.status}): {f.error}")
    return SweepResult(out_dir=str(out), run_dirs=run_dirs, failures=failures, rollup=result_rollup,
                       tasks_wall_seconds=tasks_wall, rows=rows, ran=len(todo), skipped=len(tasks) - len(todo))


def sweep_from_args(args: argparse.Namespace) -> int:
    """The parsed sweep flags -> sweep(); exit code 1 if a run failed, 3 if the Spark job did."""
    grid = parse_grid(args.grid) if args.grid else {}
    seeds = parse_seeds(args.seeds)
    duration = None if args.duration is None else parse_window(args.duration, flag="--duration")
    timeout = None if args.run_timeout is None else parse_window(args.run_timeout, flag="--run-timeout")
    try:
        result = sweep(args.scenario, grid, seeds, args.out, args.master, duration,
                       options=options_from_args(args), conf=conf_from_args(args), run_timeout=timeout)
    except SparkJobError as e:
        sys.stderr.write(f"sweep: {e}\n")
        return 3
    except ValueError as e:
        raise UsageError(str(e)) from None
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
