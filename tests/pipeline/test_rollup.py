"""The roll-up equals the KPIs recomputed in plain Python (tests/pipeline/reference.py) to 1e-9."""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path

import pytest

from emulator.pipeline.recording import load_runs
from emulator.pipeline.rollup import KPI_COLUMNS, TABLES, RollupOptions, rollup
from emulator.pipeline.synthetic import write_synthetic_run
from tests.pipeline.reference import reference

OPTIONS = RollupOptions(window=600.0, balance_bound=10.0, balance_minutes=5.0)


def close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)


@pytest.fixture(scope="module")
def rolled(spark, recorded, tmp_path_factory):
    out = tmp_path_factory.mktemp("rollup")
    console = io.StringIO()
    with contextlib.redirect_stdout(console):
        result = rollup(recorded, out, spark=spark, options=OPTIONS, show=True)
    return result, out, console.getvalue()


def refs(recorded):
    return {Path(d).name: reference(d, OPTIONS.window, OPTIONS.balance_bound, OPTIONS.balance_minutes)
            for d in recorded}


def test_runs_table_equals_plain_python(rolled, recorded):
    result, _, _ = rolled
    expected = refs(recorded)
    assert sorted(r["run_id"] for r in result.runs) == sorted(expected)
    for row in result.runs:
        ref = expected[row["run_id"]]
        assert close(row["span_seconds"], ref["span"])
        whole = ref["scopes"][-1]
        for k in ("ticks", "brokers", *KPI_COLUMNS):
            assert close(row[k], whole[k]), (row["run_id"], k, row[k], whole[k])
    # the data exercise every branch: balanced and never-balanced events, repeats, idle brokers
    by_id = {r["run_id"]: r for r in result.runs}
    assert by_id["still running+1 %x"]["span_seconds"] == 2650.0  # no emulated_end: the last t
    full = [by_id["done"], by_id["still running+1 %x"]]
    assert all(r["repeat_unloads"] > 0 and r["events_never_balanced"] >= 1 for r in full)
    assert any(r["time_to_balance_mean"] is not None for r in full)
    assert all(r["overloaded_broker_seconds"] > 0 and r["unavailable_topics"] > 0 for r in full)
    empty = by_id["empty"]
    assert empty["ticks"] == 0 and empty["unloads"] == 0 and empty["balance_range"] is None


def test_windows_table_equals_plain_python(spark, rolled, recorded):
    _, out, _ = rolled
    expected = refs(recorded)
    rows = spark.read.parquet(str(out / "parquet" / "windows")).collect()
    seen = set()
    for row in rows:
        ref = expected[row["run_id"]]
        scope = ref["scopes"][row["window"]]
        start, end = ref["bounds"][row["window"]]
        assert close(row["window_start"], start) and close(row["window_end"], end)
        for k in ("ticks", "brokers", *KPI_COLUMNS):
            assert close(row[k], scope[k]), (row["run_id"], row["window"], k, row[k], scope[k])
        seen.add((row["run_id"], row["window"]))
    assert seen == {(rid, w) for rid, ref in expected.items() for w in ref["scopes"] if w >= 0}
    assert len(seen) == 6 + 5 + 1  # 3600 s, 2650 s and 600 s in 10-minute windows


def test_per_broker_event_and_topic_tables_equal_plain_python(spark, rolled, recorded):
    _, out, _ = rolled
    expected = refs(recorded)
    brokers = spark.read.parquet(str(out / "parquet" / "brokers")).collect()
    assert {(r["run_id"], r["broker"]) for r in brokers} == {
        (rid, b) for rid, ref in expected.items() for b in ref["brokers"]}
    for r in brokers:
        ref = expected[r["run_id"]]["brokers"][r["broker"]]
        for k, v in ref.items():
            assert close(r[k], v), (r["run_id"], r["broker"], k)
    events = spark.read.parquet(str(out / "parquet" / "balance_events")).orderBy("run_id", "seq").collect()
    for rid, ref in expected.items():
        got = [e for e in events if e["run_id"] == rid]
        assert [e["event"] for e in got] == [e["event"] for e in ref["events"]]
        for g, e in zip(got, ref["events"]):
            assert close(g["t"], e["t"]) and close(g["balanced_at"], e["balanced_at"])
            assert close(g["time_to_balance"], e["time_to_balance"])
            assert json.loads(g["detail"])["event"] == e["event"]  # the arguments travel along
    topics = spark.read.parquet(str(out / "parquet" / "topics")).collect()
    for rid, ref in expected.items():
        got = {r["topic"]: r["unavailable_seconds"] for r in topics if r["run_id"] == rid}
        assert got.keys() == ref["topics"].keys()
        assert all(close(got[t], v) for t, v in ref["topics"].items())


