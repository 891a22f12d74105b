"""A quiet SparkSession: local mode with no set-up beyond `pip install`, and a clean stop.

Spark prints a banner, a hostname warning, progress bars and a log-level hint by default. Each has a
different source (toolchain.md §2), so quieting takes four things, all applied before the JVM starts:
`SPARK_CONF_DIR` pointing at this package's `log4j2.properties` (unless the user set one), the
`SPARK_LOCAL_IP=127.0.0.1` loopback address in local mode, `spark.ui.showConsoleProgress=false` and
`spark.ui.enabled=false`. The JVM's own "Using incubator modules" line cannot be silenced. Once the
session is up, the level goes to WARN (or `$PULSAR_LB_SPARK_LOG_LEVEL`): warnings only.

`spark_session()` stops a session it started when its block ends, even on error, so no JVM outlives
the command.

Python and code (`shipping.py`): the workers run the interpreter `shipping.worker_python` picks (this
command's own in local and standalone mode, a packed environment's on YARN and Kubernetes, `--python`
or `spark.pyspark.python` or `$PYSPARK_PYTHON` when given), set as `SparkContext.pythonExec`, which is
what PySpark hands the workers; and the project goes with the job as a zip on the context's Python
path, built once per session into a temporary folder that `stop_session` removes.

Sizing (`sized_to` and `launch_conf`): a roll-up knows its input before Spark starts, so small inputs
get a JVM that compiles less (C1 only) and plans without whole-stage code generation, and the shuffle
partitions follow the data: one per 128 MiB of input (Spark's own `spark.sql.files.maxPartitionBytes`),
at least one, at most the default parallelism (the cores in local mode). A key the user set (`--conf`)
always wins.
"""

from __future__ import annotations

import math
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Mapping

if TYPE_CHECKING:  # pyspark is imported lazily: `report` and the CLI's --help must not pay for it
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
APP_NAME = "pulsar-lb-emulator"
CONF_DIR = Path(__file__).resolve().parent  # holds log4j2.properties
LOG_LEVEL_ENV = "PULSAR_LB_SPARK_LOG_LEVEL"   # Spark's log level once started (default WARN)

_DEFAULT_CONF: Mapping[str, str] = {
    "spark.ui.showConsoleProgress": "false",
    "spark.ui.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    # PySpark 4 otherwise captures each `functions` call's Python call site for error messages: a stack
    # walk and four py4j round trips per call (500 of a recorded hour's roll-up's 3,950, measured)
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}


SMALL_INPUT_BYTES = 512 << 20
"""Below this much recorded input, compiling code costs more than it saves (measured: a recorded hour of
`default`, 26 MB, rolls up in 26 s instead of 49 s with C1 only and no whole-stage code generation)."""
BYTES_PER_PARTITION = 128 << 20


CODE_CACHE = "256m"
"""The JIT's code cache with C1 only (its default there is 48 MiB): a session that had rolled up two
recorded hours filled it, and the JVM then disabled its compiler ("CodeCache is full. Compiler has been
disabled") and ran everything after interpreted (measured)."""


def launch_conf(master: str | None, input_bytes: int | None) -> dict[str, str]:
    """Settings only a JVM launch can take: in local mode on a small input, the C1 compiler only."""
    if not _is_local(master) or input_bytes is None or input_bytes > SMALL_INPUT_BYTES:
        return {}
    return {"spark.driver.extraJavaOptions": f"-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize={CODE_CACHE}"}


def ship_project(session: "SparkSession", python: str | None = None) -> str:
    """Point the workers at their interpreter and add the project zip; return the interpreter.

    `python` (`--python`) wins over `spark.pyspark.python`, `$PYSPARK_PYTHON` and the default
    (`shipping.worker_python`); the zip goes to a temporary folder kept until `stop_session`."""
    import tempfile

    from emulator.pipeline.shipping import build_project_zip, worker_python

    sc = session.sparkContext
    conf = dict(sc.getConf().getAll())
    exe = worker_python(sc.master, conf, python)
    sc.pythonExec = exe
    if getattr(session, "_pulsar_lb_ship_dir", None) is None:
        folder = tempfile.mkdtemp(prefix="pulsar-lb-ship-")
        sc.addPyFile(str(build_project_zip(folder)))
        session._pulsar_lb_ship_dir = folder  # type: ignore[attr-defined]
    return exe


