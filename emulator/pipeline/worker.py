"""What a sweep sends to Spark's Python workers, and the one line the driver prints when a worker fails.

    sc.parallelize(tasks, len(tasks)).map(worker_task_function()).collect()

`run_task` travels by value (cloudpickle), not as a reference to this module: a reference would make
the worker import `emulator` while unpickling, before any code of ours runs, and a worker that cannot
(the project zip missing, a third-party package missing from its interpreter) would fail the job with
PySpark's traceback. By value, it imports the project itself, and on failure raises one line marked
`WORKER_ERROR_MARK` that names the interpreter; `job_error_line` finds that line in the job's error on
the driver (or the last line of any other Python error), so the command prints one line, not the
JVM's and Python's stack traces.
"""

from __future__ import annotations

import re
import sys
from typing import Any, Callable

__all__ = ["WORKER_ERROR_MARK", "job_error_line", "run_task", "worker_task_function"]

WORKER_ERROR_MARK = "pulsar-lb-emulator worker:"


def run_task(task: dict[str, Any]) -> bytes:
    """Worker side: import the project (one clear error if it cannot), then run one sweep run."""
    try:
        from emulator.pipeline.runs import execute
    except ImportError as e:
        version = "%d.%d.%d" % sys.version_info[:3]
        raise RuntimeError(
            f"{WORKER_ERROR_MARK} the Spark worker's Python {sys.executable} (Python {version}) cannot "
            f"import the emulator: {type(e).__name__}: {e}; give the workers an interpreter that has its "
            "dependencies (--python PATH, or a packed environment on --conf spark.archives)") from None
    return execute(task)


def worker_task_function() -> Callable[[dict[str, Any]], bytes]:
    """`run_task`, registered to be pickled by value (idempotent)."""
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    return run_task


_PY_ERROR = re.compile(r"^[ \t]*([A-Za-z_][\w.]*(?:Error|Exception|Exit)\b.*)$", re.M)


def job_error_line(exc: BaseException) -> str:
    """One line for a failed Spark job: the worker's marked line, else the Python error's last line."""
    text = str(exc)
    for line in text.splitlines():
        at = line.find(WORKER_ERROR_MARK)
        if at >= 0:
            return line[at:].strip()
    if "PYTHON_VERSION_MISMATCH" in text or "different version" in text:
        m = re.search(r"Python in worker has different version:? ?(\S+) than that in driver:? ?(\S+)", text)
        if m:
            return (f"Spark's workers run Python {m.group(1)} but the driver runs {m.group(2)} ({sys.executable}); "
                    "give them the same version (--python PATH)")
    m = re.search(r'Cannot run program "([^"]*)"[^\n]*', text)
    if m:
        return f"Spark could not start the workers' Python {m.group(1)!r}: {m.group(0).strip()}"[:500]
    errors = [m.group(1).strip() for m in _PY_ERROR.finditer(text)
              if not m.group(1).startswith(("py4j.", "org.", "java.", "scala."))]
    last = errors[-1] if errors else (text.strip().splitlines() or [type(exc).__name__])[0]
    return last[:500]
