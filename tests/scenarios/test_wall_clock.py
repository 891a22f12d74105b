"""`--clock wall` decides as the virtual clock does, serves /metrics while it waits, reports its lag."""

from __future__ import annotations

import io
import threading
import urllib.request
from pathlib import Path

from emulator.runner import RunOptions, run

SCENARIO = """
[scenario]
name = "wall-vs-virtual"
description = "a small cluster, one broker killed: decisions, outages and reconnects to compare"
duration = "90s"
seed = 5

[cluster]
brokers = 3

[cluster.capacity]
cores = 2

[[namespaces]]
name = "t/ns"
bundles = 8

[[topics]]
group = "g"
namespace = "t/ns"
count = 60
name = "topic-{i}"
rate = { distribution = "uniform", low = 50, high = 500 }

[clients]
count = 2

[[events]]
at = "20s"
do = "remove_brokers"
brokers = ["broker-3"]
mode = "kill"
"""


class _ScrapeOnReady(io.StringIO):
    """The runner's stdout: on the READY line, scrape /metrics from another thread during the run."""

    def __init__(self) -> None:
        super().__init__()
        self.scraped: list[bytes] = []
        self.thread: threading.Thread | None = None

    def write(self, s: str) -> int:
        if s.startswith("READY url=http") and self.thread is None:
            url = s.split()[1].removeprefix("url=") + "/metrics"

            def scrape() -> None:
                with urllib.request.urlopen(url, timeout=5) as resp:
                    self.scraped.append(resp.read())

            self.thread = threading.Thread(target=scrape, daemon=True)
            self.thread.start()
        return super().write(s)


def _run(tmp_path: Path, clock: str, out: io.StringIO, err: io.StringIO) -> tuple[str, Path]:
    scenario = tmp_path / "wall-vs-virtual.toml"
    scenario.write_text(SCENARIO)
    opts = RunOptions(scenario=str(scenario), clock=clock, speed=100.0, record_dir=str(tmp_path / clock),
                      metrics_port=0 if clock == "wall" else None)
    result = run(opts, out=out, err=err)
    assert result.violations == [] and result.interrupted is None
    assert result.record_path is not None
    return result.summary_text, Path(result.record_path)


def test_wall_and_virtual_clocks_make_the_same_decisions_and_count_the_same_outages(tmp_path):
    virtual_text, virtual_dir = _run(tmp_path, "virtual", io.StringIO(), io.StringIO())
    out = _ScrapeOnReady()
    wall_text, wall_dir = _run(tmp_path, "wall", out, io.StringIO())

    lines = wall_text.splitlines()
    lag_lines = [line for line in lines if line.startswith("  wall clock ")]
    assert len(lag_lines) == 1 and "max lag" in lag_lines[0]
    assert "wall clock" not in virtual_text
    assert [line for line in lines if line not in lag_lines] == virtual_text.splitlines()
    assert "0.000 topic-seconds" not in virtual_text      # the kill cost something, in both modes

    # the recordings depend on the seed alone (the lag is scraped, not recorded)
    for name in ("decisions.jsonl.gz", "samples.jsonl.gz", "events.jsonl.gz"):
        assert (wall_dir / name).read_bytes() == (virtual_dir / name).read_bytes(), name
    assert (wall_dir / "decisions.jsonl.gz").stat().st_size > 0

    # /metrics was answered while the paced loop was waiting for the wall clock
    assert out.thread is not None
    out.thread.join(timeout=10)
    assert out.scraped and b"pulsar_lb_emulator_wall_lag_seconds{" in out.scraped[0]
