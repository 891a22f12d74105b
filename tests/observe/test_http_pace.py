"""Emulated time keeps its pace under scraping, and scraping changes nothing (issue 32): the same run,
unscraped and scraped by 50 concurrent clients of one process, the scraped one within 2x of the unscraped
wall time and with the same recording, byte for byte."""

from __future__ import annotations

import http.client
import re
import subprocess
import sys
import threading
import time

from pathlib import Path

import pytest

from tests.observe.test_read_only import _recording

CLIENTS = 50


def timed_run(clients: int, duration: str = "20m", record: Path | None = None) -> tuple[float, int]:
    """Wall seconds of `run default` while `clients` threads scrape /metrics back to back; the scrapes."""
    cmd = [sys.executable, "-m", "emulator", "run", "default", "--duration", duration, "--metrics-port", "0",
           "--quiet"] + (["--record", str(record)] if record is not None else [])
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    ready = re.search(r"url=http://([^:]+):(\d+)", proc.stdout.readline())
    assert ready is not None
    host, port = ready.group(1), int(ready.group(2))
    stop = threading.Event()
    scrapes = [0] * clients

    def scrape(i: int) -> None:
        conn = http.client.HTTPConnection(host, port, timeout=30)
        while not stop.is_set():
            try:
                conn.request("GET", "/metrics")
                response = conn.getresponse()
                response.read()
                scrapes[i] += response.status == 200
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection(host, port, timeout=30)
                time.sleep(0.05)

    threads = [threading.Thread(target=scrape, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    proc.communicate(timeout=600)
    wall = time.perf_counter() - started
    stop.set()
    assert proc.returncode == 0
    return wall, sum(scrapes)


@pytest.mark.slow
def test_fifty_scraping_clients_keep_emulated_time_within_2x_of_its_pace():
    """Unscraped then scraped, back to back, up to three pairs: the best pair's ratio (a wall-time ratio
    on a shared machine: a neighbour's burst during one scraped run is not the server's pace)."""
    ratios = []
    for _ in range(3):
        unscraped, _ = timed_run(0)
        scraped, scrapes = timed_run(CLIENTS)
        assert scrapes > 10 * CLIENTS                     # they did scrape, all along
        ratios.append(scraped / unscraped)
        if ratios[-1] < 2:
            break
    assert min(ratios) < 2, f"scraped / unscraped wall time: {', '.join(f'{r:.2f}' for r in ratios)}"


@pytest.mark.slow
def test_fifty_scraping_clients_change_no_recorded_byte(tmp_path):
    """The issue's "Done means": the scraped run's recording equals the unscraped one's (decisions,
    events, samples, publish, run.json but for its wall-clock fields)."""
    timed_run(0, "10m", tmp_path / "plain")
    _, scrapes = timed_run(CLIENTS, "10m", tmp_path / "scraped")
    assert scrapes > CLIENTS
    [plain] = (tmp_path / "plain").iterdir()
    [scraped] = (tmp_path / "scraped").iterdir()
    assert _recording(scraped) == _recording(plain)
