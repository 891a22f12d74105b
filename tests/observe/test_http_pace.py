"""Emulated time keeps its pace under scraping (issue 32): the same run, unscraped and scraped by 50
concurrent clients of one process, the scraped one within 2x of the unscraped wall time."""

from __future__ import annotations

import http.client
import re
import subprocess
import sys
import threading
import time

import pytest

CLIENTS = 50


def timed_run(clients: int, duration: str = "20m") -> tuple[float, int]:
    """Wall seconds of `run default` while `clients` threads scrape /metrics back to back; the scrapes."""
    cmd = [sys.executable, "-m", "emulator", "run", "default", "--duration", duration, "--metrics-port", "0",
           "--quiet"]
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
    unscraped, _ = timed_run(0)
    scraped, scrapes = timed_run(CLIENTS)
    assert scrapes > 10 * CLIENTS                     # they did scrape, all along
    assert scraped < 2 * unscraped, f"scraped {scraped:.1f} s vs unscraped {unscraped:.1f} s wall"
