"""The roll-up: KPIs of recorded runs, per run and per run and time window, as a PySpark job.

    pulsar-lb-emulator rollup RUN_DIR... [--out DIR] [--window 10m] [--master local[*]]
    spark-submit emulator/pipeline/rollup.py RUN_DIR... --out DIR        # any Spark cluster

Input: recording folders (`recording.py`). Output under `--out`: each table as Parquet
(`parquet/<table>/`) and CSV with a header (`csv/<table>/part-*.csv`, one part), and a console table.
In local mode the driver writes the small tables itself, the same files (`table_files.py`).

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
from emulator.pipeline.table_files import (DRIVER_ROWS, Field, driver_writes, preload, small_enough,
                                           spark_fields, spark_schema_json, write_table)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# the series the KPIs read, named once (the expectations' timeline reads the same ones)
COUNTERS: Mapping[str, str] = {k: v for k, v in _TIMELINE_COUNTERS.items() if not k.startswith("publish_")}
RUN_SCOPE = -1  # the `window` value of the whole-run scope
_FAMILY = "_kpi_family"  # in `_Job._families`: which family a row comes from
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
    return samples.filter(f"t IS NOT NULL AND name IS NOT NULL AND value IS NOT NULL AND name IN ({_in(*names)})")


def scanned_lines(df: "DataFrame") -> int | None:
    """The lines the file scans of cached `df` read when it was filled (filled first: no job here):
    Spark's own count (`numOutputRows` of each FileSourceScanExec), so the samples are counted in the
    pass that parses them, not in a second scan (`sample_stats`: a second cold job, 2-4 s of a
    recorded hour's roll-up, measured). None when the plan has no such scan to read (then
    `sample_stats` counts)."""
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

    schema = T.StructType.fromJson(json.loads(spark_schema_json(fields)))
    staging.mkdir(parents=True, exist_ok=True)
    path = staging / f"{len(list(staging.iterdir()))}.jsonl"
    with path.open("w") as f:
        for r in rows:
            f.write(json.dumps({n: r.get(n) for n, _ in fields}) + "\n")
    return spark.read.schema(schema).option("allowNonNumericNumbers", True).json(str(path))


def _in(*values: Any) -> str:
    """The list of an SQL `IN (...)`."""
    return ", ".join(sql_literal(v) for v in values)


def _fill(df: "DataFrame", after: Sequence["Future[Any]"]) -> None:
    """Compute cached `df` once the frames it reads are (`after`). In dependency order: two jobs that
    read a cached frame not yet filled both compute it (Spark's block manager keeps the first and
    drops the other, "Block rdd_N already exists", seen in a recorded hour's roll-up); started as soon
    as their inputs are there, the fills run while the driver plans the rest."""
    for f in after:
        f.result()
    df.count()


UNSPLIT_BYTES = 4 << 20
"""A plain file up to this size is one partition of a scan (Spark's `spark.sql.files.openCostInBytes`:
no split is smaller); a gzip file is never split."""


def one_partition(df: "DataFrame", files: Sequence[str] | None = None) -> tuple["DataFrame", bool]:
    """`df` said to be one partition when it is one, and whether it is: read from one file (`files`)
    that Spark does not split, or, for a frame of other origin, counted on its RDD (planned, no job;
    0.6 s of a cold planner for a recording's samples, hence the files). `coalesce(1)` costs nothing
    over one partition and tells the planner so (SinglePartition): every grouping, window and join over
    the frame then needs no shuffle. A recorded hour's roll-up ran 47 stages, 20 since, the same
    tables byte for byte."""
    if files is not None:
        single = len(files) == 1 and (files[0].endswith(".gz") or Path(files[0]).stat().st_size <= UNSPLIT_BYTES)
    else:
        try:
            single = int(df._jdf.queryExecution().toRdd().getNumPartitions()) == 1
        except Exception:  # noqa: BLE001 - Spark's internals moved: leave the frame as it is
            single = False
    return (df.coalesce(1), True) if single else (df, False)


def _ordered(df: "DataFrame", *columns: str, single: bool = False) -> "DataFrame":
    """`df` sorted by `columns` in one partition: what a table's CSV is written from anyway (one part),
    and its Parquet then too. `orderBy` would range-partition it, which costs a sampling job of its
    own per table before the write (six cold jobs of a recorded hour's roll-up, measured). `single`:
    `df` is one partition already (`one_partition`), kept without a shuffle."""
    return (df.coalesce(1) if single else df.repartition(1)).sortWithinPartitions(*columns)


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
        from pyspark.sql import functions as F

        self.F, self.spark, self.o, self.runs = F, spark, options, runs
        self.counters = counter_kpis_of(extra_counters)
        self._cached: list["DataFrame"] = []
        self._single: list[bool] = []   # of each source given to `_one_partition`
        self._exprs: dict[Any, Any] = {}
        # cached frames are filled by jobs started as soon as what they read is planned (`fill`)
        self._fills = ThreadPoolExecutor(8, thread_name_prefix="rollup-fill")
        if frames is None:
            names = (*SAMPLE_NAMES, *(n for n in self.counters.values() if n not in SAMPLE_NAMES))
            raw = self._keep(self._one_partition(read_samples(spark, runs, names), _paths(runs, SAMPLES_FILE)))
            # filtered over the cache, not cached again: a second cache of the same rows cost its own
            # build on the critical path (about 1 s of a recorded hour's roll-up, measured)
            self.samples = valid_samples(raw, names)
            self.samples_filled = self.fill(raw)   # the largest job: started before the rest is planned
            frames = Frames(samples=self.samples,
                            decisions=read_decisions(spark, runs), events=read_events(spark, runs),
                            publish=read_publish(spark, runs))
            files: dict[str, list[str] | None] = {n: _paths(runs, n) for n in (DECISIONS_FILE, EVENTS_FILE,
                                                                              PUBLISH_FILE)}
            # every run finished: the lines are counted by the scan that fills `raw` (`sample_count`)
            stats = sample_stats(spark, runs) if any(r.info.emulated_end is None for r in runs) else None
            self._raw = raw
        else:
            stats = {r["run_id"]: (r["n"], r["t_max"]) for r in frames.samples.groupBy("run_id").agg(
                F.count("t").alias("n"), F.max("t").alias("t_max")).collect()}
            self.samples = self._keep(self._one_partition(frames.samples))
            self.samples_filled = self.fill(self.samples)
            files = dict.fromkeys((DECISIONS_FILE, EVENTS_FILE, PUBLISH_FILE))
        self.decisions = self._keep(self._one_partition(frames.decisions, files[DECISIONS_FILE]))
        self.events = self._keep(self._one_partition(frames.events, files[EVENTS_FILE]))
        self.events_filled, self.decisions_filled = self.fill(self.events), self.fill(self.decisions)
        self.single = all(self._single)   # samples, decisions and events: so is every frame made of them
        self.publish, self.publish_single = one_partition(frames.publish, files[PUBLISH_FILE])
        self._sample_count = None if stats is None else sum(n for n, _ in stats.values())
        open_ended = [r.run_id for r in runs if r.info.emulated_end is None]
        t_max = {rid: t for rid, (_, t) in (stats or {}).items()}
        if open_ended:   # a run that did not finish ends at the last time in any of its files
            for df in (self.decisions, self.events):
                for row in df.filter(F.col("run_id").isin(*open_ended)).groupBy("run_id") \
                        .agg(F.max("t").alias("t")).collect():
                    t_max[row["run_id"]] = max(t_max.get(row["run_id"]) or row["t"], row["t"])
        self.meta_rows = meta_rows(runs, t_max, float(options.window))
        self.scope_rows = scope_rows(self.meta_rows, float(options.window))

    @property
    def sample_count(self) -> int:
        """Lines in the runs' samples.jsonl (read from the scan that filled the samples when every run
        finished; counted by a scan of its own otherwise, or when Spark's plan does not tell)."""
        if self._sample_count is None:
            self.samples_filled.result()
            lines = scanned_lines(self._raw)
            if lines is None:
                lines = sum(n for n, _ in sample_stats(self.spark, self.runs).values())
            self._sample_count = lines
        return self._sample_count

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
        def sql(which: str) -> str:
            t0, span, w = self.meta_sql("t0"), self.meta_sql("span"), sql_literal(float(self.o.window))
            if which == "start":
                return f"CASE WHEN `window` = {RUN_SCOPE} THEN {t0} ELSE {t0} + `window` * {w} END"
            return f"CASE WHEN `window` = {RUN_SCOPE} THEN {span} ELSE least({t0} + (`window` + 1) * {w}, {span}) END"
        return self._expr(("bounds", "start"), lambda: sql("start")), self._expr(("bounds", "end"), lambda: sql("end"))

    def _sql(self, **columns: str) -> list[Any]:
        """`name="SQL"` as aliased columns. The KPIs are written in SQL text: one py4j round trip per
        column, where `functions` calls take three per node (the roll-up of a recorded hour made
        10,000 round trips, each a reflective lookup in the JVM, measured)."""
        return [self.F.expr(f"{sql} AS `{name}`") for name, sql in columns.items()]

    def with_config(self, df: "DataFrame") -> "DataFrame":
        """The run's configuration label and seed beside its run_id."""
        return df.withColumns({"config": self.meta("config"), "seed": self.meta("seed")})

    def _one_partition(self, df: "DataFrame", files: Sequence[str] | None = None) -> "DataFrame":
        """`one_partition(df, files)`, noting whether it was one."""
        df, single = one_partition(df, files)
        self._single.append(single)
        return df

    def _keep(self, df: "DataFrame") -> "DataFrame":
        """Cache a frame several tables read; `release()` frees them all."""
        self._cached.append(df.cache())
        return df

    def fill(self, df: "DataFrame", *after: "Future[Any]") -> "Future[None]":
        """Start computing cached `df` once the frames it reads are (`after`); see `_fill`."""
        return self._fills.submit(_fill, df, after)

    def release(self) -> None:
        self._fills.shutdown(wait=True)
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
        s = self.samples.filter(F.expr(f"name IN ({_in(USAGE, *RATE, *THROUGHPUT)})")) \
            .withColumn("broker", F.expr("labels['broker']")).filter("broker IS NOT NULL")
        return s.groupBy("run_id", "t", "broker").agg(*self._sql(
            usage=f"max(CASE WHEN name = {sql_literal(USAGE)} THEN value END)",
            msg_rate=f"sum(CASE WHEN name IN ({_in(*RATE)}) THEN value END)",
            throughput=f"sum(CASE WHEN name IN ({_in(*THROUGHPUT)}) THEN value END)"))

    def ticks(self, bu: "DataFrame") -> "DataFrame":
        """Per (run, t) with some usage: the spread of usage, msg rate and throughput over the brokers
        that have each figure (aggregates skip nulls: one aggregation, not three and two joins)."""
        F = self.F
        return bu.groupBy("run_id", "t").agg(*self._sql(
            brokers="count(usage)", usage_max="max(usage)", usage_min="min(usage)", usage_mean="avg(usage)",
            usage_std="stddev_pop(usage)", rate_max="max(msg_rate)", rate_min="min(msg_rate)",
            throughput_max="max(throughput)", throughput_min="min(throughput)",
        )).filter("brokers > 0").withColumns({
            "usage_range": F.expr("usage_max - usage_min"),
            "usage_max_over_mean": F.expr("CASE WHEN usage_mean > 0 THEN usage_max / usage_mean END"),
            "usage_cv": F.expr("CASE WHEN usage_mean > 0 THEN usage_std / usage_mean END"),
            "msg_rate_ratio": F.expr("CASE WHEN rate_min > 0 THEN rate_max / rate_min END"),
            "throughput_ratio": F.expr("CASE WHEN throughput_min > 0 THEN throughput_max / throughput_min END"),
        })

    def balance(self, ticks: "DataFrame") -> "DataFrame":
        return self._scoped(ticks).groupBy("run_id", "window").agg(*self._sql(
            ticks="count(t)", balance_max_over_mean="avg(usage_max_over_mean)",
            balance_range="avg(usage_range)", balance_range_max="max(usage_range)",
            balance_std="avg(usage_std)", balance_cv="avg(usage_cv)",
            msg_rate_max_min_ratio="avg(msg_rate_ratio)", throughput_max_min_ratio="avg(throughput_ratio)"))

    # -------------------------------------------------------------- per broker: overload, thrashing

    def per_broker(self, bu: "DataFrame", ticks: "DataFrame") -> "DataFrame":
        F = self.F
        grid = ticks.select("run_id", "t").withColumn("next_t", F.expr(
            f"coalesce(lead(t) OVER (PARTITION BY run_id ORDER BY t), {self.meta_sql('span')})"))
        u = bu.filter("usage IS NOT NULL").select("run_id", "t", "broker", "usage") \
            .join(grid, ["run_id", "t"]).withColumn("overload_threshold", self.meta("overload_threshold"))
        u = self._scoped(u)
        start, end = self.scope_bounds()
        u = u.withColumns({"start": start, "end": end})
        order = "PARTITION BY run_id, `window`, broker ORDER BY t"
        dt = "greatest(0.0D, least(next_t, `end`) - t)"
        u = u.withColumns({"over_dt": F.expr(f"CASE WHEN usage >= overload_threshold THEN {dt} ELSE 0.0D END"),
                           "d": F.expr(f"usage - lag(usage) OVER ({order})")}).withColumn("up", F.expr("d >= 0"))
        u = u.withColumn("flip", F.expr(f"CASE WHEN d IS NOT NULL AND lag(d) OVER ({order}) IS NOT NULL "
                                        f"AND up != lag(up) OVER ({order}) THEN 1 ELSE 0 END"))
        per = u.groupBy("run_id", "window", "broker").agg(*self._sql(
            overloaded_seconds="sum(over_dt)", uptv="sum(greatest(d, 0.0D))", dntv="sum(greatest(-d, 0.0D))",
            runs="1 + sum(flip)", usage_mean="avg(usage)", usage_max="max(usage)", usage_min="min(usage)"))
        per = per.fillna(0.0, subset=["uptv", "dntv"])
        lo, hi = "least(uptv, dntv)", "greatest(uptv, dntv)"
        alpha = f"pow({lo} / {hi}, 0.8D)"
        per = per.withColumn("tdtv", F.expr(
            f"CASE WHEN {lo} = 0 THEN 0.0D ELSE {alpha} * (uptv + dntv) + (1 - {alpha}) * {lo} END"))
        norm = per.groupBy("run_id", "window").agg(*self._sql(norm="max(usage_max) - min(usage_min)"))
        norm = norm.withColumn("norm", F.expr("CASE WHEN norm = 0 THEN 1.0D ELSE norm END"))
        return per.join(norm, ["run_id", "window"]).withColumn(
            "tdtv_pct", F.expr("tdtv * 100.0D / norm")).drop("norm")

    def broker_kpis(self, per: "DataFrame") -> "DataFrame":
        return per.groupBy("run_id", "window").agg(*self._sql(
            brokers="count(broker)", overloaded_broker_seconds="sum(overloaded_seconds)",
            overloaded_seconds_max="max(overloaded_seconds)",
            overloaded_brokers="sum(CASE WHEN overloaded_seconds > 0 THEN 1 ELSE 0 END)",
            thrashing_tdtv_pct="avg(tdtv_pct)", thrashing_tdtv="sum(tdtv)"))

    # -------------------------------------------------------------- decisions and counters

    def decision_kpis(self) -> "DataFrame":
        F = self.F
        # timeline.is_load_manager_unload / is_load_manager_split, in SQL
        extensible = "(label = 'Success' AND coalesce(reason != 'Admin', true))"
        is_unload = f"(decision = 'unload' OR (decision = {sql_literal(EXTENSIBLE_UNLOAD)} AND {extensible}))"
        unloads = self.decisions.filter(F.expr(is_unload)).withColumn("grace_seconds", self.meta("grace_seconds"))
        prev = "lag(t) OVER (PARTITION BY run_id, bundle ORDER BY t)"
        unloads = unloads.withColumn("repeat", F.expr(
            f"CASE WHEN {prev} IS NOT NULL AND t - {prev} <= grace_seconds THEN 1 ELSE 0 END"))
        u = self._scoped(unloads).groupBy("run_id", "window").agg(*self._sql(
            unloads="count(t)", repeat_unloads="sum(`repeat`)"))
        split_ok = (f"((decision = 'split' AND coalesce(ok, true)) "
                    f"OR (decision = {sql_literal(EXTENSIBLE_SPLIT)} AND {extensible}))")
        kinds = _in("split", EXTENSIBLE_SPLIT, "bundle_unloaded", "bundle_split")
        counts = self._scoped(self.decisions.filter(F.expr(f"decision IN ({kinds})"))).groupBy(
            "run_id", "window").agg(*self._sql(
                splits=f"sum(CASE WHEN {split_ok} THEN 1 ELSE 0 END)",
                bundles_unloaded="sum(CASE WHEN decision = 'bundle_unloaded' THEN 1 ELSE 0 END)",
                bundles_split="sum(CASE WHEN decision = 'bundle_split' THEN 1 ELSE 0 END)"))
        return u.join(counts, ["run_id", "window"], "full")

    def counter_kpis(self) -> "DataFrame":
        F = self.F
        names = {v: k for k, v in self.counters.items()}
        c = self.samples.filter(F.expr(f"name IN ({_in(*names)})")).withColumn(
            "series", F.expr("to_json(array_sort(map_entries(labels)))"))
        prev = "lag(value) OVER (PARTITION BY run_id, name, series ORDER BY t)"
        c = c.withColumn("inc", F.expr(
            f"CASE WHEN {prev} IS NULL THEN value WHEN value >= {prev} THEN value - {prev} ELSE value END"))
        agg = self._scoped(c).groupBy("run_id", "window").pivot("name", list(names)).agg(F.expr("sum(inc)"))
        return agg.withColumnsRenamed(names)

    # -------------------------------------------------------------- clients

    def reconnect_kpis(self) -> "DataFrame":
        r = self.events.filter("kind = 'handle_reconnected' AND unavailable IS NOT NULL")
        return self._scoped(r).groupBy("run_id", "window").agg(*self._sql(
            reconnects="count(t)", reconnect_latency_mean="avg(unavailable)",
            reconnect_latency_p50="percentile(unavailable, 0.5D)",
            reconnect_latency_p99="percentile(unavailable, 0.99D)", reconnect_latency_max="max(unavailable)"))

    def topic_outages(self) -> "DataFrame":
        """Per (run, scope, topic): seconds during which at least one of the topic's handles was down
        (`emulator/model/outages.py`)."""
        F = self.F
        kinds = _in("handle_disconnected", "handle_failed", "handle_reconnected", "handle_closed")
        ev = self.events.filter(F.expr(f"kind IN ({kinds}) AND topic IS NOT NULL"))
        start = "CASE WHEN kind = 'handle_disconnected' THEN t WHEN kind = 'handle_failed' THEN coalesce(since, t) END"
        after = "PARTITION BY run_id, client, handle ORDER BY t, seq ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING"
        end = f"min(CASE WHEN kind IN ('handle_reconnected', 'handle_closed') THEN t END) OVER ({after})"
        span = self.meta_sql("span")
        iv = (ev.withColumns({"s": F.expr(start), "e": F.expr(end)}).filter("s IS NOT NULL")
              .select("run_id", "topic", "s",   # (greatest skips nulls: an open interval needs the CASE)
                      F.expr(f"CASE WHEN e IS NULL THEN greatest(s, {span}) ELSE greatest(s, e) END AS e")))
        order = "PARTITION BY run_id, topic ORDER BY s, e"
        reach = f"max(e) OVER ({order} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
        iv = iv.withColumn("new", F.expr(f"CASE WHEN {reach} IS NULL OR s > {reach} THEN 1 ELSE 0 END"))
        iv = iv.withColumn("island", F.expr(
            f"sum(`new`) OVER ({order} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"))
        islands = iv.groupBy("run_id", "topic", "island").agg(*self._sql(s="min(s)", e="max(e)"))
        w, t0, last = sql_literal(float(self.o.window)), self.meta_sql("t0"), f"({self.meta_sql('n_windows')} - 1)"
        first_w = f"least(greatest(CAST(floor((s - {t0}) / {w}) AS INT), 0), {last})"
        last_w = f"least(greatest(CAST(floor((e - {t0}) / {w}) AS INT), 0), {last})"
        spread = islands.withColumn("window", F.expr(
            f"explode(concat(array({RUN_SCOPE}), sequence({first_w}, {last_w})))"))
        start_c, end_c = self.scope_bounds()
        spread = spread.withColumns({"start": start_c, "end": end_c})
        spread = spread.withColumn("seconds", F.expr("greatest(0.0D, least(e, `end`) - greatest(s, start))"))
        per_topic = spread.groupBy("run_id", "window", "topic").agg(*self._sql(unavailable_seconds="sum(seconds)"))
        return per_topic.filter("unavailable_seconds > 0")

    def outage_kpis(self, topics: "DataFrame") -> "DataFrame":
        return topics.groupBy("run_id", "window").agg(*self._sql(
            unavailable_topics="count(topic)", unavailable_topic_seconds="sum(unavailable_seconds)",
            unavailable_topic_seconds_p50="percentile(unavailable_seconds, 0.5D)",
            unavailable_topic_seconds_p99="percentile(unavailable_seconds, 0.99D)",
            unavailable_topic_seconds_max="max(unavailable_seconds)"))

    # -------------------------------------------------------------- time to balance

    def balance_events(self, ticks: "DataFrame") -> "DataFrame":
        F = self.F
        hold = sql_literal(60.0 * float(self.o.balance_minutes))
        bound = sql_literal(float(self.o.balance_bound))
        after = "PARTITION BY run_id ORDER BY t ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING"
        q = ticks.select("run_id", "t", "usage_range").withColumns({
            "next_bad": F.expr(f"min(CASE WHEN usage_range >= {bound} THEN t END) OVER ({after})"),
            "last_t": F.expr("max(t) OVER (PARTITION BY run_id)")})
        q = q.filter(F.expr(f"last_t >= t + {hold} AND (next_bad IS NULL OR next_bad > t + {hold})"))
        q = q.select(F.expr("run_id AS q_run"), F.expr("t AS tick"))
        ev = self.events.filter("kind = 'scenario_event'").select("run_id", "t", "event", F.expr("raw AS detail"))
        ev = ev.withColumn("seq", F.expr("row_number() OVER (PARTITION BY run_id ORDER BY t, detail)"))
        j = ev.join(q, F.expr("run_id = q_run AND tick >= t"), "left")
        out = j.groupBy("run_id", "seq", "t", "event", "detail").agg(*self._sql(balanced_at="min(tick)"))
        return out.withColumn("time_to_balance", F.expr("balanced_at - t"))

    def balance_event_kpis(self, be: "DataFrame") -> "DataFrame":
        return self._scoped(be).groupBy("run_id", "window").agg(*self._sql(
            scenario_events="count(t)", time_to_balance_mean="avg(time_to_balance)",
            time_to_balance_max="max(time_to_balance)",
            events_never_balanced="sum(CASE WHEN balanced_at IS NULL THEN 1 ELSE 0 END)"))

    # -------------------------------------------------------------- assembly

    def tables(self, ready: Callable[[dict[str, "DataFrame"]], None] | None = None
               ) -> tuple[list[dict[str, Any]], dict[str, "DataFrame"]]:
        """The run rows (collected; the window rows are left in `window_rows`) and the tables Spark
        writes from its own frames (all but runs, windows and comparison).

        The KPI families are aggregated by Spark to one row per (run, scope), collected in one job
        (`_families`) and joined in the driver: a runs-by-windows table is small, and one plan joining
        seven aggregates cost seconds of planning and a broadcast job per join. `ready(tables)` is
        called once the tables' inputs are cached, right after the KPIs' collect has started: their
        writes run beside it."""
        fill, samples, events = self.fill, self.samples_filled, self.events_filled
        bu = self._keep(self.broker_usage())
        topics = self._keep(self.topic_outages())
        bu_f, topics_f = fill(bu, samples), fill(topics, events)
        ticks = self._keep(self.ticks(bu))
        ticks_f = fill(ticks, bu_f)
        per = self._keep(self.per_broker(bu, ticks))
        be = self._keep(self.balance_events(ticks))
        filled = [samples, events, self.decisions_filled, bu_f, topics_f, ticks_f, fill(per, ticks_f),
                  fill(be, ticks_f, events)]
        tables = self._spark_tables(bu, ticks, per, topics, be)
        union, columns = self._families(
            self.balance(ticks), self.broker_kpis(per), self.decision_kpis(), self.counter_kpis(),
            self.reconnect_kpis(), self.outage_kpis(topics), self.balance_event_kpis(be))  # planned during the fills
        for f in filled:
            f.result()
        # the KPIs first: the run rows and the driver's tables wait on them, the Spark tables' writes do not
        collected = self._fills.submit(union.collect)
        if ready is not None:
            ready(tables)
        run_rows, window_rows = self._assemble(
            [{c: row[c] for c in columns[row[_FAMILY]]} for row in collected.result()])
        self.window_rows = window_rows
        return run_rows, tables

    def _ordered(self, df: "DataFrame", *columns: str) -> "DataFrame":
        return _ordered(df, *columns, single=self.single)

    def _spark_tables(self, bu: "DataFrame", ticks: "DataFrame", per: "DataFrame", topics: "DataFrame",
                      be: "DataFrame") -> dict[str, "DataFrame"]:
        """The tables Spark writes from its own frames, in their columns and order."""
        cfg = self.with_config
        brokers = cfg(per.filter(f"`window` = {RUN_SCOPE}").drop("window")).select(
            "run_id", "config", "seed", "broker", "usage_mean", "usage_max", "overloaded_seconds",
            "uptv", "dntv", "runs", "tdtv", "tdtv_pct").transform(self._ordered, "run_id", "broker")
        return {
            "brokers": brokers,
            "balance_events": cfg(be).select(
                "run_id", "config", "seed", "seq", "t", "event", "detail", "balanced_at",
                "time_to_balance").transform(self._ordered, "run_id", "seq"),
            "ticks": cfg(ticks).select(
                "run_id", "config", "seed", "t", "brokers", "usage_max", "usage_min", "usage_mean",
                "usage_std", "usage_range", "usage_max_over_mean", "usage_cv", "msg_rate_ratio",
                "throughput_ratio").transform(self._ordered, "run_id", "t"),
            "broker_usage": cfg(bu).select(
                "run_id", "config", "seed", "t", "broker", "usage", "msg_rate", "throughput")
            .transform(self._ordered, "run_id", "t", "broker"),
            "topics": cfg(topics.filter(f"`window` = {RUN_SCOPE}")).select(
                "run_id", "config", "seed", "topic", "unavailable_seconds").transform(self._ordered, "run_id", "topic"),
            "publish": self.publish_latency(),
        }

    def _families(self, *parts: "DataFrame") -> tuple["DataFrame", list[list[str]]]:
        """The KPI families side by side as one frame, to collect in one job (seven collects cost seven
        cold jobs, about 1 s more of a recorded hour's roll-up, measured): a union where each row is
        tagged with its family's index (`_FAMILY`) and the columns its family lacks are null; and each
        family's columns, to take a row's own."""
        tagged = [df.withColumn(_FAMILY, self.F.lit(i)) for i, df in enumerate(parts)]
        union = tagged[0]
        for df in tagged[1:]:
            union = union.unionByName(df, allowMissingColumns=True)
        return union, [df.columns for df in parts]

    def _assemble(self, rows: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Scope rows + every family's columns; counts absent from a scope are 0; per-hour rates."""
        by_scope: dict[tuple[str, int], dict[str, Any]] = {
            (r["run_id"], r["window"]): dict(r) for r in self.scope_rows}
        for row in rows:
            d = dict(row)
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
        return (self.with_config(p)
                .withColumns({"scope": F.expr("CASE WHEN topic = '' THEN 'cluster' ELSE 'topic' END"),
                              "topic": F.expr("CASE WHEN topic = '' THEN NULL ELSE topic END"),
                              "failed": F.expr("failed_timeout + failed_queue_full + failed_closed")})
                .select(*PUBLISH_COLUMNS).transform(_ordered, "run_id", "scope", "topic", single=self.publish_single))


def compute(spark: "SparkSession", runs: Sequence[Run], options: RollupOptions | None = None,
            frames: Frames | None = None) -> tuple[list[dict[str, Any]], dict[str, "DataFrame"], "_Job"]:
    """The run rows and the roll-up's tables (the comparison is built from the run rows, see
    `rollup()`), and the job: `job.samples` (over a cache) and `job.release()` to free its cache."""
    job = _Job(spark, runs, options or RollupOptions(), frames)
    run_rows, tables = job.tables()
    return run_rows, tables, job


_Rows = Sequence[Mapping[str, Any]]


def driver_rows(run_rows: _Rows, window_rows: _Rows, cmp_rows: _Rows) -> dict[str, tuple[Sequence[Field], _Rows]]:
    """The runs, windows and comparison tables the driver made: their columns and rows."""
    return {"runs": (_column_kinds(RUN_COLUMNS), run_rows),
            "windows": (_column_kinds(WINDOW_COLUMNS), window_rows),
            "comparison": (comparison_fields(KPI_COLUMNS), cmp_rows)}


def driver_tables(spark: "SparkSession", run_rows: Sequence[Mapping[str, Any]],
                  window_rows: Sequence[Mapping[str, Any]], cmp_rows: Sequence[Mapping[str, Any]],
                  staging: Path) -> dict[str, "DataFrame"]:
    """The runs, windows and comparison tables from the driver's rows, as Spark frames."""
    return {name: rows_frame(spark, fields, rows, staging)
            for name, (fields, rows) in driver_rows(run_rows, window_rows, cmp_rows).items()}


def submit_writes(tables: Mapping[str, "DataFrame"], out_dir: str | Path, pool: Executor | None = None,
                  by_driver: bool = False) -> list["Future[None]"]:
    """Each table to parquet/<name>/ and csv/<name>/ (one part, header, RFC 4180 quoting), the tables
    side by side on `pool` (Spark runs jobs of several threads at once: the cores stay busy while the
    driver plans the next table): the futures of the writes; without a pool, written now.
    `by_driver`: a small table (`small_enough`, at most DRIVER_ROWS rows) is collected and written by the
    driver (`table_files.py`, the same files), not by Spark's writers."""
    out = Path(out_dir)

    def write(name: str, df: "DataFrame") -> None:
        if by_driver and small_enough(df):
            rows = df.limit(DRIVER_ROWS + 1).collect()   # a larger table costs this job again below
            if len(rows) <= DRIVER_ROWS:
                write_table(out_dir, name, spark_fields(df.schema), rows)
                return
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
"""Table writes the driver keeps in flight at once."""


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
            preload()   # pyarrow, for the tables the driver writes, while the JVM starts
            spark = stack.enter_context(spark_session(master, conf={**launch_conf(master, size), **(conf or {})}))
            lap("session")
            started = time.perf_counter()  # the figure is "after session start"
        stack.enter_context(sized_to(spark, size))
        writers = stack.enter_context(ThreadPoolExecutor(THREADS, thread_name_prefix="rollup-write"))
        job = _Job(spark, runs, options, frames(spark) if frames is not None else None, extra_counters)
        stack.callback(job.release)
        lap("read")
        writes: list[Future[None]] = []
        by_driver = driver_writes(spark, out_dir)
        run_rows, _ = job.tables(ready=lambda t: writes.extend(submit_writes(t, out_dir, writers, by_driver)))
        lap("kpis")
        null_kpis([*run_rows, *job.window_rows], unavailable or {})
        cmp_rows = comparison_rows(run_rows, KPI_COLUMNS)
        if by_driver:
            writes += [writers.submit(write_table, out_dir, name, fields, rows)
                       for name, (fields, rows) in driver_rows(run_rows, job.window_rows, cmp_rows).items()]
        else:
            staging = Path(out_dir) / "_staging"
            stack.callback(shutil.rmtree, staging, True)
            writes += submit_writes(driver_tables(spark, run_rows, job.window_rows, cmp_rows, staging), out_dir,
                                    writers)
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
