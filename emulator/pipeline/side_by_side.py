"""`compare`: roll-up folders side by side, one row per KPI, one column per folder.

    pulsar-lb-emulator compare rollup-emulated/ rollup-prod/ [--out compare/]

An emulated run's roll-up next to a real cluster's (`rollup --prometheus`), or any roll-ups (a sweep's
folder counts: its `rollup/`). Each column is its folder's runs: one run's value, or with several the
mean and 95 % confidence half-width over them (`compare.comparison_rows`, the sweep's comparison,
with the folder as the configuration). A KPI a folder's source cannot give (`kpis_unavailable.json`,
written by a Prometheus roll-up) is null there, its reason listed under the table.

Written to `--out`: `compare.csv` (kpi, then one column per folder: the value or mean) and
`compare.json` (the folders, and per KPI its definition and each folder's mean, ci95 and n).
Reads the CSV tables only: no Spark.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import msgspec

from emulator.model.errors import UsageError
from emulator.model.kpi_registry import KPIS
from emulator.pipeline.compare import comparison_rows
from emulator.pipeline.report import num, read_table
from emulator.pipeline.rollup import KPI_COLUMNS, UNAVAILABLE_FILE
from emulator.pipeline.tables import format_table, mean_ci

__all__ = ["Input", "SideBySide", "compare_folders", "format_side_by_side", "read_input", "side_by_side"]


class Input(msgspec.Struct, kw_only=True):
    """One compared folder: its column label, the roll-up folder read, its run rows and null KPIs."""

    label: str
    path: str
    runs: list[dict[str, Any]]
    unavailable: dict[str, str] = {}


class SideBySide(msgspec.Struct, kw_only=True):
    inputs: list[Input]
    rows: list[dict[str, Any]]          # per KPI: kpi, definition, and label -> {mean, ci95, n}
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
        runs.append({"run_id": row.get("run_id", ""), "seed": num(row, "seed"),
                     **{k: num(row, k) for k in KPI_COLUMNS}})
    unavailable: dict[str, str] = {}
    path = root / UNAVAILABLE_FILE
    if path.is_file():
        try:
            unavailable = {str(k): str(v) for k, v in json.loads(path.read_text()).items()}
        except (ValueError, AttributeError):
            raise UsageError(f"compare: {path}: not a JSON object of KPI -> reason") from None
    return Input(label=label or given.resolve().name, path=str(root), runs=runs, unavailable=unavailable)


def side_by_side(inputs: Sequence[Input], kpis: Sequence[str] = KPI_COLUMNS) -> list[dict[str, Any]]:
    """Per KPI: its definition and, per input label, mean / ci95 / n over that input's runs."""
    labelled = [{**r, "config": i.label} for i in inputs for r in i.runs]
    by_label = {row["config"]: row for row in comparison_rows(labelled, kpis)}
    out = []
    for k in kpis:
        kpi = KPIS.get(k)
        row: dict[str, Any] = {"kpi": k, "definition": kpi.doc if kpi is not None else ""}
        for i in inputs:
            c = by_label.get(i.label, {})
            row[i.label] = {"mean": c.get(f"{k}_mean"), "ci95": c.get(f"{k}_ci95"), "n": c.get(f"{k}_n", 0)}
        out.append(row)
    return out


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


def format_side_by_side(inputs: Sequence[Input], rows: Sequence[Mapping[str, Any]]) -> str:
    """The console table, then the reason of every null that a folder's source could not give."""
    headers = ["kpi", *(f"{i.label} ({len(i.runs)} run{'s' if len(i.runs) != 1 else ''})" for i in inputs)]
    body = [[str(r["kpi"]), *(mean_ci(r[i.label]["mean"], r[i.label]["ci95"]) for i in inputs)] for r in rows]
    text = format_table(headers, body)
    notes = [f"  {i.label}: {k}: {reason}" for i in inputs for k, reason in i.unavailable.items()]
    if notes:
        text += "\n\nnot available (null):\n" + "\n".join(notes)
    return text


def compare_folders(folders: Sequence[str | Path], out_dir: str | Path | None = None,
                    show: bool = True) -> SideBySide:
    """Read, tabulate, print (when `show`) and write compare.csv / compare.json under `out_dir`."""
    if len(folders) < 1:
        raise UsageError("compare: give at least one roll-up folder")
    inputs = [read_input(f, label) for f, label in zip(folders, _labels(folders))]
    rows = side_by_side(inputs)
    result = SideBySide(inputs=inputs, rows=rows)
    if show:
        print(format_side_by_side(inputs, rows))
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        csv_path, json_path = out / "compare.csv", out / "compare.json"
        with csv_path.open("w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["kpi", *(i.label for i in inputs)])
            for r in rows:
                writer.writerow([r["kpi"], *("" if r[i.label]["mean"] is None else repr(r[i.label]["mean"])
                                             for i in inputs)])
        doc = {"inputs": [{"label": i.label, "path": i.path, "runs": len(i.runs), "kpis_unavailable": i.unavailable}
                          for i in inputs],
               "kpis": [{"kpi": r["kpi"], "definition": r["definition"],
                         "values": {i.label: r[i.label] for i in inputs}} for r in rows]}
        json_path.write_text(json.dumps(doc, indent=1) + "\n")
        result.csv, result.json = str(csv_path), str(json_path)
        if show:
            print(f"\ncompared {len(inputs)} folder(s) -> {csv_path}, {json_path}")
    return result
