"""SparkTasks reads the whole command's jobs from Spark's status tracker: done and total never go
backwards as stages are planned, reused or retried, and the wait before the first job is a phase."""

from __future__ import annotations

import io
from collections import namedtuple

import pytest

from emulator.observe.progress import ProgressBar
from emulator.pipeline.progress import PLANNING, STARTING, SparkTasks

# the fields of pyspark.status.SparkJobInfo / SparkStageInfo
JobInfo = namedtuple("JobInfo", "jobId stageIds status")
StageInfo = namedtuple("StageInfo", "stageId currentAttemptId name numTasks numActiveTasks numCompletedTasks "
                                    "numFailedTasks")


class FakeTracker:
    """What Spark's AppStatusStore answers: jobs (with every stage, pending ones too) and stages."""

    def __init__(self) -> None:
        self.jobs: dict[int, JobInfo] = {}
        self.stages: dict[int, StageInfo] = {}

    def job(self, job: int, stages: list[int], status: str = "RUNNING") -> None:
        self.jobs[job] = JobInfo(job, stages, status)

    def stage(self, stage: int, tasks: int, completed: int = 0) -> None:
        self.stages[stage] = StageInfo(stage, 0, f"stage {stage}", tasks, 0, completed, 0)

    def getJobIdsForGroup(self, group=None):
        return list(self.jobs)

    def getActiveJobsIds(self):
        return [j for j, info in self.jobs.items() if info.status == "RUNNING"]

    def getJobInfo(self, job):
        return self.jobs.get(job)

    def getStageInfo(self, stage):
        return self.stages.get(stage)


class FakeContext:
    applicationId = "app-1"

    def __init__(self, tracker: FakeTracker, jvm_up: bool = True) -> None:
        self.tracker = tracker
        self._jsc = object() if jvm_up else None

    def statusTracker(self) -> FakeTracker:
        return self.tracker


def test_phases_before_the_first_job():
    holder: list = [None]
    poll = SparkTasks(context=lambda: holder[0])
    assert poll().phase == STARTING                        # no SparkContext yet
    tracker = FakeTracker()
    holder[0] = FakeContext(tracker, jvm_up=False)
    assert poll().phase == STARTING                        # the JVM is still starting
    holder[0] = FakeContext(tracker)
    assert poll().phase == PLANNING and poll().total is None
    tracker.job(0, [0])
    tracker.stage(0, 4)
    reading = poll()
    assert reading.phase is None and (reading.done, reading.total) == (0, 4)


def test_done_and_total_are_the_whole_commands_and_never_go_backwards():
    """The user's 100 % -> 33 % -> 93 %: per-stage counts as stages came and went; here the job infos."""
    tracker = FakeTracker()
    poll = SparkTasks(context=lambda: FakeContext(tracker))
    seen = []

    def read() -> tuple[float, float | None]:
        r = poll()
        seen.append(r)
        return r.done, r.total

    tracker.job(0, [0, 1])                                 # a job: both stages known at submission
    tracker.stage(0, 10, 4)
    tracker.stage(1, 2)                                    # pending, its tasks already counted
    assert read() == (4, 12)
    tracker.stage(0, 10, 10)
    tracker.stage(1, 2, 2)
    tracker.job(0, [0, 1], "SUCCEEDED")
    assert read() == (12, 12)
    tracker.job(1, [2], "SUCCEEDED")                       # started and ended between two polls
    tracker.stage(2, 6, 6)
    assert read() == (18, 18)
    tracker.job(2, [1, 3])                                 # stage 1 reused: listed pending, count 0
    tracker.stage(1, 2, 0)
    tracker.stage(3, 8, 3)
    assert read() == (21, 26)                              # stage 1 counted once, done kept
    tracker.stage(3, 8, 1)                                 # a retried attempt starts over
    assert read() == (21, 26)
    tracker.jobs.pop(0)
    tracker.stages.pop(0)                                  # Spark forgot an old job (retainedJobs)
    tracker.stage(3, 8, 8)
    tracker.job(2, [1, 3], "SUCCEEDED")
    assert read() == (26, 26)
    for before, after in zip(seen, seen[1:]):
        assert after.done >= before.done and after.total >= before.total and after.growing, seen
    # through the bar: the percent never drops either, and says 100 % only when the command ended
    bar = ProgressBar("rollup", poll=lambda: (0, None), unit="tasks", stream=io.StringIO(), terminal=False)
    fractions = []
    for reading in seen:
        bar.update(reading)
        fractions.append(bar.fraction)
    assert fractions == sorted(fractions) and max(fractions) < 1.0


def test_jobs_from_before_the_command_are_left_out():
    tracker = FakeTracker()
    tracker.job(0, [0], "SUCCEEDED")
    tracker.stage(0, 50, 50)
    context = FakeContext(tracker)
    poll = SparkTasks(context=lambda: context)
    assert poll().phase == PLANNING
    tracker.job(1, [1])
    tracker.stage(1, 3, 1)
    assert (poll().done, poll().total) == (1, 3)


@pytest.mark.slow
def test_a_real_spark_job_reads_monotone(spark):
    """One real job of 3 stages: the counts a poll reads between and after them only grow."""
    poll = SparkTasks()
    sc = spark.sparkContext
    before = poll()
    rdd = sc.parallelize(range(200), 4).map(lambda x: (x % 7, x)).reduceByKey(lambda a, b: a + b, 3)
    rdd = rdd.map(lambda kv: (kv[1] % 5, kv[0])).groupByKey(2)
    assert len(rdd.collect()) == 5
    after = poll()
    assert before.phase == PLANNING
    assert after.total == after.done == 4 + 3 + 2
    assert rdd.count() == 5                                # a second job: the shuffles are reused
    again = poll()
    assert again.done == again.total >= after.total
