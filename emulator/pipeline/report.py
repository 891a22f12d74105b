"""The report: PNG plots and one HTML page from a roll-up folder.

    pulsar-lb-emulator report ROLLUP_DIR [--out DIR]        # default ROLLUP_DIR/report
    pulsar-lb-emulator report COMPARE_DIR                   # `compare --out`: its table as a page

Reads the roll-up's CSV tables (`csv/<table>/part-*.csv`) with the standard library, so a report needs
neither Spark nor pandas. Plots (matplotlib, Agg backend, every figure FIGSIZE at DPI, i.e. 1000 x 400
pixels, so pages line up and tests can check the size):

* `usage_<run>.png`: each broker's usage over time in one run, scenario events marked;
* `usage_range.png`: the usage range (max - min) over time, per configuration (mean over its runs);
* `unloads.png`: unloads per window over time, per configuration (mean over its runs);
* `unavailable.png`: unavailable topic-seconds per configuration (mean, 95 % CI bars; and the p99);
* `kpis/<kpi>.png`: every KPI of the roll-up (`rollup.KPI_COLUMNS`), one point per configuration at its
  mean over seeds with its 95 % confidence interval (Student t), `*` over a configuration whose mean
  differs from the baseline's (Welch's t-test, p < 0.05; `compare.kpi_columns`). The baseline is the
  first configuration: a sweep's first `--grid` value (its `results.csv` order), else the first sorted.
  Each PNG carries its KPI, baseline and configurations as text chunks ("KPI", "Baseline",
  "Configurations": a JSON list, "Values": label -> mean, ci95, significant), so a reader or a test
  can tell what it shows without the pixels.

`index.html` shows the comparison table, the runs' headline KPIs and the plots. For a `compare --out`
folder the page shows its table (one column per configuration) and the same per-KPI plots of its columns.
"""

from __future__ import annotations

import csv
import html
import json
import math
import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import msgspec

from emulator.pipeline.tables import HEADLINE, fmt, mean_ci

FIGSIZE = (10.0, 4.0)
DPI = 100
PIXELS = (int(FIGSIZE[0] * DPI), int(FIGSIZE[1] * DPI))


class ReportFiles(msgspec.Struct, kw_only=True):
    out_dir: str
    html: str
    pngs: list[str]
    kpi_pngs: list[str] = []     # kpis/<kpi>.png, in rollup.KPI_COLUMNS order


KPI_DIR = "kpis"


# ====================================================================== reading the roll-up


def read_table(rollup_dir: str | Path, name: str) -> list[dict[str, str]]:
    """Rows of csv/<name>/part-*.csv as dicts of strings ('' = undefined); [] if the table is absent."""
    folder = Path(rollup_dir) / "csv" / name
    rows: list[dict[str, str]] = []
    for part in sorted(folder.glob("part-*.csv")):
        with part.open(newline="") as f:
            rows.extend(csv.DictReader(f))
    return rows


def num(row: Mapping[str, Any], key: str) -> float | None:
    raw = row.get(key)
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        return None
    return None if math.isnan(value) else value


def _by_config(rows: Iterable[Mapping[str, str]]) -> dict[str, list[Mapping[str, str]]]:
    out: dict[str, list[Mapping[str, str]]] = {}
    for r in rows:
        out.setdefault(r.get("config", ""), []).append(r)
    return dict(sorted(out.items()))


def _mean_by(rows: Iterable[Mapping[str, str]], x: str, y: str) -> tuple[list[float], list[float]]:
    """Mean of y at each x over rows (e.g. over a configuration's runs), sorted by x."""
    acc: dict[float, list[float]] = {}
    for r in rows:
        xv, yv = num(r, x), num(r, y)
        if xv is not None and yv is not None:
            acc.setdefault(xv, []).append(yv)
    xs = sorted(acc)
    return xs, [sum(acc[v]) / len(acc[v]) for v in xs]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:100] or "run"


# ====================================================================== plots


def _figure() -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    fig = Figure(figsize=FIGSIZE, dpi=DPI)  # not pyplot: no global figure registry to leak
    return fig, fig.add_subplot(1, 1, 1)


def _save(fig: Any, path: Path, metadata: Mapping[str, str] | None = None) -> str:
    # no bbox_inches="tight": the size stays PIXELS
    fig.savefig(path, dpi=DPI, format="png", metadata=dict(metadata or {}))
    return str(path)


