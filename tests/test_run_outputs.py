"""What `run` gives a program and an operator: --summary-json (and run.json's summary), the decision log
on stderr at --log-level info, progress on stderr, a scenario's stated start."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time

import pytest

from emulator.observe.progress import ProgressBar, format_eta
from emulator.runner import RunError, RunOptions, run
from emulator.workload import loader
from emulator.workload.schema import start_epoch_ms


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "emulator", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_summary_json_has_every_summary_field_and_kpi_and_run_json_holds_the_same(tmp_path):
    out = tmp_path / "summary.json"
    result = run(RunOptions(scenario="broker-crash", duration=600.0, seed=3, record_dir=str(tmp_path / "rec"),
                            summary_json=str(out)), out=io.StringIO(), err=io.StringIO())
    doc = json.loads(out.read_text())
    from emulator.model.kpi_registry import KPIS
    from emulator.observe.summary import RunSummary

    assert {f for f in RunSummary.__struct_fields__} <= set(doc)
    assert set(KPIS) <= set(doc["kpis"])
    assert doc["unloads"] == result.summary.unloads and doc["seed"] == 3
    assert doc["kpis"]["lookups"] == result.summary.lookups
    info = json.loads(next((tmp_path / "rec").glob("*/run.json")).read_text())
    assert info["summary"] == doc
    assert info["start"] == "2024-01-01T00:00:00.000Z" and info["start_epoch_ms"] == 1_704_067_200_000


def test_bad_record_options_are_one_line(tmp_path):
    with pytest.raises(RunError, match="--record-decisions = 'some'"):
        run(RunOptions(scenario="broker-crash", record_decisions="some"))
    with pytest.raises(RunError, match="--summary-json"):
        run(RunOptions(scenario="broker-crash", summary_json=str(tmp_path / "no" / "such" / "s.json")))


def test_log_level_info_writes_the_decision_log_to_stderr():
    got = cli("run", "broker-crash", "--duration", "3m", "--seed", "3", "--quiet", "--log-level", "info")
    assert got.returncode == 0, got.stderr[-2000:]
    lines = [line for line in got.stderr.splitlines() if "[info" in line and " assignment " in line]
    assert lines, got.stderr[-2000:]
    assert "bundle=" in lines[0] and "broker=" in lines[0] and "trace=" in lines[0]
    quiet = cli("run", "broker-crash", "--duration", "3m", "--seed", "3", "--quiet")
    assert " assignment " not in quiet.stderr
    assert quiet.stdout == got.stdout      # logging decides nothing


def test_a_scenario_states_the_calendar_time_of_its_start(tmp_path):
    from emulator.workload import library

    text = library.source("broker-crash")
    stated = text.replace('[scenario]\n', '[scenario]\nstart = 2024-05-01T09:00:00Z\n', 1)
    assert stated != text
    assert start_epoch_ms(loader.loads(stated)) == 1_714_554_000_000
    assert start_epoch_ms(loader.loads(text)) == 1_704_067_200_000
    naive = text.replace('[scenario]\n', '[scenario]\nstart = 2024-05-01T09:00:00\n', 1)
    assert start_epoch_ms(loader.loads(naive)) == 1_714_554_000_000      # no offset: UTC
    path = tmp_path / "s.toml"
    path.write_text(stated)
    run(RunOptions(scenario=str(path), duration=60.0, record_dir=str(tmp_path / "rec")),
        out=io.StringIO(), err=io.StringIO())
    info = json.loads(next((tmp_path / "rec").glob("*/run.json")).read_text())
    assert info["start"] == "2024-05-01T09:00:00.000Z"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_a_plain_line_every_n_seconds_off_a_terminal_and_a_bar_on_one():
    done = [0.0]
    plain = io.StringIO()
    with ProgressBar("run x", poll=lambda: (done[0], 100.0), unit="emulated s", stream=plain,
                     every=0.2, refresh=0.02) as bar:
        for _ in range(10):
            done[0] += 5.0
            time.sleep(0.05)
    assert not bar.terminal and bar.lines >= 1
    first = plain.getvalue().splitlines()[0]
    assert first.startswith("run x: ") and "/100 emulated s (" in first and "emulated s/s, ETA " in first
    tty = _Tty()
    with ProgressBar("run y", poll=lambda: (50.0, 100.0), unit="emulated s", stream=tty, refresh=0.02) as bar:
        time.sleep(0.1)
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", tty.getvalue())
    assert bar.terminal and "run y" in shown and "50/100 emulated" in shown and "ETA" in shown
    assert format_eta(3725) == "1:02:05" and format_eta(None) == "-:--:--"
