"""The recorder: deterministic files, whole lines at any time, run.json marked incomplete when killed."""

from __future__ import annotations

import gzip
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from emulator.cluster.load_source import FlatLoad
from emulator.observe.attach import observe
from emulator.observe.metrics import SCRAPE_ONLY, ClusterMetrics
from emulator.observe.recorder import Recorder
from emulator.runtime import VirtualClock, run
from emulator.testing import emulated_cluster

NS = "public/default"
HOT = "broker-5:8080"
SCRIPT = Path(__file__).with_name("run_observed.py")
ROOT = Path(__file__).resolve().parents[2]


def read_lines(path: Path) -> list[dict]:
    """`path`'s lines: the recorder writes `path` + ".gz", whole gzip members each ending a line."""
    packed = path.with_name(path.name + ".gz")
    text = gzip.decompress(packed.read_bytes()).decode() if packed.exists() else path.read_text()
    assert text == "" or text.endswith("\n"), f"{path.name} ends in a partial line"
    return [json.loads(line) for line in text.splitlines()]


def recorded_run(seed: int, out: Path, minutes: float = 12, **record: Any) -> None:
    """A hot broker that sheds: samples, assignments, shedding plans and unloads get recorded."""

    async def main() -> None:
        load = FlatLoad(rate=1000.0, msg_size=1024, cores=4, broker_cores={HOT: 1})
        async with emulated_cluster(5, seed=seed, namespaces={NS: 16}, load_source=load) as cluster:
            async with observe(cluster, record_dir=out, run_info={"scenario": "hot", "seed": seed}, **record):
                client = cluster.add_client()
                client.create_handles([f"persistent://{NS}/t-{i}" for i in range(200)])
                await anyio.sleep(minutes * 60)

    run(main, clock=VirtualClock())


def test_two_runs_with_the_same_seed_write_identical_samples_and_decisions(tmp_path):
    recorded_run(11, tmp_path / "a")
    recorded_run(11, tmp_path / "b")
    recorded_run(12, tmp_path / "c")
    for name in ("samples.jsonl.gz", "decisions.jsonl.gz"):
        a = (tmp_path / "a" / name).read_bytes()
        assert a == (tmp_path / "b" / name).read_bytes(), f"{name} differs between equal seeds"
        assert a != (tmp_path / "c" / name).read_bytes(), f"{name} does not depend on the seed"
    decisions = read_lines(tmp_path / "a" / "decisions.jsonl")
    kinds = {d["decision"] for d in decisions}
    assert {"assignment", "shedding_plan", "unload"} <= kinds, kinds
    assert all("t" in d for d in decisions)
    info = json.loads((tmp_path / "a" / "run.json").read_text())
    assert info["complete"] is True and info["seed"] == 11 and info["scenario"] == "hot"
    assert info["clock"] == "virtual" and info["record_interval"] == 10.0
    assert info["emulated_end"] == pytest.approx(12 * 60, abs=5)
    assert info["config"]["loadBalancerSheddingIntervalMinutes"] == "1"
    assert {"pulsar_lb_emulator", "python", "anyio", "msgspec", "prometheus_client"} <= set(info["versions"])


def test_samples_come_in_blocks_on_the_interval_grid_straight_from_the_registry(tmp_path):
    out = tmp_path / "run"

    async def main() -> list[tuple[str, dict, float]]:
        async with emulated_cluster(3, seed=2, namespaces={NS: 4}) as cluster:
            async with observe(cluster, record_dir=out, record_interval=15.0) as obs:
                client = cluster.add_client()
                client.create_handles([f"persistent://{NS}/t-{i}" for i in range(20)])
                await anyio.sleep(100.0)
                expected = [s for s in obs.metrics.samples() if s[0] not in SCRAPE_ONLY]
                t_end = cluster.system.clock.now()
                obs.close()
                return expected, t_end

    expected, t_end = run(main, clock=VirtualClock())
    samples = read_lines(out / "samples.jsonl")
    times = sorted({s["t"] for s in samples})
    assert times[-1] == t_end                 # the closing block
    inner = times[1:-1]
    assert inner and all(math.isclose(t / 15.0, round(t / 15.0)) for t in inner), inner
    assert all(b - a == pytest.approx(15.0) for a, b in zip(inner, inner[1:]))
    last = [(s["name"], s["labels"], s["value"]) for s in samples if s["t"] == t_end]
    assert last == [(n, labels, v) for n, labels, v in expected]     # the same samples a scrape collects
    assert all(set(s) == {"t", "name", "labels", "value"} for s in samples)