def _with_gaps(pts: Sequence[tuple[float, float]]) -> tuple[list[float], list[float]]:
    """Break the line where samples stop for more than twice the usual interval (a broker away)."""
    steps = sorted(b[0] - a[0] for a, b in zip(pts, pts[1:]))
    usual = steps[len(steps) // 2] if steps else 0.0
    xs: list[float] = []
    ys: list[float] = []
    for i, (x, y) in enumerate(pts):
        if i and usual > 0 and x - pts[i - 1][0] > 2 * usual:
            xs.append(math.nan)
            ys.append(math.nan)
        xs.append(x)
        ys.append(y)
    return xs, ys


def plot_run_usage(title: str, usage: Sequence[Mapping[str, str]], events: Sequence[Mapping[str, str]],
                   path: Path) -> str:
    fig, ax = _figure()
    per_broker: dict[str, list[tuple[float, float]]] = {}
    for r in usage:
        t, u = num(r, "t"), num(r, "usage")
        if t is not None and u is not None:
            per_broker.setdefault(r.get("broker", "?"), []).append((t / 60.0, u))
    for broker, pts in sorted(per_broker.items()):
        xs, ys = _with_gaps(sorted(pts))
        ax.plot(xs, ys, linewidth=1.0, label=broker)
    for e in events:
        t = num(e, "t")
        if t is not None:
            ax.axvline(t / 60.0, color="black", linestyle="--", linewidth=0.8, alpha=0.7)
            ax.annotate(e.get("event", ""), (t / 60.0, 1.0), xycoords=("data", "axes fraction"),
                        rotation=90, fontsize=7, va="top", ha="right")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("emulated time (min)")
    ax.set_ylabel("usage (%)")
    if per_broker:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    fig.subplots_adjust(left=0.07, right=0.85, bottom=0.13, top=0.9)
    return _save(fig, path)


def plot_range(ticks: Sequence[Mapping[str, str]], path: Path) -> str:
    fig, ax = _figure()
    for config, rows in _by_config(ticks).items():
        xs, ys = _mean_by(rows, "t", "usage_range")
        ax.plot([x / 60.0 for x in xs], ys, linewidth=1.0, label=config)
    ax.set_title("Usage range (max - min over brokers), mean over seeds")
    ax.set_xlabel("emulated time (min)")
    ax.set_ylabel("range (percentage points)")
    if ticks:
        ax.legend(fontsize=7)
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.13, top=0.9)
    return _save(fig, path)


def plot_unloads(windows: Sequence[Mapping[str, str]], path: Path) -> str:
    fig, ax = _figure()
    for config, rows in _by_config(windows).items():
        xs, ys = _mean_by(rows, "window_start", "unloads")
        ends = [e for e in (num(r, "window_end") for r in rows) if e is not None]
        if xs and ends:  # hold the last window's value to its end
            xs, ys = xs + [max(ends)], ys + [ys[-1]]
        ax.step([x / 60.0 for x in xs], ys, where="post", linewidth=1.2, label=config)
    ax.set_ylim(bottom=0)
    ax.set_title("Unloads per window, mean over seeds")
    ax.set_xlabel("window start, emulated time (min)")
    ax.set_ylabel("unloads")
    if windows:
        ax.legend(fontsize=7)
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.13, top=0.9)
    return _save(fig, path)


def plot_unavailable(comparison: Sequence[Mapping[str, str]], path: Path) -> str:
    """Two panels, as their scales differ: the run's total topic-seconds, and the p99 per topic."""
    fig, _ = _figure()
    fig.clear()
    configs = [r.get("config", "") for r in comparison]
    x = list(range(len(configs)))
    panels = (("unavailable_topic_seconds", "total unavailable topic-seconds per run"),
              ("unavailable_topic_seconds_p99", "p99 over topics of a topic's seconds"))
    for i, (key, title) in enumerate(panels):
        ax = fig.add_subplot(1, 2, i + 1)
        means = [num(r, f"{key}_mean") or 0.0 for r in comparison]
        cis = [num(r, f"{key}_ci95") or 0.0 for r in comparison]
        ax.bar(x, means, 0.6, yerr=cis, capsize=3, color=f"C{i}")
        ax.set_xticks(x)
        ax.set_xticklabels([c.replace(", ", "\n") for c in configs], fontsize=6, rotation=12, ha="right")
        ax.set_title(title, fontsize=9)
        ax.set_ylabel("seconds")
    fig.suptitle("Unavailable topics per configuration (mean, 95 % CI over seeds)", fontsize=11)
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.2, top=0.85, wspace=0.25)
    return _save(fig, path)


