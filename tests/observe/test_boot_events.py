"""Broker starts and the first leader election happen while the cluster boots, before the observers
attach: events.jsonl.gz and pulsar_lb_emulator_events_total still have them (event_marks.BootEvents)."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest

from emulator import runner
from emulator.cluster.cluster import Cluster
from emulator.observe.event_marks import BootEvents
from emulator.observe.metrics import ClusterMetrics


def _marks(metrics: ClusterMetrics, kind: str) -> float:
    """pulsar_lb_emulator_events_total{kind=kind} as Prometheus scrapes it."""
    for name, labels, value in metrics.samples():
        if name == "pulsar_lb_emulator_events_total" and labels["kind"] == kind:
            return value
    raise AssertionError(f"no {kind} series")


def test_a_recorded_run_has_every_broker_start_and_the_first_election(tmp_path: Path) -> None:
    opts = runner.RunOptions(scenario="broker-crash", duration=60.0, record_dir=str(tmp_path),
                             check_invariants=False)
    result = runner.run(opts, out=io.StringIO(), err=io.StringIO())
    assert result.record_path is not None
    lines = [json.loads(line) for line in
             gzip.decompress((Path(result.record_path) / "events.jsonl.gz").read_bytes()).splitlines()]
    started = [e for e in lines if e["kind"] == "broker_started"]
    elected = [e for e in lines if e["kind"] == "leader_elected"]
    assert sorted(e["broker"] for e in started) == [f"broker-{i}:8080" for i in range(1, 7)]
    assert len(elected) == 1 and elected[0]["broker"] == result.summary.leader
    # they come first, with the emulated times of the boot
    boot = {"broker_started", "leader_elected", "leader_started"}
    first = [e["kind"] for e in lines[:8]]
    assert set(first) == boot and first.count("broker_started") == 6
    assert [e["t"] for e in lines] == sorted(e["t"] for e in lines)
    assert result.summary.brokers_started == 6 and result.summary.leader_elections == 1


@pytest.mark.asyncio
async def test_the_events_counter_counts_the_boot() -> None:
    boot = BootEvents()
    async with Cluster.start(3, before_brokers=boot.before_brokers()) as cluster:
        metrics = ClusterMetrics(cluster)
        boot.replay(cluster.events)
        assert _marks(metrics, "broker_started") == 3
        assert _marks(metrics, "leader_elected") == 1
        assert boot.events == []                  # handed over once, not kept
        await cluster.add_broker("broker-4")
        assert _marks(metrics, "broker_started") == 4   # later ones reach it directly
        metrics.close()


@pytest.mark.asyncio
async def test_a_warm_starts_own_hook_still_runs() -> None:
    ran: list[str] = []

    async def warm(cluster: Cluster) -> None:
        ran.append("warm")

    boot = BootEvents()
    async with Cluster.start(2, before_brokers=boot.before_brokers(warm)) as cluster:
        boot.replay(cluster.events)
    assert ran == ["warm"]
