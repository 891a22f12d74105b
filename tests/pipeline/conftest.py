"""One local Spark session for every pipeline test (a cold JVM costs 5-20 s), one sweep that the sweep
and report tests share, and the recorded runs the roll-up tests read."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from emulator.pipeline.synthetic import write_synthetic_run
from tests.pipeline.options import SWEEP_OPTIONS


@pytest.fixture(scope="session")
def spark():
    if shutil.which("java") is None:
        pytest.skip("the pipeline tests need Java 17 or 21 for Spark")
    from emulator.pipeline.session import start_session, stop_session

    session = start_session("local[2]")
    yield session
    stop_session(session)


def _tagging_runner(scenario, overrides, seed, out_dir, duration=None):
    """The synthetic stand-in for emulator.runner.run_recorded, noting which Spark task ran it."""
    from pathlib import Path

    from pyspark import TaskContext

    from emulator.pipeline.synthetic import run_recorded

    folder = run_recorded(scenario, overrides, seed, out_dir, duration)
    ctx = TaskContext.get()
    Path(folder, "task.txt").write_text(f"{ctx.partitionId() if ctx else -1}")
    return folder


@pytest.fixture(scope="session")
def swept(spark, tmp_path_factory):
    """2 configurations x 2 seeds on local[2], each run recorded by a synthetic stand-in."""
    from pyspark import cloudpickle

    from emulator.pipeline.sweep import sweep

    # ship the runner by value: the executors need not import the tests package
    cloudpickle.register_pickle_by_value(sys.modules[_tagging_runner.__module__])
    out = tmp_path_factory.mktemp("sweep")
    return sweep("heterogeneous-brokers", {"placement": ["LeastLongTermMessageRate", "AvgShedder"]},
                 [1, 2], out, "local[2]", 1800.0, runner=_tagging_runner, options=SWEEP_OPTIONS,
                 show=False, spark=spark)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A finished run, and one still running (no emulated_end) in a folder whose name needs escaping."""
    root = tmp_path_factory.mktemp("runs")
    done = write_synthetic_run(root / "done", seed=5, duration=3600.0, overrides={"placement": "AvgShedder"})
    with open(Path(done, "decisions.jsonl"), "a") as f:   # the Extensible load manager's, some counted
        for t, decision, label, reason in ((130.0, "extensible_unload", "Success", "Overloaded"),
                                           (140.0, "extensible_unload", "Skip", "HitCount"),
                                           (700.0, "extensible_unload", "Success", "Underloaded"),
                                           (900.0, "extensible_unload", "Success", "Admin"),
                                           (1300.0, "extensible_split", "Success", "Topics"),
                                           (1400.0, "extensible_split", "Skip", "Balanced"),
                                           (1500.0, "extensible_split", "Success", "Admin")):
            f.write(json.dumps({"kind": "decision" if decision == "extensible_unload" else decision, "t": t,
                                "label": label, "reason": reason, "bundle": "public/default/0x00000000_0x10000000",
                                "broker": "broker-1:8080", "decision": decision}) + "\n")
    running = write_synthetic_run(root / "still running+1 %x", seed=9, duration=2650.0)
    info = json.loads(Path(running, "run.json").read_text())
    info.update(emulated_start=50.0, emulated_end=None, complete=False, ended_at=None, grid={})
    Path(running, "run.json").write_text(json.dumps(info))
    empty = root / "empty"  # crashed at once: an empty samples file and no other file
    empty.mkdir()
    (empty / "samples.jsonl").write_text("")
    (empty / "run.json").write_text(json.dumps({"scenario": "crashed", "seed": 1, "emulated_end": 600.0}))
    return [done, running, str(empty)]
