"""A sweep and a roll-up on a real standalone Spark cluster give the results of local mode.

The cluster is pyspark's own: a master and one worker started with `spark-class` from pyspark's install
folder, in an environment whose PATH does not hold this interpreter (and no PYTHONPATH), as a new user's
would be; the worker's own `python3` (if any) lacks the emulator. The commands run as a user types them,
`python -m emulator sweep|rollup ... --master spark://127.0.0.1:PORT`, so the project and the workers'
interpreter must come with the job. The cluster is stopped at the end whatever happened: its process
groups are killed by the fixture's finalizer.
"""

from __future__ import annotations

import csv
import gzip
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ["default", "--grid", "shedder=ThresholdShedder,UniformLoadShedder", "--seeds", "1-3",
         "--duration", "10m", "--quiet"]
CLUSTER_CONF = ["--conf", "spark.executor.memory=512m", "--conf", "spark.cores.max=2"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bare_env(tmp: Path) -> dict[str, str]:
    """PATH of system folders only (java, sh), no PYTHONPATH, nothing of this interpreter."""
    import pyspark

    java = shutil.which("java")
    assert java is not None
    env = {"HOME": str(tmp), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
           "SPARK_HOME": str(Path(pyspark.__file__).parent),
           "JAVA_HOME": str(Path(os.path.realpath(java)).parent.parent),
           "SPARK_DAEMON_MEMORY": "256m", "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
           "SPARK_LOG_DIR": str(tmp / "logs"), "SPARK_PID_DIR": str(tmp)}
    path_dirs = env["PATH"].split(os.pathsep)
    assert str(Path(sys.executable).parent) not in path_dirs
    first = shutil.which("python3", path=env["PATH"])
    assert first is None or os.path.realpath(first) != os.path.realpath(sys.executable)
    return env


def _wait_for(log: Path, text: str, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    raise AssertionError(f"{text!r} not in {log} after {timeout:.0f} s:\n{log.read_text(errors='replace')[-3000:]}")


def _stop(procs: list[subprocess.Popen]) -> None:
    """Kill each process group (the daemon, its executors and their Python workers), TERM then KILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in procs:
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        if all(p.poll() is not None for p in procs):
            return


@pytest.fixture(scope="module")
def standalone(tmp_path_factory, request):
    """spark://127.0.0.1:PORT of a master and one worker (2 cores), stopped at the end."""
    if shutil.which("java") is None:
        pytest.skip("needs Java 17 or 21 for Spark")
    tmp = tmp_path_factory.mktemp("standalone")
    env = _bare_env(tmp)
    spark_class = str(Path(env["SPARK_HOME"]) / "bin" / "spark-class")
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []
    request.addfinalizer(lambda: _stop(procs))
    master_log, worker_log = tmp / "master.log", tmp / "worker.log"
    with master_log.open("wb") as out:
        procs.append(subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
             "--webui-port", str(_free_port())],
            env=env, cwd=tmp, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True))
    _wait_for(master_log, "I have been elected leader", procs[0])
    with worker_log.open("wb") as out:
        procs.append(subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "2",
             "--memory", "1g", "--webui-port", str(_free_port()), "--work-dir", str(tmp / "work")],
            env=env, cwd=tmp, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True))
    _wait_for(worker_log, "Successfully registered with master", procs[1])
    return url


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The command as a user runs it (this interpreter, the repository on its path)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYSPARK_PYTHON", None)
    return subprocess.run([sys.executable, "-m", "emulator", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=540)


def _table(folder: Path, name: str) -> list[dict[str, str]]:
    (part,) = (folder / "csv" / name).glob("part-*.csv")
    with part.open(newline="") as f:
        return sorted(csv.DictReader(f), key=lambda r: (r["config"], r.get("seed", "")))


def _same(a: list[dict[str, str]], b: list[dict[str, str]], skip: tuple[str, ...] = ()) -> None:
    assert len(a) == len(b) and a
    for ra, rb in zip(a, b):
        assert ra.keys() == rb.keys()
        for k in ra:
            if k in skip:
                continue
            x, y = ra[k], rb[k]
            try:
                fx, fy = float(x), float(y)
            except ValueError:
                assert x == y, (k, x, y)
            else:
                assert math.isclose(fx, fy, rel_tol=1e-9, abs_tol=1e-9), (k, x, y)


def _samples(row: dict[str, str]) -> bytes:
    return gzip.decompress((Path(row["run_dir"]) / "samples.jsonl.gz").read_bytes())


def test_sweep_and_rollup_on_a_standalone_cluster_equal_local_mode(standalone, tmp_path):
    cluster, local = tmp_path / "cluster", tmp_path / "local"
    on_cluster = _cli("sweep", *SWEEP, "--out", str(cluster), "--master", standalone, *CLUSTER_CONF, cwd=tmp_path)
    assert on_cluster.returncode == 0, on_cluster.stderr[-3000:]
    in_local = _cli("sweep", *SWEEP, "--out", str(local), "--master", "local[2]", cwd=tmp_path)
    assert in_local.returncode == 0, in_local.stderr[-3000:]

    with (cluster / "results.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert sorted((r["config"], r["seed"], r["status"]) for r in rows) == [
        (f"shedder={s}", str(seed), "ok") for s in ("ThresholdShedder", "UniformLoadShedder") for seed in (1, 2, 3)]
    # the cluster's workers ran this interpreter, and imported the project from the zip sent with the job
    import msgspec

    for path in (cluster / "results").glob("*.json"):
        row = msgspec.json.decode(path.read_bytes())
        assert row["python"] == sys.executable and row["code"].endswith(".zip"), row
    with (local / "results.csv").open(newline="") as f:
        local_rows = {(r["config"], r["seed"]): r for r in csv.DictReader(f)}
    for r in rows:   # the same recordings, sample for sample
        assert _samples(r) == _samples(local_rows[(r["config"], r["seed"])])

    _same(_table(cluster / "rollup", "runs"), _table(local / "rollup", "runs"))
    _same(_table(cluster / "rollup", "comparison"), _table(local / "rollup", "comparison"))

    # a roll-up of the cluster's recordings, on the cluster, equals the local sweep's
    rolled = _cli("rollup", *(r["run_dir"] for r in rows), "--out", str(tmp_path / "rollup"),
                  "--master", standalone, "--quiet", *CLUSTER_CONF, cwd=tmp_path)
    assert rolled.returncode == 0, rolled.stderr[-3000:]
    _same(_table(tmp_path / "rollup", "runs"), _table(local / "rollup", "runs"), skip=("config",))

