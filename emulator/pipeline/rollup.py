"""The roll-up: KPIs of recorded runs, per run and per run and time window, as a PySpark job.

    pulsar-lb-emulator rollup RUN_DIR... [--out DIR] [--window 10m] [--master local[*]]
    spark-submit emulator/pipeline/rollup.py RUN_DIR... --out DIR        # any Spark cluster

Input: recording folders (`recording.py`). Output under `--out`: each table as Parquet
(`parquet/<table>/`) and CSV with a header (`csv/<table>/part-*.csv`, one part), and a console table.

Tables
------
`runs` (one row per run), `windows` (one row per run and window), `brokers` (per run and broker),
`balance_events` (per scenario event), `ticks` (per run and sample time), `broker_usage` (per run, time
and broker), `topics` (unavailable seconds per run and topic), `publish` (publish latency P50 / P99 /
P99.9 / P99.99 and failed sends per run, for the cluster and per topic, from publish.jsonl: the
quantiles of the exact latency mixture the recorder computed, which Spark cannot re-derive from the
coarse histogram buckets), `comparison` (per configuration: mean and 95 % confidence interval over
seeds of every KPI; see `compare.py`).

KPI definitions (the test recomputes each in plain Python; names and one-line definitions:
emulator/model/kpi_registry.py and docs/rollup.md)
------------------------------------------------------------------------------------
Times are emulated seconds. t0 = run.json `emulated_start` (0 if absent); `span` = `emulated_end`, or,
for a run that did not finish, the largest `t` in any of its files. A *tick* is a distinct `t` at which
some broker has a `pulsar_lb_emulator_broker_max_usage` sample; a broker's *usage* at a tick is that
gauge (percent; if a block repeats a series the largest value counts). Windows are
[t0 + k*W, t0 + (k+1)*W) for k = 0..max(1, ceil((span - t0)/W)) - 1, the last one clipped to span and
also holding t == span; a row with time t belongs to window max(0, min(floor((t - t0)/W), last)). The
run is the scope [t0, span] holding every row. Every KPI below is computed per scope from the rows in
it (per run, then per window).

* Balance, per tick over the brokers present: max, min, mean, population std of usage;
  `range` = max - min; `max_over_mean` = max/mean and `cv` = std/mean (undefined when mean = 0).
  A broker's msg rate = pulsar_broker_rate_in + pulsar_broker_rate_out (samples of that tick, summed);
  throughput likewise with pulsar_broker_throughput_{in,out}; `ratio` = max/min over brokers with a
  sample, undefined when min <= 0 (an idle broker). Per scope: `balance_max_over_mean`, `balance_range`,
  `balance_std`, `balance_cv`, `msg_rate_max_min_ratio`, `throughput_max_min_ratio` are the means over
  the scope's ticks where the figure is defined; `balance_range_max` is the largest range.
* Overload: a broker is overloaded at a tick when usage >= the run's
  loadBalancerBrokerOverloadedThresholdPercentage (default 85; `>=` as OverloadShedder decides). The
  value holds until the run's next tick (the last tick holds until span), cut at the scope's end:
  dt = max(0, min(next tick, scope end) - t). `overloaded_broker_seconds` = sum of dt over overloaded
  (tick, broker) pairs; `overloaded_seconds_max` = the largest per-broker sum; `overloaded_brokers` =
  brokers with a positive sum.
* `unloads`: decisions.jsonl records with decision "unload" (the shedder's unloads that went through;
  admin unloads and split children are scenario input, not load-balancer behaviour), and
  "extensible_unload" with label Success and a reason other than Admin; `splits`: records
  "split" whose `ok` is not false, and "extensible_split" with label Success, not Admin;
  `bundles_unloaded` and `bundles_split`: records "bundle_unloaded" and "bundle_split" (every bundle
  closed or split by its owner, for any reason).
  `unloads_per_hour` = unloads * 3600 / scope seconds (likewise
  splits). `repeat_unloads`: unloads of a bundle whose previous unload (any time earlier in the run) was
  at most loadBalancerSheddingGracePeriodMinutes (default 30) before it (`<=`: Pulsar keeps a bundle in
  recentlyUnloadedBundles until its time is strictly older than now - grace).
* Counters, summed over all series of a name (labels compared as sorted key/value pairs):
  `bundle_moves` (pulsar_lb_emulator_bundle_moves_total), `lookups`
  (pulsar_broker_lookup_answers_total), `lookup_redirects`, `lookup_failures` (the brokers' counters),
  `client_lookups`, `client_lookup_redirects`, `client_lookup_failures`
  (pulsar_lb_emulator_client_lookup*_total: what the clients counted; the summary's lookups). A series' increase at a
  sample is value - previous value, or the value itself for its first sample (series start at 0) and
  after a drop (a reset, as Prometheus' increase()); each increase is counted in the scope of its sample.
* Reconnects: events.jsonl `handle_reconnected`; latency = its `unavailable` field. `reconnects` = count,
  `reconnect_latency_{mean,p50,p99,max}` over the scope's reconnects (percentiles: exact, linear
  interpolation between closest ranks, as Spark's `percentile`).
* Unavailable topic-seconds (`emulator/model/outages.py`, the one definition): a handle (client,
  handle) is down from each `handle_disconnected` at t, or `handle_failed` at its `since`, to the first
  `handle_reconnected` or `handle_closed` of that handle after it (in time, then file order), or to span.
  A topic is unavailable while at least one of its handles is down: the union of its handles'
  intervals (touching intervals merge). Per scope and topic: length of that union inside [scope start, scope
  end]. Over topics with a positive figure: `unavailable_topics` (count), `unavailable_topic_seconds`
  (sum), `unavailable_topic_seconds_{p50,p99,max}`. Topics never down are not in the recording, so the
  percentiles are over topics that had an outage.
* Time to balance, per scenario event (events.jsonl kind "scenario_event") at t_e: the first tick
  t >= t_e such that every tick in [t, t + N min] has range < bound and the run has a tick at or after
  t + N min; `time_to_balance` = t - t_e, undefined (never balanced) if there is no such tick. Per scope
  (by event time): `scenario_events`, `time_to_balance_{mean,max}` over balanced events,
  `events_never_balanced`. Bound and N: `--balance-bound` (percentage points, default 10) and
  `--balance-minutes` (default 5).
* Thrashing (CockroachDB asim's history/thrashing.go): for each broker, its usage over the scope's
  ticks in time order; up = sum of positive first differences, down = sum of |negative| ones;
  tdtv = 0 if min(up, down) = 0, else a * (up + down) + (1 - a) * min(up, down) with
  a = (min/max) ** 0.8; `runs` = 1 + sign changes of the differences (a difference >= 0 counts as up).
  Normalised as asim does: tdtv_pct = 100 * tdtv / (max - min of every broker's usage in the scope, or
  1 if that is 0). `thrashing_tdtv_pct` = mean over brokers of tdtv_pct; `thrashing_tdtv` = sum over
  brokers of tdtv (percentage points); both undefined when the scope has no usage sample.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
import time
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import msgspec

from emulator.observe.timeline import COUNTERS as _TIMELINE_COUNTERS
from emulator.observe.decision_kinds import EXTENSIBLE_SPLIT, EXTENSIBLE_UNLOAD
from emulator.observe.timeline import RATE, THROUGHPUT, USAGE
from emulator.model.errors import UsageError
from emulator.pipeline.compare import comparison_fields, comparison_rows
from emulator.pipeline.options import RollupOptions, add_rollup_options, conf_from_args, options_from_args
from emulator.pipeline.recording import (DECISIONS_FILE, EVENTS_FILE, PUBLISH_FILE, SAMPLES_FILE, Run,
                                         cut_files, load_runs, spark_schemas, warn_cut)
from emulator.pipeline.session import DEFAULT_MASTER, jvm_peak_rss_bytes, launch_conf, sized_to, spark_session

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# the series the KPIs read, named once (the expectations' timeline reads the same ones)
COUNTERS: Mapping[str, str] = {k: v for k, v in _TIMELINE_COUNTERS.items() if not k.startswith("publish_")}
RUN_SCOPE = -1  # the `window` value of the whole-run scope
SAMPLE_NAMES: tuple[str, ...] = (USAGE, *RATE, *THROUGHPUT, *COUNTERS.values())
"""The series the KPIs read; the roll-up parses no other sample line."""

# Every KPI column, in table order; the comparison table averages these over seeds.
KPI_COLUMNS: tuple[str, ...] = (
    "balance_max_over_mean", "balance_range", "balance_range_max", "balance_std", "balance_cv",
    "msg_rate_max_min_ratio", "throughput_max_min_ratio",
    "overloaded_broker_seconds", "overloaded_seconds_max", "overloaded_brokers",
    "unloads", "unloads_per_hour", "repeat_unloads", "bundles_unloaded", "splits", "splits_per_hour",
    "bundles_split", *COUNTERS,
    "reconnects", "reconnect_latency_mean", "reconnect_latency_p50", "reconnect_latency_p99",
    "reconnect_latency_max",
    "unavailable_topics", "unavailable_topic_seconds", "unavailable_topic_seconds_p50",
    "unavailable_topic_seconds_p99", "unavailable_topic_seconds_max",
    "scenario_events", "time_to_balance_mean", "time_to_balance_max", "events_never_balanced",
    "thrashing_tdtv_pct", "thrashing_tdtv",
)
# KPIs that count things: 0, not undefined, when nothing happened in the scope.
_ZERO_IF_ABSENT = ("overloaded_broker_seconds", "overloaded_seconds_max", "overloaded_brokers",
                   "unloads", "repeat_unloads", "bundles_unloaded", "splits", "bundles_split", *COUNTERS,
                   "reconnects", "unavailable_topics", "unavailable_topic_seconds", "scenario_events",
                   "events_never_balanced")
_DOUBLE_COUNTS = frozenset({"overloaded_broker_seconds", "overloaded_seconds_max", "unavailable_topic_seconds",
                            *COUNTERS})
_LONG_COLUMNS = frozenset({"seed", "ticks", "brokers", "overloaded_brokers", "unloads", "repeat_unloads",
                           "bundles_unloaded", "splits", "bundles_split", "reconnects", "unavailable_topics",
                           "scenario_events", "events_never_balanced"})
_TEXT_COLUMNS = frozenset({"run_id", "scenario", "config", "placement", "shedder"})
RUN_COLUMNS = ("run_id", "scenario", "seed", "config", "placement", "shedder", "complete",
               "span_seconds", "ticks", "brokers", *KPI_COLUMNS)
WINDOW_COLUMNS = ("run_id", "config", "seed", "window", "window_start", "window_end", "window_seconds",
                  "ticks", "brokers", *KPI_COLUMNS)
TABLES = ("runs", "windows", "brokers", "balance_events", "ticks", "broker_usage", "topics", "publish",
          "comparison")
PUBLISH_COLUMNS = ("run_id", "config", "seed", "scope", "topic", "messages", "failed", "failed_timeout",
                   "failed_queue_full", "failed_closed", "p50", "p99", "p999", "p9999")


def _column_kinds(columns: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The Spark type of each column of the runs and windows tables."""
    def kind(c: str) -> str:
        if c in _TEXT_COLUMNS:
            return "string"
        if c == "complete":
            return "boolean"
        if c == "window":
            return "int"
        return "long" if c in _LONG_COLUMNS else "double"
    return tuple((c, kind(c)) for c in columns)


