"""Roll-up: recorded samples per second through the Spark roll-up (local mode), after session start-up.

The input is `RUNS` recordings in the recorder's format, written by the pipeline's synthetic
recorder (20 brokers, `HOURS` emulated hours each at the default 10 s record interval), so the
figure does not depend on how fast the emulator itself ran. One Spark session is
started first (its ~20 s JVM start-up is not timed) and warmed up with one roll-up; then each
repetition times `rollup(...)` on the same session. The baseline is a plain single-threaded scan
of the same `samples.jsonl` files with msgspec, in the same process: the ratio says what Spark's
machinery costs over just reading the lines. No target: the issue asks for the figure.

A second row, `rollup.recorded_hour`, measures a real recording against its data: the bench records
one emulated hour of `default` (seed `--seed`), then times, alternately in fresh processes, the
baseline (`python -m bench.read_count RUN`: a Spark job started as the roll-up starts its own, which
only reads the same four files and counts their lines) and `python -m emulator rollup RUN --out DIR`
as a user runs it. Each figure is start to exit, Python's and Spark's start included; the ratio of the
medians has target <= 2 (issue 30). The phases on the roll-up's last line (session, read, KPIs, write) go
in the details: where the rest goes. `--quick` records 10 emulated minutes and gives no verdict.

`--quick` skips both (a JVM start alone is longer than the whole quick suite) unless they were asked
for by name (`--only rollup`).
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from .harness import Options, Row, Target, interleaved

RECORDED_TARGET_RATIO = 2.0
"""A recorded hour of `default` rolled up, over a job that only reads and counts it (issue 30)."""
RUNS = 2
HOURS = 6.0  # per run: 2 x 6 h of 20 brokers is about 2.3 M samples; a day each ran the local
             # driver out of its default 1 GiB heap (java.lang.OutOfMemoryError, reported)


def _available() -> str | None:
    """None if the roll-up can run here, else why not."""
    try:
        import pyspark  # noqa: F401

        from emulator.pipeline import rollup as _  # noqa: F401
        from emulator.pipeline.synthetic import write_synthetic_run  # noqa: F401
    except Exception as e:  # noqa: BLE001 - any import failure means "not here"
        return f"emulator.pipeline.rollup not importable ({type(e).__name__}: {e})"
    if shutil.which("java") is None:
        return "no java on PATH (the Spark roll-up needs Java 17/21)"
    return None


def _scan(files: list[Path]) -> float:
    """Samples per second of a plain msgspec scan (decode each line) of `files`."""
    decode = msgspec.json.Decoder().decode
    n = 0
    t = time.perf_counter()
    for f in files:
        with f.open("rb") as fh:
            for line in fh:
                decode(line)
                n += 1
    return n / (time.perf_counter() - t)


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    """Wall seconds of a command, start to exit, and its stdout; a failure is an error naming it."""
    t = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[1:4])} exited {proc.returncode}: "
                           f"{proc.stderr.strip().splitlines()[-1:]}")
    return seconds, proc.stdout


def _phases(stdout: str) -> dict[str, float]:
    """The phases of the roll-up's last line, `rolled up ... (N samples/s; session 4.4 s; read 4.4 s;
    ...) -> DIR`, as {phase: seconds}."""
    for line in stdout.splitlines():
        if line.startswith("rolled up "):
            return {name: float(v) for name, v in re.findall(r"; (\w+) ([\d.]+) s", line)}
    return {}


def recorded_hour(opts: Options, work: Path) -> Row:
    """Record an hour of `default`, then time the `rollup` command on it against a read-and-count job."""
    from emulator.runner import run_recorded

    duration = 600.0 if opts.quick else 3600.0
    t = time.perf_counter()
    run = run_recorded("default", {}, opts.seed, str(work / "recorded"), duration)
    record_s = time.perf_counter() - t
    size = sum(f.stat().st_size for f in Path(run).iterdir() if f.is_file())
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    counter = itertools.count()
    phases: list[dict[str, float]] = []
    lines: list[int] = []

    def baseline() -> float:
        seconds, out = _timed([sys.executable, "-m", "bench.read_count", run], root, env)
        lines.append(int(out.split()[0]))
        return seconds

    def rolled_up() -> float:
        seconds, out = _timed([sys.executable, "-m", "emulator", "rollup", run, "--out",
                               str(work / f"rec-{next(counter)}"), "--quiet"], root, env)
        phases.append(_phases(out))
        return seconds

    reps = opts.repetitions(3, 1)
    try:
        base, base_values, figure, values = interleaved(baseline, rolled_up, reps)
    except RuntimeError as e:
        return Row(name="rollup.recorded_hour", figure=None, unit="s", passed=False, note=str(e))
    spent = {k: statistics.median(p.get(k, 0.0) for p in phases) for k in phases[0]} if phases else {}
    return Row(name="rollup.recorded_hour", figure=figure, unit="s", baseline=base,
               baseline_unit="s read-and-count Spark job", ratio=figure / base,
               target=None if opts.quick else Target("ratio", "<=", RECORDED_TARGET_RATIO),
               reps=reps, samples=values,
               note=f"`default` {duration / 3600:g} emulated h recorded; each a fresh process, JVM start included",
               details={"emulated_s": duration, "record_wall_s": record_s, "recording_bytes": size,
                        "lines": lines[0] if lines else None, "baseline_samples": base_values,
                        "rollup_phases_median_s": spent})


def run_bench(opts: Options, *, asked_by_name: bool = False) -> list[Row]:
    why = _available()
    if why is None and opts.quick and not asked_by_name:
        why = "skipped in --quick (Spark's JVM start-up alone is ~20 s); run --only rollup"
    if why is not None:
        return [Row(name="rollup", figure=None, unit="samples/s", note=why),
                Row(name="rollup.recorded_hour", figure=None, unit="s", note=why)]
    with tempfile.TemporaryDirectory(prefix="bench-rollup-rec-") as tmp:
        recorded = recorded_hour(opts, Path(tmp))
    return [*synthetic_rows(opts), recorded]


def synthetic_rows(opts: Options) -> list[Row]:
    from emulator.pipeline.rollup import rollup
    from emulator.pipeline.session import jvm_peak_rss_bytes, spark_session
    from emulator.pipeline.synthetic import write_synthetic_run

    duration = 3600.0 if opts.quick else HOURS * 3600.0
    brokers = 4 if opts.quick else 20
    reps = opts.repetitions(3, 1)
    work = Path(tempfile.mkdtemp(prefix="bench-rollup-"))
    try:
        runs = [write_synthetic_run(work / f"run-{i}", seed=opts.seed + i, duration=duration,
                                    brokers=brokers) for i in range(RUNS)]
        files = [Path(r) / "samples.jsonl" for r in runs]
        details: dict[str, Any] = {"runs": RUNS, "brokers": brokers, "emulated_s": duration}
        t = time.perf_counter()
        with spark_session("local[*]") as spark:
            details["session_start_s"] = time.perf_counter() - t
            counter = iter(range(10_000))

            def once() -> float:
                out = work / f"out-{next(counter)}"
                result = rollup(runs, out, spark=spark, show=False)
                details["samples"] = result.samples
                details["wall_s"] = result.wall_seconds
                return result.samples_per_second

            t = time.perf_counter()
            once()  # warm-up: class loading, code generation
            details["warmup_s"] = time.perf_counter() - t
            base, base_values, figure, values = interleaved(lambda: _scan(files), once, reps)
            details["jvm_peak_rss_bytes"] = jvm_peak_rss_bytes(spark)
        details["baseline_samples"] = base_values
        return [Row(name="rollup", figure=figure, unit="samples/s", baseline=base,
                    baseline_unit="samples/s msgspec scan", ratio=figure / base, reps=reps,
                    samples=values, details=details)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