def plot_kpi(kpi: str, definition: str, values: Mapping[str, Mapping[str, Any]], baseline: str | None,
             path: Path) -> str:
    """One KPI across configurations: mean with a 95 % CI bar each (none for one run), `*` where
    Welch's test says it differs from the baseline. `values`: label -> {mean, ci95, n, significant}."""
    fig, ax = _figure()
    labels = list(values)
    x = list(range(len(labels)))
    means = [math.nan if values[c]["mean"] is None else float(values[c]["mean"]) for c in labels]
    cis = [0.0 if values[c]["ci95"] is None else float(values[c]["ci95"]) for c in labels]
    ax.errorbar(x, means, yerr=cis, fmt="o", capsize=5, color="C0", ecolor="C0", markersize=6)
    for i, c in enumerate(labels):
        if values[c].get("significant") and not math.isnan(means[i]):
            ax.annotate("*", (i, means[i] + cis[i]), textcoords="offset points", xytext=(0, 4), ha="center",
                        fontsize=14, color="C3")
        if c == baseline and len(labels) > 1:
            ax.axhline(means[i], color="grey", linestyle=":", linewidth=0.8)
    if all(math.isnan(m) for m in means):
        ax.text(0.5, 0.5, "undefined in every configuration", transform=ax.transAxes, ha="center")
    ax.set_xticks(x)
    ax.set_xticklabels([c.replace(", ", "\n") for c in labels], fontsize=7)
    ax.set_xlim(-0.5, len(labels) - 0.5)
    note = f"; * differs from {baseline} (Welch, p < 0.05)" if baseline is not None and len(labels) > 1 else ""
    ax.set_title(f"{kpi}: mean ± 95 % CI over seeds{note}", fontsize=9)
    ax.set_ylabel(kpi, fontsize=8)
    if definition:
        fig.text(0.01, 0.01, definition[:180], fontsize=6, color="dimgrey")
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.22, top=0.9)
    plotted = {c: {"mean": values[c]["mean"], "ci95": values[c]["ci95"],
                   "significant": bool(values[c].get("significant"))} for c in labels}
    return _save(fig, path, {"KPI": kpi, "Baseline": baseline or "", "Configurations": json.dumps(labels),
                             "Values": json.dumps(plotted), "Description": definition})


def plot_kpis(rows: Sequence[Mapping[str, Any]], labels: Sequence[str], baseline: str | None,
              out: Path) -> list[str]:
    """`plot_kpi` for every row of `compare.kpi_columns` (kpi, label -> values) into `out/kpis/`."""
    from emulator.model.kpi_registry import KPIS

    folder = out / KPI_DIR
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for r in rows:
        kpi = str(r["kpi"])
        spec = KPIS.get(kpi)
        written.append(plot_kpi(kpi, str(r.get("definition") or (spec.doc if spec is not None else "")),
                                {c: r[c] for c in labels}, baseline, folder / f"{_safe(kpi)}.png"))
    return written


def kpi_rows_of_runs(root: Path, given: Path, runs: Sequence[Mapping[str, str]]
                     ) -> tuple[list[dict[str, Any]], list[str], str | None]:
    """(compare.kpi_columns rows, configurations in order, baseline) of a roll-up's runs table."""
    from emulator.pipeline.compare import config_order, kpi_columns
    from emulator.pipeline.rollup import KPI_COLUMNS
    from emulator.pipeline.sweep import RESULTS_CSV

    parsed = [{"config": r.get("config", ""), **{k: num(r, k) for k in KPI_COLUMNS}} for r in runs]
    configs = config_order((given / RESULTS_CSV, root.parent / RESULTS_CSV), {str(r["config"]) for r in parsed})
    groups = {c: [r for r in parsed if r["config"] == c] for c in configs}
    baseline = configs[0] if configs else None
    return kpi_columns(groups, KPI_COLUMNS, baseline), configs, baseline


# ====================================================================== HTML


def _html_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _typed(row: Mapping[str, str], key: str) -> Any:
    value = num(row, key)
    if value is None:
        return None
    return int(value) if value == int(value) and abs(value) < 1e15 else value