class RollupResult(msgspec.Struct, kw_only=True):
    """What a roll-up produced: where, the run and comparison rows, and what it cost."""

    out_dir: str
    runs: list[dict[str, Any]]
    comparison: list[dict[str, Any]]
    samples: int
    wall_seconds: float           # from session start (or the call, with a given session) to written
    samples_per_second: float
    jvm_peak_rss_bytes: int | None
    phases: dict[str, float] = {}
    """Wall seconds per phase: `session` (start, when the roll-up started one), `read` (the samples
    read, parsed and counted), `kpis` (the KPI families while the Spark tables are written beside
    them), `write` (the rest of the writes)."""


def _lap(phases: dict[str, float]) -> Callable[[str], None]:
    """`lap(name)`: the wall seconds since the previous lap (or this call) into `phases[name]`."""
    last = [time.perf_counter()]

    def lap(name: str) -> None:
        now = time.perf_counter()
        phases[name] = now - last[0]
        last[0] = now
    return lap


# ====================================================================== reading


def _run_id_col(F: Any, path: Any = None) -> Any:
    """The run folder's name from Spark's file URI: the last folder of the path, '%XX' decoded when it
    has one ('+' is a literal plus in a path, which `url_decode` would read as a space). Two
    `substring_index` per row: a regular expression here cost 1.3 s per 300,000 lines (bench `rollup`)."""
    folder = F.substring_index(F.substring_index(
        F.col("_metadata.file_path") if path is None else path, "/", -2), "/", 1)
    return F.when(folder.contains("%"), F.url_decode(F.regexp_replace(folder, r"\+", "%2B"))).otherwise(folder)


def _paths(runs: Sequence[Run], file: str) -> list[str]:
    """Each run's `file`, gzip-compressed (`file.gz`, which Spark decompresses by its name) or plain."""
    from emulator.observe.recording_files import find as find_recording_file

    found = (find_recording_file(r.path, file) for r in runs)
    return [str(path) for path in found if path is not None]


def _reader(spark: "SparkSession", runs: Sequence[Run]) -> Any:
    """`spark.read`; when a run did not finish, one that reads a file cut by a kill up to the cut
    (Spark's `ignoreCorruptFiles` keeps the rows read before the error) instead of failing the job.
    `warn_cut` says which files once, before the job."""
    reader = spark.read
    if any(not r.info.complete for r in runs) or cut_files(runs, scan=False):
        reader = reader.option("ignoreCorruptFiles", "true")
    return reader


def empty_frame(spark: "SparkSession", schema: Any) -> "DataFrame":
    """No rows, with `schema`: made in the JVM (`createDataFrame` would start Python workers)."""
    from pyspark.sql import functions as F

    return spark.range(0).select(*[F.lit(None).cast(f.dataType).alias(f.name) for f in schema.fields])


def _name_pattern(names: Sequence[str]) -> str:
    return '"(?:' + "|".join(re.escape(n) for n in sorted(names)) + ')"'


def _named(F: Any, names: Sequence[str]) -> Any:
    """A text test that keeps every line whose series is in `names` (the parse decides): the recorder
    writes `"name":"..."` before `"labels"`, so its name is read by position and looked up in a set
    (0.1 s per 300,000 lines); a line laid out otherwise (another writer, spaces) gets the regular
    expression (0.8 s per 300,000 lines, measured)."""
    value = F.col("value")
    at, labels = F.instr(value, '"name":"'), F.instr(value, '"labels"')
    by_position = (at > 0) & ((labels == 0) | (at < labels))
    name = F.substring_index(F.expr("substring(value, instr(value, '\"name\":\"') + 8)"), '"', 1)
    return F.when(by_position, name.isin(*names)).otherwise(value.rlike(_name_pattern(names)))


