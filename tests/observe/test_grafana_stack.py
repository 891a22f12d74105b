"""Every dashboard query, annotation and rule returns data from a real Prometheus scraping a running emulator.

What compose.yaml starts, without docker: Debian's `prometheus` with the shipped prometheus.yml (its
target pointed at the emulator's port) and pulsar-lb-rules.yml, scraping `pulsar-lb-emulator run
--clock wall` of a small scenario that has what every panel needs: a broker with a foreign CPU load (an
imbalance the shedder cannot remove, so PulsarLoadImbalanced fires), a broker added (idle: the max/min
ratio would be +Inf), one killed (reconnects, lookup failures), and the leader's unloads. The queries
are run as Grafana runs them: a range query over the run, `$cluster` = all, `$__interval` = the step.

Slow (about 30 s of real time). Needs `/usr/bin/prometheus` as test_prometheus.py does.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.observe.test_prometheus import PROMETHEUS, free_port, read_line, require_prometheus, stop, wait_for

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = ROOT / "emulator" / "dashboards"
SPEED = 40
STEP = 1    # s: the range queries' step, = $__interval, = the scrape interval

SCENARIO = """
[scenario]
name = "grafana-stack"
description = "an imbalance the shedder cannot remove, a broker added and one killed"
duration = "30m"
seed = 3

[cluster]
brokers = 3

[cluster.capacity]
cores = 4

# the shedder unloads from broker-1 once its EMA passes the average by 10 points (about 5 minutes in):
# the "Unloads and splits" annotation needs one of the leader's decisions before the alert fires, and
# broker-1's excess would not reach the default 10 MB/s minimum offload within this run
[settings]
loadBalancerBundleUnloadMinThroughputThreshold = 1

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

[clients]
count = 2
connect_over = "10s"

[[events]]
at = "2m"
do = "background_load"
brokers = ["broker-1"]
cores = 3

[[events]]
at = "3m"
do = "add_brokers"
count = 1

[[events]]
at = "6m"
do = "remove_brokers"
brokers = ["broker-2"]
mode = "kill"
"""


def api(port: int, path: str, **params: Any) -> Any:
    url = f"http://127.0.0.1:{port}/api/v1/{path}?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=10) as resp:
        reply = json.loads(resp.read())
    assert reply["status"] == "success", (path, params, reply)
    return reply["data"]


def as_grafana_runs_it(expr: str) -> str:
    return expr.replace("$cluster", ".*").replace("$__interval", f"{STEP}s")


def values(result: list[dict[str, Any]]) -> list[float]:
    return [float(v) for series in result for _, v in series["values"]]


@pytest.mark.slow
def test_every_panel_annotation_and_rule_returns_data_from_a_real_prometheus(tmp_path):
    require_prometheus()
    metrics_port, web = free_port(), free_port()
    shipped = (DASHBOARDS / "prometheus.yml").read_text()
    config = shipped.replace('"127.0.0.1:8080"', f'"127.0.0.1:{metrics_port}"')
    assert config != shipped, "the example's target is no longer 127.0.0.1:8080"
    (tmp_path / "prometheus.yml").write_text(config)
    (tmp_path / "pulsar-lb-rules.yml").write_text((DASHBOARDS / "pulsar-lb-rules.yml").read_text())
    (tmp_path / "scenario.toml").write_text(SCENARIO)

    # Prometheus first, so that its scrapes see every event from the first one on.
    prometheus = subprocess.Popen(
        [PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'data'}",
         f"--web.listen-address=127.0.0.1:{web}", "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    emulator = None
    try:
        groups = wait_for("the rules loaded", lambda: api(web, "rules")["groups"], 60)
        # the scrape loop runs (up = 0 while nothing listens): the emulator's first seconds are scraped
        wait_for("the first scrape", lambda: api(web, "query", query="up")["result"], 60)
        start = time.time()
        with open(tmp_path / "emulator.log", "w") as log:
            emulator = subprocess.Popen(
                [sys.executable, "-m", "emulator", "run", str(tmp_path / "scenario.toml"), "--clock", "wall",
                 "--speed", str(SPEED), "--metrics-port", str(metrics_port)],
                cwd=ROOT, stdout=subprocess.PIPE, stderr=log, text=True)
        line = read_line(emulator, 60)
        assert line.startswith(f"READY url=http://127.0.0.1:{metrics_port}"), line

        def firing() -> list[Any]:
            return api(web, "query", query='ALERTS{alertname="PulsarLoadImbalanced", alertstate="firing"}')["result"]

        # the imbalance starts at about 2.5 emulated minutes; held 15 more: ~26 s of real time at speed 40
        wait_for("PulsarLoadImbalanced firing", firing, 120)
        time.sleep(2 * STEP)      # so that a step of the range queries falls after the firing sample
        end = time.time()

        def query_range(expr: str) -> list[dict[str, Any]]:
            return api(web, "query_range", query=as_grafana_runs_it(expr), start=start, end=end, step=STEP)["result"]

        dashboard = json.loads((DASHBOARDS / "grafana-pulsar-lb-emulator.json").read_text())
        for panel in dashboard["panels"]:
            for target in panel["targets"]:
                got = values(query_range(target["expr"]))
                assert got, (panel["title"], target["expr"])
                assert all(math.isfinite(v) for v in got), (panel["title"], target["expr"], "+Inf or NaN")

        # The guards matter in this run: unguarded, the two panels showed +Inf and NaN.
        rate = "(pulsar_broker_rate_in + pulsar_broker_rate_out)"
        bucket = "sum by (cluster, le) (rate(pulsar_lb_emulator_reconnect_latency_seconds_bucket[1m]))"
        assert math.inf in values(query_range(f"max by (cluster) {rate} / min by (cluster) {rate}"))
        assert any(math.isnan(v) for v in values(query_range(f"histogram_quantile(0.5, {bucket})")))

        marks: dict[str, dict[str, float]] = {}
        for annotation in dashboard["annotations"]["list"]:
            if "target" not in annotation:
                continue        # Grafana's built-in one
            result = query_range(annotation["target"]["expr"])
            assert result, annotation["name"]
            name_label = "alertname" if "ALERTS" in annotation["target"]["expr"] else "name"
            marks[annotation["name"]] = {}
            for series in result:
                name = series["metric"][name_label]
                marks[annotation["name"]][name] = sum(float(v) for _, v in series["values"])
        # each event is marked once: the differences over consecutive steps add up to the count
        assert marks["Scenario events"] == {"background_load": 1, "add_brokers": 1, "remove_brokers": 1}
        assert set(marks["Unloads and splits"]) <= {"unload", "split"} and marks["Unloads and splits"]
        assert {"broker_started", "broker_crashed"} <= set(marks["Brokers, leader, admin"])
        assert "PulsarLoadImbalanced" in marks["Prometheus alerts"]

        rules = [rule for group in api(web, "rules")["groups"] for rule in group["rules"]]
        assert len(rules) == sum(len(g["rules"]) for g in yaml.safe_load(
            (DASHBOARDS / "pulsar-lb-rules.yml").read_text())["groups"]) == sum(len(g["rules"]) for g in groups)
        for rule in rules:
            assert rule["health"] == "ok", rule
            if rule["type"] == "recording":
                assert values(query_range(rule["name"])), rule["name"]
    finally:
        if emulator is not None:
            stop(emulator)
        stop(prometheus)