def _figures(images: Sequence[tuple[str, str]]) -> str:
    return "\n".join(f'<figure><img src="{html.escape(src)}" alt="{html.escape(alt)}" width="{PIXELS[0]}" '
                     f'height="{PIXELS[1]}"><figcaption>{html.escape(alt)}</figcaption></figure>'
                     for src, alt in images)


def render_html(comparison: Sequence[Mapping[str, str]], runs: Sequence[Mapping[str, str]],
                images: Sequence[tuple[str, str]], kpi_images: Sequence[tuple[str, str]] = (),
                marked: frozenset[tuple[str, str]] = frozenset()) -> str:
    """The page; `marked`: the (configuration, kpi) cells that differ from the baseline (`*`)."""
    cmp_table = _html_table(
        ["config", "runs", *(h for _, h in HEADLINE)],
        [[r.get("config", ""), r.get("runs", ""),
          *(mean_ci(_typed(r, f"{k}_mean"), _typed(r, f"{k}_ci95"))
            + (" *" if (r.get("config", ""), k) in marked else "") for k, _ in HEADLINE)]
         for r in comparison])
    run_table = _html_table(
        ["run", "config", "seed", *(h for _, h in HEADLINE)],
        [[r.get("run_id", ""), r.get("config", ""), r.get("seed", ""),
          *(fmt(_typed(r, k)) for k, _ in HEADLINE)] for r in runs])
    figs = _figures(images)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>pulsar-lb-emulator report</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; font-size: 13px; margin-bottom: 2em; }}
th, td {{ border: 1px solid #ccc; padding: 3px 7px; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
figure {{ margin: 1em 0; }}
</style></head><body>
<h1>pulsar-lb-emulator report</h1>
<p>Definitions of every KPI: the docstring of <code>emulator/pipeline/rollup.py</code>. Mean ± 95 %
confidence half-width over seeds (Student t).</p>
<h2>Comparison by configuration</h2>
<p>* the mean differs from the first configuration's (Welch's t-test, two-sided p &lt; 0.05).</p>
{cmp_table}
<h2>Runs</h2>
{run_table}
<h2>Plots</h2>
{figs}
<h2>Every KPI per configuration</h2>
<p>Mean ± 95 % confidence interval over seeds; * the mean differs from the first configuration's
(Welch's t-test, two-sided p &lt; 0.05, each KPI on its own).</p>
{_figures(kpi_images)}
</body></html>
"""


# ====================================================================== entry point


COMPARE_FILE = "compare.json"
"""What `compare --out DIR` writes (side_by_side.py); `report DIR` renders it."""


def compare_columns(doc: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(label, runs) of compare.json's columns; a compare.json from before columns: its folders."""
    cols = doc.get("columns") or doc.get("inputs", [])
    return [(str(c["label"]), c.get("runs")) for c in cols]


def render_compare_html(doc: Mapping[str, Any], kpi_images: Sequence[tuple[str, str]] = ()) -> str:
    """compare.json as a page: one row per KPI, one column per configuration (`*`: differs from the
    baseline), then the null KPIs' reasons and the per-KPI plots."""
    columns = compare_columns(doc)
    labels = [label for label, _ in columns]
    runs = dict(columns)

    def cell(v: Mapping[str, Any]) -> str:
        return mean_ci(v["mean"], v["ci95"]) + (" *" if v.get("significant") else "")

    table = _html_table(
        ["kpi", *(f"{label} ({runs[label]} runs)" for label in labels), "definition"],
        [[str(r["kpi"]), *(cell(r["values"][label]) for label in labels),
          str(r.get("definition", ""))] for r in doc.get("kpis", [])])
    baseline = doc.get("baseline")
    test = (f"<p>* differs from the baseline <b>{html.escape(str(baseline))}</b>: "
            f"{html.escape(str(doc.get('test', 'Welch t-test')))}, p &lt; {doc.get('alpha', 0.05)}.</p>"
            if baseline is not None and len(labels) > 1 else "")
    notes = "".join(f"<li>{html.escape(str(i['label']))}: <code>{html.escape(k)}</code>: {html.escape(v)}</li>"
                    for i in doc.get("inputs", []) for k, v in (i.get("kpis_unavailable") or {}).items())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>pulsar-lb-emulator comparison</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; font-size: 13px; margin-bottom: 2em; }}
