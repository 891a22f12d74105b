"""The decision log turns cluster events into structlog records with their inputs."""

import structlog

from emulator.cluster.events import ClusterEvents
from emulator.cluster.modular_load_manager import SelectionTrace
from emulator.observe.decision_log import DecisionLog


class FixedClock:
    kind = "virtual"

    def now(self):
        return 12.5

    def now_ms(self):
        return 12500


def test_decisions_are_logged_with_emulated_time_and_plain_inputs():
    events = ClusterEvents(FixedClock())
    with structlog.testing.capture_logs() as logs:
        log = DecisionLog(events)
        trace = SelectionTrace(bundle="a/b/0x00000000_0xffffffff", candidates=["b1", "b2"],
                               scores={"b1": 100.0, "b2": float("inf")}, chosen="b1")
        events.emit("assignment", bundle=trace.bundle, broker="b1", trace=trace)
        events.emit("decision", decision="unload_skipped", bundle="x", reason="destination is the current owner")
        events.emit("load_report", broker="b1")      # not a decision
    assert [e["decision"] for e in log.entries] == ["assignment", "unload_skipped"]
    first = log.entries[0]
    assert first["t"] == 12.5 and first["trace"]["candidates"] == ["b1", "b2"]
    assert first["trace"]["scores"]["b2"] == float("inf")
    assert [r["event"] for r in logs] == ["assignment", "unload_skipped"]
    assert logs[1]["reason"] == "destination is the current owner" and logs[1]["t"] == 12.5
    log.close()
    events.emit("decision", decision="unload", bundle="y")
    assert len(log.entries) == 2
