"""The Extensible load manager's decision events: the decision log's lines, the recorder's decisions
file at both levels, and the counts of the summary and the KPIs (as Modular's `unload` / `split`)."""

from __future__ import annotations

import gzip
import json

import anyio
import pytest
import structlog

from emulator.cluster.events import (
    ClusterEvents,
    ExtensibleAssignment,
    ExtensibleSplitDecision,
    ExtensibleUnloadDecision,
)
from emulator.loadmanagers.extensible.model.decisions import SplitLabel, SplitReason, UnloadLabel, UnloadReason
from emulator.observe import kpis
from emulator.observe.decision_log import DecisionLog
from emulator.observe.metrics import ClusterMetrics
from emulator.observe.recorder import Recorder
from emulator.observe.summary import format_summary, summarize
from emulator.observe.timeline import Timeline
from emulator.testing import emulated_cluster

BUNDLE = "public/default/0x00000000_0x40000000"


def decisions() -> list:
    return [
        ExtensibleUnloadDecision(leader="b0", label=UnloadLabel.SUCCESS, reason=UnloadReason.OVERLOADED,
                                 bundle=BUNDLE, broker="b1", destination="b2", transfer=True,
                                 load_avg=0.5, load_std=0.3, target_std=0.25, max_load=0.9, min_load=0.1),
        ExtensibleUnloadDecision(leader="b0", label=UnloadLabel.SKIP, reason=UnloadReason.HIT_COUNT,
                                 load_avg=0.5, load_std=0.3, target_std=0.25),
        ExtensibleUnloadDecision(leader="b0", label=UnloadLabel.SUCCESS, reason=UnloadReason.ADMIN,
                                 bundle=BUNDLE, broker="b2"),
        ExtensibleSplitDecision(broker="b1", label=SplitLabel.SUCCESS, reason=SplitReason.TOPICS,
                                bundle=BUNDLE, children=["0x00000000_0x20000000", "0x20000000_0x40000000"],
                                topics=1200, sessions=10, msg_rate=5.0, throughput=100.0, threshold=1000),
        ExtensibleSplitDecision(broker="b1", label=SplitLabel.SKIP, reason=SplitReason.BALANCED),
        ExtensibleAssignment(decider="b2", bundle=BUNDLE, broker="b1", candidates=3, fallback=True),
    ]


# what every one of them records (the decision log's entries, decisions.jsonl at either level)
RECORDS = [
    {"kind": "decision", "t": 12.5, "leader": "b0", "label": "Success", "reason": "Overloaded",
     "bundle": BUNDLE, "broker": "b1", "destination": "b2", "transfer": True, "load_avg": 0.5,
     "load_std": 0.3, "target_std": 0.25, "max_load": 0.9, "min_load": 0.1, "decision": "extensible_unload"},
    {"kind": "decision", "t": 12.5, "leader": "b0", "label": "Skip", "reason": "HitCount", "load_avg": 0.5,
     "load_std": 0.3, "target_std": 0.25, "decision": "extensible_unload"},
    {"kind": "decision", "t": 12.5, "leader": "b0", "label": "Success", "reason": "Admin", "bundle": BUNDLE,
     "broker": "b2", "decision": "extensible_unload"},
    {"kind": "extensible_split", "t": 12.5, "broker": "b1", "label": "Success", "reason": "Topics",
     "bundle": BUNDLE, "children": ["0x00000000_0x20000000", "0x20000000_0x40000000"], "topics": 1200,
     "sessions": 10, "msg_rate": 5.0, "throughput": 100.0, "threshold": 1000.0,
     "decision": "extensible_split"},
    {"kind": "extensible_split", "t": 12.5, "broker": "b1", "label": "Skip", "reason": "Balanced",
     "decision": "extensible_split"},
    {"kind": "extensible_assignment", "t": 12.5, "decider": "b2", "bundle": BUNDLE, "broker": "b1",
     "candidates": 3, "fallback": True, "decision": "extensible_assignment"},
]


class FixedClock:
    kind = "virtual"

    def now(self) -> float:
        return 12.5


def test_the_decision_log_writes_one_line_each_with_its_numbers():
    events = ClusterEvents(FixedClock())  # type: ignore[arg-type]
    with structlog.testing.capture_logs() as logs:
        log = DecisionLog(events, level="decisions")
        for d in decisions():
            events.emit(d)
    assert log.entries == RECORDS
    assert [r["event"] for r in logs] == ["extensible_unload"] * 3 + ["extensible_split"] * 2 + [
        "extensible_assignment"]
    first = logs[0]
    assert first["label"] == "Success" and first["reason"] == "Overloaded" and first["transfer"] is True
    assert (first["broker"], first["destination"], first["max_load"], first["min_load"]) == ("b1", "b2", 0.9, 0.1)
    assert logs[3]["children"] == RECORDS[3]["children"] and logs[3]["topics"] == 1200
    assert logs[5]["candidates"] == 3 and logs[5]["fallback"] is True
    log.close()


@pytest.mark.parametrize("level", ["full", "decisions"])
@pytest.mark.asyncio
async def test_the_recorder_writes_them_whole_at_either_level(tmp_path, level):
    async with emulated_cluster(2, seed=3) as cluster:
        metrics = ClusterMetrics(cluster)
        rec = Recorder(cluster, metrics, tmp_path / "run", run_info={}, decisions=level)
        await anyio.sleep(1)
        t = cluster.system.clock.now()
        for d in decisions():
            cluster.events.emit(d)
        rec.close(complete=True)
        metrics.close()
    lines = [json.loads(x) for x in gzip.decompress((tmp_path / "run" / "decisions.jsonl.gz").read_bytes())
             .decode().splitlines()]
    ours = [x for x in lines if x["decision"].startswith("extensible_")]
    assert ours == [{**r, "t": t} for r in RECORDS]


@pytest.mark.asyncio
@pytest.mark.parametrize("keep", [True, False])
async def test_the_summary_counts_successful_non_admin_unloads_and_splits(keep):
    """Counted as they come, whether the log keeps its records (a test's) or not (a run's: flat memory)."""
    async with emulated_cluster(2, seed=3) as cluster:
        log = DecisionLog(cluster.events, keep=keep, log=False, level="decisions")
        before = summarize(cluster, log)
        for d in decisions():
            cluster.events.emit(d)
        after = summarize(cluster, log)
        log.close()
    assert (after.unloads - before.unloads, after.splits - before.splits) == (1, 1)
    assert f"unloads            {after.unloads} by the shedder" in format_summary(after)
    assert bool(log.entries) is keep


def test_the_kpis_count_them_as_the_summary_does():
    tl = Timeline(t0=0.0)
    for i, r in enumerate(RECORDS + [{"kind": "decision", "t": 0.0, "decision": "unload", "bundle": "x"}]):
        tl.add_record({**r, "t": float(i)})
    tl.end = 10.0
    (row,) = kpis.compute(tl, [kpis.Scope(0.0, 10.0, True)])
    assert (row["unloads"], row["splits"]) == (2, 1)
