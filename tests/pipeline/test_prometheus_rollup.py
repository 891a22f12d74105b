"""`rollup --prometheus` of a running emulator equals the roll-up of its recording, within the scrape
resolution.

A real Prometheus (Debian's, as tests/observe/test_prometheus.py starts it) scrapes
`pulsar-lb-emulator run --clock wall --speed 10 --metrics-port P --record DIR` every second (10 emulated
seconds, the recorder's interval) through a scenario with everything the KPIs count: a broker loaded
by a foreign process (OverloadShedder unloads), a hot topic (the load manager's splits), a broker added
and one killed (lookups, redirects, reconnects, outages), and a quiet last minute. Both are rolled up by
the same Spark job; every KPI Prometheus can give must agree, the others must be null with a reason.

Tolerances, and why:
* cluster-wide counters (unloads, splits, bundle moves, client lookups, reconnects and their mean
  latency, scenario events): equal. Prometheus sees every scrape (a step of half the scrape interval)
  and the scenario ends quiet, so the last scrape holds the recording's final counts;
* the brokers' lookup counters: within what each series that stopped early (the killed broker's) grew
  in the recording over its last scrape interval: a dead broker exports nothing, so what it counted
  after its last scrape is lost to Prometheus (and after its last sample, to the recording);
* unavailable topic-seconds: within the topic-seconds of one scrape interval at the end (the counter
  also grows while a topic is down, and the run's end falls between two scrapes);
* per-tick means (balance, msg-rate ratio, thrashing), time-weighted figures (overloaded seconds) and
  per-hour rates: 5 % (relative, or 1 unit absolute): the recording samples at multiples of 10
  emulated s, the scrapes land at other instants of the same piecewise-constant load reports, and the
  run ends at the last scrape for Prometheus (no run.json there), at run.json's end for the recording;
* the largest range at a tick (`balance_range_max`, a max, not a mean): at least the largest range
  that held over two recorded ticks (a state that lasts 10 emulated s is in some scrape), at most the
  largest usage minus the smallest the recording saw: a state shorter than one interval (a broker just
  added, before its first load report) is in one of the two samplings or in neither;
* time to balance: one scrape interval (10 emulated s) plus the recorder's (10 s): both sides see the
  balanced tick only when their samples land after it.

Slow: about 60 s of real time for the run, plus two roll-ups.
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from emulator.observe.recording_files import iter_lines
from emulator.pipeline.prometheus import EMULATOR_ONLY, NEVER, rollup_prometheus
from emulator.pipeline.rollup import KPI_COLUMNS, UNAVAILABLE_FILE, rollup
from emulator.pipeline.side_by_side import compare_folders
from tests.observe.test_prometheus import PROMETHEUS, free_port, require_prometheus, stop, wait_for
from tests.observe.test_grafana_stack import api

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SPEED = 10
SCRAPE = 1.0          # real seconds: SPEED * SCRAPE = 10 emulated s, the recorder's interval
SCENARIO = """
[scenario]
name = "prometheus-agrees"
description = "unloads, splits, a broker added and one killed, then a quiet minute"
duration = "8m"
seed = 5

[cluster]
brokers = 3

[cluster.capacity]
cores = 4

[[namespaces]]
name = "public/default"
bundles = 8

[[topics]]
group = "t"
namespace = "public/default"
count = 60
name = "t-{i}"
msg_size = 1024
rate = { distribution = "uniform", low = 500, high = 1500 }

[[topics]]
group = "hot"
namespace = "public/default"
count = 1
name = "hot-{i}"
msg_size = 100
rate = { distribution = "uniform", low = 40000, high = 40000 }

[clients]
count = 2
connect_over = "10s"

[settings]
loadBalancerLoadSheddingStrategy = "org.apache.pulsar.broker.loadbalance.impl.OverloadShedder"

[[events]]
at = "1m"
do = "background_load"
brokers = ["broker-1"]
cores = 3

