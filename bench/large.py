"""The `large` group (issue 31): Pulsar's largest clusters in one process, 1,000 brokers and a million topics.

`python -m bench --only large` runs the `pulsar-large` scenario (bench/large_scenario.py) at three sizes,
each in its own fresh child process, `python -m emulator run <render(scale) in a temp file> --quiet
--no-memory-check --summary-json ...` on the virtual clock for its full emulated hour, and reads the
child's own CPU seconds (user + sys) and peak RSS from `os.wait4` (that child's rusage alone, not this
process's nor another child's). Sizes: 0.1, 0.3, 1.0 (100,000 / 300,000 / 1,000,000 topics); with
`--quick`, 0.01, 0.03, 0.1. The smallest and middle sizes run once more with `--load-manager
ExtensibleLoadManagerImpl`.

Rows:
* `large.rss_per_topic_100k` (scale 0.1) and `large.rss_per_topic_1m` (scale 1.0, full mode only): peak
  RSS / topics, KiB; target <= 10;
* `large.cpu_per_topic_hour_ratio`: CPU seconds per topic-hour at the largest size over that at the
  size 10x smaller; target <= 1.2 (the cost of a topic does not grow with the cluster);
* `large.cpu_slope`: log-log slope of CPU seconds over topics on the three sizes; target <= 1.1;
* `large.extensible_rss_per_topic`: the Extensible runs' peak RSS per topic at the middle size (KiB,
  target <= 10), both sizes' CPU and RSS in its note and details.

A child's exit status 1 (an expectation of the scenario failed) is still a measurement: the row keeps
its figure and says so in its note. Any other non-zero status (2: bad input, 3: the run broke; or a
signal, the wall-clock limit) is no measurement: the row's note starts with "crashed:", which fails it.
`--quick` without `--only large` skips the group (~90 s of CPU), as `rollup` is skipped.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

import msgspec

from .harness import Options, Row, Target, log_log_slope
from .large_scenario import render

__all__ = ["ChildRun", "measure", "rows_of", "run_bench", "sizes"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXTENSIBLE = "ExtensibleLoadManagerImpl"
KIB = 1024
RSS_TARGET_KIB = 10.0
CHILD_TIME_LIMIT = 5400.0   # s of wall per child; the group's own limit is TIME_LIMITS["large"]


def sizes(quick: bool) -> tuple[float, float, float]:
    """The three scales: the largest is 10x the smallest."""
    return (0.01, 0.03, 0.1) if quick else (0.1, 0.3, 1.0)


class ChildRun(msgspec.Struct, kw_only=True):
    """One `python -m emulator run` child: what os.wait4 and its --summary-json say."""

    scale: float
    load_manager: str
    topics: int
    exit_code: int              # the child's exit status; -N: killed by signal N
    cpu_s: float                # user + sys of that child alone
    user_s: float
    sys_s: float
    peak_rss_bytes: int
    wall_s: float
    emulated_s: float | None    # from the summary (None without one)
    kpis: dict[str, Any] = {}
    stderr_tail: str = ""

    @property
    def measured(self) -> bool:
        """0 or 1 (an expectation failed): the run went to its end and its figures stand."""
        return self.exit_code in (0, 1) and self.emulated_s is not None

    @property
    def rss_per_topic_kib(self) -> float:
        return self.peak_rss_bytes / self.topics / KIB

    @property
    def cpu_per_topic_hour(self) -> float | None:
        if not self.emulated_s:
            return None
        return self.cpu_s / (self.topics * self.emulated_s / 3600.0)

    def label(self) -> str:
        return f"scale {self.scale:g} ({self.topics:,} topics, {self.load_manager})"

    def trouble(self) -> str:
        """'' when exit 0; else what went wrong, loudly."""
        if self.exit_code == 0:
            return ""
        if self.exit_code == 1:
            return f"EXIT 1 at {self.label()}: an expectation failed ({self.stderr_tail or 'see its summary'})"
        if self.exit_code < 0:
            what = signal.Signals(-self.exit_code).name if -self.exit_code in signal.valid_signals() else "?"
            return f"KILLED by signal {-self.exit_code} ({what}) at {self.label()}: {self.stderr_tail}"
        return f"EXIT {self.exit_code} at {self.label()} (no measurement): {self.stderr_tail}"


def measure(scale: float, *, seed: int = 1, load_manager: str = "ModularLoadManagerImpl",
            time_limit: float = CHILD_TIME_LIMIT) -> ChildRun:
    """Run render(scale) in a fresh `python -m emulator run` child; its rusage from os.wait4."""
    with tempfile.TemporaryDirectory(prefix="bench-large-") as tmp:
        scenario = os.path.join(tmp, f"pulsar-large-{scale:g}.toml")
        summary = os.path.join(tmp, "summary.json")
        with open(scenario, "w", encoding="utf-8") as f:
            f.write(render(scale, seed=seed))
        cmd = [sys.executable, "-m", "emulator", "run", scenario, "--quiet", "--no-memory-check",
               "--summary-json", summary]
        if load_manager != "ModularLoadManagerImpl":
            cmd += ["--load-manager", load_manager]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH"))
                                                           if p)}
        with open(os.path.join(tmp, "stderr"), "w+", encoding="utf-8") as err:
            started = time.perf_counter()
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT, env=env)
            timer = threading.Timer(time_limit, proc.kill)
            timer.start()
            try:
                _, status, usage = os.wait4(proc.pid, 0)
            finally:
                timer.cancel()
            proc.returncode = os.waitstatus_to_exitcode(status)   # reaped here, not by Popen
            wall = time.perf_counter() - started
            err.seek(0)
            tail = " | ".join(err.read().strip().splitlines()[-3:])
        doc: dict[str, Any] = {}
        if os.path.exists(summary):
            with open(summary, encoding="utf-8") as f:
                doc = json.load(f)
    rss = usage.ru_maxrss if sys.platform == "darwin" else usage.ru_maxrss * KIB
    return ChildRun(scale=scale, load_manager=load_manager, topics=int(doc.get("topics") or round(1e6 * scale)),
                    exit_code=proc.returncode, cpu_s=usage.ru_utime + usage.ru_stime, user_s=usage.ru_utime,
                    sys_s=usage.ru_stime, peak_rss_bytes=rss, wall_s=wall,
                    emulated_s=doc.get("emulated_seconds"), kpis=doc.get("kpis", {}),
                    stderr_tail=tail[-600:] if proc.returncode else "")


def _detail(run: ChildRun) -> dict[str, Any]:
    keep = ("bundle_moves", "splits", "unloads", "publish_failed", "lookup_failures", "client_lookup_failures",
            "unavailable_topic_seconds", "unavailable_topic_seconds_max", "overloaded_brokers")
    return {"scale": run.scale, "load_manager": run.load_manager, "topics": run.topics,
            "exit_code": run.exit_code, "cpu_s": run.cpu_s, "user_s": run.user_s, "sys_s": run.sys_s,
            "peak_rss_bytes": run.peak_rss_bytes, "wall_s": run.wall_s, "emulated_s": run.emulated_s,
            "rss_per_topic_kib": run.rss_per_topic_kib, "cpu_per_topic_hour_s": run.cpu_per_topic_hour,
            "kpis": {k: run.kpis[k] for k in keep if k in run.kpis}, "stderr_tail": run.stderr_tail}


def _note(runs: list[ChildRun], text: str = "") -> str:
    """`text`, preceded by every child's trouble; "crashed: ..." when one gave no measurement."""
    troubles = [r.trouble() for r in runs if r.trouble()]
    head = "crashed: " if any(not r.measured for r in runs) else ""
    return head + "; ".join([*troubles, *([text] if text else [])])


