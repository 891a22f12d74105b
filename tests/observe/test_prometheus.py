"""A real Prometheus scrapes a wall-clock emulator; the shipped config and dashboard queries work on it.

Needs `/usr/bin/prometheus` (Debian: `apt-get install -y --no-install-recommends prometheus`). Without it
the test is skipped, except under `CI=true`, where it fails. Both processes are stopped by pid.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

PROMETHEUS = "/usr/bin/prometheus"
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("run_observed.py")
DASHBOARDS = ROOT / "emulator" / "dashboards"
BROKERS = 3


def require_prometheus() -> None:
    if os.path.exists(PROMETHEUS):
        return
    message = (f"{PROMETHEUS} is missing; install it with: "
               "apt-get install -y --no-install-recommends prometheus")
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_line(proc: subprocess.Popen, timeout: float) -> str:
    """One stdout line of `proc`, waiting at most `timeout` real seconds."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    try:
        if not sel.select(timeout):
            raise AssertionError(f"no output from pid {proc.pid} within {timeout}s")
        return proc.stdout.readline()
    finally:
        sel.close()


def query(port: int, expr: str) -> dict:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=5) as resp:
        return json.loads(resp.read())


def wait_for(what: str, check, timeout: float):
    """Poll `check()` until it returns something truthy; bounded real-time wait."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except OSError as e:        # Prometheus not listening yet
            last = e
        else:
            if last:
                return last
        time.sleep(0.25)
    raise AssertionError(f"{what} not seen within {timeout}s (last: {last!r})")


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, sig)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


def dashboard_queries() -> list[str]:
    dash = json.loads((DASHBOARDS / "grafana-pulsar-lb-emulator.json").read_text())
    return [t["expr"].replace("$cluster", ".*") for p in dash["panels"] for t in p["targets"]]


def test_a_real_prometheus_scrapes_every_broker_and_sees_lookups_grow(tmp_path):
    require_prometheus()
    emulator = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--clock", "wall", "--speed", "10", "--metrics-port", "0",
         "--duration", "1200", "--brokers", str(BROKERS), "--new-topics", "5"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    prometheus = None
    try:
        line = read_line(emulator, 60)
        m = re.match(r"READY url=http://127\.0\.0\.1:(\d+) ", line)
        assert m, f"unexpected first line {line!r}"
        target = f"127.0.0.1:{m.group(1)}"

        shipped = (DASHBOARDS / "prometheus.yml").read_text()              # the shipped example
        config = shipped.replace('"127.0.0.1:8080"', f'"{target}"')
        assert config != shipped, "the example's target is no longer 127.0.0.1:8080"
        (tmp_path / "prometheus.yml").write_text(config)
        web = free_port()
        prometheus = subprocess.Popen(
            [PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
             f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{web}",
             "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        # toolchain.md §3: the first scrape lands about 6 s after launch
        def cpu_series():
            result = query(web, "pulsar_lb_cpu_usage")["data"]["result"]
            brokers = {r["metric"]["broker"] for r in result}
            return brokers if len(brokers) == BROKERS else None

        brokers = wait_for("pulsar_lb_cpu_usage for every broker", cpu_series, 60)
        assert brokers == {f"broker-{i}:8080" for i in range(1, BROKERS + 1)}
        up = query(web, 'up{job="pulsar-lb-emulator"}')["data"]["result"]
        assert [r["value"][1] for r in up] == ["1"]

        def answers() -> float | None:
            result = query(web, "sum(pulsar_broker_lookup_answers_total)")["data"]["result"]
            return float(result[0]["value"][1]) if result else None

        first = wait_for("lookup answers", answers, 30)
        wait_for("lookup answers growing", lambda: (answers() or 0) > first, 30)

        for expr in dashboard_queries():     # every dashboard panel is valid PromQL on real data
            reply = query(web, expr)
            assert reply["status"] == "success", (expr, reply)
        assert query(web, "pulsar_lb_emulator_time_seconds")["data"]["result"]
    finally:
        if prometheus is not None:
            stop(prometheus)
        stop(emulator)
    assert emulator.returncode == 143        # stopped by our SIGTERM, not crashed