th, td {{ border: 1px solid #ccc; padding: 3px 7px; text-align: right; }}
th:first-child, td:first-child, td:last-child {{ text-align: left; }}
</style></head><body>
<h1>pulsar-lb-emulator comparison</h1>
<p>One column per configuration of each roll-up folder: its run's value, or mean ± 95 % confidence
half-width over its runs (seeds).</p>
{test}
{table}
<h2>Not available (null)</h2>
<ul>{notes or "<li>none</li>"}</ul>
<h2>Every KPI per configuration</h2>
{_figures(kpi_images)}
</body></html>
"""


def report(rollup_dir: str | Path, out_dir: str | Path | None = None) -> ReportFiles:
    """Write the PNGs and index.html for a roll-up folder, or a sweep's folder (its `rollup/` is the
    roll-up; the report goes beside it, `<sweep>/report`), or index.html alone for a `compare --out`
    folder; returns their paths."""
    given = Path(rollup_dir)
    if (given / COMPARE_FILE).is_file() and not (given / "csv" / "runs").is_dir():
        out = Path(out_dir) if out_dir is not None else given / "report"
        out.mkdir(parents=True, exist_ok=True)
        doc = json.loads((given / COMPARE_FILE).read_text())
        labels = [label for label, _ in compare_columns(doc)]
        rows = [{"kpi": r["kpi"], "definition": r.get("definition", ""), **r["values"]} for r in doc.get("kpis", [])]
        kpi_pngs = plot_kpis(rows, labels, doc.get("baseline"), out)
        page = out / "index.html"
        page.write_text(render_compare_html(doc, _kpi_images(kpi_pngs, out)), encoding="utf-8")
        return ReportFiles(out_dir=str(out), html=str(page), pngs=[], kpi_pngs=kpi_pngs)
    root = given
    if not (root / "csv" / "runs").is_dir() and (root / "rollup" / "csv" / "runs").is_dir():
        root = given / "rollup"          # `sweep --out DIR` wrote DIR/runs and DIR/rollup
    if not (root / "csv" / "runs").is_dir():
        raise ValueError(f"rollup_dir = {str(rollup_dir)!r}: no csv/runs table there; "
                         "give the --out folder of `rollup`, `sweep` or `compare`")
    out = Path(out_dir) if out_dir is not None else given / "report"
    out.mkdir(parents=True, exist_ok=True)
    runs = read_table(root, "runs")
    comparison = read_table(root, "comparison")
    usage = read_table(root, "broker_usage")
    events = read_table(root, "balance_events")
    images: list[tuple[str, str]] = []
    pngs: list[str] = []

    def add(path: str, caption: str) -> None:
        pngs.append(path)
        images.append((Path(path).name, caption))

    add(plot_range(read_table(root, "ticks"), out / "usage_range.png"), "Usage range over time")
    add(plot_unloads(read_table(root, "windows"), out / "unloads.png"), "Unloads over time")
    add(plot_unavailable(comparison, out / "unavailable.png"), "Unavailable topic-seconds")
    usage_by_run: dict[str, list[Mapping[str, str]]] = {}
    for r in usage:
        usage_by_run.setdefault(r.get("run_id", ""), []).append(r)
    events_by_run: dict[str, list[Mapping[str, str]]] = {}
    for e in events:
        events_by_run.setdefault(e.get("run_id", ""), []).append(e)
    used: set[str] = set()
    for r in runs:
        run_id = r.get("run_id", "")
        name = _safe(run_id)
        while name in used:  # two ids that differ only in unsafe characters
            name += "_"
        used.add(name)
        caption = (f"Broker usage (weighted max resource usage): {r.get('config', '')}, "
                   f"seed {r.get('seed', '')}")
        add(plot_run_usage(caption, usage_by_run.get(run_id, []), events_by_run.get(run_id, []),
                           out / f"usage_{name}.png"), f"{caption} (run {run_id})")
    kpi_rows, configs, baseline = kpi_rows_of_runs(root, given, runs)
    kpi_pngs = plot_kpis(kpi_rows, configs, baseline, out)
    page = out / "index.html"
    marked = frozenset((c, str(r["kpi"])) for r in kpi_rows for c in configs if r[c]["significant"])
    page.write_text(render_html(comparison, runs, images, _kpi_images(kpi_pngs, out), marked), encoding="utf-8")
    return ReportFiles(out_dir=str(out), html=str(page), pngs=pngs, kpi_pngs=kpi_pngs)


def _kpi_images(paths: Sequence[str], out: Path) -> list[tuple[str, str]]:
    return [(Path(p).relative_to(out).as_posix(), Path(p).stem) for p in paths]