def _local_conf(master: str | None) -> dict[str, str]:
    """In local mode: adaptive execution off and one shuffle partition per core.

    A roll-up is ~40 small aggregations and joins over MBs. With AQE on, every query stage becomes its
    own job (121 jobs against 41 for one roll-up of two runs, measured), and the writes took 13-20 s
    against 5-8 s. On a cluster (spark-submit, master None) Spark's own defaults stand."""
    m = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\d+)?\])?", master or "")
    if m is None:
        return {}
    threads = m.group(1)
    cores = 1 if threads is None else (os.cpu_count() or 2) if threads == "*" else int(threads)
    return {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": str(max(1, cores))}


def tune_session(session: "SparkSession") -> None:
    """Runtime SQL settings, applied after start so that they also reach a spark-submit session:
    `_local_conf` in local mode, and plan strings wide enough for the ~50-column tables (else Spark
    warns that it truncated one). A key the user set in the Spark conf is left alone."""
    sc = session.sparkContext
    wanted = {"spark.sql.debug.maxToStringFields": "1000", **_local_conf(sc.master)}
    conf = sc.getConf()   # a copy, made by py4j round trips: once, not per key
    for key, value in wanted.items():
        if not conf.contains(key):
            session.conf.set(key, value)


def _is_local(master: str | None) -> bool:
    """None (spark-submit decides) is not known to be local: leave the network settings alone."""
    return master is not None and master.startswith("local")


def quiet_environment(master: str | None) -> None:
    """Point Spark at our log4j2.properties and the loopback address, unless the user chose otherwise.

    This changes the process environment (the JVM reads it at launch); the user's own settings win."""
    os.environ.setdefault("SPARK_CONF_DIR", str(CONF_DIR))
    if _is_local(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def _check_local_python(master: str | None, conf: Mapping[str, str] | None, python: str | None) -> None:
    """In local mode the workers' Python runs here: one that is not here is bad input, said before the
    JVM starts (elsewhere only the workers can tell)."""
    import shutil

    from emulator.pipeline.shipping import worker_python

    if _is_local(master):
        exe = worker_python(master, conf, python)
        if shutil.which(exe) is None:
            raise ValueError(f"the workers' Python = {exe!r} (--python, spark.pyspark.python or PYSPARK_PYTHON): "
                             "not an interpreter on this machine")


def start_session(master: str | None = DEFAULT_MASTER, *, app_name: str = APP_NAME,
                  conf: Mapping[str, str] | None = None, python: str | None = None) -> "SparkSession":
    """Start (or join) a quiet SparkSession with the project shipped (`ship_project`). `master=None`
    leaves the master to `spark-submit`; `python` is the workers' interpreter (`--python`)."""
    if master is not None and (not isinstance(master, str) or not master.strip()):
        raise ValueError(f"master = {master!r}: expected a Spark master URL such as local[*]")
    if conf is not None and not isinstance(conf, Mapping):
        raise TypeError(f"conf = {conf!r}: expected a mapping of Spark property -> value")
    _check_local_python(master, conf, python)
    quiet_environment(master)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    for key, value in {**_DEFAULT_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    tune_session(session)
    ship_project(session, python)
    # start-up is silenced by log4j2.properties (errors only); from here on warnings are worth seeing
    session.sparkContext.setLogLevel(os.environ.get(LOG_LEVEL_ENV, "WARN"))
    return session


@contextmanager
def spark_session(master: str | None = DEFAULT_MASTER, *, app_name: str = APP_NAME,
                  conf: Mapping[str, str] | None = None, python: str | None = None
                  ) -> Iterator["SparkSession"]:
    """`with spark_session("local[2]") as spark:` stops the session at the end if it started it.

    A session already active in this process (a notebook's, a test fixture's, spark-submit's) is
    joined as it is, whatever `master` says, and left running."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    session = start_session(master, app_name=app_name, conf=conf, python=python)
    try:
        yield session
    finally:
        stop_session(session)


@contextmanager
def sized_to(session: "SparkSession", input_bytes: int | None) -> Iterator[None]:
    """Runtime SQL settings for this much input, restored afterwards (a joined session is shared):
    shuffle partitions and, for a small input, no whole-stage code generation. Keys the user set in
    the Spark conf are left alone."""
    sc = session.sparkContext
    wanted: dict[str, str] = {}
    if input_bytes is not None:
        if input_bytes <= SMALL_INPUT_BYTES:
            wanted["spark.sql.codegen.wholeStage"] = "false"
        # in local mode too: one partition per core split a recorded hour's few MB of aggregates into
        # twice the tasks, each a cold task's overhead (21.1 s against 18.9 s for the roll-up, median
        # of five alternating pairs, measured)
        parts = min(max(1, math.ceil(input_bytes / BYTES_PER_PARTITION)), max(1, sc.defaultParallelism))
        wanted["spark.sql.shuffle.partitions"] = str(parts)
    conf = sc.getConf()
    wanted = {k: v for k, v in wanted.items() if not conf.contains(k)}
    before = {k: session.conf.get(k, None) for k in wanted}
    for key, value in wanted.items():
        session.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                session.conf.unset(key)
            else:
                session.conf.set(key, old)


def stop_session(session: "SparkSession") -> None:
    """Stop the session and remove the project zip's folder; a second stop is harmless."""
    import shutil

    try:
        session.stop()
    except Exception:   # the JVM is gone already (killed with the command's process group): one line
        pass            # about the failed job has been said, not a py4j traceback about the stop
    folder = getattr(session, "_pulsar_lb_ship_dir", None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
        session._pulsar_lb_ship_dir = None  # type: ignore[attr-defined]


def jvm_peak_rss_bytes(session: "SparkSession") -> int | None:
    """Peak resident memory of the driver JVM (VmHWM of the py4j gateway process), or None.

    `/usr/bin/time` sees only the Python driver; the JVM is a child it never waits for (toolchain.md §2).
    None when the gateway is not our child (spark-submit, Spark Connect) or /proc is not there."""
    try:
        pid = session.sparkContext._gateway.proc.pid  # type: ignore[union-attr]
    except AttributeError:
        return None
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            parts = line.split()
            return int(parts[1]) * 1024 if len(parts) >= 2 and parts[1].isdigit() else None
    return None
