"""Broker lifecycle events: a removed broker added back by name, and a rolling restart on a fixed cadence."""

from __future__ import annotations

import pytest

from emulator.cluster.events import (
    Assignment,
    BrokerStarted,
    BrokerStopped,
    BrokerStopping,
    ScenarioEvent,
)
from emulator.workload import loader
from emulator.workload.errors import ScenarioError
from tests.workload.harness import observed

MIN = 60.0

BACK = """
[scenario]
name = "back"
description = "broker-3 removed, then added back by name"
duration = "15m"
seed = 3

[cluster]
brokers = 3
shedder = "UniformLoadShedder"

[settings]
loadBalancerSheddingIntervalMinutes = 1
loadBalancerSheddingGracePeriodMinutes = 1

[[namespaces]]
name = "acme/a"
bundles = 12

[[topics]]
namespace = "acme/a"
count = 60
rate = { rate = 200 }

[[events]]
at = "1m"
do = "remove_brokers"
brokers = ["broker-3"]

[[events]]
at = "3m"
do = "add_brokers"
brokers = ["broker-3"]
"""


@pytest.mark.asyncio
async def test_a_removed_broker_added_by_name_comes_back_empty_and_then_gets_bundles():
    async with observed(loader.loads(BACK, "back.toml")) as run:
        c = run.cluster
        seen: list[dict] = []
        at_start: dict[str, object] = {}

        def on_event(e: dict) -> None:
            if isinstance(e, (BrokerStarted, ScenarioEvent, Assignment)):
                seen.append(e)
            if isinstance(e, BrokerStarted):   # what the broker has the moment it is up again
                at_start["registered"] = c.store.peek("/loadbalance/brokers/broker-3:8080") is not None
                at_start["owned"] = list(c.brokers["broker-3:8080"].owned_bundle_names())

        c.events.subscribe(on_event)
        await run.sleep_until(2 * MIN)
        assert "broker-3:8080" not in c.live_brokers()
        assert "broker-3:8080" not in c.ownership().values()
        assert c.store.peek("/loadbalance/brokers/broker-3:8080") is None

        await run.sleep_until(3 * MIN + 30)
        # the same id, registered again, and empty: a restarted host owns nothing until assigned
        assert [e.broker for e in seen if isinstance(e, BrokerStarted)] == ["broker-3:8080"]
        assert at_start == {"registered": True, "owned": []}
        assert "broker-3:8080" in c.live_brokers()
        added = next(e for e in seen if isinstance(e, ScenarioEvent) and e.event == "add_brokers")
        assert added.arguments["brokers"] == ["broker-3:8080"]
        assert sorted(c.brokers) == ["broker-1:8080", "broker-2:8080", "broker-3:8080"]  # no broker-4

        await run.sleep_until(12 * MIN)
        # the shedder moved load to it: bundles assigned to broker-3 after it came back
        owned = c.brokers["broker-3:8080"].owned_bundle_names()
        assert owned, "broker-3 never got a bundle back"
        assert any(e.broker == "broker-3:8080" and e.t > run.t0 + 3 * MIN
                   for e in seen if isinstance(e, Assignment))
        assert not run.workload.errors


ADD_RUNNING = BACK.replace('at = "3m"\ndo = "add_brokers"\nbrokers = ["broker-3"]',
                           'at = "3m"\ndo = "add_brokers"\nbrokers = ["broker-2"]')


@pytest.mark.asyncio
async def test_adding_a_running_broker_by_name_fails_the_event_in_one_line():
    async with observed(loader.loads(ADD_RUNNING, "add-running.toml")) as run:
        await run.sleep_until(3 * MIN + 1)
        assert run.workload.errors == [
            "events[1] (add_brokers): add_brokers: broker broker-2:8080 is running; only a stopped or new "
            "broker can be added"]


CADENCE = """
[scenario]
name = "cadence"
description = "a rolling restart on a fixed cadence, faster than a drain"
duration = "6m"

[cluster]
brokers = 4

[latency]
bundle_close = "1s"

[[namespaces]]
name = "acme/a"
bundles = 16

[[topics]]
namespace = "acme/a"
count = 64

[[events]]
at = "1m"
do = "restart_rolling"
every = "2s"
"""


@pytest.mark.asyncio
async def test_fixed_cadence_restarts_one_broker_every_n_seconds_whatever_the_drain_state():
    async with observed(loader.loads(CADENCE, "cadence.toml")) as run:
        seen: list[dict] = []
        run.cluster.events.subscribe(
            lambda e: seen.append(e)
            if isinstance(e, (BrokerStopping, BrokerStopped, BrokerStarted)) else None)
        await run.sleep_until(4 * MIN)
        stopping = [e for e in seen if isinstance(e, BrokerStopping)]
        assert [e.broker for e in stopping] == [f"broker-{i}:8080" for i in range(1, 5)]
        # one every 2 s from the event's time, exactly
        assert [e.t - run.t0 for e in stopping] == pytest.approx([60.0, 62.0, 64.0, 66.0], abs=1e-6)
        # each drain (4 bundles, 1 s close each) outlasts the cadence: the next broker went down while
        # the one before was still draining, which a `wait` rolling restart never does
        stopped = {e.broker: e.t for e in seen if isinstance(e, BrokerStopped)}
        assert all(stopped[f"broker-{i}:8080"] > stopping[i].t for i in range(1, 4))
        assert all(e.graceful for e in seen if isinstance(e, BrokerStopped))
        restarted = [e.broker for e in seen if isinstance(e, BrokerStarted)]
        assert sorted(restarted) == [f"broker-{i}:8080" for i in range(1, 5)]
        assert run.cluster.live_brokers() == [f"broker-{i}:8080" for i in range(1, 5)]
        assert not run.workload.errors


@pytest.mark.parametrize("event, message", [
    ('do = "restart_rolling"\nevery = "2s"\nwait = "10s"',
     "cadence.toml: events[0].wait = 10s: give wait (after each batch is back) or every (a fixed "
     "cadence), not both"),
    ('do = "restart_rolling"\nevery = "0s"',
     "cadence.toml: events[0].every = 0s: must be > 0 (the time between two batches)"),
    ('do = "add_brokers"\nbrokers = ["broker-2", "broker-3"]\ncount = 1',
     "cadence.toml: events[0].count = 1: 2 brokers are named; give count = N or brokers = [...], not both"),
    ('do = "add_brokers"\nbrokers = ["broker-2", "broker-2:8080"]',
     "cadence.toml: events[0].brokers[1] = broker-2:8080: named twice"),
    ('do = "add_brokers"\nbrokers = ["node-2"]',
     "cadence.toml: events[0].brokers[0] = node-2: expected a broker name like broker-3 (or broker-3:8080)"),
])
def test_lifecycle_bad_input_is_one_line(event, message):
    text = CADENCE.replace('do = "restart_rolling"\nevery = "2s"', event)
    with pytest.raises(ScenarioError) as e:
        loader.loads(text, "cadence.toml")
    assert str(e.value) == message


def test_a_named_add_may_bring_a_new_broker_and_later_events_may_name_it():
    text = CADENCE.replace('do = "restart_rolling"\nevery = "2s"', 'do = "add_brokers"\nbrokers = ["broker-7"]')
    text += '\n[[events]]\nat = "2m"\ndo = "remove_brokers"\nbrokers = ["broker-7"]\n'
    s = loader.loads(text, "cadence.toml")
    assert s.events[0].brokers == ["broker-7"] and s.events[0].count is None
