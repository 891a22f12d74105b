"""[[expect]] in scenario files: checked at the end of `run`, one line each, exit 1 on a failure; a
windowed KPI measures only inside its window; the KPIs agree with the roll-up's definitions (the
plain-Python reference of tests/pipeline) over the whole run and over windows; run.json holds the
scenario's text, every config key and the results."""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys

import pytest

from emulator.model.config import ServiceConfig
from emulator.observe.expectations import evaluate
from emulator.observe.kpis import KPIS, Scope, compute, facts
from emulator.observe.timeline import Timeline
from emulator.runner import RunOptions, run
from emulator.workload import loader
from tests.pipeline.reference import reference

BASE = """
[scenario]
name = "expect"
description = "a broker killed at 3 minutes"
duration = "6m"
seed = 2

[cluster]
brokers = 3

[[namespaces]]
name = "acme/a"
bundles = 6

[[topics]]
namespace = "acme/a"
count = 30
rate = { rate = 50 }

[[events]]
at = "3m"
do = "remove_brokers"
brokers = ["broker-3"]
mode = "kill"
"""

WINDOWS = BASE + """
[[expect]]        # 0: the kill cut topics off: the whole run fails
kpi = "unavailable_topic_seconds"
max = 0

[[expect]]        # 1: ... but not before it
kpi = "unavailable_topic_seconds"
max = 0
to = "3m"

[[expect]]        # 2: the outage is in the three minutes after the kill
kpi = "unavailable_topic_seconds"
min = 1
after_event = 0
within = "3m"

[[expect]]        # 3: reconnects happened in the run...
kpi = "reconnects"
min = 1

[[expect]]        # 4: ... but none in the first three minutes
kpi = "reconnects"
min = 1
from = "0s"
to = "3m"
"""


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "emulator", *args], capture_output=True, text=True, timeout=300)


def _run(text: str, tmp_path, **kw):
    path = tmp_path / "expect.toml"
    path.write_text(text)
    return run(RunOptions(scenario=str(path), record_dir=str(tmp_path / "rec"), **kw),
               out=io.StringIO(), err=io.StringIO()), path


def test_a_failing_expectation_exits_1_naming_kpi_bound_and_value(tmp_path):
    path = tmp_path / "fail.toml"
    path.write_text(BASE + '\n[[expect]]\nkpi = "unavailable_topic_seconds"\nmax = 0\n')
    p = cli("run", str(path), "--quiet")
    assert p.returncode == 1, p.stderr
    [line] = [x.strip() for x in p.stdout.splitlines() if x.strip().startswith("expect[")]
    assert line.startswith("expect[0] FAILED: unavailable_topic_seconds = ")
    value = float(line.split(" = ")[1].split(" ")[0])
    assert value > 0 and line.endswith("(max 0; whole run)")
    assert "1 of 1 scenario expectation(s) failed" in p.stderr


def test_a_passing_expectation_exits_0(tmp_path):
    path = tmp_path / "pass.toml"
    path.write_text(BASE + '\n[[expect]]\nkpi = "unavailable_topic_seconds"\nmin = 1\nmax = 100000\n')
    p = cli("run", str(path), "--quiet")
    assert p.returncode == 0, p.stderr
    [line] = [x.strip() for x in p.stdout.splitlines() if x.strip().startswith("expect[")]
    assert line.startswith("expect[0] passed: unavailable_topic_seconds = ")
    assert "expectations       1 passed, 0 failed" in p.stdout


def test_windows_measure_only_inside_them(tmp_path):
    result, _ = _run(WINDOWS, tmp_path)
    r = result.expectations
    assert [x.passed for x in r] == [False, True, True, True, False]
    # the whole run's outage is all in the window after the kill, none before it
    assert r[0].value > 0 and r[1].value == 0.0 and r[2].value == pytest.approx(r[0].value)
    assert (r[2].start, r[2].end) == (180.0, 360.0) and r[2].window == "3m after events[0] (remove_brokers at 3m)"
    assert r[3].value >= 1 and r[4].value == 0 and r[4].window == "0s..3m"
    assert result.expectations_failed == 2


def test_recording_holds_the_scenario_text_every_config_key_and_the_results(tmp_path):
    result, path = _run(WINDOWS, tmp_path)
    info = json.loads((tmp_path / "rec").glob("*/run.json").__next__().read_text())
    assert info["scenario_text"] == path.read_text()
    assert set(info["config"]) == set(ServiceConfig().to_properties())
    assert [(x["kpi"], x["passed"]) for x in info["expectations"]] == [
        (x.kpi, x.passed) for x in result.expectations]
    # a recording is enough to check the expectations again, with the same values
    again = evaluate(loader.loads(info["scenario_text"]), Timeline.from_recording(result.record_path))
    assert again == result.expectations


def test_a_recorded_run_and_an_unrecorded_one_measure_the_same(tmp_path):
    """Recorded, the timeline takes the recorder's sample blocks (one collection of the metrics per
    sample); unrecorded, it samples on its own on the same instants: the same values either way."""
    recorded, _ = _run(WINDOWS, tmp_path)
    plain = run(RunOptions(scenario=str(tmp_path / "expect.toml")), out=io.StringIO(), err=io.StringIO())
    assert recorded.record_path is not None and plain.record_path is None
    assert plain.expectations == recorded.expectations