[[events]]
at = "2m"
do = "add_brokers"
count = 1

[[events]]
at = "3m"
do = "remove_brokers"
brokers = ["broker-2"]
mode = "kill"

[[events]]
at = "4m"
do = "background_load"
brokers = ["broker-1"]
cores = 0
"""
EXACT = {"unloads", "splits", "bundle_moves", "client_lookups", "client_lookup_redirects",
         "client_lookup_failures", "reconnects", "reconnect_latency_mean", "scenario_events",
         "events_never_balanced"}
PER_BROKER = {"lookups": "pulsar_broker_lookup_answers_total",
              "lookup_redirects": "pulsar_broker_lookup_redirects_total",
              "lookup_failures": "pulsar_broker_lookup_failures_total"}
TIME_TO_BALANCE = {"time_to_balance_mean", "time_to_balance_max"}


@pytest.fixture(scope="module")
def observed(tmp_path_factory):
    """(recording folder, prometheus url, start, end) of one wall-clock run scraped by Prometheus."""
    require_prometheus()
    tmp = tmp_path_factory.mktemp("prom")
    metrics_port, web = free_port(), free_port()
    (tmp / "prometheus.yml").write_text(
        f"global:\n  scrape_interval: {SCRAPE:g}s\n  evaluation_interval: {SCRAPE:g}s\n"
        "scrape_configs:\n  - job_name: pulsar-lb-emulator\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{metrics_port}']\n")
    (tmp / "scenario.toml").write_text(SCENARIO)
    prometheus = subprocess.Popen(
        [PROMETHEUS, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'data'}",
         f"--web.listen-address=127.0.0.1:{web}", "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # the scrape loop runs (up = 0 while nothing listens), so the run's first seconds are scraped
        wait_for("the first scrape", lambda: api(web, "query", query="up")["result"], 60)
        start = time.time()
        with open(tmp / "emulator.log", "w") as log:
            done = subprocess.run(
                [sys.executable, "-m", "emulator", "run", str(tmp / "scenario.toml"), "--clock", "wall",
                 "--speed", str(SPEED), "--metrics-port", str(metrics_port), "--record", str(tmp / "runs"),
                 "--quiet"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, timeout=600)
        assert done.returncode == 0, (tmp / "emulator.log").read_text()[-2000:]
        time.sleep(3 * SCRAPE)      # the last scrapes and the staleness markers are in
        end = time.time()
        [folder] = (tmp / "runs").iterdir()
        yield folder, f"http://127.0.0.1:{web}", start, end
    finally:
        stop(prometheus)


@pytest.fixture(scope="module")
def rolled(spark, observed, tmp_path_factory):
    folder, url, start, end = observed
    rec = rollup([folder], tmp_path_factory.mktemp("recording"), spark=spark, show=False)
    out = tmp_path_factory.mktemp("prometheus")
    prom = rollup_prometheus(url, start, end, SCRAPE / 2, out, spark=spark, show=False)
    [r] = rec.runs
    [p] = prom.runs
    return r, p, out, Path(rec.out_dir)


def series_slack(folder: Path, name: str, end: float) -> float:
    """What the series of `name` that stop before `end` grew over their last scrape interval, in the
    recording (what Prometheus can miss of a broker that died)."""
    points: dict[str, list[tuple[float, float]]] = {}
    for line in iter_lines(folder, "samples.jsonl"):
        if f'"{name}"' in line:
            s = json.loads(line)
            points.setdefault(json.dumps(s["labels"], sort_keys=True), []).append((s["t"], s["value"]))
    slack = 0.0
    for pts in points.values():
        t_last, v_last = pts[-1]
        if t_last < end - 2 * SPEED * SCRAPE:
            before = [v for t, v in pts if t <= t_last - SPEED * SCRAPE]
            slack += v_last - (before[-1] if before else 0.0)
    return slack


def held_range_bounds(rec_dir: Path) -> tuple[float, float]:
    """(largest usage range held over two consecutive recorded ticks, largest usage - smallest usage at
    any recorded tick), from the recording's roll-up `ticks` table."""
    rows: list[dict] = []
    for part in sorted((rec_dir / "csv" / "ticks").glob("part-*.csv")):
        with part.open(newline="") as f:
            rows += list(csv.DictReader(f))
    rows.sort(key=lambda r: float(r["t"]))
    ranges = [float(r["usage_range"]) for r in rows]
    held = max(min(a, b) for a, b in zip(ranges, ranges[1:]))
    return held, max(float(r["usage_max"]) for r in rows) - min(float(r["usage_min"]) for r in rows)


