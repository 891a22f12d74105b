"""The `large` bench group's rows from its children's figures (bench/large.py), without running them:
targets, the ratio and slope arithmetic, and how a child that failed shows. (`python -m bench --only large
--quick` runs the real children: ~2.5 min of CPU, by hand.)"""

from __future__ import annotations

import math

from bench.harness import Options, judge
from bench.large import ChildRun, rows_of, run_bench, sizes


def child(scale: float, cpu_s: float, rss_kib_per_topic: float, *, exit_code: int = 0,
          load_manager: str = "ModularLoadManagerImpl") -> ChildRun:
    topics = round(1_000_000 * scale)
    return ChildRun(scale=scale, load_manager=load_manager, topics=topics, exit_code=exit_code, cpu_s=cpu_s,
                    user_s=cpu_s, sys_s=0.0, peak_rss_bytes=round(rss_kib_per_topic * 1024 * topics),
                    wall_s=cpu_s, emulated_s=None if exit_code not in (0, 1) else 3600.0,
                    stderr_tail="boom" if exit_code else "")


def test_sizes_are_three_and_the_largest_is_ten_times_the_smallest():
    for quick in (False, True):
        small, _, large = sizes(quick)
        assert math.isclose(large / small, 10.0)
    assert sizes(False) == (0.1, 0.3, 1.0) and sizes(True) == (0.01, 0.03, 0.1)


def test_rows_judge_rss_per_topic_the_cpu_ratio_and_the_slope():
    modular = [child(0.1, 50.0, 6.0), child(0.3, 150.0, 6.5), child(1.0, 600.0, 11.0)]
    extensible = [child(0.1, 70.0, 6.8, load_manager="ExtensibleLoadManagerImpl"),
                  child(0.3, 210.0, 7.0, load_manager="ExtensibleLoadManagerImpl")]
    rows = {r.name: r for r in judge(rows_of(modular, extensible), quick=False)}
    assert set(rows) == {"large.rss_per_topic_100k", "large.rss_per_topic_1m", "large.cpu_per_topic_hour_ratio",
                         "large.cpu_slope", "large.extensible_rss_per_topic"}
    assert math.isclose(rows["large.rss_per_topic_100k"].figure, 6.0, rel_tol=1e-6)
    assert rows["large.rss_per_topic_100k"].passed is True
    assert rows["large.rss_per_topic_1m"].passed is False                       # 11 KiB > 10
    ratio = rows["large.cpu_per_topic_hour_ratio"]
    assert math.isclose(ratio.ratio, (600 / 1e6) / (50 / 1e5)) and ratio.passed is True    # 1.2
    slope = rows["large.cpu_slope"]
    assert slope.figure > 1.0 and slope.passed is (slope.figure <= 1.1)
    assert rows["large.extensible_rss_per_topic"].figure == rows["large.extensible_rss_per_topic"].details[
        "points"][1]["rss_per_topic_kib"]
    for row in rows.values():
        assert not row.note.startswith("crashed")


def test_an_expectation_failure_is_a_measurement_said_loudly_and_a_crash_is_no_measurement():
    failed_expectation = [child(0.01, 5.0, 12.0), child(0.03, 15.0, 8.0), child(0.1, 45.0, 6.0, exit_code=1)]
    rows = {r.name: r for r in rows_of(failed_expectation, [])}
    row = rows["large.rss_per_topic_100k"]
    assert row.figure is not None and "EXIT 1" in row.note and not row.note.startswith("crashed")
    assert "large.extensible_rss_per_topic" not in rows

    crashed = [child(0.01, 5.0, 12.0), child(0.03, 15.0, 8.0, exit_code=3), child(0.1, 45.0, 6.0)]
    rows = {r.name: r for r in rows_of(crashed, [])}
    slope = rows["large.cpu_slope"]
    assert slope.figure is None and slope.note.startswith("crashed:") and "EXIT 3" in slope.note
    assert not rows["large.cpu_per_topic_hour_ratio"].note.startswith("crashed")   # its two sizes ran


def test_a_bare_quick_run_skips_the_group():
    [row] = run_bench(Options(quick=True))
    assert row.name == "large" and row.figure is None and "skipped" in row.note
