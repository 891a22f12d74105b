"""Progress of a roll-up or a sweep: Spark's own task counts over the whole command, read from its
status tracker.

    with ProgressBar("rollup", poll=SparkTasks(), unit="tasks"):
        rollup(...)

`SparkTasks()` is a `ProgressBar` poll (observe/progress.py) that returns a `Reading`: the tasks done and
the tasks planned, summed over the stages of every job the command has started (each stage once, as a
reused shuffle stage appears in several jobs), from `getJobIdsForGroup`/`getJobInfo`/`getStageInfo`
(PySpark's `StatusTracker`, over Spark's `AppStatusStore`). A job's stages are all known when it is
submitted (pending ones with their task counts), so a job that starts and ends between two polls is
still counted whole; a succeeded job counts all its stages done (skipped ones too); a stage's counts
only grow here (a retried stage, or a reused one re-listed as pending, never takes done back), and a
finished job's counts are kept once Spark forgets it (`spark.ui.retainedJobs`). Jobs that existed
before the poll was made (a session reused in a test) are not the command's and are left out.

Before any job: the phase "starting Spark" (no SparkContext, or its JVM side not up yet: ~20 s of JVM
start) then "planning" (a context, no job yet). The total still grows when the command plans its next
job (a roll-up runs many small ones): the bar holds its percent (ProgressBar).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from emulator.observe.progress import Reading

__all__ = ["SparkTasks"]

STARTING = "starting Spark"
PLANNING = "planning"


def _active_context() -> Any:
    try:
        from pyspark import SparkContext
    except ImportError:   # the command says so itself when it starts Spark
        return None
    return SparkContext._active_spark_context


class SparkTasks:
    """`context`: returns the SparkContext to read (None: none yet); pyspark's active one by default."""

    def __init__(self, context: Callable[[], Any] | None = None) -> None:
        self._context = context if context is not None else _active_context
        self._stages: dict[tuple[str, int], tuple[int, int]] = {}   # (app, stage) -> (done, total)
        self._finished: set[tuple[str, int]] = set()                # (app, job) counted for good
        self._first_job: dict[str, int] = {}                        # app -> its first job of ours
        sc = self._ready(self._context())
        if sc is not None:   # a context already up: its jobs so far belong to someone else
            tracker = sc.statusTracker()
            known = list(tracker.getJobIdsForGroup(None)) + list(tracker.getActiveJobsIds())
            self._first_job[str(sc.applicationId)] = max(known, default=-1) + 1

    @staticmethod
    def _ready(sc: Any) -> Any:
        """The context if its JVM side is up (`_jsc` is set last in SparkContext.__init__), else None."""
        return sc if sc is not None and getattr(sc, "_jsc", None) is not None else None

    def __call__(self) -> Reading:
        sc = self._ready(self._context())
        if sc is not None:
            self._read(sc)
        done = sum(min(d, t) for d, t in self._stages.values())
        total = sum(t for _, t in self._stages.values())
        if sc is None and not self._stages:
            return Reading(0.0, None, STARTING)
        if not total:
            return Reading(0.0, None, PLANNING)
        return Reading(float(done), float(total), growing=True)

    def _read(self, sc: Any) -> None:
        app = str(sc.applicationId)
        first = self._first_job.setdefault(app, 0)
        tracker = sc.statusTracker()
        jobs = set(tracker.getJobIdsForGroup(None)) | set(tracker.getActiveJobsIds())
        for job in sorted(j for j in jobs if j >= first and (app, j) not in self._finished):
            info = tracker.getJobInfo(job)
            if info is None:
                continue
            status = str(info.status)
            for stage in info.stageIds:
                key = (app, stage)
                seen_done, seen_total = self._stages.get(key, (0, 0))
                stage_info = tracker.getStageInfo(stage)
                if stage_info is not None:
                    seen_total = max(seen_total, int(stage_info.numTasks))
                    seen_done = max(seen_done, int(stage_info.numCompletedTasks))
                if status == "SUCCEEDED":
                    seen_done = seen_total
                self._stages[key] = (seen_done, seen_total)
            if status in ("SUCCEEDED", "FAILED"):
                self._finished.add((app, job))