def test_kpis_over_any_window_agree_with_the_rollup_definitions(tmp_path):
    result, _ = _run(WINDOWS, tmp_path)
    tl = Timeline.from_recording(result.record_path)
    W = 90.0
    ref = reference(result.record_path, W, 10.0, 5.0)
    bounds = ref["bounds"]
    n = len(bounds) - 1
    scopes = [Scope(tl.t0, tl.span, True)] + [Scope(*bounds[k], k == n - 1) for k in range(n)]
    mine = compute(tl, scopes)
    checked = 0
    for key, values in zip([-1, *range(n)], mine):
        for name, expected in ref["scopes"][key].items():
            if name in ("ticks", "brokers"):
                continue
            assert name in KPIS
            got = values[name]
            assert (got is None) == (expected is None), (key, name, got, expected)
            if expected is not None:
                assert math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-9), (key, name, got, expected)
            checked += 1
    assert checked >= 30 * 5
    # the windows add up to the run for the counting KPIs
    for name in ("unloads", "bundle_moves", "lookups", "reconnects"):
        assert sum(v[name] for v in mine[1:]) == pytest.approx(mine[0][name])
    # what the scopes read, derived once and passed to several computations: the same values
    derived = facts(tl)
    assert compute(tl, scopes[:3], derived=derived) + compute(tl, scopes[3:], derived=derived) == mine
    with pytest.raises(ValueError, match="another timeline"):
        compute(Timeline.from_recording(result.record_path), scopes, derived=derived)


@pytest.mark.parametrize("expect, needle", [
    ('kpi = "unlods"\nmax = 3',
     "expect[0].kpi = unlods: unknown KPI (did you mean unloads?); known: balance_max_over_mean, "),
    ('kpi = "unloads"\nmin = 5\nmax = 3', "expect[0].min = 5: greater than max (3)"),
    ('kpi = "unloads"\nmax = 3\nafter_event = 1',
     "expect[0].after_event = 1: no such event; the scenario has 1 ([[events]] are counted from 0)"),
    ('kpi = "unloads"', "expect[0] = { kpi = unloads }: give min, max or both"),
    ('kpi = "unloads"\nmax = 3\nwithin = "1m"', "expect[0].within = 1m: only with after_event"),
    ('kpi = "unloads"\nmax = 3\nfrom = "10m"', "expect[0].from = 10m: past the scenario's duration"),
    ('kpi = "publish_p9999"\nmax = 3\nto = "2m"',
     "expect[0].to = 2m: publish_p9999 is measured over the whole run only"),
    ('kpi = "unloads"\nmax = 3\nafter_event = 0\nfrom = "1m"',
     "expect[0].after_event = 0: give after_event (+ within) or from / to, not both"),
])
def test_bad_expectations_are_one_line_exit_2(tmp_path, expect, needle):
    path = tmp_path / "bad.toml"
    path.write_text(BASE + "\n[[expect]]\n" + expect + "\n")
    p = cli("run", str(path), "--quiet")
    assert p.returncode == 2, (p.stdout, p.stderr)
    [line] = p.stderr.strip().splitlines()
    assert f"bad.toml: {needle}" in line and "Traceback" not in p.stderr
    if "unknown KPI" in needle:
        assert all(name in line for name in KPIS)


def test_a_run_cut_short_checks_only_the_windows_it_completed(tmp_path):
    result, _ = _run(WINDOWS, tmp_path, duration=150.0)
    r = result.expectations
    # whole run and windows ending after 2.5 min are skipped; none is a failure
    assert [x.skipped for x in r] == [True, True, True, True, True]
    assert all(x.passed for x in r) and result.expectations_failed == 0
    (tmp_path / "b").mkdir()
    result, _ = _run(WINDOWS, tmp_path / "b", duration=200.0)
    assert [x.skipped for x in result.expectations] == [True, False, True, True, False]
    assert [x.passed for x in result.expectations] == [True, True, True, True, False]   # 0..3m ran whole
    assert "expect[2] skipped: unavailable_topic_seconds (min 1; 3m after events[0] (remove_brokers at 3m)): " \
           "the run ended before the window did" in result.summary_text


def test_a_scopes_cut_of_sorted_times_is_exactly_the_times_it_holds():
    """The KPIs cut each sorted series by bisection instead of testing every time: the same times,
    at the edges (a time on `start`, on `end` with and without `last`, repeated times) included."""
    times = [0.0, 10.0, 10.0, 20.0, 30.0, 30.0, 40.0]
    for start in (-5.0, 0.0, 5.0, 10.0, 30.0, 40.0, 45.0):
        for end in (0.0, 10.0, 25.0, 30.0, 40.0, 50.0, 5.0):
            for last in (False, True):
                s = Scope(start, end, last)
                assert times[s.cut(times)] == [t for t in times if s.holds(t)], (start, end, last)
