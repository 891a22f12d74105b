"""Sweeps: one Spark task per (configuration, seed), then the roll-up and the comparison table."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pytest

from emulator.model.errors import UsageError
from emulator.pipeline.cli import add_report_parser, add_rollup_parser, add_sweep_parser, parse_grid, \
    parse_seeds
from emulator.pipeline.rollup import KPI_COLUMNS
from emulator.model.stats import student_t_ppf
from emulator.pipeline.sweep import expand_grid, resolve_runner, sweep
from emulator.pipeline.synthetic import run_recorded
from tests.pipeline.options import SWEEP_OPTIONS
from tests.pipeline.reference import reference


def test_two_configurations_two_seeds_make_four_recordings_and_two_comparison_rows(swept):
    assert not swept.failures
    assert len(swept.run_dirs) == 4
    runs_dir = Path(swept.out_dir) / "runs"
    # each run records into runs/<key>/, and its result row is in results/<key>.json
    assert sorted(Path(d).parent.parent for d in swept.run_dirs) == [runs_dir] * 4
    assert sorted(p.stem for p in (Path(swept.out_dir) / "results").glob("*.json")) == \
        sorted(Path(d).parent.name for d in swept.run_dirs)
    assert all((Path(d) / "samples.jsonl").stat().st_size > 0 for d in swept.run_dirs)
    # every (configuration, seed) ran as its own Spark task
    assert sorted(int((Path(d) / "task.txt").read_text()) for d in swept.run_dirs) == [0, 1, 2, 3]
    rows = swept.rollup.comparison
    assert [r["config"] for r in rows] == ["placement=AvgShedder", "placement=LeastLongTermMessageRate"]
    assert all(r["runs"] == 2 and r["seeds"] == "1,2" for r in rows)


def test_comparison_is_mean_and_student_t_interval_over_seeds(swept):
    runs = swept.rollup.runs
    for row in swept.rollup.comparison:
        mine = [r for r in runs if r["config"] == row["config"]]
        for kpi in ("balance_range", "unloads_per_hour", "unavailable_topic_seconds"):
            a, b = (float(r[kpi]) for r in mine)
            assert row[f"{kpi}_mean"] == pytest.approx((a + b) / 2, rel=1e-12)
            sd = abs(a - b) / math.sqrt(2)
            assert row[f"{kpi}_ci95"] == pytest.approx(student_t_ppf(0.975, 1) * sd / math.sqrt(2), rel=1e-9)
    out = Path(swept.rollup.out_dir)
    assert list((out / "csv" / "comparison").glob("part-*.csv"))
    assert list((out / "parquet" / "comparison").glob("*.parquet"))


def test_a_failed_task_is_reported_and_a_real_recording_rolled_up(spark, tmp_path, capsys):
    """Seed 1 runs the real emulator (emulator.runner) inside the executor; seed 2 fails."""
    def flaky(scenario, overrides, seed, out_dir, duration=None):  # pickled by value to the executors
        if seed == 2:
            raise RuntimeError("emulator crashed at t=42")
        from emulator.runner import run_recorded as real

        return real(scenario, overrides, seed, out_dir, duration)

    result = sweep("default", {"shedder": ["ThresholdShedder"]}, [1, 2], tmp_path, "local[2]", 600.0,
                   runner=flaky, spark=spark, options=SWEEP_OPTIONS)
    assert [(f.config, f.seed) for f in result.failures] == [("shedder=ThresholdShedder", 2)]
    assert "RuntimeError: emulator crashed at t=42" in result.failures[0].error
    assert "FAILED shedder=ThresholdShedder seed 2" in capsys.readouterr().out
    (row,) = result.rollup.runs
    assert row["config"] == "shedder=ThresholdShedder" and row["seed"] == 1
    assert row["ticks"] > 50 and row["brokers"] > 1 and row["lookups"] > 0
    ref = reference(result.run_dirs[0], SWEEP_OPTIONS.window, SWEEP_OPTIONS.balance_bound,
                    SWEEP_OPTIONS.balance_minutes)["scopes"][-1]
    for k in KPI_COLUMNS:
        a, b = row[k], ref[k]
        assert (a is None and b is None) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9), (k, a, b)


def test_grid_and_seed_parsing():
    assert parse_seeds("1-3,7,2") == [1, 2, 3, 7]
    assert parse_seeds("5") == [5]
    grid = parse_grid(["placement=LeastLongTermMessageRate,AvgShedder", "shedder=ThresholdShedder",
                       "loadBalancerBrokerOverloadedThresholdPercentage=70,85"])
    assert list(grid) == ["placement", "shedder", "loadBalancerBrokerOverloadedThresholdPercentage"]
    points = expand_grid(grid)
    assert len(points) == 4 and points[0] == {"placement": "LeastLongTermMessageRate",
                                              "shedder": "ThresholdShedder",
                                              "loadBalancerBrokerOverloadedThresholdPercentage": "70"}
    assert resolve_runner("emulator.pipeline.synthetic:run_recorded") is run_recorded


@pytest.mark.parametrize("items, message", [
    (["noSuchKey=1"], "noSuchKey"),
    (["placement=Nope"], "placement = 'Nope'"),
    (["shedder=Nope"], "shedder = 'Nope'"),
    (["loadBalancerBrokerOverloadedThresholdPercentage=abc"], "'abc'"),
    (["placement"], "expected key=v1,v2"),
    (["placement=A,", ], "empty value"),
])
def test_bad_grid_names_flag_and_value(items, message):
    with pytest.raises(UsageError, match="--grid") as e:
        parse_grid(items)
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("text", ["", "a-b", "5-1", "1,,2"])
def test_bad_seeds_name_flag_and_value(text):
    with pytest.raises(UsageError, match=f"--seeds = {text!r}"):
        parse_seeds(text)


def test_bad_sweep_arguments(tmp_path):
    with pytest.raises(ValueError, match="grid\\['placement'\\] = 'AvgShedder'"):
        sweep("s", {"placement": "AvgShedder"}, [1], tmp_path)
    with pytest.raises(ValueError, match="seeds = \\[\\]"):
        sweep("s", {"placement": ["AvgShedder"]}, [], tmp_path)
    with pytest.raises(ValueError, match="runner = 'nocolon'"):
        resolve_runner("nocolon")


def test_sub_parsers_mount_with_handlers():
    parser = argparse.ArgumentParser(prog="pulsar-lb-emulator")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (add_rollup_parser, add_sweep_parser, add_report_parser):
        add(sub)
    a = parser.parse_args(["sweep", "heterogeneous-brokers", "--grid", "placement=A,B", "--grid", "shedder=C",
                           "--seeds", "1-5", "--master", "local[2]"])
    assert a.grid == ["placement=A,B", "shedder=C"] and a.seeds == "1-5" and a.master == "local[2]"
    assert a.func.__name__ == "cmd_sweep"
    a = parser.parse_args(["rollup", "r1", "r2", "--window", "5m"])
    assert a.run_dirs == ["r1", "r2"] and a.master == "local[*]" and a.func.__name__ == "cmd_rollup"
    a = parser.parse_args(["report", "out/rollup"])
    assert a.rollup_dir == "out/rollup" and a.out is None and a.func.__name__ == "cmd_report"
    a = parser.parse_args(["sweep", "default", "--seeds", "1-100", "--run-timeout", "10m", "--python", "/x/py"])
    assert a.grid == [] and a.run_timeout == "10m" and a.python == "/x/py"   # --seeds alone is a study
