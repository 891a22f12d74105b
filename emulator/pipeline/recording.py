"""The recording folder as the pipeline reads it: file names, explicit Spark schemas, `run.json`.

One folder per run, written by `emulator/observe/recorder.py` (format in the shared interfaces):
`run.json`, `samples.jsonl`, `decisions.jsonl`, `events.jsonl`, `publish.jsonl`, each gzip-compressed
(`name.gz`) or plain, as `emulator.observe.recording_files.find` takes them. A run killed mid-write
leaves a file cut short: `cut_files` finds them, the roll-up warns once and reads each up to the cut.
The schemas name only the fields the roll-up uses; JSON fields not named are skipped, so the recorder
may add fields freely. Spark gets the schemas explicitly because inference costs a whole extra pass
over the files (toolchain.md §2).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence, TextIO

import msgspec

RUN_FILE = "run.json"
SAMPLES_FILE = "samples.jsonl"
DECISIONS_FILE = "decisions.jsonl"
EVENTS_FILE = "events.jsonl"
PUBLISH_FILE = "publish.jsonl"
"""Publish latency per run: the cluster's line (topic "") and one per topic, written at the run's close
(`publish.jsonl.gz` since issue 32, plain before)."""

OVERLOAD_KEY = "loadBalancerBrokerOverloadedThresholdPercentage"
OVERLOAD_DEFAULT = 85.0
GRACE_KEY = "loadBalancerSheddingGracePeriodMinutes"
GRACE_DEFAULT_MINUTES = 30.0


class RunInfo(msgspec.Struct, kw_only=True):
    """`run.json`: what was run, how, and whether it finished."""

    scenario: str = ""
    scenario_file: str | None = None
    seed: int = 0
    config: dict[str, str] = {}
    placement: str = ""
    shedder: str = ""
    grid: dict[str, str] = {}
    clock: str = "virtual"
    speed: float = 1.0
    duration: float | None = None
    emulated_start: float = 0.0
    emulated_end: float | None = None
    started_at: str | None = None
    ended_at: str | None = None
    complete: bool = False
    versions: dict[str, str] = {}
    record_interval: float = 10.0


class Run(msgspec.Struct, frozen=True, kw_only=True):
    """A run folder the roll-up will read: its id (the folder's name), path, metadata and label."""

    run_id: str
    path: str
    info: RunInfo
    config_label: str

    @property
    def overload_threshold(self) -> float:
        return _config_float(self.info, OVERLOAD_KEY, OVERLOAD_DEFAULT)

    @property
    def grace_seconds(self) -> float:
        return _config_float(self.info, GRACE_KEY, GRACE_DEFAULT_MINUTES) * 60.0


def _config_float(info: RunInfo, key: str, default: float) -> float:
    raw = info.config.get(key)
    if raw is None or str(raw).strip() == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"run.json config {key} = {raw!r}: expected a number") from None


def config_label(grid: Mapping[str, Any], fallback: str) -> str:
    """'placement=X, shedder=Y' from a sweep's grid point, in the grid's order; `fallback` if empty."""
    if not grid:
        return fallback
    return ", ".join(f"{k}={v}" for k, v in grid.items())


