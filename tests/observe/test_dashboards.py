"""The shipped Prometheus config and Grafana dashboard refer only to metrics the emulator exports."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from importlib import resources

import anyio
import pytest

from emulator.observe.metrics import ClusterMetrics
from emulator.testing import emulated_cluster

DASHBOARDS = resources.files("emulator") / "dashboards"


def dashboard() -> dict:
    return json.loads((DASHBOARDS / "grafana-pulsar-lb-emulator.json").read_text())


def test_the_prometheus_example_scrapes_one_emulator_every_second():
    text = (DASHBOARDS / "prometheus.yml").read_text()
    assert re.search(r"^\s+scrape_interval: 1s$", text, re.M)
    assert re.search(r"^\s+metrics_path: /metrics$", text, re.M)
    assert re.search(r'^\s+- targets: \["127\.0\.0\.1:\d+"\]', text, re.M)
    promtool = shutil.which("promtool")
    if promtool:
        with resources.as_file(DASHBOARDS / "prometheus.yml") as path:
            done = subprocess.run([promtool, "check", "config", str(path)], capture_output=True, text=True,
                                  timeout=30)
        assert done.returncode == 0, done.stdout + done.stderr


def test_the_dashboard_has_the_promised_panels():
    titles = " | ".join(p["title"].lower() for p in dashboard()["panels"])
    for needle in ("usage", "max - min", "max / min broker message rate", "unloads and splits",
                   "lookups", "unavailable topic-seconds"):
        assert needle in titles, needle
    uids = [p["id"] for p in dashboard()["panels"]]
    assert len(uids) == len(set(uids))


@pytest.mark.asyncio
async def test_every_metric_the_dashboard_queries_is_exported():
    async with emulated_cluster(2, seed=41, namespaces={"public/default": 2}) as cluster:
        metrics = ClusterMetrics(cluster)
        client = cluster.add_client()
        client.create_handles([f"persistent://public/default/t-{i}" for i in range(4)])
        await cluster.wait_until(lambda: client.connected_count() == 4)
        await anyio.sleep(10)
        exported = {name for name, _, _ in metrics.samples()}
    exprs = [t["expr"] for p in dashboard()["panels"] for t in p["targets"]]
    exprs += [a["target"]["expr"] for a in dashboard()["annotations"]["list"] if "target" in a]
    # the emulator's series; `level:metric:operation` names are pulsar-lb-rules.yml's recording rules
    used = {m for e in exprs for m in re.findall(r"(?<![\w:])(pulsar_\w+)\b(?!:)", e)}
    assert used and used <= exported, used - exported
    assert "pulsar_lb_emulator_events_total" in used
