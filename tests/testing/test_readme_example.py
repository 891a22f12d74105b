"""The README's pytest-asyncio example, run as the separate project it describes: its three files exactly as
printed, in a fresh folder, under `-W error` (any warning fails it), on virtual time (seconds, not an hour)."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"<!-- user-project: (?P<name>[\w.]+) -->\n```\w*\n(?P<body>.*?)```", re.S)


def readme_project() -> dict[str, str]:
    files = {m["name"]: m["body"] for m in BLOCK.finditer((ROOT / "README.md").read_text(encoding="utf-8"))}
    assert set(files) == {"pytest.ini", "fewest_bundles.py", "test_fewest_bundles.py"}
    return files


def run_project(folder: Path, files: dict[str, str]) -> tuple[subprocess.CompletedProcess, float]:
    for name, body in files.items():
        (folder / name).write_text(body, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}      # this checkout's emulator, as if pip-installed
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-W", "error", "-p", "no:cacheprovider"],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    return proc, time.perf_counter() - started


def test_the_readme_example_passes_in_seconds_without_warnings(tmp_path):
    proc, wall = run_project(tmp_path, readme_project())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^1 passed in [\d.]+s$", proc.stdout, re.M), proc.stdout
    assert "warning" not in proc.stdout.lower()
    assert wall < 60                                     # two emulated hours


def test_the_readme_example_fails_with_a_report_when_the_strategy_is_broken(tmp_path):
    files = readme_project()
    files["fewest_bundles.py"] = files["fewest_bundles.py"].replace(
        "return min(sorted(candidates), key=bundles, default=None)", 'return "broker-99:8080"')
    proc, _ = run_project(tmp_path, files)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout
    assert "failed wait: all 64 bundles owned" in out and "emulated time: t=" in out
    assert "broker-99:8080" in out and re.search(r"media/streams/0x[0-9a-f]{8}_0x[0-9a-f]{8}", out)
    assert "seed: 4, scenario=heterogeneous-brokers, placement=fewest_bundles:FewestBundles" in out
    assert "reproduce: python -m pytest test_fewest_bundles.py::" in out
    assert "the run alone: python -m emulator run heterogeneous-brokers --seed 4" in out
    # the report's "run alone" command replays the broken run from the project's folder (shortened here)
    cli = re.search(r"the run alone: (.*)$", out, re.M)[1].split()
    assert cli[:3] == ["python", "-m", "emulator"]
    run = subprocess.run([sys.executable, *cli[1:], "--duration", "3m"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"bundles +0 owned; .*\(0 connected, 3200 failed\)", run.stdout), run.stdout
