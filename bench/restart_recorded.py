"""The restart case recorded, as `run --record` would: what a recording costs at scale.

The same case as `bench.restart` (100 brokers, 65,000 bundles, 100,000 producers, 30 emulated minutes)
run twice, each in a fresh process (so neither inherits the other's heap): unrecorded, then recorded
at the default decision level (gzip JSON lines, samples every 10 emulated s, one line per decision).
Targets (issue 17): the recorded run takes at most 25 % more wall time than the unrecorded one, and
its folder holds at most 2 GB.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from emulator.observe.decision_log import DEFAULT_LEVEL

from .harness import Options, Row, Target, quiet_logs
from .restart import GIB, _call, sizes

OVERHEAD_TARGET = 0.25
SIZE_TARGET_GB = 2.0


def _one(size: dict[str, Any], seed: int, record_dir: str | None, level: str) -> tuple[float, dict[str, Any]]:
    """One run in this (fresh) process: (wall seconds, the case's figures)."""
    from emulator.runtime import VirtualClock, run

    quiet_logs()
    t, cpu = time.perf_counter(), time.process_time()
    got = run(_call, {**size, "record_dir": record_dir, "record_decisions": level}, seed, clock=VirtualClock())
    # CPU seconds too: on a shared machine the wall ratio carries the neighbours' load
    got["cpu_s"] = time.process_time() - cpu
    return time.perf_counter() - t, got


def _in_child(size: dict[str, Any], seed: int, record_dir: str | None, level: str) -> tuple[float, dict[str, Any]]:
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_one, (size, seed, record_dir, level))


def _folder_bytes(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted(folder.iterdir()) if p.is_file()}


def run_bench(opts: Options, level: str = DEFAULT_LEVEL) -> list[Row]:
    size = sizes(opts.quick)
    with tempfile.TemporaryDirectory(prefix="bench-restart-rec-", dir=os.environ.get("BENCH_TMP")) as tmp:
        plain_wall, plain = _in_child(size, opts.seed, None, level)
        rec_dir = Path(tmp) / "run"
        rec_wall, got = _in_child(size, opts.seed, str(rec_dir), level)
        files = _folder_bytes(rec_dir)
    total_gb = sum(files.values()) / 1e9
    overhead = rec_wall / plain_wall - 1.0
    cpu_overhead = got["cpu_s"] / plain["cpu_s"] - 1.0
    details = {"unrecorded_wall_s": plain_wall, "recorded_wall_s": rec_wall, "unrecorded_cpu_s": plain["cpu_s"],
               "recorded_cpu_s": got["cpu_s"], "cpu_overhead": cpu_overhead, "files_bytes": files,
               "record_decisions": level, "case": got}
    return [
        Row(name="restart_recorded.overhead", figure=overhead, unit="x wall", baseline=plain_wall,
            baseline_unit="s unrecorded", ratio=rec_wall / plain_wall,
            target=Target("figure", "<=", OVERHEAD_TARGET), samples=[rec_wall], details=details,
            note=f"recorded {rec_wall:.0f} s vs unrecorded {plain_wall:.0f} s wall; CPU {got['cpu_s']:.0f} s vs "
                 f"{plain['cpu_s']:.0f} s ({cpu_overhead:+.1%}); decisions={level}"),
        Row(name="restart_recorded.disk", figure=total_gb, unit="GB", target=Target("figure", "<=", SIZE_TARGET_GB),
            samples=[total_gb], details={"files_bytes": files},
            note=", ".join(f"{k} {v / 1e6:,.1f} MB" for k, v in files.items())),
    ]


__all__ = ["GIB", "run_bench"]
