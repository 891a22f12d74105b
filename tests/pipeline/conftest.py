"""One local Spark session for every pipeline test (a cold JVM costs 5-20 s), and one sweep that the
sweep and report tests share."""

from __future__ import annotations

import shutil
import sys

import pytest

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
