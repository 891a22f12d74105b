"""`python -m bench.clients --quick` (one scenario, both kinds of client) end to end, its bad input,
and the bookkeeping its figures rest on. No assertion is about the emulator's speed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.clients import FIGURES, Outcome, _quantile, _Tap, rows_of, side_by_side

ROOT = Path(__file__).resolve().parents[2]


def test_the_tap_times_a_handle_from_its_close_to_its_next_attach():
    tap = _Tap()
    key = ("persistent://public/bench/t-0", "producer")
    tap.opened(key, "broker-1:8080", 1.0)       # the first attach: no reconnect
    tap.closed(key, 2.0)
    tap.closed(key, 2.5)                          # the connection drops as well: still down since 2.0
    tap.opened(key, "broker-2:8080", 2.25 + 0.5)
    assert tap.samples == [pytest.approx(0.75)] and tap.attached == {key: "broker-2:8080"} and not tap.down


def test_rows_put_the_emulated_figure_against_the_real_baseline():
    emu = Outcome(reconnects=[0.1, 0.1, 0.2, 0.1], lookups=6, redirects=2,
                  publish={"p50": 0.003, "p99": 0.09, "p999": 0.1, "messages": 10.0, "failed": 1.0})
    real = Outcome(reconnects=[0.1, 0.12], lookups=2, redirects=1,
                   publish={"p50": 0.001, "p99": 0.08, "p999": 0.08, "messages": 10.0, "failed": 0.0})
    rows = {r.name: r for r in rows_of({"unload": {"emulated": emu, "real": real}})}
    assert len(rows) == len(FIGURES)
    r = rows["clients.unload.lookups_per_reconnect"]
    assert (r.figure, r.baseline, r.ratio) == (1.5, 1.0, 1.5)
    assert rows["clients.unload.reconnect_p50"].figure == _quantile([0.1, 0.1, 0.2, 0.1], 0.5) == 0.1
    assert rows["clients.unload.failed_sends"].ratio is None        # no ratio against a real 0
    assert rows["clients.unload.reconnects"].details["real"]["reconnects_s"] == [0.1, 0.12]
    assert "| unload   | reconnect_p50 " in side_by_side({"unload": {"emulated": emu, "real": real}})


def test_a_bad_scenario_is_one_line_and_exit_2():
    proc = subprocess.run([sys.executable, "-m", "bench.clients", "--scenarios", "nosuch"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "'nosuch'" in proc.stderr and "unload" in proc.stderr and "Traceback" not in proc.stderr


def test_quick_unload_storm_with_both_clients(tmp_path):
    pytest.importorskip("pulsar")
    out = tmp_path / "clients.json"
    proc = subprocess.run([sys.executable, "-m", "bench.clients", "--quick", "--scenarios", "unload",
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    head = proc.stdout.splitlines()[0].split("|")
    assert [c.strip() for c in head[1:-1]] == ["scenario", "figure", "emulated", "emulated_cpp", "real"]
    doc = json.loads(out.read_text())
    rows = {r["name"]: r for r in doc["rows"]}
    topics = doc["size"]["topics"]
    n = rows["clients.unload.reconnects"]
    # every producer and consumer of an unloaded bundle came back, for both kinds of client
    assert 0 < n["figure"] <= 2 * topics and 0 < n["baseline"] <= 2 * topics
    p50 = rows["clients.unload.reconnect_p50"]
    # both back off 100 ms (initialBackoffInterval) before the lookup: never faster, and not seconds
    assert 0.09 <= p50["figure"] < 1.0 and 0.09 <= p50["baseline"] < 1.0
    assert rows["clients.unload.lookups_per_reconnect"]["baseline"] >= 1.0
    failed = rows["clients.unload.failed_sends"]
    assert failed["figure"] == 0 == failed["baseline"] == failed["details"]["emulated_cpp"]