def read_run_info(run_dir: str | Path) -> RunInfo:
    path = Path(run_dir) / RUN_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ValueError(f"run_dir = {str(run_dir)!r}: no {RUN_FILE} there; is it a recording folder?") \
            from None
    try:
        data = json.loads(raw)
        if isinstance(data, dict):  # run.json values are strings, but accept numbers too
            data["config"] = {str(k): _text(v) for k, v in (data.get("config") or {}).items()}
            data["grid"] = {str(k): _text(v) for k, v in (data.get("grid") or {}).items()}
            data["versions"] = {str(k): _text(v) for k, v in (data.get("versions") or {}).items()}
        return msgspec.convert(data, RunInfo, strict=False)
    except (ValueError, msgspec.ValidationError) as e:
        raise ValueError(f"{path}: not a valid run.json ({e})") from None


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def load_runs(run_dirs: Sequence[str | Path], labels: Mapping[str, str] | None = None) -> list[Run]:
    """Resolve and describe the run folders; ids are folder names and must be unique.

    The label groups runs into configurations: `labels[path]` if given (a sweep knows its grid), else
    run.json's grid ("k=v, ..."), else the scenario name."""
    if isinstance(run_dirs, (str, Path)):
        raise TypeError(f"run_dirs = {run_dirs!r}: expected a list of run folders, not one path")
    if not run_dirs:
        raise ValueError("run_dirs = []: give at least one recording folder")
    labels = {str(Path(k).resolve()): v for k, v in (labels or {}).items()}
    runs: list[Run] = []
    seen: dict[str, str] = {}
    for d in run_dirs:
        path = Path(d).resolve()
        if not path.is_dir():
            raise ValueError(f"run_dir = {str(d)!r}: not a folder")
        info = read_run_info(path)
        run_id = path.name
        if run_id in seen:
            raise ValueError(f"run_dir = {str(d)!r}: its name {run_id!r} is also the name of "
                             f"{seen[run_id]!r}; run ids are folder names and must be unique")
        seen[run_id] = str(path)
        label = labels.get(str(path)) or config_label(info.grid, info.scenario or "default")
        runs.append(Run(run_id=run_id, path=str(path), info=info, config_label=label))
    return runs


def spark_schemas() -> dict[str, Any]:
    """Explicit schemas of the three JSON-lines files (built lazily: pyspark is imported only here)."""
    from pyspark.sql import types as T

    d, s = T.DoubleType(), T.StringType()
    return {
        SAMPLES_FILE: T.StructType([
            T.StructField("t", d), T.StructField("name", s),
            T.StructField("labels", T.MapType(s, s)), T.StructField("value", d),
        ]),
        DECISIONS_FILE: T.StructType([
            T.StructField("t", d), T.StructField("decision", s), T.StructField("bundle", s),
            T.StructField("broker", s), T.StructField("destination", s),
            T.StructField("ok", T.BooleanType()), T.StructField("label", s), T.StructField("reason", s),
        ]),
        # handle ids are numbers today; a string column keeps any id as its JSON text
        EVENTS_FILE: T.StructType([
            T.StructField("t", d), T.StructField("kind", s), T.StructField("event", s),
            T.StructField("client", s), T.StructField("handle", s), T.StructField("topic", s),
            T.StructField("unavailable", d), T.StructField("since", d),
        ]),
        PUBLISH_FILE: T.StructType([
            T.StructField("topic", s), T.StructField("t", d), T.StructField("messages", d),
            T.StructField("failed_timeout", d), T.StructField("failed_queue_full", d),
            T.StructField("failed_closed", d), T.StructField("p50", d), T.StructField("p99", d),
            T.StructField("p999", d), T.StructField("p9999", d),
        ]),
    }


def cut_files(runs: Sequence[Run], *, scan: bool = True) -> list[Path]:
    """The compressed files of `runs` that a kill cut: a 0-byte one (recorders before issue 32 left
    those), and with `scan` one whose last gzip member is cut short, looked for only in runs whose
    run.json says `"complete": false` (a whole pass over each of their files)."""
    from emulator.observe.recording_files import COMPRESSED, find, is_cut

    out: list[Path] = []
    for r in runs:
        for name in (SAMPLES_FILE, DECISIONS_FILE, EVENTS_FILE, PUBLISH_FILE):
            path = find(r.path, name)
            if path is None or not path.name.endswith(COMPRESSED):
                continue
            if path.stat().st_size == 0 or (scan and not r.info.complete and is_cut(path)):
                out.append(path)
    return out


def warn_cut(runs: Sequence[Run], stream: TextIO | None = None) -> list[Path]:
    """One line on stderr naming the files a kill cut (the roll-up reads each up to the cut)."""
    cut = cut_files(runs)
    if cut:
        names = ", ".join(f"{p.parent.name}/{p.name}" for p in cut)
        (stream or sys.stderr).write(f"rollup: warning: {len(cut)} file(s) cut short by a killed run, read up "
                                     f"to the cut: {names}\n")
    return cut
