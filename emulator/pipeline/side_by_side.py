"""`compare`: roll-up folders side by side, one row per KPI, one column per configuration.

    pulsar-lb-emulator compare sweep/ [--baseline 'shedder=AvgShedder'] [--out compare/]
    pulsar-lb-emulator compare rollup-emulated/ rollup-prod/

A sweep's configurations next to each other, or an emulated run's roll-up next to a real cluster's
(`rollup --prometheus`), or any roll-ups (a sweep's folder counts: its `rollup/`). Each column is one
configuration of one folder, keyed by its overrides (the runs table's `config`: the `--grid` values,
'placement=X, shedder=Y'; the scenario's name for a seeds-only sweep): one run's value, or with several
(its seeds) the mean and 95 % confidence half-width over them (`compare.kpi_columns`, Student t). A
folder with one configuration is one column named after the folder; a single folder's configurations
are named by their overrides; otherwise 'folder: overrides'. A sweep's configurations keep the order of
its `results.csv` (the `--grid` order), other folders' go sorted.

Each column is tested against the baseline column with Welch's t-test (`scipy.stats.ttest_ind`,
`equal_var=False`: configurations need not share a variance across seeds); p < 0.05 is marked `*`.
The baseline is the first column (a sweep's first `--grid` value, or the first folder given: the
reference the others are read against), or `--baseline LABEL`. Each KPI's test stands alone (no
correction for the ~35 KPIs compared at once: about one in twenty equal KPIs shows `*` by chance).

A KPI a folder's source cannot give (`kpis_unavailable.json`, written by a Prometheus roll-up) is null
there, its reason listed under the table.

Written to `--out`: `compare.csv` (kpi, then one column per configuration: the value or mean) and
`compare.json` (the folders, the columns, the baseline, and per KPI its definition and each column's
mean, ci95, n, p and significant). Reads the CSV tables only: no Spark.

Before issue 30 every folder was one column: `read_input` dropped the runs table's `config` and the
folder's label replaced it, so a sweep's configurations were pooled into one mean.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import msgspec

from emulator.model.errors import UsageError
from emulator.model.kpi_registry import KPIS
from emulator.model.stats import ALPHA
from emulator.pipeline.compare import config_order, kpi_columns
from emulator.pipeline.report import num, read_table
from emulator.pipeline.rollup import KPI_COLUMNS, UNAVAILABLE_FILE
from emulator.pipeline.sweep import RESULTS_CSV
from emulator.pipeline.tables import format_table, mean_ci

__all__ = ["Column", "Input", "SideBySide", "columns_of", "compare_folders", "format_side_by_side", "read_input",
           "side_by_side"]


class Input(msgspec.Struct, kw_only=True):
    """One compared folder: its label, the roll-up folder read, its run rows, its configurations (in
    the sweep's order, else sorted) and null KPIs."""

    label: str
    path: str
    runs: list[dict[str, Any]]
    configs: list[str] = []
    unavailable: dict[str, str] = {}


class Column(msgspec.Struct, kw_only=True):
    """One column of the table: one configuration of one folder, and how many runs (seeds) it pools."""

    label: str
    input: str
    config: str
    runs: int


class SideBySide(msgspec.Struct, kw_only=True):
    inputs: list[Input]
    columns: list[Column]
    baseline: str | None
    rows: list[dict[str, Any]]          # per KPI: kpi, definition, and label -> {mean, ci95, n, p, significant}
    csv: str | None = None
    json: str | None = None


def read_input(folder: str | Path, label: str | None = None) -> Input:
    """A roll-up folder (or a sweep's, whose `rollup/` is read): its runs table with numbers parsed."""
    given = Path(folder)
    root = given
    if not (root / "csv" / "runs").is_dir() and (root / "rollup" / "csv" / "runs").is_dir():
        root = given / "rollup"
    if not (root / "csv" / "runs").is_dir():
        raise UsageError(f"compare: {str(folder)!r}: no csv/runs table there; give the --out folder of "
                         "`rollup` or of `sweep`")
    runs = []
    for row in read_table(root, "runs"):
        runs.append({"run_id": row.get("run_id", ""), "config": row.get("config") or "", "seed": num(row, "seed"),
                     **{k: num(row, k) for k in KPI_COLUMNS}})
    unavailable: dict[str, str] = {}
    path = root / UNAVAILABLE_FILE
    if path.is_file():
        try:
            unavailable = {str(k): str(v) for k, v in json.loads(path.read_text()).items()}
        except (ValueError, AttributeError):
            raise UsageError(f"compare: {path}: not a JSON object of KPI -> reason") from None
    configs = config_order((given / RESULTS_CSV, root.parent / RESULTS_CSV), {str(r["config"]) for r in runs})
    return Input(label=label or given.resolve().name, path=str(root), runs=runs, configs=configs,
                 unavailable=unavailable)


def columns_of(inputs: Sequence[Input]) -> list[Column]:
    """One column per (folder, configuration); see the module docstring for the labels."""
    out: list[Column] = []
    for i in inputs:
        configs = i.configs or sorted({str(r.get("config") or "") for r in i.runs}) or [""]
        for c in configs:
            if len(configs) == 1:
                label = i.label
            elif len(inputs) == 1:
                label = c
            else:
                label = f"{i.label}: {c}"
            n = sum(1 for r in i.runs if len(configs) == 1 or str(r.get("config") or "") == c)
            out.append(Column(label=label, input=i.label, config=c, runs=n))
    return out


def _column_runs(inputs: Sequence[Input], columns: Sequence[Column]) -> dict[str, list[dict[str, Any]]]:
    by_input = {i.label: i for i in inputs}
    out: dict[str, list[dict[str, Any]]] = {}
    for col in columns:
        i = by_input[col.input]
        single = len([c for c in columns if c.input == col.input]) == 1
        out[col.label] = [r for r in i.runs if single or str(r.get("config") or "") == col.config]
    return out


def pick_baseline(columns: Sequence[Column], baseline: str | None) -> str | None:
    """The baseline column's label: `baseline` as a column label or a configuration (one column of
    it), else the first column; UsageError (one line) when it names none."""
    if not columns:
        return None
    if baseline is None:
        return columns[0].label
    labels = [c.label for c in columns]
    if baseline in labels:
        return baseline
    matches = [c.label for c in columns if c.config == baseline]
    if len(matches) == 1:
        return matches[0]
    raise UsageError(f"compare: --baseline = {baseline!r}: not one of the columns "
                     f"({', '.join(repr(label) for label in labels)})")


def side_by_side(inputs: Sequence[Input], kpis: Sequence[str] = KPI_COLUMNS, baseline: str | None = None,
                 columns: Sequence[Column] | None = None) -> list[dict[str, Any]]:
    """Per KPI: its definition and, per column label, mean / ci95 / n over that column's runs and
    Welch's p against the baseline column (`compare.kpi_columns`)."""
    cols = list(columns) if columns is not None else columns_of(inputs)
    base = pick_baseline(cols, baseline)
    rows = kpi_columns(_column_runs(inputs, cols), kpis, base)
    for row in rows:
        kpi = KPIS.get(row["kpi"])
        row["definition"] = kpi.doc if kpi is not None else ""
    return [{"kpi": r["kpi"], "definition": r["definition"], **{c.label: r[c.label] for c in cols}} for r in rows]


def _labels(folders: Sequence[str | Path]) -> list[str]:
    """Folder names, made unique with '#2', '#3' ... in order."""
    out: list[str] = []
    for f in folders:
        name = Path(f).resolve().name or str(f)
        label, n = name, 1
        while label in out:
            n += 1
            label = f"{name}#{n}"
        out.append(label)
    return out


def _cell(value: Mapping[str, Any]) -> str:
    return mean_ci(value["mean"], value["ci95"]) + (" *" if value.get("significant") else "")


def format_side_by_side(inputs: Sequence[Input], rows: Sequence[Mapping[str, Any]],
                        columns: Sequence[Column] | None = None, baseline: str | None = None) -> str:
    """The console table (`*`: differs from the baseline), then the reason of every null that a
    folder's source could not give."""
    cols = list(columns) if columns is not None else columns_of(inputs)
    base = " [baseline]" if len(cols) > 1 else ""
    headers = ["kpi", *(f"{c.label} ({c.runs} run{'s' if c.runs != 1 else ''})"
                        + (base if c.label == baseline else "") for c in cols)]
    body = [[str(r["kpi"]), *(_cell(r[c.label]) for c in cols)] for r in rows]
    text = format_table(headers, body)
    if baseline is not None and len(cols) > 1:
        text += (f"\n\n* differs from the baseline {baseline!r}: Welch's t-test over seeds, two-sided "
                 f"p < {ALPHA:g} (each KPI on its own; needs >= 2 runs in both columns)")
    notes = [f"  {i.label}: {k}: {reason}" for i in inputs for k, reason in i.unavailable.items()]
    if notes:
        text += "\n\nnot available (null):\n" + "\n".join(notes)
    return text


def compare_folders(folders: Sequence[str | Path], out_dir: str | Path | None = None,
                    show: bool = True, baseline: str | None = None) -> SideBySide:
    """Read, tabulate, print (when `show`) and write compare.csv / compare.json under `out_dir`."""
    if len(folders) < 1:
        raise UsageError("compare: give at least one roll-up folder")
    inputs = [read_input(f, label) for f, label in zip(folders, _labels(folders))]
    columns = columns_of(inputs)
    base = pick_baseline(columns, baseline)
    rows = side_by_side(inputs, baseline=base, columns=columns)
    result = SideBySide(inputs=inputs, columns=columns, baseline=base, rows=rows)
    if show:
        print(format_side_by_side(inputs, rows, columns, base))
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        csv_path, json_path = out / "compare.csv", out / "compare.json"
        with csv_path.open("w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["kpi", *(c.label for c in columns)])
            for r in rows:
                writer.writerow([r["kpi"], *("" if r[c.label]["mean"] is None else repr(r[c.label]["mean"])
                                             for c in columns)])
        doc = {"inputs": [{"label": i.label, "path": i.path, "runs": len(i.runs), "configs": i.configs,
                           "kpis_unavailable": i.unavailable} for i in inputs],
               "columns": [msgspec.structs.asdict(c) for c in columns],
               "baseline": base, "alpha": ALPHA,
               "test": "Welch's t-test (scipy.stats.ttest_ind, equal_var=False), two-sided, against the baseline",
               "kpis": [{"kpi": r["kpi"], "definition": r["definition"],
                         "values": {c.label: r[c.label] for c in columns}} for r in rows]}
        json_path.write_text(json.dumps(doc, indent=1) + "\n")
        result.csv, result.json = str(csv_path), str(json_path)
        if show:
            print(f"\ncompared {len(columns)} configuration(s) of {len(inputs)} folder(s) -> {csv_path}, "
                  f"{json_path}")
    return result
