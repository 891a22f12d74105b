"""Progress of a roll-up or a sweep: Spark's own task counts, read from its status tracker.

    with ProgressBar("rollup", poll=SparkTasks(), unit="tasks"):
        rollup(...)

`SparkTasks()` is a `ProgressBar` poll (observe/progress.py): (tasks finished, tasks known) over the
stages the active SparkContext has run since it was made. A stage seen running and then gone is
counted whole; the total grows as Spark plans stages (a sweep's one stage of one task per run is
known at once, so its ETA holds; a roll-up's many small stages make the total climb as it goes).
"""

from __future__ import annotations

__all__ = ["SparkTasks"]


class SparkTasks:
    def __init__(self) -> None:
        self._stages: dict[int, tuple[int, int]] = {}

    def __call__(self) -> tuple[float, float | None]:
        from pyspark import SparkContext

        sc = SparkContext._active_spark_context
        if sc is not None:
            tracker = sc.statusTracker()
            active = set(tracker.getActiveStageIds())
            for stage, (_, tasks) in list(self._stages.items()):
                if stage not in active:
                    self._stages[stage] = (tasks, tasks)
            for stage in active:
                info = tracker.getStageInfo(stage)
                if info is not None:
                    self._stages[stage] = (info.numCompletedTasks, info.numTasks)
        done = sum(d for d, _ in self._stages.values())
        total = sum(t for _, t in self._stages.values())
        return float(done), float(total) if total else None
