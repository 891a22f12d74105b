"""One soak seed: run its scenario in a child process and check everything a run promises.

A run is a child `python -m emulator run FILE --record DIR --quiet`, so a hang can be cut by a wall
timeout and a crash of the interpreter is seen as one. Checks, each a problem class of its own:

    exit            an exit code other than 0 (ok), 1 (expectation failed), 3 (emulator fault)
                    (2 = bad input is a generator bug here, so it is reported under `exit` too)
    violation       invariant violations (exit 1, "invariant violations: N" on stdout)
    actor_failure   exit 3, or an "actor crashed" log line on stderr (with its traceback), or an
                    actor-failure record in the recording
    hang            the run did not end within the wall timeout (the child is killed)
    recording       run.json missing, unreadable or not `complete`, or a JSON-lines record that is
                    not a JSON object with a finite `t`
    nondeterministic  a rerun (a new process, so a new hash seed) differs: stdout, or any recorded
                    file byte for byte (run.json without its wall-clock started_at / ended_at)
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

import msgspec

from emulator.observe import recording_files
from emulator.pipeline import recording

from .generate import scenario_toml

__all__ = ["PROBLEMS", "SeedResult", "actor_crashes", "run_seed"]

EXIT_OK, EXIT_EXPECTATION, EXIT_USAGE, EXIT_FAULT = 0, 1, 2, 3
PROBLEMS = ("exit", "violation", "actor_failure", "hang", "recording", "nondeterministic")
WALL_FIELDS = ("started_at", "ended_at")
"""run.json fields that read the wall clock (observe/recorder.py `_wall_now`); not compared."""

Command = Callable[[Path, Path], Sequence[str]]


class SeedResult(msgspec.Struct, kw_only=True):
    """What one seed's run(s) showed; `problems` maps a class of PROBLEMS to one line of detail."""

    seed: int
    exit_code: int | None = None
    wall_seconds: float = 0.0
    violations: int = 0
    crashes: list[str] = []
    """Each crash's log line and traceback, as printed on stderr."""
    problems: dict[str, str] = {}
    reran: bool = False
    stdout: str = ""
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems


def default_command(scenario: Path, record_dir: Path) -> list[str]:
    return [sys.executable, "-m", "emulator", "run", str(scenario), "--record", str(record_dir), "--quiet"]


def actor_crashes(stderr: str) -> list[str]:
    """The "actor crashed" log lines of a run's stderr, each with the traceback lines under it."""
    crashes: list[str] = []
    current: list[str] | None = None
    for line in stderr.splitlines():
        if "actor crashed" in line:
            if current:
                crashes.append("\n".join(current).rstrip())
            current = [line]
        elif current is not None and not line.startswith(("[", "{", "READY")):
            current.append(line)  # the traceback under the log line, up to the next log line
        elif current is not None:
            crashes.append("\n".join(current).rstrip())
            current = None
    if current:
        crashes.append("\n".join(current).rstrip())
    return crashes


def _crash_headline(crash: str) -> str:
    """'actor=broker-2:8080 t=83.3 AttributeError: ...': who crashed, when, and the exception's last line."""
    lines = crash.splitlines()
    fields = {m[1]: m[2] for m in re.finditer(r"\b(actor|t)=(\S+)", lines[0])}
    last = next((x.strip() for x in reversed(lines[1:]) if x.strip()), lines[0].strip())
    return f"actor={fields.get('actor', '?')} t={fields.get('t', '?')} {last}"[:200]


def _violations(stdout: str) -> int:
    for line in stdout.splitlines():
        if line.startswith("invariant violations:"):
            try:
                return int(line.split(":", 1)[1])
            except ValueError:
                return -1
    return 0


def _record_folder(record_dir: Path) -> Path | None:
    folders = sorted(p for p in record_dir.iterdir() if p.is_dir()) if record_dir.is_dir() else []
    return folders[0] if len(folders) == 1 else None