def read_samples(spark: "SparkSession", runs: Sequence[Run], names: Sequence[str]) -> "DataFrame":
    """samples.jsonl of every run: the lines of the series `names` (a text test first, `_named`),
    parsed, with their `run_id`; not yet filtered on parsed fields (`valid_samples`).

    Cache it before `valid_samples`: over the text, Spark's optimizer pushes a filter on parsed fields
    below the parse and then parses each line once per field tested (five times, measured)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    schema = spark_schemas()[SAMPLES_FILE]
    paths = _paths(runs, SAMPLES_FILE)
    if not paths:
        return empty_frame(spark, schema.add("run_id", T.StringType()))
    text = _reader(spark, runs).text(paths).filter(_named(F, names))
    return text.select(F.from_json("value", schema).alias("s"), _run_id_col(F).alias("run_id")) \
        .select("s.*", "run_id")


def valid_samples(samples: "DataFrame", names: Sequence[str]) -> "DataFrame":
    """The rows of `read_samples` that parsed, of the series `names`."""
    from pyspark.sql import functions as F

    return samples.filter(F.col("t").isNotNull() & F.col("name").isNotNull() & F.col("value").isNotNull()
                          & F.col("name").isin(*names))


def scanned_lines(df: "DataFrame") -> int | None:
    """Fill cached `df` (one job) and return the lines its file scans read: Spark's own count
    (`numOutputRows` of each FileSourceScanExec), so the samples are counted in the pass that parses
    them, not in a second scan (`sample_stats`: a second cold job, 2-4 s of a recorded hour's
    roll-up, measured). None when the plan has no such scan to read (then `sample_stats` counts)."""
    df.count()
    try:
        plan = df._jdf.queryExecution().executedPlan()
        plan = plan.relation().cachedPlan() if plan.nodeName() == "InMemoryTableScan" else plan
        total, found = 0, False
        leaves = plan.collectLeaves().iterator()
        while leaves.hasNext():
            leaf = leaves.next()
            if leaf.nodeName().startswith("Scan text"):
                total += int(leaf.metrics().get("numOutputRows").get().value())
                found = True
    except Exception:  # noqa: BLE001 - Spark's internals moved: count the other way
        return None
    return total if found else None


def sample_stats(spark: "SparkSession", runs: Sequence[Run]) -> dict[str, tuple[int, float | None]]:
    """Per run: lines in samples.jsonl, and for a run without `emulated_end` its largest `t` (one scan
    of the text, grouped by file; `t` is read only when some run has no `emulated_end`)."""
    from pyspark.sql import functions as F

    paths = _paths(runs, SAMPLES_FILE)
    if not paths:
        return {}
    open_ended = any(r.info.emulated_end is None for r in runs)
    text = _reader(spark, runs).text(paths).filter(F.length("value") > 0)
    per_file = text.groupBy(F.col("_metadata.file_path").alias("path"))
    t = F.get_json_object("value", "$.t").cast("double") if open_ended else F.lit(None).cast("double")
    rows = per_file.agg(F.count(F.lit(1)).alias("n"), F.max(t).alias("t_max"))
    out: dict[str, tuple[int, float | None]] = {}
    for r in rows.select(_run_id_col(F, F.col("path")).alias("run_id"), "n", "t_max").collect():
        out[r["run_id"]] = (int(r["n"]), r["t_max"])
    return out


def read_decisions(spark: "SparkSession", runs: Sequence[Run]) -> "DataFrame":
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    schema = spark_schemas()[DECISIONS_FILE]
    paths = _paths(runs, DECISIONS_FILE)
    if not paths:
        return empty_frame(spark, schema.add("run_id", T.StringType()))
    df = _reader(spark, runs).schema(schema).json(paths).withColumn("run_id", _run_id_col(F))
    return df.filter(F.col("t").isNotNull() & F.col("decision").isNotNull())


def read_events(spark: "SparkSession", runs: Sequence[Run]) -> "DataFrame":
    """events.jsonl parsed with its schema, plus `raw` (the line) to keep a scenario event's arguments."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    schema = spark_schemas()[EVENTS_FILE]
    paths = _paths(runs, EVENTS_FILE)
    if not paths:
        return empty_frame(spark, schema.add("raw", T.StringType()).add("run_id", T.StringType())
                           .add("seq", T.LongType()))
    text = _reader(spark, runs).text(paths).withColumn("run_id", _run_id_col(F))
    df = text.select(F.from_json("value", schema).alias("e"), F.col("value").alias("raw"), "run_id",
                     F.monotonically_increasing_id().alias("seq"))   # file order, for ties in time
    df = df.select("e.*", "raw", "run_id", "seq")
    return df.filter(F.col("t").isNotNull() & F.col("kind").isNotNull())


