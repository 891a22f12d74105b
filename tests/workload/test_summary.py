"""The run summary: unavailability bookkeeping, balance numbers, deterministic text."""

from __future__ import annotations

import math
import statistics
from typing import Any

import anyio
import pytest

from emulator.cluster.events import (
    ClusterEvents,
    HandleClosed,
    HandleDisconnected,
    HandleEvent,
    HandleFailed,
    HandleReconnected,
)
from emulator.cluster.load_source import FlatLoad
from emulator.observe.summary import (
    BrokerLine,
    RunSummary,
    UnavailabilityTracker,
    broker_max_usage,
    format_summary,
    summarize,
)
from emulator.testing import emulated_cluster


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t


def test_tracker_sums_outages_per_topic_and_counts_the_ongoing_ones():
    clock = FakeClock()
    events = ClusterEvents(clock)  # type: ignore[arg-type]
    tracker = UnavailabilityTracker(events)

    def emit(t: float, kind: type[HandleEvent], handle: int, topic: str = "a", **kw: Any) -> None:
        clock.t = t
        events.emit(kind(client="c", topic=topic, handle=handle, **kw))

    emit(10, HandleDisconnected, 1, reason="closed")
    emit(10, HandleDisconnected, 2, reason="closed")
    emit(15, HandleReconnected, 1, unavailable=5.0, broker="b")
    emit(20, HandleDisconnected, 3, topic="b", reason="closed")
    emit(22, HandleClosed, 2, reason="consumer jitter")          # closed while down: 12 s
    # topic a: handles 1 ([10, 15]) and 2 ([10, 22]) down together count once: 12 s, not 17
    assert tracker.per_topic(30.0) == {"a": 12.0, "b": 10.0}
    assert tracker.outages.handle_seconds(30.0) == 5.0 + 12.0 + 10.0
    assert tracker.still_down() == 1 and tracker.disconnects == 3
    tracker.close()
    emit(40, HandleDisconnected, 9, topic="c", reason="closed")
    assert "c" not in tracker.per_topic(50.0)


def _summary(**kw: object) -> RunSummary:
    base = dict(scenario="x", seed=3, emulated_seconds=600.0, brokers_live=2, brokers_started=2,
                leader="b1:8080", leader_elections=1, bundles=4, topics=10, handles=20,
                handles_connected=20, handles_failed=0, unloads=1, bundles_unloaded=2, splits=0,
                lookups=30, redirects=5, lookup_failures=0, reconnects=4, unavailable_total=1.5,
                unavailable_p99=0.25, unavailable_max=1.0, topics_unavailable=3, usage_max=50.0,
                usage_min=0.0, usage_std=25.0, msg_rate_max=10.0, msg_rate_min=0.0,
                msg_rate_ratio=math.inf,
                brokers=[BrokerLine(broker="b1:8080", leader=True, bundles=4, topics=10, max_usage=50.0,
                                    msg_rate=10.0),
                         BrokerLine(broker="b2:8080", leader=False, bundles=0, topics=0, max_usage=0.0,
                                    msg_rate=0.0)])
    base.update(kw)
    return RunSummary(**base)  # type: ignore[arg-type]


def test_format_is_fixed_and_complete():
    text = format_summary(_summary())
    assert text == format_summary(_summary())
    assert text.splitlines()[0] == "summary of x (seed 3) at 600.0 s emulated"
    for needle in ("1 by the shedder; 2 bundles unloaded in all", "client lookups     30; redirects 5; "
                   "failures 0; reconnects 4", "1.500 topic-seconds in all; p99 0.250 s; max 1.000 s; 3 "
                   "topics affected", "max usage 50.00 %, min 0.00 %, std 25.00; msg rate max/min inf",
                   "b1:8080 *", "b2:8080 "):
        assert needle in text, needle
    assert "event failed" not in text
    assert "event failed: events[1]" in format_summary(_summary(event_errors=["events[1] (x): y"]))


