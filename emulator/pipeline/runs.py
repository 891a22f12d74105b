"""One run of a sweep on a Spark worker, and its result row: written when the run ends, read to resume.

    key = run_key(scenario_id, overrides, seed, duration)
    row = msgspec.json.decode(execute(task), type=RunRow)        # worker side, via worker.run_task
    rows = read_rows(out / RESULTS_DIR)                           # driver side: what is already done

Each run records into `<out>/runs/<key>/` (emptied first: a run cut by a lost worker leaves no half
folder behind) and writes `<out>/results/<key>.json` as it ends, atomically (a temporary file, then a
rename), so a sweep killed at any point keeps every finished run, and the same command again skips the
runs whose row is final. The key hashes what decides a run's outcome on the virtual clock: the
scenario (its name, or a TOML file's bytes), the overrides, the seed and the duration.

The run itself goes in a forked child process: a per-run wall-time limit (`timeout`) can kill it, a
crash or a memory blow-up takes only that run, and a long-lived Python worker gets its memory back
after each run. Statuses: `ok` (exit 0), `expectations_failed` (exit 1: an [[expect]] or invariant
failed), `fault` (exit 3: an actor failed), `timeout`, `error` (the runner raised or the child died).
The first three are final, decided by (configuration, seed); `timeout` and `error` may be the
machine's doing and are run again on resume. Runs of status `ok` and `expectations_failed` have whole
recordings and are rolled up.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import multiprocessing
import os
import shutil
import signal
import socket
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Union

import msgspec

__all__ = ["FINAL", "RESULTS_DIR", "ROLLED_UP", "RUNS_DIR", "RunRow", "execute", "read_rows", "resolve_runner",
           "run_key"]

RESULTS_DIR = "results"
RUNS_DIR = "runs"
FINAL = ("ok", "expectations_failed", "fault")
ROLLED_UP = ("ok", "expectations_failed")
_STATUS_OF_EXIT = {0: "ok", 1: "expectations_failed", 3: "fault"}

Runner = Union[str, Callable[..., Any]]


class RunRow(msgspec.Struct, kw_only=True):
    """One run's result: what ran, how it ended, where its recording is, and which worker ran it."""

    key: str
    index: int
    config: str
    seed: int
    scenario: str
    overrides: dict[str, str]
    duration: float | None
    status: str
    exit_code: int | None
    reason: str | None
    run_dir: str | None
    wall_seconds: float
    host: str
    python: str
    code: str


def run_key(scenario_id: str, overrides: dict[str, str], seed: int, duration: float | None) -> str:
    """`s<seed>-<16 hex>`: the same run (scenario, overrides, seed, duration) always gets the same key."""
    blob = json.dumps([scenario_id, sorted(overrides.items()), seed, duration], separators=(",", ":"))
    return f"s{seed}-{hashlib.sha256(blob.encode()).hexdigest()[:16]}"


def resolve_runner(runner: Runner) -> Callable[..., Any]:
    """A callable, or 'package.module:function' imported where it is called (in the worker)."""
    if callable(runner):
        return runner
    module, sep, name = str(runner).partition(":")
    if not sep or not module or not name:
        raise ValueError(f"runner = {runner!r}: expected a callable or 'package.module:function'")
    return getattr(importlib.import_module(module), name)


def read_rows(results_dir: str | Path) -> dict[str, RunRow]:
    """The rows already written under `results_dir`, by key; unreadable files are skipped (rerun)."""
    rows: dict[str, RunRow] = {}
    folder = Path(results_dir)
    if not folder.is_dir():
        return rows
    for path in sorted(folder.glob("*.json")):
        try:
            row = msgspec.json.decode(path.read_bytes(), type=RunRow)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            continue
        rows[row.key] = row
    return rows


def _child(runner: Callable[..., Any], args: tuple[Any, ...], send: Any) -> None:
    try:
        out = runner(*args)
        send.send(("done", tuple(out) if isinstance(out, tuple) else (str(out), 0, None)))
    except BaseException as e:   # noqa: BLE001 - every failure becomes the run's row
        send.send(("raised", traceback.format_exception_only(type(e), e)[-1].strip()))
    finally:
        send.close()


def _died(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


def _attempt(runner: Runner, args: tuple[Any, ...], timeout: float | None
             ) -> tuple[str, int | None, str | None, str | None]:
    """(status, exit code, reason, run folder) of one run in a forked child.

    The runner is imported here, in the worker, so that its modules are loaded once per Python worker
    and every child starts with them (a run of a small scenario is mostly import time otherwise)."""
    try:
        function = resolve_runner(runner)
    except Exception as e:   # noqa: BLE001 - a runner that does not import is every run's error
        return "error", None, traceback.format_exception_only(type(e), e)[-1].strip(), None
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(function, args, send), daemon=True)
    proc.start()
    send.close()
    try:
        if not recv.poll(timeout):
            proc.kill()
            proc.join()
            return "timeout", None, f"no result after {timeout:g} s of wall time; the run was killed", None
        try:
            kind, payload = recv.recv()
        except EOFError:
            proc.join()
            return "error", None, f"the run's process died ({_died(proc.exitcode)})", None
    finally:
        recv.close()
    proc.join()
    if kind == "raised":
        return "error", None, str(payload), None
    folder, code, reason = payload
    status = _STATUS_OF_EXIT.get(int(code), "error")
    return status, int(code), reason, str(folder)


def _write_row(path: Path, row: RunRow) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(msgspec.json.encode(row))
    os.replace(tmp, path)


def execute(task: dict[str, Any]) -> bytes:
    """Worker side: run `task` (a plain dict, see `sweep.py`), write its row, return the row as JSON."""
    out = Path(task["out"])
    run_folder = out / RUNS_DIR / task["key"]
    shutil.rmtree(run_folder, ignore_errors=True)
    run_folder.mkdir(parents=True, exist_ok=True)
    args = (task["scenario"], dict(task["overrides"]), task["seed"], str(run_folder), task["duration"])
    started = time.monotonic()
    status, code, reason, folder = _attempt(task["runner"], args, task.get("timeout"))
    import emulator

    row = RunRow(key=task["key"], index=task["index"], config=task["config"], seed=task["seed"],
                 scenario=task["scenario"], overrides=dict(task["overrides"]), duration=task["duration"],
                 status=status, exit_code=code, reason=reason, run_dir=folder,
                 wall_seconds=round(time.monotonic() - started, 3), host=socket.gethostname(),
                 python=sys.executable, code=str(Path(next(iter(emulator.__path__))).parent))
    results = out / RESULTS_DIR
    results.mkdir(parents=True, exist_ok=True)
    _write_row(results / f"{task['key']}.json", row)
    return msgspec.json.encode(row)
