"""The driver applies every event verb at its time, through the cluster's operator API."""

from __future__ import annotations

import collections
import json

import pytest

from emulator.cluster.messages import HandleKind
from emulator.workload import loader
from tests.workload.harness import observed
from emulator.workload.schema import verb_of
from emulator.cluster.events import (
    BrokerCrashed,
    BrokerStarted,
    BrokerStopped,
    HandleClosed,
    HandleConnected,
    LeaderElected,
    ScenarioEvent,
    ScenarioEventFailed,
)

MIN = 60.0

EVENTS = """
[scenario]
name = "events"
description = "every verb once"
duration = "20m"
seed = 5

[cluster]
brokers = 4

[[namespaces]]
name = "acme/a"
bundles = 4
anti_affinity_group = "ring"

[[topics]]
group = "g"
namespace = "acme/a"
count = 40
name = "t{i}"
rate = { rate = 100 }

[clients]
count = 2
connect_over = "10s"

[[events]]
at = "1m"
do = "add_brokers"
cores = 2

[[events]]
at = "2m"
do = "set_capacity"
brokers = ["broker-1"]
cores = 16

[[events]]
at = "2m"
do = "background_load"
brokers = ["broker-2"]
cores = 1.5
duration = "1m"

[[events]]
at = "3m"
do = "set_config"
key = "loadBalancerSheddingEnabled"
value = false

[[events]]
at = "4m"
do = "unload"
topic = "acme/a/t3"
destination = "broker-5"

[[events]]
at = "5m"
do = "split"
topic = "acme/a/t3"
algorithm = "topic_count_equally_divide"

[[events]]
at = "6m"
do = "spike"
select = { topics = ["acme/a/t0"] }
factor = 10
duration = "1m"

[[events]]
at = "6m"
do = "unload"
bundle = "acme/a/0x00000000_0x00000010"

[[events]]
at = "7m"
do = "remove_brokers"
count = 1
pick = "most_bundles"
mode = "kill"

[[events]]
at = "8m"
do = "session_expire"
broker = "broker-2"

[[events]]
at = "9m"
do = "leader_failover"
mode = "graceful"
restart_after = "30s"

[[events]]
at = "11m"
do = "restart_rolling"
brokers = ["broker-3", "broker-4"]
wait = "30s"

[[events]]
at = "12m"
do = "set_rate"
select = { group = "g" }
rate = 5

[[events]]
at = "12m"
do = "scale_rate"
select = { topics = ["acme/a/t1"] }
factor = 4

[[events]]
at = "12m"
do = "ramp"
select = { topics = ["acme/a/t2"] }
factor = 3
over = "2m"
"""


@pytest.mark.asyncio
async def test_every_verb_is_applied_at_its_time():
    scenario = loader.loads(EVENTS, "events.toml")
    async with observed(scenario) as run:
        c, w = run.cluster, run.workload
        seen = []
        c.events.subscribe(lambda e: seen.append(e) if isinstance(e, (
            ScenarioEvent, ScenarioEventFailed, HandleConnected, BrokerStarted,
            BrokerStopped, BrokerCrashed, LeaderElected)) else None)
        clock = c.system.clock
        await run.sleep_until(30)
        connects = [e.t for e in seen if isinstance(e, HandleConnected)]
        # spread over connect_over (10 batches 1 s apart); the first batch's connects also wait for
        # their bundles' acquisition (metadata ops, topic loads), so the spread is a little under 9 s
        assert len(connects) == 80 and max(connects) - min(connects) >= 8.5
        policies = json.loads(c.store.peek("/admin/local-policies/acme/a"))
        assert policies["namespaceAntiAffinityGroup"] == "ring"

        await run.sleep_until(MIN + 5)
        assert "broker-5:8080" in c.live_brokers()
        assert w.resources.capacity("broker-5:8080").cores == 2
        # a broker's JVM counts its own host's cores: numIOThreads = 2 x 2 (the others' hosts: 2 x 8)
        assert len(c.brokers["broker-5:8080"].executors.io_threads) == 4
        assert len(c.brokers["broker-2:8080"].executors.io_threads) == 16

        await run.sleep_until(2.5 * MIN)
        assert w.resources.capacity("broker-1:8080").cores == 16
        assert len(c.brokers["broker-1:8080"].executors.io_threads) == 16   # sized at its start, as Pulsar
        assert w.resources.capacity("broker-2:8080").background_cores == 1.5
        await run.sleep_until(3.5 * MIN)
        assert w.resources.capacity("broker-2:8080").background_cores == 0
        assert c.conf.load_balancer_shedding_enabled is False

        await run.sleep_until(4.5 * MIN)
        bundle = (await c.namespace_bundles("acme/a")).find_bundle("persistent://acme/a/t3")
        assert c.owner_of(bundle) == "broker-5:8080"

        await run.sleep_until(5.5 * MIN)
        assert len((await c.namespace_bundles("acme/a")).names) == 5

        await run.sleep_until(6.5 * MIN)
        i = w.traffic.index["persistent://acme/a/t0"]
        assert w.traffic.rates(clock.now())[i] == 1000.0
        owned_before_kill = {b: len(c.brokers[b].owned_bundle_names()) for b in c.live_brokers()}

        await run.sleep_until(7.5 * MIN)
        crashed = [e.broker for e in seen if isinstance(e, BrokerCrashed)]
        most = max(owned_before_kill.values())
        assert len(crashed) == 1 and owned_before_kill[crashed[0]] == most
        old_leader = c.leader()

        await run.sleep_until(10 * MIN)
        assert c.leader() != old_leader and old_leader in c.live_brokers()

        await run.sleep_until(15 * MIN)
        restarts = [e.broker for e in seen if isinstance(e, BrokerStarted) and e.t >= run.t0 + 11 * MIN]
        assert restarts == ["broker-3:8080", "broker-4:8080"]
        r = w.traffic.rates(clock.now())
        idx = w.traffic.index
        assert r[idx["persistent://acme/a/t0"]] == 5.0 and r[idx["persistent://acme/a/t1"]] == 20.0
        assert r[idx["persistent://acme/a/t2"]] == 15.0

        applied = [e for e in seen if isinstance(e, ScenarioEvent)]
        verbs = [e.event for e in applied]
        assert collections.Counter(verbs)["unload"] == 2 and len(verbs) == len(scenario.events)
        times = collections.defaultdict(list)
        for ev in scenario.events:
            times[verb_of(ev)].append(run.t0 + ev.at)
        for e in applied:        # each announced at its own time (a topic's bundle is read first)...
            assert any(e.t == pytest.approx(t, abs=0.1) for t in times[e.event]), e
        assert verbs[verbs.index("spike") + 1] == "unload"     # ...in file order at equal times
        assert next(e for e in applied if e.event == "add_brokers").arguments["brokers"] == ["broker-5:8080"]
        # the unload of a bundle that does not exist failed, was reported, and nothing else stopped
        failed = [e for e in seen if isinstance(e, ScenarioEventFailed)]
        assert [(e.event, e.index) for e in failed] == [("unload", 7)]
        assert w.errors == [f"events[7] (unload): unload: {failed[0].error.removeprefix('unload: ')}"]
        assert "events[7] (unload)" in "\n".join(run.summary().event_errors)


