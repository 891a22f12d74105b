"""Issue 30 item 4: `compare` and `report` show a sweep's configurations side by side, each with its mean
and 95 % confidence interval over its seeds (scipy.stats), differences from the baseline marked by
Welch's t-test. Synthetic roll-up folders in the roll-up's CSV layout: no Spark."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from PIL import Image
from scipy import stats

from emulator.cli import main
from emulator.model.errors import UsageError
from emulator.model.stats import ci95_half_width, mean_ci95, significant, welch_p
from emulator.pipeline.compare import comparison_fields, comparison_rows, kpi_columns
from emulator.pipeline.report import report
from emulator.pipeline.rollup import KPI_COLUMNS
from emulator.pipeline.side_by_side import compare_folders

from .test_side_by_side import rollup_folder

# Fixed samples: A and B differ far beyond their spread; A and C overlap.
A = [10.0, 11.0, 12.0, 10.5, 11.5]
B = [20.0, 21.0, 19.0, 20.5, 19.5]
C = [10.2, 11.8, 10.9, 11.1, 10.4]


@pytest.mark.parametrize("sample", [[1.0, 2.0], [3.5, 1.25, 9.0], A, B, [0.1 * i * i for i in range(30)]])
def test_interval_is_scipys_student_t_interval(sample):
    mean, half = mean_ci95(sample)
    lo, hi = stats.t.interval(0.95, len(sample) - 1, loc=stats.tmean(sample), scale=stats.sem(sample))
    assert mean == pytest.approx((lo + hi) / 2, rel=1e-12)
    assert half == pytest.approx((hi - lo) / 2, rel=1e-12)
    std = stats.tstd(sample)
    assert ci95_half_width(std, len(sample)) == pytest.approx((hi - lo) / 2, rel=1e-12)


def test_fewer_than_two_values_have_no_interval_and_no_test():
    assert mean_ci95([4.0]) == (4.0, None)          # one seed: a mean, but no spread to estimate
    assert mean_ci95([None, 4.0]) == (4.0, None)    # an undefined value is not a value
    assert ci95_half_width(1.0, 1) is None
    assert welch_p([4.0], A) is None and not significant(welch_p([4.0], A))


def test_welch_p_is_scipys_and_marks_only_the_real_difference():
    assert welch_p(A, B) == pytest.approx(stats.ttest_ind(A, B, equal_var=False).pvalue, rel=1e-12)
    assert welch_p(A, C) == pytest.approx(stats.ttest_ind(A, C, equal_var=False).pvalue, rel=1e-12)
    assert welch_p(A, B) < 1e-6 and significant(welch_p(A, B))
    assert welch_p(A, C) > 0.5 and not significant(welch_p(A, C))
    assert welch_p([1.0, 1.0], [1.0, 1.0]) is None  # no spread, same mean: no test, not a difference


def test_kpi_columns_pool_seeds_within_a_column_only():
    cols = {"a": [{"unloads": v} for v in A], "b": [{"unloads": v} for v in B], "c": [{"unloads": v} for v in C]}
    (row,) = kpi_columns(cols, ["unloads"], baseline="a")
    assert row["a"]["mean"] == pytest.approx(sum(A) / 5) and row["b"]["mean"] == pytest.approx(sum(B) / 5)
    assert row["a"]["p"] is None and not row["a"]["significant"]       # the baseline is not tested
    assert row["b"]["significant"] and not row["c"]["significant"]
    with pytest.raises(ValueError, match="baseline = 'z'"):
        kpi_columns(cols, ["unloads"], baseline="z")


def sweep_folder(root: Path) -> Path:
    """A sweep's --out: rollup/csv/runs (two configurations x 5 seeds) and results.csv in grid order
    (shedder=B first, as `--grid shedder=B,A,C` would write it)."""
    runs = []
    for config, unloads in (("shedder=A", A), ("shedder=B", B), ("shedder=C", C)):
        for seed, u in enumerate(unloads, 1):
            runs.append({"run_id": f"{config}-{seed}", "config": config, "seed": seed, "unloads": u,
                         "unloads_per_hour": u, "balance_range": 5.0 + seed})   # equal in every configuration
    rollup_folder(root / "rollup", runs)
    fields = [name for name, _ in comparison_fields(KPI_COLUMNS)]
    (root / "rollup" / "csv" / "comparison").mkdir(parents=True)
    with (root / "rollup" / "csv" / "comparison" / "part-00000-x.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in comparison_rows(runs, KPI_COLUMNS):
            w.writerow({k: "" if r.get(k) is None else r.get(k) for k in fields})
    with (root / "results.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["config", "seed", "status"])
        for config in ("shedder=B", "shedder=A", "shedder=C"):
            for seed in range(1, 6):
                w.writerow([config, seed, "ok"])
    return root


def test_a_sweep_is_one_column_per_configuration(tmp_path, capsys):
    sweep = sweep_folder(tmp_path / "sweep")
    result = compare_folders([sweep], tmp_path / "cmp")
    assert [c.label for c in result.columns] == ["shedder=B", "shedder=A", "shedder=C"]   # the grid's order
    assert [c.runs for c in result.columns] == [5, 5, 5]
    assert result.baseline == "shedder=B"
    unloads = next(r for r in result.rows if r["kpi"] == "unloads")
    for label, sample in (("shedder=A", A), ("shedder=B", B), ("shedder=C", C)):
        mean, ci = mean_ci95(sample)
        assert unloads[label]["mean"] == pytest.approx(mean) and unloads[label]["ci95"] == pytest.approx(ci)
        assert unloads[label]["n"] == 5
    assert unloads["shedder=A"]["significant"] and unloads["shedder=C"]["significant"]
    balance = next(r for r in result.rows if r["kpi"] == "balance_range")
    assert not any(balance[c.label]["significant"] for c in result.columns)

    with open(result.csv, newline="") as f:
        table = list(csv.reader(f))
    assert table[0] == ["kpi", "shedder=B", "shedder=A", "shedder=C"]
    doc = json.loads(Path(result.json).read_text())
    assert doc["baseline"] == "shedder=B" and [c["config"] for c in doc["columns"]] == \
        ["shedder=B", "shedder=A", "shedder=C"]
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("unloads "))
    assert line.count(" *") == 2                      # A and C differ from B; B is the baseline
    assert "* differs from the baseline 'shedder=B'" in out and "shedder=B (5 runs) [baseline]" in out


def test_baseline_flag_changes_what_is_marked(tmp_path, capsys):
    sweep = sweep_folder(tmp_path / "sweep")
    result = compare_folders([sweep], None, show=False, baseline="shedder=A")
    unloads = next(r for r in result.rows if r["kpi"] == "unloads")
    assert unloads["shedder=B"]["significant"] and not unloads["shedder=C"]["significant"]
    with pytest.raises(UsageError, match=r"^compare: --baseline = 'shedder=Z': not one of the columns"):
        compare_folders([sweep], None, show=False, baseline="shedder=Z")
    assert main(["compare", str(sweep), "--baseline", "shedder=Z", "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "shedder=Z" in err


def test_two_folders_with_configurations_get_prefixed_columns(tmp_path):
    sweep = sweep_folder(tmp_path / "sweep")
    other = sweep_folder(tmp_path / "again")
    result = compare_folders([sweep, other], None, show=False)
    assert [c.label for c in result.columns][:2] == ["sweep: shedder=B", "sweep: shedder=A"]
    assert len(result.columns) == 6


def png_text(path: str) -> dict[str, str]:
    with Image.open(path) as im:
        return dict(im.text)


def test_report_plots_every_kpi_per_configuration(tmp_path):
    sweep = sweep_folder(tmp_path / "sweep")
    written = report(sweep)
    assert [Path(p).stem for p in written.kpi_pngs] == list(KPI_COLUMNS)
    for p in written.kpi_pngs:
        assert Path(p).is_file() and Path(p).parent == Path(written.out_dir) / "kpis"
        text = png_text(p)
        assert json.loads(text["Configurations"]) == ["shedder=B", "shedder=A", "shedder=C"]
        assert text["Baseline"] == "shedder=B" and text["KPI"] == Path(p).stem
    values = json.loads(png_text(str(Path(written.out_dir) / "kpis" / "unloads.png"))["Values"])
    for label, sample in (("shedder=A", A), ("shedder=B", B), ("shedder=C", C)):
        mean, ci = mean_ci95(sample)     # the interval drawn is the sample's
        assert values[label]["mean"] == pytest.approx(mean) and values[label]["ci95"] == pytest.approx(ci)
    assert [values[c]["significant"] for c in ("shedder=B", "shedder=A", "shedder=C")] == [False, True, True]
    page = Path(written.html).read_text()
    assert all(f'src="kpis/{k}.png"' in page for k in KPI_COLUMNS)
    # the comparison table marks unloads/h of A and C (differ from B), not B's, not the equal range
    rows = {r.split("</td>", 1)[0]: r for r in page.split("<tr><td>")[1:]}
    assert rows["shedder=A"].count(" *") == 1 and rows["shedder=C"].count(" *") == 1
    assert " *" not in rows["shedder=B"]


def test_report_of_a_compare_folder_plots_its_columns(tmp_path):
    sweep = sweep_folder(tmp_path / "sweep")
    compare_folders([sweep], tmp_path / "cmp", show=False)
    written = report(tmp_path / "cmp")
    assert len(written.kpi_pngs) == len(KPI_COLUMNS)
    text = png_text(next(p for p in written.kpi_pngs if Path(p).stem == "unloads"))
    assert json.loads(text["Configurations"]) == ["shedder=B", "shedder=A", "shedder=C"]
    page = Path(written.html).read_text()
    assert "<th>shedder=B (5 runs)</th>" in page and " *</td>" in page
