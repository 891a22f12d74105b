"""The comparison table: one row per configuration, mean and 95 % confidence interval over its seeds.

For each KPI of `rollup.KPI_COLUMNS`, over the runs of a configuration where the KPI is defined (n of
them): `<kpi>_mean`, `<kpi>_ci95` = t(0.975, n - 1) * s / sqrt(n) with s the sample standard deviation
(Student t; undefined for n < 2) and `<kpi>_n`.

The runs table has one row per run, so it is collected and compared in plain Python: a Spark plan with
three aggregates for each of ~35 KPIs spends seconds in the optimizer to do microseconds of work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from emulator.model.stats import mean_ci95

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def comparison_rows(runs: Sequence[Mapping[str, Any]], kpis: Sequence[str]) -> list[dict[str, Any]]:
    """Group run rows by `config` (sorted); mean, CI half-width and n of every KPI."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in runs:
        groups.setdefault(str(r["config"]), []).append(r)
    out: list[dict[str, Any]] = []
    for config in sorted(groups):
        rows = groups[config]
        seeds = sorted(int(r["seed"]) for r in rows if r.get("seed") is not None)
        row: dict[str, Any] = {"config": config, "scenario": rows[0].get("scenario"), "runs": len(rows),
                               "seeds": ",".join(map(str, seeds))}
        for k in kpis:
            values = [float(r[k]) for r in rows if r.get(k) is not None]
            mean, ci = mean_ci95(values)
            row[f"{k}_mean"], row[f"{k}_ci95"], row[f"{k}_n"] = mean, ci, len(values)
        out.append(row)
    return out


def comparison_fields(kpis: Sequence[str]) -> list[tuple[str, str]]:
    """(column, type) of the comparison table: config, scenario, runs, seeds, then per KPI mean, ci95, n."""
    fields = [("config", "string"), ("scenario", "string"), ("runs", "long"), ("seeds", "string")]
    for k in kpis:
        fields += [(f"{k}_mean", "double"), (f"{k}_ci95", "double"), (f"{k}_n", "long")]
    return fields


def comparison_frame(spark: "SparkSession", rows: Sequence[Mapping[str, Any]], kpis: Sequence[str]
                     ) -> "DataFrame":
    """The comparison rows as a DataFrame with an explicit schema (written beside the other tables)."""
    from pyspark.sql import types as T

    fields = [T.StructField("config", T.StringType()), T.StructField("scenario", T.StringType()),
              T.StructField("runs", T.LongType()), T.StructField("seeds", T.StringType())]
    for k in kpis:
        fields += [T.StructField(f"{k}_mean", T.DoubleType()), T.StructField(f"{k}_ci95", T.DoubleType()),
                   T.StructField(f"{k}_n", T.LongType())]
    schema = T.StructType(fields)
    return spark.createDataFrame([tuple(r.get(f.name) for f in fields) for r in rows], schema)
