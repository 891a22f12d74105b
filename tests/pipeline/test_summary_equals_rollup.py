"""One definition per KPI: every figure of a run's summary equals the roll-up of its recording, and the
metrics and the expectations' KPIs (`kpis.py`) agree with both.

Real runs (recorded on the virtual clock) rolled up by real Spark in local mode: `broker-crash` (outages
until the session expires, reassignments), `jittery-consumers` (consumers closed while their topic is
down, lookup churn), `hot-topic` (splits) and `heterogeneous-brokers` (unloads).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from emulator.observe.kpis import Scope, compute
from emulator.observe.recording_files import iter_lines
from emulator.observe.summary import SUMMARY_KPIS
from emulator.observe.timeline import Timeline
from emulator.pipeline.rollup import KPI_COLUMNS, rollup
from emulator.runner import RunOptions, run

pytestmark = pytest.mark.slow

RUNS = (("broker-crash", 1800.0), ("jittery-consumers", 900.0), ("hot-topic", 1200.0),
        ("heterogeneous-brokers", 1800.0))


def same(a, b) -> bool:
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    out = []
    for scenario, duration in RUNS:
        result = run(RunOptions(scenario=scenario, seed=3, duration=duration, record_dir=str(root)),
                     out=open("/dev/null", "w"), err=open("/dev/null", "w"))
        out.append((scenario, result))
    return out


@pytest.fixture(scope="module")
def rolled(spark, recorded, tmp_path_factory):
    result = rollup([r.record_path for _, r in recorded], tmp_path_factory.mktemp("rollup"), spark=spark,
                    show=False)
    return {row["run_id"]: row for row in result.runs}


def test_every_summary_kpi_equals_the_rollup_of_the_recording(recorded, rolled):
    seen = set()
    for scenario, result in recorded:
        row = rolled[Path(result.record_path).name]
        for field, kpi in SUMMARY_KPIS.items():
            assert kpi in KPI_COLUMNS, kpi
            summary_value = getattr(result.summary, field)
            rolled_value = row[kpi]
            if rolled_value is None:   # undefined in the roll-up (no outage): the summary prints 0
                rolled_value = 0.0
            assert same(summary_value, rolled_value), (scenario, field, kpi, summary_value, row[kpi])
            if summary_value:
                seen.add(field)
    # the runs exercise every figure (none is compared only as 0 == 0)
    assert seen == set(SUMMARY_KPIS), set(SUMMARY_KPIS) - seen


def test_the_metrics_and_the_expectations_kpis_say_the_same(recorded, rolled):
    for scenario, result in recorded:
        folder = Path(result.record_path)
        row = rolled[folder.name]
        last: dict[str, float] = {}
        for line in iter_lines(folder, "samples.jsonl"):
            sample = json.loads(line)
            last[sample["name"]] = sample["value"]
        assert same(last["pulsar_lb_emulator_unavailable_topic_seconds_total"], row["unavailable_topic_seconds"])
        assert same(last["pulsar_lb_emulator_client_lookups_total"], row["client_lookups"])
        tl = Timeline.from_recording(folder)
        [kpis] = compute(tl, [Scope(tl.t0, tl.end, True)])
        for k in KPI_COLUMNS:
            a, b = kpis[k], row[k]
            assert (a is None and b is None) or same(a, b), (scenario, k, a, b)
