"""The roll-up's `publish` table: a recorded run's publish latency quantiles and failed sends, for the
cluster and per topic, exactly as the recorder computed them (publish.jsonl)."""

from __future__ import annotations

import io
import json

import pytest

from emulator.observe.recording_files import iter_lines
from emulator.pipeline.rollup import PUBLISH_COLUMNS, rollup
from emulator.runner import RunOptions, run

pytestmark = pytest.mark.slow


def test_a_recorded_runs_rollup_holds_its_publish_latency(spark, tmp_path):
    result = run(RunOptions(scenario="broker-crash", duration=720.0, record_dir=str(tmp_path / "runs"),
                            check_interval=60.0), out=io.StringIO(), err=io.StringIO())
    folder = result.record_path
    assert folder is not None
    written = [json.loads(x) for x in iter_lines(folder, "publish.jsonl")]   # publish.jsonl.gz
    out = tmp_path / "rollup"
    rollup([folder], out, spark=spark, show=False)
    rows = [r.asDict() for r in spark.read.parquet(str(out / "parquet" / "publish")).collect()]
    assert rows and set(rows[0]) == set(PUBLISH_COLUMNS)
    [cluster] = [r for r in rows if r["scope"] == "cluster"]
    assert cluster["topic"] is None
    assert cluster["p9999"] == pytest.approx(written[0]["p9999"]) == pytest.approx(result.summary.publish.p9999)
    assert cluster["p50"] == pytest.approx(result.summary.publish.p50)
    assert cluster["failed"] == pytest.approx(result.summary.publish.failed)
    topics = {r["topic"]: r for r in rows if r["scope"] == "topic"}
    assert len(topics) == len(written) - 1 == 600
    for line in written[1:]:
        r = topics[line["topic"]]
        assert [r["p50"], r["p99"], r["p999"], r["p9999"]] == pytest.approx(
            [line["p50"], line["p99"], line["p999"], line["p9999"]])
    assert max(r["p9999"] for r in topics.values()) > 1.0     # the crashed broker's topics waited