def test_every_table_written_as_parquet_and_csv(rolled):
    result, out, _ = rolled
    for name in TABLES:
        assert list((out / "parquet" / name).glob("*.parquet")), name
        parts = list((out / "csv" / name).glob("part-*.csv"))
        assert len(parts) == 1, name
    header = next(iter((out / "csv" / "runs").glob("part-*.csv"))).read_text().splitlines()[0]
    assert header.split(",")[:3] == ["run_id", "scenario", "seed"] and "thrashing_tdtv_pct" in header
    assert result.samples > 10_000 and result.samples_per_second > 0 and result.wall_seconds > 0
    # one configuration per run here: the comparison has no interval, only the mean
    assert sorted(r["config"] for r in result.comparison) == ["crashed", "placement=AvgShedder", "synthetic"]
    assert all(r["runs"] == 1 and r["unloads_ci95"] is None for r in result.comparison)


def test_console_table(rolled):
    _, _, text = rolled
    header = text.splitlines()[0].split()
    assert header[:2] == ["config", "seed"] and "max/mean" in header and "unloads/h" in header
    assert "synthetic" in text and "placement=AvgShedder" in text
    assert "samples/s" in text.splitlines()[-1]


def test_spark_submit_entry_point_parses_like_the_cli(recorded, tmp_path, monkeypatch, capsys):
    """main() is what `spark-submit rollup.py` runs: no master unless given, so spark-submit decides."""
    import emulator.pipeline.rollup as job

    calls = []
    monkeypatch.setattr(job, "rollup", lambda dirs, out, **kw: calls.append((dirs, out, kw)))
    assert job.main([*recorded, "--out", str(tmp_path), "--window", "15m", "--balance-bound", "12"]) == 0
    (dirs, out, kw), = calls
    assert dirs == recorded and out == str(tmp_path) and kw["master"] is None
    assert kw["options"] == RollupOptions(window=900.0, balance_bound=12.0, balance_minutes=5.0)
    assert job.main([*recorded, "--window", "0"]) == 2
    assert "--window = '0'" in capsys.readouterr().err


def test_bad_arguments_name_themselves(tmp_path, recorded):
    with pytest.raises(ValueError, match="window = 0"):
        RollupOptions(window=0)
    with pytest.raises(ValueError, match="balance_minutes = nan"):
        RollupOptions(balance_minutes=float("nan"))
    with pytest.raises(ValueError, match="no run.json there"):
        load_runs([tmp_path])
    with pytest.raises(TypeError, match="not one path"):
        load_runs(recorded[0])
    twin = tmp_path / "x" / Path(recorded[0]).name
    twin.parent.mkdir()
    write_synthetic_run(twin, duration=60.0)
    with pytest.raises(ValueError, match="must be unique"):
        load_runs([recorded[0], twin])


def test_extensible_decisions_that_went_through_count_as_unloads_and_splits(rolled, recorded):
    result, _, _ = rolled
    row = next(r for r in result.runs if r["run_id"] == "done")
    lines = [json.loads(line) for line in Path(recorded[0], "decisions.jsonl").read_text().splitlines()]
    assert row["unloads"] == sum(d["decision"] == "unload" for d in lines) + 2
    assert row["splits"] == sum(d["decision"] == "split" and d.get("ok") is not False for d in lines) + 1


def _relaid(src: str, dst: Path) -> None:
    """A copy of recording `src` whose sample lines are laid out as other writers might: spaces after
    the separators, labels before the name, and a label called "name" ahead of the series' own."""
    import shutil

    shutil.copytree(src, dst)
    lines = Path(src, "samples.jsonl").read_text().splitlines()
    out = []
    for line in lines:
        d = json.loads(line)
        i = sum(map(ord, d["name"] + json.dumps(d["labels"], sort_keys=True)))  # one layout per series
        if i % 3 == 0:
            out.append(json.dumps(d))
        elif i % 3 == 1:
            out.append(json.dumps({"labels": d["labels"], "t": d["t"], "value": d["value"], "name": d["name"]}))
        else:
            labels = {"name": "pulsar_lb_emulator_broker_max_usage", **d["labels"]}
            out.append(json.dumps({"t": d["t"], "labels": labels, "name": d["name"], "value": d["value"]},
                                  separators=(",", ":")))
    Path(dst, "samples.jsonl").write_text("\n".join(out) + "\n")


