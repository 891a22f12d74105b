"""Every way a run ends leaves a clean exit code and clean files (issue 32, item 4).

Each test runs `python -m emulator run default --duration 2h --record DIR` as a subprocess and ends it
the way a user or a process manager would: Ctrl-C twice, SIGTERM before the cluster is ready, SIGTERM
or SIGINT once, SIGKILL. Then: the exit code (130 / 143), what was printed, `gzip -t` on every
compressed table, and the readers (the Python timeline; the Spark roll-up in the slow test) on what
was left.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emulator.observe import recording_files as files
from emulator.observe.timeline import Timeline
from emulator.pipeline.recording import cut_files, load_runs, warn_cut

ROOT = Path(__file__).resolve().parents[1]
TABLES = ("samples.jsonl.gz", "decisions.jsonl.gz", "events.jsonl.gz", "publish.jsonl.gz")


def start(record: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "emulator", "run", "default", "--duration", "2h", "--record", str(record),
         "--quiet", *extra],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)})   # this checkout's emulator


def wait_ready(proc: subprocess.Popen[str]) -> Path:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("READY"), f"the emulator did not start: {line!r}"
    return Path(line.split("record=")[1].strip())


def finish(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err


def gzip_t(path: Path) -> bool:
    """`gzip -t` if the tool is there, else the same test in Python (every member whole)."""
    if shutil.which("gzip"):
        return subprocess.run(["gzip", "-t", str(path)], capture_output=True).returncode == 0
    try:
        with gzip.open(path, "rb") as f:
            while f.read(1 << 20):
                pass
    except (EOFError, OSError):
        return False
    return True


def assert_clean_tables(folder: Path) -> None:
    names = sorted(p.name for p in folder.iterdir())
    assert set(TABLES) <= set(names), names
    assert "publish.jsonl" not in names      # publish is a gzip table like the others
    for name in TABLES:
        path = folder / name
        assert path.stat().st_size > 0, f"{name}: 0 bytes"
        assert gzip_t(path), f"{name}: gzip -t rejects it"


# ---------------------------------------------------------------------- Ctrl-C twice, SIGTERM


def test_a_second_ctrl_c_ends_at_once_with_130_and_the_summary_so_far(tmp_path):
    proc = start(tmp_path)
    folder = wait_ready(proc)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.05)                  # the first is being handled: the run is writing its ending
    proc.send_signal(signal.SIGINT)
    code, out, err = finish(proc, timeout=10)
    assert code == 130, err
    assert "summary of default (seed 1) at " in out and "brokers " in out
    assert "second signal (SIGINT after SIGINT): ended at once" in err
    assert "Traceback" not in err
    assert_clean_tables(folder)
    assert json.loads((folder / "run.json").read_text())["complete"] is False


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_before_the_cluster_is_ready_cancels_the_start(tmp_path, sig, code):
    # at 1x wall clock the start takes ~17 s: the signal lands well inside it, after the imports
    proc = start(tmp_path, "--clock", "wall", "--speed", "1")
    time.sleep(2.0)
    assert proc.poll() is None
    t = time.monotonic()
    proc.send_signal(sig)
    rc, out, err = finish(proc, timeout=30)
    assert rc == code, err
    assert time.monotonic() - t < 10, "the start was not cancelled"
    assert "READY" not in out
    assert f"{sig.name} before the cluster was ready: no summary" in err
    assert "Traceback" not in err


def _catches_sigterm(pid: int) -> bool:
    """The process has a handler for SIGTERM (/proc's SigCgt mask, bit 15)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next((line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), "0")
    return bool(int(mask, 16) & (1 << (signal.SIGTERM - 1)))


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_sigterm_during_the_imports_ends_with_143(tmp_path):
    """The handler is the command's first line (the package's `__init__` imports nothing heavy), so a
    SIGTERM the moment it is in place, while the CLI and numpy are still being imported, ends with 143."""
    cheap = subprocess.run([sys.executable, "-c", "import sys, emulator; print(sorted(m for m in sys.modules "
                            "if m.startswith(('numpy', 'emulator.'))))"],
                           cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert cheap.stdout.strip() == "[]", cheap.stdout + cheap.stderr
    proc = start(tmp_path)
    deadline = time.monotonic() + 10
    while not _catches_sigterm(proc.pid) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.0005)
    proc.send_signal(signal.SIGTERM)
    code, out, err = finish(proc, timeout=30)
    assert code == 143, err
    assert "Traceback" not in err and "READY" not in out


def test_sigterm_after_ready_ends_with_143_the_summary_and_whole_tables(tmp_path):
    proc = start(tmp_path)
    folder = wait_ready(proc)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    code, out, err = finish(proc)
    assert code == 143, err
    assert "summary of default (seed 1) at " in out and "Traceback" not in err
    assert_clean_tables(folder)
    lines = list(files.iter_lines(folder, files.PUBLISH))
    assert json.loads(lines[0])["topic"] == "" and len(lines) > 1   # the table, written at the close


# ---------------------------------------------------------------------- SIGKILL and cut members


def killed_recording(tmp_path: Path) -> Path:
    proc = start(tmp_path)
    folder = wait_ready(proc)
    samples = folder / "samples.jsonl.gz"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and samples.stat().st_size < 20_000:
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be killed"
    proc.kill()
    finish(proc)
    return folder


def test_sigkill_leaves_valid_gzip_tables_the_python_reader_reads(tmp_path):
    folder = killed_recording(tmp_path)
    assert_clean_tables(folder)     # publish.jsonl.gz too: one empty member since the start
    assert list(files.iter_lines(folder, files.PUBLISH)) == []
    info = json.loads((folder / "run.json").read_text())
    assert info["complete"] is False and info["emulated_end"] is None
    tl = Timeline.from_recording(folder)
    assert tl.end > 0 and tl.publish is None


def append_cut_member(path: Path, n_lines: int = 2000) -> int:
    """Half of one more gzip member at the end of `path`: a kill in the middle of a flush."""
    line = b'{"t":1e9,"name":"cut_short","labels":{},"value":1.0}\n'
    member = files.compress(line * n_lines)
    with open(path, "ab") as f:
        f.write(member[: len(member) // 2])
    return n_lines


def test_a_member_cut_by_a_kill_is_read_up_to_the_cut_and_warned_of_once(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"scenario": "default", "complete": False}))
    whole = b"".join(b'{"t":%d,"name":"x","labels":{},"value":1.0}\n' % t for t in range(100))
    (folder / "samples.jsonl.gz").write_bytes(files.compress(b"") + files.compress(whole))
    (folder / "events.jsonl.gz").write_bytes(b"")              # as recorders before issue 32 left it
    assert not files.is_cut(folder / "samples.jsonl.gz")
    append_cut_member(folder / "samples.jsonl.gz")
    assert files.is_cut(folder / "samples.jsonl.gz")
    lines = list(files.iter_lines(folder, files.SAMPLES))
    assert lines[:100] == whole.decode().splitlines(keepends=True)   # every whole member's line
    runs = load_runs([folder])
    assert [p.name for p in cut_files(runs)] == ["samples.jsonl.gz", "events.jsonl.gz"]
    err = io.StringIO()
    warn_cut(runs, err)
    assert err.getvalue().count("\n") == 1 and "run/samples.jsonl.gz, run/events.jsonl.gz" in err.getvalue()


@pytest.mark.slow
def test_the_rollup_reads_a_killed_recording_up_to_the_cut_with_one_warning(tmp_path):
    folder = killed_recording(tmp_path / "runs")
    append_cut_member(folder / "samples.jsonl.gz")     # the kill's cut, made certain
    out = tmp_path / "rollup"
    proc = subprocess.run([sys.executable, "-m", "emulator", "rollup", str(folder), "--out", str(out), "--quiet"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    warnings = [x for x in proc.stderr.splitlines() if "cut short" in x]
    assert len(warnings) == 1 and "samples.jsonl.gz" in warnings[0]
    assert "Traceback" not in proc.stderr and "Exception" not in proc.stderr, proc.stderr[-3000:]
    runs = (out / "csv" / "runs")
    [csv] = list(runs.glob("*.csv"))
    assert folder.name in csv.read_text()
