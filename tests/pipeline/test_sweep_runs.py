"""A sweep's runs: one row per run written as it ends, failed runs as rows, resume, and the shipping of the
project to Spark's workers (the zip, the interpreter, one line when a worker cannot import it)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import msgspec
import pytest

from emulator.pipeline.runs import RunRow, read_rows, run_key
from emulator.pipeline.shipping import build_project_zip, packed_env_python, worker_python
from emulator.pipeline.sweep import SparkJobError, sweep
from emulator.pipeline.worker import WORKER_ERROR_MARK, job_error_line
from tests.pipeline.options import SWEEP_OPTIONS


def _mixed_runner(scenario, overrides, seed, out_dir, duration=None):
    """Seed 1 ends well, 2 fails an expectation, 3 an actor, 4 hangs, 5 raises, 6 dies; pickled by value."""
    import os
    import signal
    import time

    from emulator.pipeline.synthetic import run_recorded

    if seed == 4:
        time.sleep(60)
    if seed == 5:
        raise RuntimeError("emulator crashed at t=42")
    if seed == 6:
        os.kill(os.getpid(), signal.SIGKILL)
    folder = run_recorded(scenario, overrides, seed, out_dir, duration)
    return folder, {1: 0, 2: 1, 3: 3}[seed], {1: None, 2: "1 of 2 [[expect]] failed", 3: "1 actor failure(s)"}[seed]


@pytest.mark.slow
def test_failed_runs_are_rows_with_status_and_reason_and_a_rerun_redoes_only_the_unfinished(spark, tmp_path):
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    result = sweep("heterogeneous-brokers", {}, [1, 2, 3, 4, 5, 6], tmp_path, duration=1800.0,
                   runner=_mixed_runner, options=SWEEP_OPTIONS, show=False, spark=spark, run_timeout=3.0)
    status = {r.seed: (r.status, r.exit_code) for r in result.rows}
    assert status == {1: ("ok", 0), 2: ("expectations_failed", 1), 3: ("fault", 3), 4: ("timeout", None),
                      5: ("error", None), 6: ("error", None)}
    reasons = {r.seed: r.reason for r in result.rows}
    assert reasons[2] == "1 of 2 [[expect]] failed" and "3 s of wall time" in reasons[4]
    assert reasons[5] == "RuntimeError: emulator crashed at t=42" and "SIGKILL" in reasons[6]
    assert {r.config for r in result.rows} == {"heterogeneous-brokers"}   # --seeds alone: one configuration
    # every run's row is on disk, one file per run, and in results.csv
    on_disk = read_rows(tmp_path / "results")
    assert sorted(r.seed for r in on_disk.values()) == [1, 2, 3, 4, 5, 6]
    with (tmp_path / "results.csv").open(newline="") as f:
        assert [(r["seed"], r["status"]) for r in csv.DictReader(f)] == [
            ("1", "ok"), ("2", "expectations_failed"), ("3", "fault"), ("4", "timeout"), ("5", "error"),
            ("6", "error")]
    # complete recordings (exit 0 and 1) are rolled up; every non-ok run is listed as a failure
    assert sorted(r["seed"] for r in result.rollup.runs) == [1, 2]
    assert sorted(f.seed for f in result.failures) == [2, 3, 4, 5, 6]

    # the same sweep again: final rows (ok, 1, 3) are kept, timeout and error runs run again
    again = sweep("heterogeneous-brokers", {}, [1, 2, 3, 4, 5, 6, 7], tmp_path, duration=1800.0,
                  runner="emulator.pipeline.synthetic:run_recorded",
                  options=SWEEP_OPTIONS, show=False, spark=spark, run_timeout=30.0)
    assert again.skipped == 3 and again.ran == 4
    assert {r.seed: r.status for r in again.rows} == {1: "ok", 2: "expectations_failed", 3: "fault", 4: "ok",
                                                     5: "ok", 6: "ok", 7: "ok"}
    assert sorted(r["seed"] for r in again.rollup.runs) == [1, 2, 4, 5, 6, 7]


@pytest.mark.slow
def test_a_worker_that_cannot_import_the_project_fails_the_job_in_one_line(spark, tmp_path):
    """A worker interpreter without site-packages (no msgspec): one marked line naming it."""
    script = tmp_path / "bare-python"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} -S \"$@\"\n")
    script.chmod(0o755)
    sc = spark.sparkContext
    before = sc.pythonExec
    sc.pythonExec = str(script)
    try:
        with pytest.raises(SparkJobError) as e:
            sweep("heterogeneous-brokers", {}, [1], tmp_path, runner="emulator.pipeline.synthetic:run_recorded",
                  options=SWEEP_OPTIONS, show=False, spark=spark)
    finally:
        sc.pythonExec = before
    line = str(e.value)
    assert "\n" not in line and line.startswith(WORKER_ERROR_MARK)
    assert sys.executable in line and "No module named 'msgspec'" in line


def test_job_error_line_finds_the_marked_line_or_the_python_error():
    marked = RuntimeError("py4j error\nTraceback (most recent call last):\n  File x\nRuntimeError: "
                          f"{WORKER_ERROR_MARK} the Spark worker's Python /x (Python 3.9.1) cannot import\n"
                          "\tat org.apache.spark.Foo(Foo.scala:1)\n")
    assert job_error_line(marked) == f"{WORKER_ERROR_MARK} the Spark worker's Python /x (Python 3.9.1) cannot import"
    other = RuntimeError("An error occurred\nError from python worker:\n  Traceback:\n"
                         "  ModuleNotFoundError: No module named 'anyio'\norg.apache.spark.SparkException: EOF")
    assert job_error_line(other) == "ModuleNotFoundError: No module named 'anyio'"


def test_worker_python_order(tmp_path):
    env: dict[str, str] = {}
    assert worker_python("local[2]", {}, None, env) == sys.executable
    assert worker_python("spark://10.0.0.1:7077", {}, None, env) == sys.executable
    assert worker_python("yarn", {}, None, env) == "python3"
    packed = {"spark.archives": "hdfs:///envs/pulsar.tar.gz#environment"}
    assert worker_python("k8s://https://api:6443", packed, None, env) == "./environment/bin/python"
    assert packed_env_python({"spark.archives": "a.tgz#x,b.tgz#y"}) is None   # which one is Python: unsaid
    assert worker_python("yarn", packed, None, {"PYSPARK_PYTHON": "/opt/py"}) == "/opt/py"
    assert worker_python("local", {"spark.pyspark.python": "/c/py"}, None, {"PYSPARK_PYTHON": "/e"}) == "/c/py"
    assert worker_python("yarn", {"spark.pyspark.python": "/c/py"}, "/flag/py", env) == "/flag/py"


def test_project_zip_is_reproducible_and_importable_with_its_scenarios(tmp_path):
    a = build_project_zip(tmp_path / "a")
    b = build_project_zip(tmp_path / "b")
    assert a.name == b.name and a.read_bytes() == b.read_bytes()
    names = zipfile.ZipFile(a).namelist()
    assert {"emulator/__init__.py", "strategies/__init__.py", "shedders/__init__.py",
            "emulator/scenarios/default.toml", "emulator/pipeline/log4j2.properties"} <= set(names)
    assert not [n for n in names if n.endswith(".pyc") or "__pycache__" in n]
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import emulator, strategies, shedders; "
            "from emulator.workload import library; assert emulator.__file__.startswith(sys.argv[1]); "
            "assert 'default' in library.names(); print(len(library.source('default')))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", code, str(a)], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 100


def test_run_key_follows_what_decides_a_run():
    k = run_key("default", {"shedder": "A"}, 1, 600.0)
    assert k == run_key("default", {"shedder": "A"}, 1, 600.0) and k.startswith("s1-")
    assert len({k, run_key("default", {"shedder": "B"}, 1, 600.0), run_key("default", {"shedder": "A"}, 2, 600.0),
                run_key("default", {"shedder": "A"}, 1, None), run_key("other", {"shedder": "A"}, 1, 600.0)}) == 5


def test_unreadable_rows_are_run_again(tmp_path):
    (tmp_path / "s1-x.json").write_text("{not json")
    row = RunRow(key="s2-y", index=0, config="c", seed=2, scenario="s", overrides={}, duration=None, status="ok",
                 exit_code=0, reason=None, run_dir=None, wall_seconds=1.0, host="h", python="p", code="c")
    (tmp_path / "s2-y.json").write_bytes(msgspec.json.encode(row))
    assert list(read_rows(tmp_path)) == ["s2-y"]
    assert read_rows(Path(tmp_path / "missing")) == {}


def test_a_local_worker_python_that_is_not_here_is_bad_input_before_the_jvm_starts(tmp_path):
    from emulator.pipeline.session import start_session

    with pytest.raises(ValueError, match="the workers' Python = '/no/such/python'"):
        start_session("local[1]", python="/no/such/python")
    done = subprocess.run([sys.executable, "-m", "emulator", "sweep", "default", "--python", "/no/such/python",
                           "--out", str(tmp_path / "s"), "--quiet"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].endswith("not an interpreter on this machine")
    assert "Traceback" not in done.stderr


def test_the_real_runner_reports_a_failed_expectation_as_exit_1(tmp_path):
    from emulator.runner import run_recorded_status
    from emulator.workload import library

    scenario = tmp_path / "expect.toml"
    text = library.source("default").replace('duration = "2h"', 'duration = "1m"').split("[[expect]]")[0]
    scenario.write_text(text + '\n[[expect]]\nkpi = "unloads"\nmin = 1000000\n')
    folder, code, reason = run_recorded_status(str(scenario), {}, 1, str(tmp_path / "runs"), None)
    assert code == 1 and reason is not None and reason.endswith("[[expect]] failed")
    assert (Path(folder) / "run.json").is_file()
    folder, code, reason = run_recorded_status("default", {}, 1, str(tmp_path / "runs"), 10.0)
    assert (code, reason) == (0, None)
