"""The decision log is what happened: one `assignment` record per assignment that takes effect.

Two sources of a second record used to exist: a lookup answered from the bundle's preallocation (no
decision made), and, after an unload with a destination, a second client's lookup arriving before the
destination took the bundle (the destination affinity was consumed by the first lookup, so the second
made a fresh choice, recorded, that never took effect).
"""

from __future__ import annotations

from typing import Any

import pytest

from emulator.cluster.events import AssignmentRepeated, BundleOwned, BundleUnloaded, Event
from emulator.workload import library
from tests.workload.harness import observed

MIN = 60.0


@pytest.mark.asyncio
async def test_every_assignment_record_is_the_owner_the_bundle_gets_and_there_is_one_per_ownership():
    seen: list[Any] = []

    def keep(event: Event) -> None:
        if isinstance(event, (BundleOwned, BundleUnloaded, AssignmentRepeated)):
            seen.append(event)

    async with observed(library.load("heterogeneous-brokers"), check_interval=10.0) as run:
        run.cluster.events.subscribe(keep)
        await run.sleep_until(25 * MIN)
        log = run.cluster.decision_log.entries
    unloads = [d for d in log if d["decision"] == "unload"]
    assert len(unloads) >= 4, "the scenario sheds: unloads with a destination are what this tests"
    assert any(isinstance(e, AssignmentRepeated) for e in seen), "repeat lookups did happen"

    # per bundle, in time order: assignment records and the ownerships that followed
    timeline: list[tuple[float, int, str, str, str | None]] = []
    for d in log:
        if d["decision"] == "assignment":
            timeline.append((d["t"], 0, d["bundle"], "assignment", d["broker"]))
    for e in seen:
        if isinstance(e, BundleOwned):
            timeline.append((e.t, 1, e.bundle, "owned", e.broker))
        elif isinstance(e, BundleUnloaded):
            timeline.append((e.t, 1, e.bundle, "released", e.broker))
    pending: dict[str, str | None] = {}
    affinity = 0
    for t, _, bundle, what, broker in sorted(timeline):
        if what == "assignment":
            assert bundle not in pending, f"t={t}: a second assignment record of {bundle} before it was owned"
            pending[bundle] = broker
        elif what == "owned" and bundle in pending:
            assert pending.pop(bundle) == broker, f"t={t}: {bundle} went to {broker}, not where recorded"
    for u in unloads:
        after = [d for d in log if d["decision"] == "assignment" and d["bundle"] == u["bundle"]
                 and d["t"] >= u["t"]]
        assert after and after[0]["broker"] == u["destination"]
        affinity += bool(after[0].get("affinity"))
    assert affinity == len(unloads)