@pytest.mark.asyncio
async def test_summarize_reads_the_cluster():
    async with emulated_cluster(3, seed=4, namespaces={"public/default": 6},
                                load_source=FlatLoad(rate=100.0, broker_cores={"broker-3:8080": 1})) as c:
        events_tracker = UnavailabilityTracker(c.events)
        client = c.add_client()
        topics = [f"persistent://public/default/t{i}" for i in range(200)]
        client.create_handles(topics)
        await c.wait_until(lambda: client.connected_count() == 200)
        await anyio.sleep(70)   # past every broker's first stats update with traffic (60 s)
        victim = c.owner_of((await c.namespace_bundles("public/default")).find_bundle(topics[0]))
        c.kill_broker(victim)
        await anyio.sleep(5)
        s = summarize(c, c.decision_log, events_tracker, scenario="flat", seed=4)
        assert s.brokers_live == 2 and s.topics == 200 and s.handles == 200
        assert s.lookups == client.stats.lookups and s.redirects == client.stats.lookup_redirects
        down = events_tracker.per_topic(c.system.clock.now())
        assert s.topics_unavailable == len(down) > 0
        assert s.unavailable_total == pytest.approx(sum(down.values()))
        values = sorted(down.values())   # the roll-up's p99: linear, over topics that had an outage
        pos = 0.99 * (len(values) - 1)
        lo, hi = math.floor(pos), math.ceil(pos)
        assert s.unavailable_max == values[-1]
        assert s.unavailable_p99 == pytest.approx((hi - pos) * values[lo] + (pos - lo) * values[hi]
                                                  if lo != hi else values[lo])
        usages = [broker_max_usage(c.brokers[b].local_data, c.conf) for b in c.live_brokers()]
        assert [b.max_usage for b in s.brokers] == usages
        assert s.usage_std == pytest.approx(statistics.pstdev(usages))
        rates = [c.brokers[b].local_data.msg_rate_in + c.brokers[b].local_data.msg_rate_out
                 for b in c.live_brokers()]
        assert s.msg_rate_ratio == pytest.approx(max(rates) / min(rates))
        assert s.leader == c.leader() and [b.broker for b in s.brokers] == c.live_brokers()


def test_a_handle_whose_creation_failed_is_down_from_its_creation_until_closed():
    clock = FakeClock()
    events = ClusterEvents(clock)  # type: ignore[arg-type]
    tracker = UnavailabilityTracker(events)
    clock.t = 40.0
    events.emit(HandleFailed(client="c", topic="a", handle=1, reason="lookup failed", since=10.0))
    events.emit(HandleFailed(client="c", topic="b", handle=2, reason="lookup failed", since=10.0))
    clock.t = 50.0
    events.emit(HandleClosed(client="c", topic="b", handle=2, reason="consumer jitter"))
    assert tracker.per_topic(100.0) == {"a": 90.0, "b": 40.0}
    assert tracker.still_down() == 1


@pytest.mark.asyncio
async def test_handles_that_never_connect_are_counted_unavailable_not_zero():
    """No broker can serve them: creation fails after the operation timeout (30 s); the topic-seconds
    count from creation, in the summary and in the metrics alike."""
    from emulator.observe.metrics import ClusterMetrics

    async with emulated_cluster(2, seed=8, namespaces={"public/default": 2}) as c:
        tracker = UnavailabilityTracker(c.events)
        metrics = ClusterMetrics(c)
        client = c.add_client()
        for broker in list(c.live_brokers()):
            c.kill_broker(broker)
        start = c.system.clock.now()
        client.create_handles([f"persistent://public/default/t{i}" for i in range(4)])
        await anyio.sleep(100)
        s = summarize(c, c.decision_log, tracker)
        assert s.handles_failed == 4 and s.handles_connected == 0
        elapsed = c.system.clock.now() - start
        assert s.unavailable_total == pytest.approx(4 * elapsed)
        assert s.topics_unavailable == 4
        counted = metrics.value("pulsar_lb_emulator_unavailable_topic_seconds_total")
        assert counted == pytest.approx(4 * elapsed)