def check_recording(folder: Path | None, seed: int) -> tuple[str | None, int]:
    """(a problem line or None, actor-failure records found) for one recording folder."""
    if folder is None:
        return "no single recording folder was written", 0
    try:
        info = recording.read_run_info(folder)
    except ValueError as e:
        return str(e), 0
    if not info.complete:
        return f"{folder / recording.RUN_FILE}: complete = false", 0
    if info.seed != seed:
        return f"{folder / recording.RUN_FILE}: seed = {info.seed}, expected {seed}", 0
    failures = 0
    for name in (recording.SAMPLES_FILE, recording.DECISIONS_FILE, recording.EVENTS_FILE):
        path = recording_files.find(folder, name)   # name.gz as the recorder writes it, or plain
        if path is None:
            return f"{folder / name}(.gz): missing", failures
        with recording_files.open_text(path) as f:
            for n, line in enumerate(f, 1):
                try:
                    rec = json.loads(line)
                except ValueError as e:
                    return f"{path}:{n}: not JSON ({e})", failures
                t = rec.get("t") if isinstance(rec, dict) else None
                if not isinstance(t, (int, float)) or not math.isfinite(t):
                    return f"{path}:{n}: no finite t", failures
                kind = str(rec.get("kind", ""))
                if "actor" in kind and "fail" in kind:
                    failures += 1
    return None, failures


def _fingerprint(stdout: str, folder: Path | None, record_dir: Path) -> dict[str, bytes]:
    """What must be byte-identical between two runs of one seed (the record path normalized)."""
    out = {"stdout": stdout.replace(str(record_dir), "<record>").encode()}
    if folder is None:
        return out
    for path in sorted(folder.iterdir()):
        data = path.read_bytes()
        if path.name == recording.RUN_FILE:
            info = json.loads(data)
            for key in WALL_FIELDS:
                info.pop(key, None)
            data = json.dumps(info, sort_keys=True).encode()
        out[path.name] = data
    return out


def _run_once(command: Sequence[str], timeout: float) -> tuple[int | None, str, str, float]:
    start = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              env=dict(os.environ), stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:  # subprocess.run has killed the child
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        return None, out, err, time.monotonic() - start
    return done.returncode, done.stdout, done.stderr, time.monotonic() - start


def run_seed(seed: int, workdir: Path, *, timeout: float = 120.0, rerun: bool = False,
             command: Command = default_command) -> SeedResult:
    """Write seed's scenario under `workdir`, run it (twice if `rerun`) and check the run."""
    workdir.mkdir(parents=True, exist_ok=True)
    scenario = workdir / f"soak-{seed}.toml"
    scenario.write_text(scenario_toml(seed), encoding="utf-8")
    record_dir = workdir / "record"
    code, out, err, wall = _run_once(command(scenario, record_dir), timeout)
    result = SeedResult(seed=seed, exit_code=code, wall_seconds=wall, stdout=out, stderr=err)
    problems: dict[str, str] = {}
    if code is None:
        problems["hang"] = f"still running after {timeout:g} s wall; killed"
    elif code not in (EXIT_OK, EXIT_EXPECTATION, EXIT_FAULT):
        last = (err.strip().splitlines() or ["(no stderr)"])[-1]
        problems["exit"] = f"exit code {code}: {last}"
    result.violations = _violations(out)
    if result.violations or code == EXIT_EXPECTATION:
        problems["violation"] = f"{result.violations} invariant violations (exit {code})"
    result.crashes = actor_crashes(err)
    folder = _record_folder(record_dir)
    recorded_failures = 0
    if code is not None and code in (EXIT_OK, EXIT_EXPECTATION, EXIT_FAULT):
        bad, recorded_failures = check_recording(folder, seed)
        if bad:
            problems["recording"] = bad
    if result.crashes or code == EXIT_FAULT or recorded_failures:
        first = _crash_headline(result.crashes[0]) if result.crashes else ""
        problems["actor_failure"] = (f"{len(result.crashes)} 'actor crashed' on stderr, "
                                     f"{recorded_failures} recorded, exit {code}"
                                     + (f"; first: {first}" if first else ""))
    if rerun and code is not None:
        again = workdir / "rerun"
        code2, out2, _err2, wall2 = _run_once(command(scenario, again), timeout)
        result.reran = True
        result.wall_seconds += wall2
        if code2 != code:
            problems["nondeterministic"] = f"exit code {code} then {code2}"
        else:
            a = _fingerprint(out, folder, record_dir)
            b = _fingerprint(out2, _record_folder(again), again)
            differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
            if differ:
                problems["nondeterministic"] = "rerun differs in " + ", ".join(differ)
    result.problems = problems
    return result
