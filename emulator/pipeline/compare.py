"""The comparison table: one row per configuration, mean and 95 % confidence interval over its seeds.

For each KPI of `rollup.KPI_COLUMNS`, over the runs of a configuration where the KPI is defined (n of
them): `<kpi>_mean`, `<kpi>_ci95` = t(0.975, n - 1) * s / sqrt(n) with s the sample standard deviation
(Student t, `scipy.stats`; undefined for n < 2) and `<kpi>_n`.

`kpi_columns` is the same figure per KPI for columns of runs side by side (`compare`, `report`), with
each column's Welch t-test against a baseline column (`emulator.model.stats.welch_p`).

The runs table has one row per run, so it is collected and compared in plain Python: a Spark plan with
three aggregates for each of ~35 KPIs spends seconds in the optimizer to do microseconds of work.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from emulator.model.stats import ALPHA, mean_ci95, significant, welch_p

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


def kpi_columns(columns: Mapping[str, Sequence[Mapping[str, Any]]], kpis: Sequence[str],
                baseline: str | None = None, alpha: float = ALPHA) -> list[dict[str, Any]]:
    """Per KPI, per column label (in `columns`' order): mean, ci95, n over that column's runs, and
    Welch's two-sided p-value against the `baseline` column with `significant` = p < alpha.

    The baseline (default: the first column) has p None and is never significant; so is a column with
    fewer than 2 defined values, or whose test is undefined (`welch_p`). Each column pools only its own
    runs (a configuration's seeds), never another column's."""
    labels = list(columns)
    if baseline is None and labels:
        baseline = labels[0]
    if baseline is not None and baseline not in columns:
        raise ValueError(f"baseline = {baseline!r}: not one of the columns {labels}")
    out: list[dict[str, Any]] = []
    for k in kpis:
        values = {label: [float(r[k]) for r in runs if r.get(k) is not None] for label, runs in columns.items()}
        row: dict[str, Any] = {"kpi": k}
        for label in labels:
            mean, ci = mean_ci95(values[label])
            p = None if label == baseline or baseline is None else welch_p(values[label], values[baseline])
            row[label] = {"mean": mean, "ci95": ci, "n": len(values[label]), "p": p,
                          "significant": significant(p, alpha)}
        out.append(row)
    return out


def config_order(results_csvs: Iterable[Path], configs: Iterable[str]) -> list[str]:
    """`configs` in the order of the first existing sweep `results.csv` among `results_csvs` (its
    `--grid` order, so the first `--grid` value is the baseline), the rest sorted after them; all
    sorted when there is none (a folder that is not a sweep's)."""
    wanted = set(configs)
    ordered: list[str] = []
    for path in results_csvs:
        if path.is_file():
            try:
                with path.open(newline="", encoding="utf-8") as f:
                    for row in csv.DictReader(f):
                        c = row.get("config")
                        if c is not None and c in wanted and c not in ordered:
                            ordered.append(c)
            except (OSError, UnicodeDecodeError, csv.Error):
                ordered = []
            break
    return ordered + sorted(wanted - set(ordered))
