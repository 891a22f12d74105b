"""The shared harness: repetitions, medians, targets, rows, the table and the JSON.

These machines are shared and noisy, so every figure is the median of several repetitions and every
ratio is taken against a baseline measured in the same process during the same run (never against a
number written down on another day). A benchmark module exposes `run(opts) -> list[Row]`; this module
knows nothing of Pulsar.
"""

from __future__ import annotations

import gc
import math
import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import msgspec

__all__ = ["Options", "Row", "Target", "interleaved", "judge", "median_of", "log_log_slope", "peak_rss_bytes",
           "render_table", "quiet_logs", "report", "timed"]


class Options(msgspec.Struct, frozen=True, kw_only=True):
    """What every benchmark gets: `quick` shrinks the sizes (CI smoke test, no verdict on time),
    `reps` overrides the number of repetitions (None: each benchmark's own default)."""

    quick: bool = False
    reps: int | None = None
    seed: int = 1

    def repetitions(self, full: int, quick: int = 1) -> int:
        if self.reps is not None:
            return self.reps
        return quick if self.quick else full


class Target(msgspec.Struct, frozen=True):
    """`on` names what the target applies to ("figure" or "ratio"); `op` is "<=" or ">="."""

    on: str
    op: str
    value: float

    def __post_init__(self) -> None:
        if self.on not in ("figure", "ratio"):
            raise ValueError(f"Target.on = {self.on!r}; expected 'figure' or 'ratio'")
        if self.op not in ("<=", ">="):
            raise ValueError(f"Target.op = {self.op!r}; expected '<=' or '>='")

    def met(self, figure: float | None, ratio: float | None) -> bool | None:
        x = figure if self.on == "figure" else ratio
        if x is None or not math.isfinite(x):
            return None
        return x <= self.value if self.op == "<=" else x >= self.value

    def __str__(self) -> str:
        return f"{'ratio ' if self.on == 'ratio' else ''}{self.op} {_fmt(self.value)}"


class Row(msgspec.Struct, kw_only=True):
    """One line of the table. `passed` is None when there is no verdict (quick mode, n/a rows)."""

    name: str
    figure: float | None
    unit: str
    baseline: float | None = None
    baseline_unit: str = ""
    ratio: float | None = None
    target: Target | None = None
    passed: bool | None = None
    reps: int = 1
    samples: list[float] = []
    note: str = ""
    details: dict[str, Any] = {}


def judge(rows: list[Row], quick: bool) -> list[Row]:
    """Fill `passed` from each row's target; quick mode never judges (sizes are not the targets')."""
    for row in rows:
        row.passed = None if quick or row.target is None else row.target.met(row.figure, row.ratio)
    return rows


# --------------------------------------------------------------------------- measuring


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """(wall seconds, result) of one call, after a full collection so that garbage left by the
    previous repetition is not billed to this one."""
    gc.collect()
    t = time.perf_counter()
    result = fn()
    return time.perf_counter() - t, result


def median_of(fn: Callable[[], float], reps: int) -> tuple[float, list[float]]:
    """Median and all values of `reps` calls of `fn` (each returns the figure of one repetition)."""
    if reps < 1:
        raise ValueError(f"reps = {reps!r}; must be >= 1")
    values = []
    for _ in range(reps):
        gc.collect()
        values.append(float(fn()))
    return statistics.median(values), values


def interleaved(baseline: Callable[[], float], measured: Callable[[], float],
                reps: int) -> tuple[float, list[float], float, list[float]]:
    """Median and values of `baseline` and of `measured`, run alternately (baseline first) so that a
    noisy neighbour slows both alike and the ratio of the medians stays fair."""
    if reps < 1:
        raise ValueError(f"reps = {reps!r}; must be >= 1")
    base: list[float] = []
    meas: list[float] = []
    for _ in range(reps):
        gc.collect()
        base.append(float(baseline()))
        gc.collect()
        meas.append(float(measured()))
    return statistics.median(base), base, statistics.median(meas), meas


def log_log_slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log(y) over log(x): 1.0 is linear growth, 2.0 quadratic."""
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError(f"log_log_slope needs two equally long series of >= 2 points, got "
                         f"{len(xs)} and {len(ys)}")
    lx = [math.log(x) for x in xs]
    ly = [math.log(max(y, 1e-12)) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    var = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / var


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far (ru_maxrss is KiB on Linux, bytes on macOS)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024


def quiet_logs() -> None:
    """Benchmarks measure the emulator, not the terminal: structlog filtered to errors (filtered
    calls cost ~0.1 µs, rendered ones 3-7 µs)."""
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))


# --------------------------------------------------------------------------- output


def _fmt(x: float | None) -> str:
    if x is None:
        return "n/a"
    if not math.isfinite(x):
        return str(x)
    a = abs(x)
    if a == 0:
        return "0"
    if a >= 100_000:
        return f"{x:,.0f}"
    if a >= 100:
        return f"{x:,.1f}"
    if a >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def _verdict(row: Row) -> str:
    if row.passed is None:
        return "-" if row.target is None else "n/a"
    return "PASS" if row.passed else "FAIL"


def render_table(rows: list[Row]) -> str:
    head = ("name", "figure", "unit", "baseline", "ratio", "target", "pass")
    body = [(r.name, _fmt(r.figure), r.unit,
             _fmt(r.baseline) + (f" {r.baseline_unit}" if r.baseline is not None and r.baseline_unit
                                 else ""),
             _fmt(r.ratio), str(r.target) if r.target else "-", _verdict(r)) for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    right = {1, 3, 4}

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = [line(head), line(tuple("-" * w for w in widths))]
    out.extend(line(b) for b in body)
    notes = [f"  {r.name}: {r.note}" for r in rows if r.note]
    if notes:
        out.append("")
        out.append("notes:")
        out.extend(notes)
    return "\n".join(out)


def report(rows: list[Row], opts: Options, argv: list[str], started: float) -> dict[str, Any]:
    """The JSON document: the rows plus what is needed to reproduce and compare them."""
    import anyio
    import numpy

    return {
        "command": "python -m bench " + " ".join(argv),
        "quick": opts.quick,
        "seed": opts.seed,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "wall_s": time.time() - started,
        "machine": {"python": platform.python_version(), "implementation": platform.python_implementation(),
                    "platform": platform.platform(), "cpus": os.cpu_count(),
                    "anyio": anyio.__version__ if hasattr(anyio, "__version__") else _version("anyio"),
                    "msgspec": msgspec.__version__, "numpy": numpy.__version__},
        "peak_rss_bytes": peak_rss_bytes(),
        "rows": msgspec.to_builtins(rows),
        "passed": all(r.passed is not False for r in rows),
    }


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "unknown"