def test_lines_reach_the_disk_at_least_every_emulated_minute(tmp_path):
    out = tmp_path / "run"

    async def main() -> tuple[int, int]:
        async with emulated_cluster(2, seed=3, namespaces={NS: 2}) as cluster:
            async with observe(cluster, record_dir=out, record_interval=600.0):
                client = cluster.add_client()
                client.create_handles([f"persistent://{NS}/t-{i}" for i in range(10)])
                await cluster.wait_until(lambda: client.connected_count() == 10)
                await anyio.sleep(61.0)
                on_disk = len(read_lines(out / "decisions.jsonl")), len(read_lines(out / "samples.jsonl"))
        return on_disk

    decisions, samples = run(main, clock=VirtualClock())
    assert decisions > 0, "assignments were still only in memory after a minute"
    assert samples > 0


def test_a_close_interrupting_a_write_marks_run_json_and_is_finished_by_that_write(tmp_path):
    async def main() -> None:
        async with emulated_cluster(2, seed=4, namespaces={NS: 2}) as cluster:
            metrics = ClusterMetrics(cluster)
            rec = Recorder(cluster, metrics, tmp_path / "run", run_info={})
            rec.sample()
            rec._writing = True                      # as if SIGTERM landed inside flush()
            assert rec.close(complete=False) is False and not rec.closed
            marked = json.loads((tmp_path / "run" / "run.json").read_text())
            assert marked["complete"] is False and marked["ended_at"] is not None
            rec._writing = False
            rec.flush()
            assert rec.closed
            assert json.loads((tmp_path / "run" / "run.json").read_text())["complete"] is False
            assert read_lines(tmp_path / "run" / "samples.jsonl")

    run(main, clock=VirtualClock())


@pytest.mark.asyncio
async def test_bad_arguments_say_what_is_wrong(tmp_path):
    async with emulated_cluster(2, seed=5, namespaces={NS: 2}) as cluster:
        metrics = ClusterMetrics(cluster)
        with pytest.raises(ValueError, match="interval = 0"):
            Recorder(cluster, metrics, tmp_path / "a", run_info={}, interval=0)
        with pytest.raises(TypeError, match="run_info"):
            Recorder(cluster, metrics, tmp_path / "a", run_info=None)  # type: ignore[arg-type]
        Recorder(cluster, metrics, tmp_path / "b", run_info={}).close()
        with pytest.raises(ValueError, match="already holds a recording"):
            Recorder(cluster, metrics, tmp_path / "b", run_info={})


def test_a_run_killed_with_sigterm_leaves_valid_files_and_an_incomplete_run_json(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--clock", "virtual", "--duration", str(30 * 86400),
         "--record", str(out), "--new-topics", "0", "--topics", "100"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)})   # this checkout's emulator, not an installed one
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("READY"), "the emulator did not start"
        deadline = time.monotonic() + 60
        samples = out / "samples.jsonl.gz"
        while time.monotonic() < deadline and (not samples.exists() or samples.stat().st_size < 50_000):
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be killed"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 143
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    info = json.loads((out / "run.json").read_text())
    assert info["complete"] is False
    assert info["ended_at"] is not None and info["emulated_end"] > 0
    samples = read_lines(out / "samples.jsonl")
    assert len({s["t"] for s in samples}) > 2
    assert read_lines(out / "decisions.jsonl")
    events = read_lines(out / "events.jsonl")
    assert all("kind" in e and "t" in e for e in events)
    assert sorted(os.listdir(out)) == ["decisions.jsonl.gz", "events.jsonl.gz", "publish.jsonl.gz", "run.json",
                                       "samples.jsonl.gz"]   # publish.jsonl.gz: the publish latency so far


def test_sample_lines_are_the_sample_structs_json_byte_for_byte(tmp_path):
    """Lines are assembled from cached parts; they must be exactly the schema Struct's encoding."""
    from emulator.observe.recorder import Sample

    async def main() -> list[bytes]:
        async with emulated_cluster(3, seed=5, namespaces={NS: 4}) as cluster:
            metrics = ClusterMetrics(cluster)
            rec = Recorder(cluster, metrics, tmp_path / "run", run_info={})
            client = cluster.add_client()
            client.create_handles([f"persistent://{NS}/t-{i}" for i in range(20)])
            expected: list[bytes] = []
            for t in (0.0, 12.5, 1e16, 7):
                await anyio.sleep(13)
                block = [msgspec.json.encode(Sample(t, n, labels, v)) + b"\n"
                         for n, labels, v in metrics.samples() if n not in SCRAPE_ONLY]
                assert rec.sample(t) == len(block)
                expected += block
            rec.close(complete=False)
            metrics.close()
            return expected

    expected = run(main, clock=VirtualClock())
    assert gzip.decompress((tmp_path / "run" / "samples.jsonl.gz").read_bytes()) == b"".join(expected)


