"""Repeated warnings are folded to one line per distinct message per emulated minute, with the count
of the folded ones, and the run's totals reach the summary (emulator/observe/logs.py)."""

from __future__ import annotations

import io
from typing import Any

import anyio
import msgspec
import structlog

from emulator.observe.logs import configure_logging, repeated_warnings
from emulator.observe.summary import RunSummary, format_summary
from emulator.runtime import VirtualClock, run


def _lines(stream: io.StringIO) -> list[str]:
    return [line for line in stream.getvalue().splitlines() if line]


def test_a_warning_per_lookup_is_one_line_per_emulated_minute_with_its_count() -> None:
    stream = io.StringIO()
    clock = VirtualClock()
    configure_logging(clock, level="warning", stream=stream)
    folded = repeated_warnings()
    assert folded is not None
    mark = folded.mark()

    async def main() -> None:
        log = structlog.get_logger(actor="broker-1:8080")
        for i in range(300):            # one lookup every 0.5 emulated s for 150 s
            log.warning("No broker available to acquire service unit", bundle=f"ns/0x{i:08x}")
            if i % 130 == 0:            # t = 0, 65, 130: once in each minute
                log.warning("load report not written", error="x")
            await anyio.sleep(0.5)

    run(main, clock=clock)
    lines = _lines(stream)
    lookups = [line for line in lines if "No broker available" in line]
    assert len(lookups) == 3                 # minutes 0, 1 and 2 of emulated time
    assert "repeated" not in lookups[0]
    assert "repeated=119" in lookups[1]      # the 119 folded in minute 0 (120 lookups a minute)
    assert "repeated=119" in lookups[2]
    # a distinct message is not folded into another one
    assert sum("load report not written" in line for line in lines) == 3
    totals = {w.message: w.total for w in folded.totals(since=mark)}
    assert totals == {"No broker available to acquire service unit": 300, "load report not written": 3}


def test_info_lines_are_not_folded() -> None:
    stream = io.StringIO()
    clock = VirtualClock()
    configure_logging(clock, level="info", stream=stream)

    async def main() -> None:
        log = structlog.get_logger()
        for _ in range(5):
            log.info("This broker was elected leader")

    run(main, clock=clock)
    assert len(_lines(stream)) == 5


def test_the_summary_lists_each_repeated_warning_with_its_total() -> None:
    required: dict[str, Any] = {f.name: f.type() if f.type in (int, float, str, list) else None
                for f in msgspec.structs.fields(RunSummary) if f.required}
    s = RunSummary(**{**required, "brokers": []},
                   repeated_warnings=["100788 x No broker available to acquire service unit"])
    text = format_summary(s)
    assert "  repeated warning   100788 x No broker available to acquire service unit" in text.splitlines()