def read_publish(spark: "SparkSession", runs: Sequence[Run]) -> "DataFrame":
    """publish.jsonl of every run that has one (runs recorded before publish accounting have none)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    schema = spark_schemas()[PUBLISH_FILE]
    paths = _paths(runs, PUBLISH_FILE)
    if not paths:
        return empty_frame(spark, schema.add("run_id", T.StringType()))
    df = _reader(spark, runs).schema(schema).json(paths).withColumn("run_id", _run_id_col(F))
    return df.filter(F.col("topic").isNotNull())


class Frames(msgspec.Struct, kw_only=True):
    """The four inputs of a roll-up as Spark frames in the recording's columns (`read_*` above): from
    recording folders, or from another source that writes the same columns."""

    samples: Any
    decisions: Any
    events: Any
    publish: Any


def counter_kpis_of(extra: Mapping[str, str] | None) -> dict[str, str]:
    """COUNTERS plus `extra` (KPI -> counter sample name): a source without events can give a KPI that a
    recording computes from events by a counter of the same figure (`prometheus.py`: the emulator's
    pulsar_lb_emulator_unavailable_topic_seconds_total for unavailable_topic_seconds)."""
    out = dict(COUNTERS)
    for kpi, name in (extra or {}).items():
        if kpi not in KPI_COLUMNS or kpi in COUNTERS:
            raise ValueError(f"extra_counters: {kpi!r} = {name!r}: not a KPI column that events give")
        out[kpi] = name
    return out


def null_kpis(rows: Sequence[dict[str, Any]], unavailable: Mapping[str, str]) -> None:
    """Set the KPIs the source cannot give to None (undefined) in every row: nothing is invented."""
    for kpi in unavailable:
        if kpi not in KPI_COLUMNS:
            raise ValueError(f"unavailable: {kpi!r} is not a KPI column")
    for row in rows:
        for kpi in unavailable:
            row[kpi] = None


UNAVAILABLE_FILE = "kpis_unavailable.json"
"""In a roll-up folder: {KPI: why its source cannot give it} (a Prometheus roll-up's nulls), absent
for recordings."""


def write_unavailable(out_dir: str | Path, unavailable: Mapping[str, str] | None) -> None:
    """UNAVAILABLE_FILE in KPI_COLUMNS order, or no such file (a roll-up of recordings into a folder
    that held a Prometheus one leaves no stale reasons)."""
    path = Path(out_dir) / UNAVAILABLE_FILE
    if not unavailable:
        path.unlink(missing_ok=True)
        return
    ordered = {k: unavailable[k] for k in KPI_COLUMNS if k in unavailable}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(ordered, indent=1) + "\n")


def meta_rows(runs: Sequence[Run], t_max: Mapping[str, float | None], window: float) -> list[dict[str, Any]]:
    """Per run, in the driver: t0, span (emulated_end, else the last time seen, else t0) and the window
    count max(1, ceil((span - t0) / window))."""
    rows = []
    for r in runs:
        t0 = float(r.info.emulated_start)
        end = None if r.info.emulated_end is None else float(r.info.emulated_end)
        seen = t_max.get(r.run_id)
        span = end if end is not None else (float(seen) if seen is not None else t0)
        rows.append({"run_id": r.run_id, "run_dir": r.path, "scenario": r.info.scenario,
                     "seed": r.info.seed, "config": r.config_label, "placement": r.info.placement,
                     "shedder": r.info.shedder, "complete": r.info.complete, "t0": t0, "emulated_end": end,
                     "overload_threshold": float(r.overload_threshold),
                     "grace_seconds": float(r.grace_seconds), "span": span,
                     "n_windows": max(1, math.ceil((span - t0) / window))})
    return rows


def scope_rows(meta: Sequence[Mapping[str, Any]], window: float) -> list[dict[str, Any]]:
    """The whole run (window -1, [t0, span]) and windows k = 0..n-1: [t0 + k*W, min(t0 + (k+1)*W, span))."""
    out = []
    for m in meta:
        t0, span = m["t0"], m["span"]
        out.append({"run_id": m["run_id"], "window": RUN_SCOPE, "start": t0, "end": span, "span": span})
        for k in range(m["n_windows"]):
            out.append({"run_id": m["run_id"], "window": k, "start": t0 + k * window,
                        "end": min(t0 + (k + 1) * window, span), "span": span})
    return out


def rows_frame(spark: "SparkSession", fields: Sequence[tuple[str, str]], rows: Sequence[Mapping[str, Any]],
               staging: Path) -> "DataFrame":
    """Rows the driver made (the runs, windows and comparison tables) as a Spark frame: written as JSON
    lines under `staging` (inside --out, which every worker can read) and read back with an explicit
    schema. `createDataFrame(list)` would start Python workers for it (9 s measured, cold)."""
    from pyspark.sql import types as T

    kinds = {"string": T.StringType(), "long": T.LongType(), "int": T.IntegerType(),
             "double": T.DoubleType(), "boolean": T.BooleanType()}
    schema = T.StructType([T.StructField(n, kinds[k]) for n, k in fields])
    staging.mkdir(parents=True, exist_ok=True)
    path = staging / f"{len(list(staging.iterdir()))}.jsonl"
    with path.open("w") as f:
        for r in rows:
            f.write(json.dumps({n: r.get(n) for n, _ in fields}) + "\n")
    return spark.read.schema(schema).option("allowNonNumericNumbers", True).json(str(path))


def sql_literal(value: Any) -> str:
    """`value` as a Spark SQL literal of the type `F.lit(value)` gives it: a string (quoted, with
    backslash escapes), a boolean, an int (INT when it fits 32 bits, else BIGINT), a double (also
    NaN and the infinities), or NULL."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if -(1 << 31) <= value < (1 << 31) else f"{value}L"
    if isinstance(value, float):
        return f"{value!r}D" if math.isfinite(value) else f"CAST('{value!r}' AS DOUBLE)"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    raise TypeError(f"no SQL literal for {value!r}")


# ====================================================================== the job


class _Job:
    """One roll-up over some runs: the frames it builds on, and one method per KPI family.

    Every fact carries (run_id, t); `_scoped` copies it into the whole-run scope (window = -1) and its
    window, so each KPI is written once and grouped by (run_id, window). The run metadata and the scopes
    are small and known to the driver: they are local tables, broadcast to every join."""

    def __init__(self, spark: "SparkSession", runs: Sequence[Run], options: RollupOptions,
                 frames: "Frames | None" = None, extra_counters: Mapping[str, str] | None = None) -> None:
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        self.F, self.Window, self.spark, self.o = F, Window, spark, options
        self.counters = counter_kpis_of(extra_counters)
        self._cached: list["DataFrame"] = []
        self._exprs: dict[Any, Any] = {}
        if frames is None:
            names = (*SAMPLE_NAMES, *(n for n in self.counters.values() if n not in SAMPLE_NAMES))
            raw = self._keep(read_samples(spark, runs, names))
            frames = Frames(samples=valid_samples(raw, names),
                            decisions=read_decisions(spark, runs), events=read_events(spark, runs),
                            publish=read_publish(spark, runs))
            lines = None if any(r.info.emulated_end is None for r in runs) else scanned_lines(raw)
            stats = sample_stats(spark, runs) if lines is None else {"": (lines, None)}
        else:
            stats = {r["run_id"]: (r["n"], r["t_max"]) for r in frames.samples.groupBy("run_id").agg(
                F.count("t").alias("n"), F.max("t").alias("t_max")).collect()}
        self.samples = self._keep(frames.samples)
        self.decisions = self._keep(frames.decisions)
        self.events = self._keep(frames.events)
        self.publish = frames.publish
        self.sample_count = sum(n for n, _ in stats.values())
        open_ended = [r.run_id for r in runs if r.info.emulated_end is None]
        t_max = {rid: t for rid, (_, t) in stats.items()}
        if open_ended:   # a run that did not finish ends at the last time in any of its files
            for df in (self.decisions, self.events):
                for row in df.filter(F.col("run_id").isin(*open_ended)).groupBy("run_id") \
                        .agg(F.max("t").alias("t")).collect():
                    t_max[row["run_id"]] = max(t_max.get(row["run_id"]) or row["t"], row["t"])
        self.meta_rows = meta_rows(runs, t_max, float(options.window))
        self.scope_rows = scope_rows(self.meta_rows, float(options.window))

    def meta_sql(self, name: str) -> str:
        """The run's `name` (meta_rows) for each row's run_id, as SQL: a literal map, so no join and no
        job."""
        pairs = ", ".join(f"{sql_literal(m['run_id'])}, {sql_literal(m[name])}" for m in self.meta_rows)
        return f"map({pairs})[run_id]" if pairs else "NULL"

    def meta(self, name: str) -> Any:
        """`meta_sql(name)` as a column, made once: built from `F.lit`s at every use it cost three py4j
        round trips per run each time (1,400 round trips, about 1.5 s, for one run; a 1,000-run sweep
        would have spent most of an hour on them)."""
        return self._expr(("meta", name), lambda: self.meta_sql(name))

    def _expr(self, key: Any, sql: Callable[[], str]) -> Any:
        """A column from SQL text (one py4j round trip where functions calls take three per node),
        made once per `key`."""
        column = self._exprs.get(key)
        if column is None:
            column = self._exprs[key] = self.F.expr(sql())
        return column

    def scope_bounds(self) -> tuple[Any, Any]:
        """(start, end) of each row's scope (its run and `window`), as expressions."""
        F, W = self.F, float(self.o.window)
        t0, span, w = self.meta("t0"), self.meta("span"), F.col("window")
        start = F.when(w == RUN_SCOPE, t0).otherwise(t0 + w * W)
        end = F.when(w == RUN_SCOPE, span).otherwise(F.least(t0 + (w + 1) * W, span))
        return start, end

    def with_config(self, df: "DataFrame") -> "DataFrame":
        """The run's configuration label and seed beside its run_id."""
        return df.withColumns({"config": self.meta("config"), "seed": self.meta("seed")})

    def _keep(self, df: "DataFrame") -> "DataFrame":
        """Cache a frame several tables read; `release()` frees them all."""
        self._cached.append(df.cache())
        return df

    @staticmethod
    def _filled(pool: Executor | None) -> Callable[..., Any]:
        """`fill(df, ...)`: compute cached frames now, side by side on `pool`, and return the first.

        The frames are filled in the order their readers need them: two jobs that read a cached frame
        not yet filled both compute it (Spark's block manager keeps the first and drops the other:
        "Block rdd_N already exists"), which on two cores doubled the work of the shared frames."""
        def fill(*frames: "DataFrame") -> "DataFrame":
            list((pool.map if pool is not None else map)(lambda df: df.count(), frames))
            return frames[0]
        return fill

    def release(self) -> None:
        for df in self._cached:
            df.unpersist()
        self._cached.clear()

    # -------------------------------------------------------------- scoping helpers

    def _scoped(self, df: "DataFrame", t: str = "t") -> "DataFrame":
        """Each row twice: in the run scope and in the window holding its time."""
        def sql() -> str:
            window = sql_literal(float(self.o.window))
            k = f"CAST(floor((`{t}` - {self.meta_sql('t0')}) / {window}) AS INT)"
            return f"explode(array({RUN_SCOPE}, greatest(0, least({k}, {self.meta_sql('n_windows')} - 1))))"
        return df.withColumn("window", self._expr(("scoped", t), sql))

    # -------------------------------------------------------------- per-tick balance

    def broker_usage(self) -> "DataFrame":
        """Per (run, t, broker): usage (max), msg rate and throughput (sums) of that tick's samples, one
        aggregation with conditional columns (a figure with no sample is null, as it would be in a full
        join of three aggregations, which cost three shuffles and two joins)."""
        F = self.F
        value, name = F.col("value"), F.col("name")
        s = self.samples.filter(name.isin(USAGE, *RATE, *THROUGHPUT)) \
            .withColumn("broker", F.col("labels").getItem("broker")).filter(F.col("broker").isNotNull())
        return s.groupBy("run_id", "t", "broker").agg(
            F.max(F.when(name == USAGE, value)).alias("usage"),
            F.sum(F.when(name.isin(*RATE), value)).alias("msg_rate"),
            F.sum(F.when(name.isin(*THROUGHPUT), value)).alias("throughput"))

    def ticks(self, bu: "DataFrame") -> "DataFrame":
        """Per (run, t) with some usage: the spread of usage, msg rate and throughput over the brokers
        that have each figure (aggregates skip nulls: one aggregation, not three and two joins)."""
        F = self.F
        mean = F.col("usage_mean")
        return bu.groupBy("run_id", "t").agg(
            F.count("usage").alias("brokers"), F.max("usage").alias("usage_max"),
            F.min("usage").alias("usage_min"), F.avg("usage").alias("usage_mean"),
            F.stddev_pop("usage").alias("usage_std"),
            F.max("msg_rate").alias("rate_max"), F.min("msg_rate").alias("rate_min"),
            F.max("throughput").alias("throughput_max"), F.min("throughput").alias("throughput_min"),
        ).filter(F.col("brokers") > 0).withColumns({
            "usage_range": F.col("usage_max") - F.col("usage_min"),
            "usage_max_over_mean": F.when(mean > 0, F.col("usage_max") / mean),
            "usage_cv": F.when(mean > 0, F.col("usage_std") / mean),
            "msg_rate_ratio": F.when(F.col("rate_min") > 0, F.col("rate_max") / F.col("rate_min")),
            "throughput_ratio": F.when(F.col("throughput_min") > 0,
                                       F.col("throughput_max") / F.col("throughput_min")),
        })

    def balance(self, ticks: "DataFrame") -> "DataFrame":
        F = self.F
        return self._scoped(ticks).groupBy("run_id", "window").agg(
            F.count("t").alias("ticks"),
            F.avg("usage_max_over_mean").alias("balance_max_over_mean"),
            F.avg("usage_range").alias("balance_range"), F.max("usage_range").alias("balance_range_max"),
            F.avg("usage_std").alias("balance_std"), F.avg("usage_cv").alias("balance_cv"),
            F.avg("msg_rate_ratio").alias("msg_rate_max_min_ratio"),
            F.avg("throughput_ratio").alias("throughput_max_min_ratio"))

    # -------------------------------------------------------------- per broker: overload, thrashing

    def per_broker(self, bu: "DataFrame", ticks: "DataFrame") -> "DataFrame":
        F, Window = self.F, self.Window
        grid = ticks.select("run_id", "t").withColumn("next_t", F.coalesce(
            F.lead("t").over(Window.partitionBy("run_id").orderBy("t")), self.meta("span")))
        u = bu.filter(F.col("usage").isNotNull()).select("run_id", "t", "broker", "usage") \
            .join(grid, ["run_id", "t"]).withColumn("overload_threshold", self.meta("overload_threshold"))
        u = self._scoped(u)
        start, end = self.scope_bounds()
        u = u.withColumns({"start": start, "end": end})
        dt = F.greatest(F.lit(0.0), F.least(F.col("next_t"), F.col("end")) - F.col("t"))
        order = Window.partitionBy("run_id", "window", "broker").orderBy("t")
        d = F.col("usage") - F.lag("usage").over(order)
        u = u.withColumns({"over_dt": F.when(F.col("usage") >= F.col("overload_threshold"), dt)
                           .otherwise(F.lit(0.0)), "d": d}).withColumn("up", F.col("d") >= 0)
        u = u.withColumn("flip", F.when(F.col("d").isNotNull() & F.lag("d").over(order).isNotNull()
                                        & (F.col("up") != F.lag("up").over(order)), 1).otherwise(0))
        per = u.groupBy("run_id", "window", "broker").agg(
            F.sum("over_dt").alias("overloaded_seconds"),
            F.sum(F.greatest(F.col("d"), F.lit(0.0))).alias("uptv"),
            F.sum(F.greatest(-F.col("d"), F.lit(0.0))).alias("dntv"),
            (F.lit(1) + F.sum("flip")).alias("runs"),
            F.avg("usage").alias("usage_mean"), F.max("usage").alias("usage_max"),
            F.min("usage").alias("usage_min"))
        per = per.fillna(0.0, subset=["uptv", "dntv"])
        lo, hi = F.least("uptv", "dntv"), F.greatest("uptv", "dntv")
        alpha = F.pow(lo / hi, 0.8)
        per = per.withColumn("tdtv", F.when(lo == 0, F.lit(0.0))
                             .otherwise(alpha * (F.col("uptv") + F.col("dntv")) + (1 - alpha) * lo))
        norm = per.groupBy("run_id", "window").agg(
            (F.max("usage_max") - F.min("usage_min")).alias("norm"))
        norm = norm.withColumn("norm", F.when(F.col("norm") == 0, F.lit(1.0)).otherwise(F.col("norm")))
        return per.join(norm, ["run_id", "window"]).withColumn(
            "tdtv_pct", 100.0 * F.col("tdtv") / F.col("norm")).drop("norm")

    def broker_kpis(self, per: "DataFrame") -> "DataFrame":
        F = self.F
        return per.groupBy("run_id", "window").agg(
            F.count("broker").alias("brokers"),
            F.sum("overloaded_seconds").alias("overloaded_broker_seconds"),
            F.max("overloaded_seconds").alias("overloaded_seconds_max"),
            F.sum(F.when(F.col("overloaded_seconds") > 0, 1).otherwise(0)).alias("overloaded_brokers"),
            F.avg("tdtv_pct").alias("thrashing_tdtv_pct"), F.sum("tdtv").alias("thrashing_tdtv"))

    # -------------------------------------------------------------- decisions and counters

    def decision_kpis(self) -> "DataFrame":
        F, Window = self.F, self.Window
        # timeline.is_load_manager_unload / is_load_manager_split, as column expressions
        extensible = (F.col("label") == "Success") & F.coalesce(F.col("reason") != "Admin", F.lit(True))
        is_unload = (F.col("decision") == "unload") | ((F.col("decision") == EXTENSIBLE_UNLOAD) & extensible)
        unloads = self.decisions.filter(is_unload) \
            .withColumn("grace_seconds", self.meta("grace_seconds"))
        prev = F.lag("t").over(Window.partitionBy("run_id", "bundle").orderBy("t"))
        unloads = unloads.withColumn("repeat", F.when(
            prev.isNotNull() & (F.col("t") - prev <= F.col("grace_seconds")), 1).otherwise(0))
        u = self._scoped(unloads).groupBy("run_id", "window").agg(
            F.count("t").alias("unloads"), F.sum("repeat").alias("repeat_unloads"))
        split_ok = (((F.col("decision") == "split") & F.coalesce(F.col("ok"), F.lit(True)))
                    | ((F.col("decision") == EXTENSIBLE_SPLIT) & extensible))
        counts = self._scoped(self.decisions.filter(F.col("decision").isin(
            "split", EXTENSIBLE_SPLIT, "bundle_unloaded", "bundle_split"))).groupBy("run_id", "window").agg(
            F.sum(F.when(split_ok, 1).otherwise(0)).alias("splits"),
            F.sum(F.when(F.col("decision") == "bundle_unloaded", 1).otherwise(0)).alias("bundles_unloaded"),
            F.sum(F.when(F.col("decision") == "bundle_split", 1).otherwise(0)).alias("bundles_split"))
        return u.join(counts, ["run_id", "window"], "full")

    def counter_kpis(self) -> "DataFrame":
        F, Window = self.F, self.Window
        names = {v: k for k, v in self.counters.items()}
        c = self.samples.filter(F.col("name").isin(*names)).withColumn(
            "series", F.to_json(F.array_sort(F.map_entries("labels"))))
        prev = F.lag("value").over(Window.partitionBy("run_id", "name", "series").orderBy("t"))
        c = c.withColumn("inc", F.when(prev.isNull(), F.col("value"))
                         .when(F.col("value") >= prev, F.col("value") - prev).otherwise(F.col("value")))
        agg = self._scoped(c).groupBy("run_id", "window").pivot("name", list(names)).agg(F.sum("inc"))
        return agg.withColumnsRenamed(names)

    # -------------------------------------------------------------- clients

    def reconnect_kpis(self) -> "DataFrame":
        F = self.F
        r = self.events.filter((F.col("kind") == "handle_reconnected") & F.col("unavailable").isNotNull())
        return self._scoped(r).groupBy("run_id", "window").agg(
            F.count("t").alias("reconnects"), F.avg("unavailable").alias("reconnect_latency_mean"),
            F.percentile("unavailable", 0.5).alias("reconnect_latency_p50"),
            F.percentile("unavailable", 0.99).alias("reconnect_latency_p99"),
            F.max("unavailable").alias("reconnect_latency_max"))

    def topic_outages(self) -> "DataFrame":
        """Per (run, scope, topic): seconds during which at least one of the topic's handles was down
        (`emulator/model/outages.py`)."""
        F, Window = self.F, self.Window
        kinds = ("handle_disconnected", "handle_failed", "handle_reconnected", "handle_closed")
        ev = self.events.filter(F.col("kind").isin(*kinds) & F.col("topic").isNotNull())
        start = F.when(F.col("kind") == "handle_disconnected", F.col("t")) \
            .when(F.col("kind") == "handle_failed", F.coalesce("since", "t"))
        is_end = F.col("kind").isin("handle_reconnected", "handle_closed")
        after = Window.partitionBy("run_id", "client", "handle").orderBy("t", "seq") \
            .rowsBetween(1, Window.unboundedFollowing)
        iv = (ev.withColumns({"s": start, "e": F.min(F.when(is_end, F.col("t"))).over(after)})
              .filter(F.col("s").isNotNull())
              .select("run_id", "topic", "s",   # (greatest skips nulls: an open interval needs the when)
                      F.when(F.col("e").isNull(), F.greatest(F.col("s"), self.meta("span")))
                      .otherwise(F.greatest("s", "e")).alias("e")))
        order = Window.partitionBy("run_id", "topic").orderBy("s", "e")
        reach = F.max("e").over(order.rowsBetween(Window.unboundedPreceding, -1))
        iv = iv.withColumn("new", F.when(reach.isNull() | (F.col("s") > reach), 1).otherwise(0))
        iv = iv.withColumn("island", F.sum("new").over(order.rowsBetween(Window.unboundedPreceding, 0)))
        islands = iv.groupBy("run_id", "topic", "island").agg(F.min("s").alias("s"), F.max("e").alias("e"))
        W = float(self.o.window)
        t0, last = self.meta("t0"), self.meta("n_windows") - 1
        first_w = F.least(F.greatest(F.floor((F.col("s") - t0) / W).cast("int"), F.lit(0)), last)
        last_w = F.least(F.greatest(F.floor((F.col("e") - t0) / W).cast("int"), F.lit(0)), last)
        spread = islands.withColumn("window", F.explode(F.concat(F.array(F.lit(RUN_SCOPE)),
                                                                 F.sequence(first_w, last_w))))
        start, end = self.scope_bounds()
        spread = spread.withColumns({"start": start, "end": end})
        spread = spread.withColumn("seconds", F.greatest(
            F.lit(0.0), F.least("e", "end") - F.greatest("s", "start")))
        per_topic = spread.groupBy("run_id", "window", "topic").agg(
            F.sum("seconds").alias("unavailable_seconds"))
        return per_topic.filter(F.col("unavailable_seconds") > 0)

    def outage_kpis(self, topics: "DataFrame") -> "DataFrame":
        F = self.F
        x = F.col("unavailable_seconds")
        return topics.groupBy("run_id", "window").agg(
            F.count("topic").alias("unavailable_topics"), F.sum(x).alias("unavailable_topic_seconds"),
            F.percentile(x, 0.5).alias("unavailable_topic_seconds_p50"),
            F.percentile(x, 0.99).alias("unavailable_topic_seconds_p99"),
            F.max(x).alias("unavailable_topic_seconds_max"))

    # -------------------------------------------------------------- time to balance

    def balance_events(self, ticks: "DataFrame") -> "DataFrame":
        F, Window = self.F, self.Window
        hold = 60.0 * float(self.o.balance_minutes)
        bound = float(self.o.balance_bound)
        after = Window.partitionBy("run_id").orderBy("t").rowsBetween(0, Window.unboundedFollowing)
        q = ticks.select("run_id", "t", "usage_range") \
            .withColumn("next_bad", F.min(F.when(F.col("usage_range") >= bound, F.col("t"))).over(after)) \
            .withColumn("last_t", F.max("t").over(Window.partitionBy("run_id")))
        q = q.filter((F.col("last_t") >= F.col("t") + hold)
                     & (F.col("next_bad").isNull() | (F.col("next_bad") > F.col("t") + hold)))
        q = q.select(F.col("run_id").alias("q_run"), F.col("t").alias("tick"))
        ev = self.events.filter(F.col("kind") == "scenario_event").select(
            "run_id", "t", "event", F.col("raw").alias("detail"))
        ev = ev.withColumn("seq", F.row_number().over(Window.partitionBy("run_id").orderBy("t", "detail")))
        j = ev.join(q, (F.col("run_id") == F.col("q_run")) & (F.col("tick") >= F.col("t")), "left")
        out = j.groupBy("run_id", "seq", "t", "event", "detail").agg(F.min("tick").alias("balanced_at"))
        return out.withColumn("time_to_balance", F.col("balanced_at") - F.col("t"))

    def balance_event_kpis(self, be: "DataFrame") -> "DataFrame":
        F = self.F
        return self._scoped(be).groupBy("run_id", "window").agg(
            F.count("t").alias("scenario_events"),
            F.avg("time_to_balance").alias("time_to_balance_mean"),
            F.max("time_to_balance").alias("time_to_balance_max"),
            F.sum(F.when(F.col("balanced_at").isNull(), 1).otherwise(0)).alias("events_never_balanced"))

    # -------------------------------------------------------------- assembly

    def tables(self, pool: Executor | None = None,
               ready: Callable[[dict[str, "DataFrame"]], None] | None = None
               ) -> tuple[list[dict[str, Any]], dict[str, "DataFrame"]]:
        """The run rows (collected; the window rows are left in `window_rows`) and the tables Spark
        writes from its own frames (all but runs, windows and comparison).

        The KPI families are aggregated by Spark to one row per (run, scope), collected (side by side
        on `pool`) and joined in the driver: a runs-by-windows table is small, and one plan joining
        seven aggregates cost seconds of planning and a broadcast job per join. `ready(tables)` is
        called as soon as the tables' inputs are cached, before the collects: their writes can run
        beside the KPIs (on two cores a third of the roll-up's time, measured, was one core idle)."""
        fill = self._filled(pool)
        fill(self.samples, self.decisions, self.events)
        bu = self._keep(self.broker_usage())
        topics = self._keep(self.topic_outages())
        fill(bu, topics)
        ticks = fill(self._keep(self.ticks(bu)))
        per = self._keep(self.per_broker(bu, ticks))
        be = self._keep(self.balance_events(ticks))
        fill(per, be)
        tables = self._spark_tables(bu, ticks, per, topics, be)
        if ready is not None:
            ready(tables)
        parts = (self.balance(ticks), self.broker_kpis(per), self.decision_kpis(), self.counter_kpis(),
                 self.reconnect_kpis(), self.outage_kpis(topics), self.balance_event_kpis(be))
        collected = list((pool.map if pool is not None else map)(lambda df: df.collect(), parts))
        run_rows, window_rows = self._assemble(collected)
        self.window_rows = window_rows
        return run_rows, tables

    def _spark_tables(self, bu: "DataFrame", ticks: "DataFrame", per: "DataFrame", topics: "DataFrame",
                      be: "DataFrame") -> dict[str, "DataFrame"]:
        """The tables Spark writes from its own frames, in their columns and order."""
        F = self.F
        cfg = self.with_config
        brokers = cfg(per.filter(F.col("window") == RUN_SCOPE).drop("window")).select(
            "run_id", "config", "seed", "broker", "usage_mean", "usage_max", "overloaded_seconds",
            "uptv", "dntv", "runs", "tdtv", "tdtv_pct").orderBy("run_id", "broker")
        return {
            "brokers": brokers,
            "balance_events": cfg(be).select(
                "run_id", "config", "seed", "seq", "t", "event", "detail", "balanced_at",
                "time_to_balance").orderBy("run_id", "seq"),
            "ticks": cfg(ticks).select(
                "run_id", "config", "seed", "t", "brokers", "usage_max", "usage_min", "usage_mean",
                "usage_std", "usage_range", "usage_max_over_mean", "usage_cv", "msg_rate_ratio",
                "throughput_ratio").orderBy("run_id", "t"),
            "broker_usage": cfg(bu).select(
                "run_id", "config", "seed", "t", "broker", "usage", "msg_rate", "throughput")
            .orderBy("run_id", "t", "broker"),
            "topics": cfg(topics.filter(F.col("window") == RUN_SCOPE)).select(
                "run_id", "config", "seed", "topic", "unavailable_seconds").orderBy("run_id", "topic"),
            "publish": self.publish_latency(),
        }

    def _assemble(self, parts: Sequence[Sequence[Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Scope rows + every family's columns; counts absent from a scope are 0; per-hour rates."""
        by_scope: dict[tuple[str, int], dict[str, Any]] = {
            (r["run_id"], r["window"]): dict(r) for r in self.scope_rows}
        for part in parts:
            for row in part:
                d = row.asDict()
                target = by_scope.get((d.pop("run_id"), d.pop("window")))
                if target is not None:
                    target.update(d)
        meta = {m["run_id"]: m for m in self.meta_rows}
        runs: list[dict[str, Any]] = []
        windows: list[dict[str, Any]] = []
        for (run_id, window), row in by_scope.items():
            for k in ("ticks", "brokers", *_ZERO_IF_ABSENT):
                if row.get(k) is None:
                    row[k] = 0.0 if k in _DOUBLE_COUNTS else 0
            seconds = row["end"] - row["start"]
            hours = seconds / 3600.0 if seconds > 0 else None
            m = meta[run_id]
            row.update(unloads_per_hour=None if hours is None else row["unloads"] / hours,
                       splits_per_hour=None if hours is None else row["splits"] / hours,
                       window_seconds=seconds, scenario=m["scenario"], seed=m["seed"], config=m["config"],
                       placement=m["placement"], shedder=m["shedder"], complete=m["complete"])
            if window == RUN_SCOPE:
                runs.append({k: row.get(k) for k in RUN_COLUMNS if k != "span_seconds"}
                            | {"span_seconds": row["span"]})
            else:
                windows.append({k: row.get(k) for k in WINDOW_COLUMNS if k not in ("window_start", "window_end")}
                               | {"window_start": row["start"], "window_end": row["end"]})
        runs.sort(key=lambda r: (r["config"], r["seed"], r["run_id"]))
        windows.sort(key=lambda r: (r["run_id"], r["window"]))
        return [{k: r[k] for k in RUN_COLUMNS} for r in runs], [{k: r[k] for k in WINDOW_COLUMNS} for r in windows]

    def publish_latency(self) -> "DataFrame":
        """publish.jsonl as it is: the run's cluster line (scope "cluster", topic null) and one line per
        topic (scope "topic"); `failed` = the three failure counts summed."""
        F = self.F
        p = self.publish
        cluster = F.col("topic") == ""
        return (self.with_config(p)
                .withColumns({"scope": F.when(cluster, "cluster").otherwise("topic"),
                              "topic": F.when(cluster, F.lit(None)).otherwise(F.col("topic")),
                              "failed": F.col("failed_timeout") + F.col("failed_queue_full")
                              + F.col("failed_closed")})
                .select(*PUBLISH_COLUMNS).orderBy("run_id", F.col("scope").asc(), "topic"))


def compute(spark: "SparkSession", runs: Sequence[Run], options: RollupOptions | None = None,
            frames: Frames | None = None) -> tuple[list[dict[str, Any]], dict[str, "DataFrame"], "_Job"]:
    """The run rows and the roll-up's tables (the comparison is built from the run rows, see
    `rollup()`), and the job: `job.samples` (cached) and `job.release()` to free its cache."""
    job = _Job(spark, runs, options or RollupOptions(), frames)
    run_rows, tables = job.tables()
    return run_rows, tables, job


def driver_tables(spark: "SparkSession", run_rows: Sequence[Mapping[str, Any]],
                  window_rows: Sequence[Mapping[str, Any]], cmp_rows: Sequence[Mapping[str, Any]],
                  staging: Path) -> dict[str, "DataFrame"]:
    """The runs, windows and comparison tables from the driver's rows."""
    return {"runs": rows_frame(spark, _column_kinds(RUN_COLUMNS), run_rows, staging),
            "windows": rows_frame(spark, _column_kinds(WINDOW_COLUMNS), window_rows, staging),
            "comparison": rows_frame(spark, comparison_fields(KPI_COLUMNS), cmp_rows, staging)}


def write_tables(tables: Mapping[str, "DataFrame"], out_dir: str | Path, pool: Executor | None = None) -> None:
    """Each table to parquet/<name>/ and csv/<name>/ (one part, header, RFC 4180 quoting); the tables
    side by side on `pool` (Spark runs jobs of several threads at once: the cores stay busy while the
    driver plans the next table)."""
    for f in submit_writes(tables, out_dir, pool):
        f.result()


def submit_writes(tables: Mapping[str, "DataFrame"], out_dir: str | Path, pool: Executor | None = None
                  ) -> list["Future[None]"]:
    """`write_tables` started on `pool` (or done now, without one): the futures of its writes."""
    out = Path(out_dir)

    def write(name: str, df: "DataFrame") -> None:
        df = df.cache()  # computed once for both formats
        df.write.mode("overwrite").parquet(str(out / "parquet" / name))
        (df.coalesce(1).write.mode("overwrite").option("header", True).option("escape", '"')
         .option("nullValue", "").csv(str(out / "csv" / name)))
        df.unpersist()

    if pool is None:
        for name, df in tables.items():
            write(name, df)
        return []
    return [pool.submit(write, name, df) for name, df in tables.items()]


def input_bytes(runs: Sequence[Run]) -> int:
    """Bytes of the recorded files a roll-up reads (what Spark is sized to)."""
    from emulator.observe.recording_files import find as find_recording_file

    total = 0
    for r in runs:
        for name in (SAMPLES_FILE, DECISIONS_FILE, EVENTS_FILE, PUBLISH_FILE):
            path = find_recording_file(r.path, name)   # name.gz or name
            total += path.stat().st_size if path is not None else 0
    return total


# ====================================================================== entry points

THREADS = 4
"""Spark jobs the driver keeps in flight at once (collects, table writes)."""


def rollup(run_dirs: Sequence[str | Path], out_dir: str | Path, *, master: str | None = DEFAULT_MASTER,
           spark: "SparkSession | None" = None, options: RollupOptions | None = None,
           labels: Mapping[str, str] | None = None, show: bool = True,
           conf: Mapping[str, str] | None = None) -> RollupResult:
    """Roll up recorded runs into `out_dir`; print the console table when `show`.

    With `spark` given, or a session already active, that session is used and left running; otherwise
    one is started on `master` (with `conf`, Spark settings) and stopped at the end. `labels` (run
    folder -> configuration label) override run.json's grid."""
    runs = load_runs(run_dirs, labels)
    return rollup_runs(runs, out_dir, master=master, spark=spark, options=options, show=show, conf=conf,
                       size=input_bytes(runs))


def rollup_runs(runs: Sequence[Run], out_dir: str | Path, *, master: str | None = DEFAULT_MASTER,
                spark: "SparkSession | None" = None, options: RollupOptions | None = None,
                show: bool = True, conf: Mapping[str, str] | None = None, size: int | None = None,
                frames: Callable[["SparkSession"], Frames] | None = None,
                extra_counters: Mapping[str, str] | None = None,
                unavailable: Mapping[str, str] | None = None) -> RollupResult:
    """`rollup()` of described runs; `frames(spark)` gives their inputs when they are not recording
    folders. `size`: input bytes, to size Spark to. `extra_counters` (KPI -> counter sample name) and
    `unavailable` (KPI -> why the source cannot give it: None in every row, the reasons in
    UNAVAILABLE_FILE) are for sources other than recordings (`prometheus.py`)."""
    started = time.perf_counter()
    if frames is None:
        warn_cut(runs)
    options = options or RollupOptions()
    if not isinstance(options, RollupOptions):
        raise TypeError(f"options = {options!r}: expected a RollupOptions")
    if not isinstance(out_dir, (str, Path)) or not str(out_dir):
        raise ValueError(f"out_dir = {out_dir!r}: expected a folder path")
    phases: dict[str, float] = {}
    lap = _lap(phases)
    with ExitStack() as stack:
        if spark is None:
            spark = stack.enter_context(spark_session(master, conf={**launch_conf(master, size), **(conf or {})}))
            lap("session")
            started = time.perf_counter()  # the figure is "after session start"
        stack.enter_context(sized_to(spark, size))
        pool = stack.enter_context(ThreadPoolExecutor(THREADS, thread_name_prefix="rollup"))
        writers = stack.enter_context(ThreadPoolExecutor(THREADS, thread_name_prefix="rollup-write"))
        job = _Job(spark, runs, options, frames(spark) if frames is not None else None, extra_counters)
        stack.callback(job.release)
        lap("read")
        writes: list[Future[None]] = []
        run_rows, _ = job.tables(pool, ready=lambda t: writes.extend(submit_writes(t, out_dir, writers)))
        lap("kpis")
        null_kpis([*run_rows, *job.window_rows], unavailable or {})
        cmp_rows = comparison_rows(run_rows, KPI_COLUMNS)
        staging = Path(out_dir) / "_staging"
        stack.callback(shutil.rmtree, staging, True)
        writes += submit_writes(driver_tables(spark, run_rows, job.window_rows, cmp_rows, staging), out_dir, writers)
        for f in writes:
            f.result()
        write_unavailable(out_dir, unavailable)
        lap("write")
        n_samples = job.sample_count
        wall = time.perf_counter() - started
        rss = jvm_peak_rss_bytes(spark)
    result = RollupResult(out_dir=str(out_dir), runs=run_rows, comparison=cmp_rows, samples=n_samples,
                          wall_seconds=wall, samples_per_second=n_samples / wall if wall > 0 else 0.0,
                          jvm_peak_rss_bytes=rss, phases=phases)
    if show:
        from emulator.pipeline.tables import format_comparison, format_runs

        print(format_runs(run_rows))
        if any(r.get("runs", 0) > 1 for r in cmp_rows):  # else it would repeat the runs table
            print()
            print(format_comparison(cmp_rows))
        spent = "".join(f"; {name} {seconds:.1f} s" for name, seconds in phases.items())
        print(f"\nrolled up {len(run_rows)} run(s), {n_samples:,} samples in {wall:.1f} s "
              f"({result.samples_per_second:,.0f} samples/s{spent}) -> {out_dir}")
    return result


def build_arg_parser(prog: str = "rollup.py") -> argparse.ArgumentParser:
    """The job's own arguments under spark-submit: as `pulsar-lb-emulator rollup`, but no default
    master, so spark-submit's --master decides."""
    p = argparse.ArgumentParser(prog=prog, description="Roll up recorded runs into KPI tables (PySpark).")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="recording folders")
    p.add_argument("--out", default="rollup", help="output folder (default ./rollup)")
    add_rollup_options(p, master_default=None)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """`spark-submit rollup.py RUN_DIR... --out DIR`: no master unless given, so spark-submit decides."""
    args = build_arg_parser().parse_args(argv)
    try:
        rollup(args.run_dirs, args.out, master=args.master, options=options_from_args(args),
               conf=conf_from_args(args))
    except (UsageError, ValueError) as e:
        sys.stderr.write(f"rollup: error: {e}\n")
        return 2
    return 0


if __name__ == "__main__":  # spark-submit .../rollup.py: run the installed module, not a __main__ copy
    from emulator.pipeline.rollup import main as _installed_main

    sys.exit(_installed_main())