JITTER = """
[scenario]
name = "jitter"
description = "on/off consumers"
duration = "10m"

[cluster]
brokers = 2

[[namespaces]]
name = "acme/a"
bundles = 2

[[topics]]
namespace = "acme/a"
count = 20
consumers = 2
consumer_jitter = { fraction = 0.25, period = "1m", off = "15s" }
"""


@pytest.mark.asyncio
async def test_consumer_jitter_closes_and_reopens_consumers():
    async with observed(loader.loads(JITTER, "jitter.toml")) as run:
        closed = []
        run.cluster.events.subscribe(lambda e: closed.append(e) if isinstance(e, HandleClosed) else None)
        await run.sleep_until(MIN + 5)
        assert len(closed) == 5 * 2 and {e.reason for e in closed} == {"consumer jitter"}
        off = {e.topic for e in closed}

        def consumers(topic: str) -> int:
            return sum(1 for cl in run.cluster.clients.values() for h in cl.handles.values()
                       if h.topic == topic and h.kind is HandleKind.CONSUMER and h.state == "connected")

        assert all(consumers(t) == 0 for t in off)
        await run.sleep_until(MIN + 20)
        assert all(consumers(t) == 2 for t in off)            # back after `off`
        assert all(len(run.workload.consumers[t]) == 2 for t in off)
        await run.sleep_until(5 * MIN + 5)
        assert len(closed) == 5 * 2 * 5
        assert run.summary().unavailable_total == 0.0


RESTART_KILL = """
[scenario]
name = "restart-kill"
description = "a killed broker started again before its session expired"
duration = "10m"

[cluster]
brokers = 3

[[namespaces]]
name = "acme/a"

[[topics]]
namespace = "acme/a"
count = 10

[[events]]
at = "1m"
do = "restart_rolling"
brokers = ["broker-2"]
mode = "kill"

[[events]]
at = "5m"
do = "restart_rolling"
brokers = ["broker-3"]
mode = "kill"
down = "35s"
"""


@pytest.mark.asyncio
async def test_a_failed_event_is_reported_in_one_line_and_the_run_goes_on():
    async with observed(loader.loads(RESTART_KILL, "restart-kill.toml")) as run:
        await run.sleep_until(8 * MIN)
        # broker-2's old session (30 s) still held its registration: it could not start (LockBusy)
        assert run.workload.errors == [
            "events[0] (restart_rolling): broker broker-2 did not start within 60 emulated seconds: "
            "it failed to start at t=84.7 s (LockBusy('Resource at /loadbalance/brokers/broker-2:8080 "
            "is already locked'))"]
        # broker-3 stayed down longer than the session timeout, and came back
        assert run.cluster.live_brokers() == ["broker-1:8080", "broker-3:8080"]


def test_a_broker_start_timeout_says_what_stopped_it():
    from emulator.cluster.events import BrokerCrashed, BrokerStartFailed
    from emulator.workload.events import _what_stopped

    crashed = BrokerCrashed(broker="broker-2:8080", bundles=0)
    crashed.t = 90.0
    failed = BrokerStartFailed(broker="broker-2:8080", error="LockBusy('x')")
    failed.t = 80.0
    # overlapping restarts: another event killed it while it started (no error in the log)
    assert _what_stopped([crashed]) == ("it was stopped at t=90.0 s while starting (broker_crashed, by an "
                                        "overlapping event)")
    assert _what_stopped([failed, crashed]) == "it failed to start at t=80.0 s (LockBusy('x'))"
    assert "still starting" in _what_stopped([])