def test_samples_are_read_whatever_their_layout_and_every_line_is_counted(spark, tmp_path):
    """The text test before the parse (the name read by its position in the recorder's layout) keeps
    every line of a series the KPIs read, laid out any other way; the count of lines comes from the
    parsing pass when every run finished."""
    done = write_synthetic_run(tmp_path / "compact", seed=3, duration=1200.0)
    _relaid(done, tmp_path / "relaid")
    lines = len(Path(done, "samples.jsonl").read_text().splitlines())
    results = [rollup([str(tmp_path / name)], tmp_path / f"out-{name}", spark=spark, options=OPTIONS,
                      show=False) for name in ("compact", "relaid")]
    assert [r.samples for r in results] == [lines, lines]
    a, b = ({k: v for k, v in r.runs[0].items() if k != "run_id"} for r in results)
    assert a.keys() == b.keys()
    assert all(close(a[k], b[k]) if not isinstance(a[k], str) else a[k] == b[k] for k in a), \
        {k: (a[k], b[k]) for k in a if a[k] != b[k]}
    assert a["balance_range"] is not None and a["lookups"] > 0


def test_sql_literals_have_the_type_and_value_of_lit(spark):
    """The run metadata goes into each plan as SQL text: every value reads back as F.lit makes it."""
    from pyspark.sql import functions as F

    from emulator.pipeline.rollup import sql_literal

    values = ["it's a \\ path\n+%41", "", 7, -(1 << 31), 1 << 31, 2 ** 40, 0.1, 1e-300, -3600.5,
              float("inf"), float("-inf"), True, False, None]
    one = spark.range(1)
    for v in values:
        mine = one.select(F.expr(sql_literal(v)).alias("x"))
        theirs = one.select(F.lit(v).alias("x"))
        assert [f.dataType for f in mine.schema] == [f.dataType for f in theirs.schema], v
        assert mine.collect() == theirs.collect(), v
    nan = one.select(F.expr(sql_literal(float("nan"))).alias("x")).collect()[0][0]
    assert math.isnan(nan)



def test_a_run_rolled_up_alone_is_one_partition_and_gets_the_rows_it_gets_among_others(spark, tmp_path):
    """One run's files are one partition each (a plain file under Spark's open cost, or gzip): the
    sources say so (`one_partition`), nothing shuffles, and every KPI and table row is the one the same
    run gets in a roll-up of several runs, whose sources are not one partition."""
    from emulator.pipeline.recording import SAMPLES_FILE
    from emulator.pipeline.rollup import SAMPLE_NAMES, _paths, one_partition, read_samples

    recorded = [write_synthetic_run(tmp_path / name, seed=seed, duration=1500.0,
                                    overrides={"placement": "AvgShedder"} if seed == 3 else None)
                for name, seed in (("first", 3), ("second", 7))]
    runs, both = load_runs(recorded[:1]), load_runs(recorded)
    df, single = one_partition(read_samples(spark, runs, SAMPLE_NAMES), _paths(runs, SAMPLES_FILE))
    assert single
    assert "Exchange" not in df.groupBy("run_id", "t").count()._jdf.queryExecution().executedPlan().toString()
    assert not one_partition(read_samples(spark, both, SAMPLE_NAMES), _paths(both, SAMPLES_FILE))[1]

    together = rollup(recorded, tmp_path / "together", spark=spark, options=OPTIONS, show=False)
    alone = rollup(recorded[:1], tmp_path / "alone", spark=spark, options=OPTIONS, show=False)
    (expected,) = [r for r in together.runs if r["run_id"] == "first"]
    assert alone.runs[0]["unloads"] > 0 or alone.runs[0]["reconnects"] > 0   # a run with something in it
    assert all(close(alone.runs[0][k], expected[k]) for k in ("ticks", "brokers", *KPI_COLUMNS))
    for table in ("windows", "brokers", "ticks", "broker_usage", "topics", "publish"):
        mine = spark.read.parquet(str(tmp_path / "alone" / "parquet" / table)).collect()
        theirs = [r for r in spark.read.parquet(str(tmp_path / "together" / "parquet" / table)).collect()
                  if r["run_id"] == "first"]
        assert len(mine) == len(theirs), table
        assert all(all(close(a, b) if isinstance(a, float) else a == b for a, b in zip(x, y))
                   for x, y in zip(mine, theirs)), table