def test_decision_levels_full_one_line_each_or_none(tmp_path):
    """full: every candidate list and score; decisions: the same lines, each trace cut to its summary
    (the choice, its score, the count of candidates, the fallbacks); off: no decisions file."""
    for level in ("full", "decisions", "off"):
        recorded_run(11, tmp_path / level, record_decisions=level)
    full = read_lines(tmp_path / "full" / "decisions.jsonl")
    short = read_lines(tmp_path / "decisions" / "decisions.jsonl")
    assert not (tmp_path / "off" / "decisions.jsonl.gz").exists()
    assert [(d["decision"], d["t"]) for d in full] == [(d["decision"], d["t"]) for d in short]
    pairs = [(f, s) for f, s in zip(full, short) if f.get("trace")]
    assert pairs and any(f["decision"] == "unload" for f, _ in pairs)
    for f, s in pairs:
        assert isinstance(f["trace"]["candidates"], list) and "scores" in f["trace"]
        assert s["trace"]["n_candidates"] == len(f["trace"]["candidates"])
        assert s["trace"]["chosen"] == f["trace"]["chosen"] and "scores" not in s["trace"]
        assert s["trace"].get("score") == f["trace"]["scores"].get(f["trace"]["chosen"])
        assert {k: v for k, v in s.items() if k != "trace"} == {k: v for k, v in f.items() if k != "trace"}
    assert json.loads((tmp_path / "off" / "run.json").read_text())["record_decisions"] == "off"
    # the decisions do not depend on what is recorded of them
    assert read_lines(tmp_path / "off" / "samples.jsonl") == read_lines(tmp_path / "full" / "samples.jsonl")


def test_plain_recordings_and_pandas_read_the_same_lines(tmp_path):
    recorded_run(11, tmp_path / "gz", minutes=3)
    recorded_run(11, tmp_path / "plain", minutes=3, record_compress=False)
    assert sorted(os.listdir(tmp_path / "plain")) == ["decisions.jsonl", "events.jsonl", "publish.jsonl",
                                                      "run.json", "samples.jsonl"]
    for name in ("samples.jsonl", "decisions.jsonl", "events.jsonl", "publish.jsonl"):
        assert gzip.decompress((tmp_path / "gz" / (name + ".gz")).read_bytes()) == \
            (tmp_path / "plain" / name).read_bytes()
    import pandas   # a test dependency: docs/metrics.md says recordings read with pandas
    frame = pandas.read_json(tmp_path / "gz" / "samples.jsonl.gz", lines=True)
    assert len(frame) == len(read_lines(tmp_path / "plain" / "samples.jsonl"))


def test_event_lines_are_their_records_with_every_key_sorted(tmp_path):
    """events.jsonl holds each record as `to_builtins` (keys sorted at every level) then encoded."""
    from emulator.cluster.events import ScenarioEvent, from_record, to_builtins

    out = tmp_path / "run"

    async def main() -> None:
        async with emulated_cluster(3, seed=4, namespaces={NS: 4}) as cluster:
            async with observe(cluster, record_dir=out):
                cluster.events.emit(ScenarioEvent(event="set_load", arguments={
                    "zeta": 1, "alpha": {"b": [1.5, math.inf], "a": {"y": 2, "x": "s"}}, "mid": None}))
                client = cluster.add_client()
                client.create_handles([f"persistent://{NS}/t-{i}" for i in range(20)])
                await anyio.sleep(30)
                await cluster.stop_broker(sorted(cluster.live_brokers())[0], "graceful")
                await anyio.sleep(30)

    run(main, clock=VirtualClock())
    lines = gzip.decompress((out / "events.jsonl.gz").read_bytes()).splitlines()
    kinds = {json.loads(line)["kind"] for line in lines}
    assert {"scenario_event", "handle_disconnected", "handle_reconnected", "broker_stopped"} <= kinds, kinds
    for line in lines:
        assert line == msgspec.json.encode(to_builtins(from_record(json.loads(line)).record())), line
    assert any(b'"alpha":{"a":{"x":"s","y":2},"b":[1.5,null]},"event":"set_load"' in line for line in lines)
