"""`python -m bench --quick` end to end (the CI smoke test), and the harness's own arithmetic.

No assertion here is about time: quick sizes say nothing about the targets, and CI machines vary.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from bench.harness import Options, Row, Target, judge, log_log_slope, render_table

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ("mailbox", "lookup_storm", "standard_day", "restart", "scaling", "decision_cost",
              "rollup")


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path_factory.mktemp("bench") / "quick.json"
    proc = subprocess.run([sys.executable, "-m", "bench", "--quick", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    doc = json.loads(out.read_text()) if out.exists() else {}
    return proc, doc


def test_quick_suite_exits_0_and_prints_one_table(quick_run):
    proc, _ = quick_run
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["name", "figure", "unit", "baseline", "ratio", "target", "pass"]
    names = {line.split()[0] for line in lines[2:] if line and not line.startswith(" ")}
    for bench in BENCHMARKS:
        assert any(n == bench or n.startswith(bench.split("_")[0] + ".") or n.startswith(bench + ".")
                   for n in names), (bench, sorted(names))


def test_quick_suite_writes_the_same_rows_as_json_without_a_verdict_on_time(quick_run):
    proc, doc = quick_run
    assert doc, proc.stderr[-2000:]
    assert doc["quick"] is True and doc["passed"] is True
    assert doc["command"].startswith("python -m bench") and "--quick" in doc["command"]
    rows = doc["rows"]
    printed = proc.stdout
    for row in rows:
        assert row["name"] in printed
        assert row["passed"] is None, row  # quick mode never judges time
        assert not row["note"].startswith("crashed"), row
    by_name = {r["name"]: r for r in rows}
    # the ratio rows carry an in-run baseline and their ratio is figure / baseline
    for name in ("mailbox", "lookup_storm"):
        r = by_name[name]
        assert r["baseline"] > 0 and r["figure"] > 0
        assert math.isclose(r["ratio"], r["figure"] / r["baseline"], rel_tol=1e-9)
        assert len(r["samples"]) == r["reps"] >= 1
    assert by_name["restart.all_reconnected"]["figure"] is not None  # every producer came back
    assert by_name["rollup"]["figure"] is None and "quick" in by_name["rollup"]["note"]


def test_an_unknown_benchmark_name_is_refused_with_the_known_ones():
    proc = subprocess.run([sys.executable, "-m", "bench", "--only", "nosuch"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "'nosuch'" in proc.stderr and "mailbox" in proc.stderr


def test_log_log_slope_reads_growth_orders():
    xs = [10.0, 100.0, 1000.0]
    assert log_log_slope(xs, [3.0 * x for x in xs]) == pytest.approx(1.0)
    assert log_log_slope(xs, [x * x for x in xs]) == pytest.approx(2.0)
    assert log_log_slope(xs, [5.0, 5.0, 5.0]) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="two equally long series"):
        log_log_slope([1.0], [1.0])


def test_targets_judge_figure_or_ratio_and_quick_mode_never_judges():
    rows = [Row(name="a", figure=30.0, unit="s", target=Target("figure", "<=", 20.0)),
            Row(name="b", figure=1.0, unit="x", ratio=0.6, target=Target("ratio", ">=", 0.5)),
            Row(name="c", figure=None, unit="x", target=Target("figure", "<=", 1.0)),
            Row(name="d", figure=1.0, unit="x")]
    assert [r.passed for r in judge(rows, quick=False)] == [False, True, None, None]
    assert [r.passed for r in judge(rows, quick=True)] == [None, None, None, None]
    table = render_table(judge(rows, quick=False))
    assert "FAIL" in table and "PASS" in table and "ratio >= 0.5" in table
    with pytest.raises(ValueError, match="Target.op"):
        Target("figure", "<", 1.0)


def test_options_repetitions_follow_quick_and_override():
    assert Options().repetitions(5, 3) == 5
    assert Options(quick=True).repetitions(5, 3) == 3
    assert Options(quick=True, reps=7).repetitions(5, 3) == 7


def test_the_json_goes_under_bench_results_which_git_ignores():
    from bench.__main__ import _parser

    assert Path(_parser().parse_args([]).out) == ROOT / "bench" / "results" / "bench-results.json"
    assert "bench/results/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_out_creates_its_folder(tmp_path):
    out = tmp_path / "new" / "folder" / "mailbox.json"
    proc = subprocess.run([sys.executable, "-m", "bench", "--quick", "--in-process", "--only", "mailbox",
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [r["name"] for r in json.loads(out.read_text())["rows"]] == ["mailbox"]