def close(kpi: str, rec: float, prom: float, slack: dict[str, Any]) -> bool:
    if kpi in EXACT:
        return math.isclose(rec, prom, rel_tol=1e-9, abs_tol=1e-9)
    if kpi == "balance_range_max":
        low, high = slack["balance_range_max"]
        return low - 1e-9 <= prom <= high + 1e-9
    if kpi in slack:
        return abs(rec - prom) <= slack[kpi] + 1e-6
    if kpi in TIME_TO_BALANCE:
        return abs(rec - prom) <= 2 * SPEED * SCRAPE
    return math.isclose(rec, prom, rel_tol=0.05, abs_tol=1.0)


def test_the_kpis_from_prometheus_equal_those_from_the_recording(rolled, observed):
    rec, prom, out, rec_dir = rolled
    folder = observed[0]
    # the topic-seconds of one scrape interval at the end: what the last scrape can miss
    down = [json.loads(line) for line in iter_lines(folder, "samples.jsonl")
            if '"pulsar_lb_emulator_disconnected_handles"' in line]
    slack = {"unavailable_topic_seconds": max((d["value"] for d in down[-3:]), default=0.0) * SPEED * SCRAPE}
    slack |= {kpi: series_slack(folder, name, rec["span_seconds"]) for kpi, name in PER_BROKER.items()}
    slack["balance_range_max"] = held_range_bounds(rec_dir)

    unavailable = set(NEVER)
    compared = []
    for kpi in KPI_COLUMNS:
        if kpi in unavailable:
            assert prom[kpi] is None, (kpi, prom[kpi])
            continue
        r, p = rec[kpi], prom[kpi]
        assert (r is None) == (p is None), (kpi, r, p)
        if r is not None:
            assert close(kpi, r, p, slack), (kpi, r, p)
            compared.append(kpi)
    # the run exercises the figures: none is compared only as 0 == 0
    for kpi in ("unloads", "splits", "lookups", "lookup_redirects", "client_lookups", "bundle_moves",
                "reconnects", "unavailable_topic_seconds", "scenario_events", "overloaded_broker_seconds",
                "balance_max_over_mean", "msg_rate_max_min_ratio"):
        assert rec[kpi], (kpi, rec[kpi])
        assert kpi in compared, kpi
    # an emulated cluster's own series give every EMULATOR_ONLY KPI
    reasons = json.loads((out / UNAVAILABLE_FILE).read_text())
    assert set(reasons) == set(NEVER) and not set(reasons) & set(EMULATOR_ONLY)
    assert all(reasons.values())


def test_compare_puts_the_emulated_run_beside_its_prometheus_view(rolled, tmp_path, capsys):
    rec, prom, prom_dir, rec_dir = rolled
    result = compare_folders([rec_dir, prom_dir], tmp_path)
    printed = capsys.readouterr().out
    labels = [i.label for i in result.inputs]

    def same(a, b) -> bool:
        return (a is None and b is None) or (None not in (a, b) and math.isclose(a, b, rel_tol=1e-12))

    for row in result.rows:
        kpi = row["kpi"]
        assert same(row[labels[0]]["mean"], rec[kpi]) and same(row[labels[1]]["mean"], prom[kpi]), kpi
    for kpi, reason in NEVER.items():
        assert f"{labels[1]}: {kpi}: {reason}" in printed
