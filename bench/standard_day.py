"""Standard day: the built-in `default` scenario for 24 emulated hours; wall time and speed-up.

The run goes through the product's own path, the first that exists of:
1. `emulator.runner.run_recorded("default", {}, seed, tmp, duration=86400)`: a recorded run, files
   and all, as `pulsar-lb-emulator run` makes it;
2. `emulator.workload.run_scenario(library.load("default"), duration=86400)`: the same cluster and
   workload without the recorder;
3. `bench.fallback.day_run`: the same shape built by hand (while the workload layer was missing).
The row says which one ran. Figure: wall seconds (median of the repetitions); baseline: the emulated
seconds; ratio: emulated seconds per wall second. Target: <= 20 s wall (>= 4,320x real time).

`standard_day.memory`: a long run's memory stays flat (issue 32). Figure: the peak RSS of the recorded
24-hour run; baseline: the peak RSS of the same run stopped after its first hour (`--duration 1h`),
each `pulsar-lb-emulator run` in its own child process (`os.wait4`'s rusage), back to back; target:
ratio <= 1.25. `--quick`: 2 hours against the first 10 minutes.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from emulator.runtime import VirtualClock, run

from .harness import Options, Row, Target, median_of, quiet_logs

DAY = 86_400.0


def _runner() -> tuple[str, Callable[[float, int], Any]] | None:
    try:
        from emulator.runner import run_recorded
        from emulator.workload import library

        if "default" not in library.names():
            return None
    except Exception:  # noqa: BLE001 - not written yet, or broken mid-edit: use the next path
        return None

    def go(duration: float, seed: int) -> Any:
        out = tempfile.mkdtemp(prefix="bench-day-")
        try:
            return {"folder": run_recorded("default", {}, seed, out, duration=duration)}
        finally:
            shutil.rmtree(out, ignore_errors=True)

    return "emulator.runner.run_recorded", go


def _scenario() -> tuple[str, Callable[[float, int], Any]] | None:
    try:
        from emulator.workload import library, run_scenario

        scenario = library.load("default")
    except Exception:  # noqa: BLE001
        return None

    def go(duration: float, seed: int) -> Any:
        summary = run(functools.partial(run_scenario, scenario, duration=duration, seed=seed),
                      clock=VirtualClock())
        return {k: getattr(summary, k) for k in ("unloads", "splits", "lookups", "reconnects",
                                                   "handles_connected", "handles")
                if hasattr(summary, k)}

    return "emulator.workload.run_scenario", go


def _fallback() -> tuple[str, Callable[[float, int], Any]]:
    from .fallback import day_run

    def go(duration: float, seed: int) -> Any:
        return run(functools.partial(day_run, brokers=20, topics=10_000, namespaces=4, bundles=16,
                                     clients=20, duration=duration, seed=seed), clock=VirtualClock())

    return "bench.fallback.day_run", go


def choose() -> tuple[str, Callable[[float, int], Any]]:
    return _runner() or _scenario() or _fallback()


def child_peak_rss(args: list[str]) -> int:
    """Peak RSS in bytes of `python -m emulator ARGS` run to its end in a child process of its own."""
    proc = subprocess.Popen([sys.executable, "-m", "emulator", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"emulator {' '.join(args)} exited {proc.returncode}: {err.decode()[-400:]}")
    return usage.ru_maxrss * 1024


def memory_row(opts: Options) -> Row:
    """`standard_day.memory` (module docstring)."""
    first, whole = (600, 7200) if opts.quick else (3600, int(DAY))
    peaks = {}
    for duration in (first, whole):
        out = tempfile.mkdtemp(prefix="bench-day-memory-")
        try:
            peaks[duration] = child_peak_rss(["run", "default", "--seed", str(opts.seed), "--quiet",
                                              "--duration", f"{duration}s", "--record", out])
        finally:
            shutil.rmtree(out, ignore_errors=True)
    mib = 2.0 ** 20
    return Row(name="standard_day.memory", figure=peaks[whole] / mib, unit="MiB peak",
               baseline=peaks[first] / mib, baseline_unit=f"MiB peak of its first {first // 60} min",
               ratio=peaks[whole] / peaks[first], target=Target("ratio", "<=", 1.25),
               note=f"recorded, {whole // 3600} h against its first {first // 60} min, one child each",
               details={"first_s": first, "whole_s": whole})


def run_bench(opts: Options) -> list[Row]:
    quiet_logs()
    duration = 600.0 if opts.quick else DAY
    reps = opts.repetitions(3, 1)
    path, go = choose()
    last: dict[str, Any] = {}

    def once() -> float:
        t = time.perf_counter()
        last["result"] = go(duration, opts.seed)
        return time.perf_counter() - t

    wall, walls = median_of(once, reps)
    return [Row(name="standard_day", figure=wall, unit="s wall", baseline=duration,
                baseline_unit="emulated s", ratio=duration / wall, target=Target("figure", "<=", 20.0),
                reps=reps, samples=walls, note=f"via {path}",
                details={"path": path, "emulated_s": duration, "last": last.get("result")}),
            memory_row(opts)]