def _rss_row(name: str, run: ChildRun) -> Row:
    ok = run.measured
    return Row(name=name, figure=run.rss_per_topic_kib if ok else None, unit="KiB/topic",
               target=Target("figure", "<=", RSS_TARGET_KIB),
               note=_note([run], f"peak RSS {run.peak_rss_bytes / 2**20:,.0f} MiB / {run.topics:,} topics; "
                                 f"{run.cpu_s:,.1f} s CPU"),
               details=_detail(run))


def rows_of(modular: list[ChildRun], extensible: list[ChildRun]) -> list[Row]:
    """The group's rows from the Modular runs (three sizes, smallest first) and the Extensible ones."""
    rows: list[Row] = []
    by_scale = {r.scale: r for r in modular}
    if 0.1 in by_scale:
        rows.append(_rss_row("large.rss_per_topic_100k", by_scale[0.1]))
    if 1.0 in by_scale:
        rows.append(_rss_row("large.rss_per_topic_1m", by_scale[1.0]))

    small, large = modular[0], modular[-1]
    ok = small.measured and large.measured
    per_small, per_large = small.cpu_per_topic_hour, large.cpu_per_topic_hour
    rows.append(Row(
        name="large.cpu_per_topic_hour_ratio", figure=per_large * 1e3 if ok and per_large else None,
        unit="ms CPU/topic-hour", baseline=per_small * 1e3 if ok and per_small else None,
        baseline_unit=f"at {small.topics:,} topics",
        ratio=per_large / per_small if ok and per_small and per_large else None,
        target=Target("ratio", "<=", 1.2),
        note=_note([small, large], f"CPU per topic-hour at {large.topics:,} topics over that at {small.topics:,}"),
        details={"largest": _detail(large), "smallest": _detail(small)}))

    ok = all(r.measured for r in modular)
    slope = log_log_slope([float(r.topics) for r in modular], [r.cpu_s for r in modular]) if ok else None
    rows.append(Row(
        name="large.cpu_slope", figure=slope, unit="slope", target=Target("figure", "<=", 1.1),
        reps=len(modular), samples=[r.cpu_s for r in modular],
        note=_note(modular, "CPU s over topics: " + ", ".join(f"{r.topics:,}: {r.cpu_s:,.1f} s" for r in modular)),
        details={"points": [_detail(r) for r in modular]}))

    if extensible:
        middle = extensible[-1]
        rows.append(Row(
            name="large.extensible_rss_per_topic", figure=middle.rss_per_topic_kib if middle.measured else None,
            unit="KiB/topic", target=Target("figure", "<=", RSS_TARGET_KIB),
            note=_note(extensible, "ExtensibleLoadManagerImpl (TransferShedder): " + "; ".join(
                f"{r.topics:,} topics: {r.cpu_s:,.1f} s CPU, "
                f"{(r.cpu_per_topic_hour or 0) * 1e3:.3g} ms/topic-hour, {r.rss_per_topic_kib:.3g} KiB/topic"
                for r in extensible)),
            details={"points": [_detail(r) for r in extensible]}))
    return rows


def run_bench(opts: Options, *, asked_by_name: bool = False) -> list[Row]:
    if opts.quick and not asked_by_name:
        why = "skipped in --quick without --only large (~90 s of CPU in 5 children); run --only large --quick"
        return [Row(name="large", figure=None, unit="", note=why)]
    scales = sizes(opts.quick)
    modular = [measure(s, seed=opts.seed) for s in scales]
    extensible = [measure(s, seed=opts.seed, load_manager=EXTENSIBLE) for s in scales[:2]]
    return rows_of(modular, extensible)
