"""`compare`: roll-up folders side by side, one row per KPI, one column per folder (the CSV tables only,
so these folders are written by hand in the roll-up's layout; no Spark)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from emulator.cli import main
from emulator.model.errors import UsageError
from emulator.model.stats import mean_ci95
from emulator.pipeline.rollup import KPI_COLUMNS, RUN_COLUMNS, UNAVAILABLE_FILE
from emulator.pipeline.side_by_side import compare_folders


def rollup_folder(root: Path, runs: list[dict], unavailable: dict | None = None) -> Path:
    """csv/runs/part-00000-x.csv as the roll-up writes it ('' for undefined)."""
    folder = root / "csv" / "runs"
    folder.mkdir(parents=True)
    with (folder / "part-00000-x.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=RUN_COLUMNS)
        w.writeheader()
        for r in runs:
            w.writerow({k: "" if r.get(k) is None else r.get(k) for k in RUN_COLUMNS})
    if unavailable:
        (root / UNAVAILABLE_FILE).write_text(json.dumps(unavailable))
    return root


@pytest.fixture
def folders(tmp_path):
    emulated = rollup_folder(tmp_path / "emulated", [
        {"run_id": "a1", "seed": 1, "unloads": 4, "balance_max_over_mean": 1.25, "repeat_unloads": 1},
        {"run_id": "a2", "seed": 2, "unloads": 6, "balance_max_over_mean": 1.75, "repeat_unloads": 3}])
    prod = rollup_folder(tmp_path / "prod", [
        {"run_id": "prometheus-x", "seed": 0, "unloads": 9, "balance_max_over_mean": 1.5}],
        {"repeat_unloads": "needs each unload's bundle"})
    sweep = rollup_folder(tmp_path / "sweep" / "rollup", [{"run_id": "s", "seed": 1, "unloads": 2}]).parent
    return emulated, prod, sweep


def test_one_row_per_kpi_one_column_per_folder(folders, tmp_path, capsys):
    emulated, prod, sweep = folders
    result = compare_folders([emulated, prod, sweep], tmp_path / "cmp")
    assert [i.label for i in result.inputs] == ["emulated", "prod", "sweep"]
    assert [r["kpi"] for r in result.rows] == list(KPI_COLUMNS)
    unloads = next(r for r in result.rows if r["kpi"] == "unloads")
    mean, ci = mean_ci95([4.0, 6.0])
    assert unloads["emulated"] == {"mean": mean, "ci95": ci, "n": 2, "p": None, "significant": False}
    # one run: no interval, and no test against the baseline (Welch needs 2 values a side)
    assert unloads["prod"] == {"mean": 9.0, "ci95": None, "n": 1, "p": None, "significant": False}
    assert unloads["sweep"]["mean"] == 2.0
    repeats = next(r for r in result.rows if r["kpi"] == "repeat_unloads")
    assert repeats["prod"]["mean"] is None and repeats["emulated"]["mean"] == 2.0

    with open(result.csv, newline="") as f:
        table = list(csv.reader(f))
    assert table[0] == ["kpi", "emulated", "prod", "sweep"]
    assert table[1 + KPI_COLUMNS.index("unloads")] == ["unloads", "5.0", "9.0", "2.0"]
    assert table[1 + KPI_COLUMNS.index("repeat_unloads")] == ["repeat_unloads", "2.0", "", ""]
    doc = json.loads(Path(result.json).read_text())
    assert [i["label"] for i in doc["inputs"]] == ["emulated", "prod", "sweep"]
    assert doc["inputs"][1]["kpis_unavailable"] == {"repeat_unloads": "needs each unload's bundle"}
    assert doc["kpis"][KPI_COLUMNS.index("unloads")]["definition"].startswith("the shedder's unloads")

    out = capsys.readouterr().out
    assert "emulated (2 runs)" in out and "prod (1 run)" in out
    assert f"5 ± {ci:.3g}" in out
    assert "not available (null):\n  prod: repeat_unloads: needs each unload's bundle" in out


def test_the_same_folder_name_twice_gets_two_columns(folders, tmp_path):
    emulated, _, _ = folders
    other = rollup_folder(tmp_path / "elsewhere" / "emulated", [{"run_id": "b", "seed": 1, "unloads": 1}])
    result = compare_folders([emulated, other], None, show=False)
    assert [i.label for i in result.inputs] == ["emulated", "emulated#2"]
    assert result.csv is None


def test_a_folder_without_a_rollup_is_one_line(tmp_path):
    with pytest.raises(UsageError, match=r"^compare: '.*nothing': no csv/runs table there"):
        compare_folders([tmp_path / "nothing"], None)


def test_the_command_writes_csv_and_json_and_exits_0(folders, tmp_path, capsys):
    emulated, prod, _ = folders
    assert main(["compare", str(emulated), str(prod), "--out", str(tmp_path / "c")]) == 0
    assert (tmp_path / "c" / "compare.csv").is_file() and (tmp_path / "c" / "compare.json").is_file()
    assert main(["compare", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_report_renders_a_compare_folder(folders, tmp_path):
    from emulator.pipeline.report import report

    emulated, prod, _ = folders
    compare_folders([emulated, prod], tmp_path / "c", show=False)
    written = report(tmp_path / "c")
    page = Path(written.html).read_text()
    assert written.pngs == [] and Path(written.html) == tmp_path / "c" / "report" / "index.html"
    assert "<th>emulated (2 runs)</th><th>prod (1 runs)</th>" in page
    assert "<td>unloads</td><td>5 ± " in page and "<td>9</td>" in page
    assert "prod: <code>repeat_unloads</code>: needs each unload&#x27;s bundle" in page
