"""pulsar_lb_emulator_events_total: the events the dashboard's annotations mark, scraped but not recorded."""

from __future__ import annotations

import anyio
import pytest

from emulator.cluster.events import ScenarioEvent
from emulator.observe.metrics import ClusterMetrics
from emulator.testing import emulated_cluster
from emulator.workload.schema import EVENT_TYPES

EVENTS = "pulsar_lb_emulator_events_total"


def marks(metrics: ClusterMetrics) -> dict[tuple[str, str], float]:
    return {(labels["kind"], labels["name"]): value for name, labels, value in metrics.samples() if name == EVENTS}


@pytest.mark.asyncio
async def test_each_marked_event_counts_once_under_its_kind_and_name():
    async with emulated_cluster(3, seed=5, namespaces={"public/default": 4}) as cluster:
        metrics = ClusterMetrics(cluster)
        client = cluster.add_client()
        client.create_handles([f"persistent://public/default/t-{i}" for i in range(8)])
        await cluster.wait_until(lambda: client.connected_count() == 8)
        before = marks(metrics)

        cluster.events.emit(ScenarioEvent(event="remove_brokers", arguments={"brokers": ["broker-3:8080"]}))
        cluster.kill_broker("broker-3:8080")
        cluster.set_config("loadBalancerSheddingEnabled", False)
        bundle = next(b for b, owner in sorted(cluster.ownership().items()) if owner == "broker-1:8080")
        await cluster.unload_bundle(bundle)
        await anyio.sleep(60)    # the crashed broker's clients reconnect: handle events, not marks
        after = marks(metrics)
        metrics.close()

    grown = {key: after[key] - before[key] for key in after if after[key] != before[key]}
    assert grown == {("scenario_event", "remove_brokers"): 1, ("broker_crashed", "broker_crashed"): 1,
                     ("config_changed", "config_changed"): 1, ("admin", "unload"): 1}
    assert set(after) == set(before), "every series exists from the start (at 0), none appears later"


@pytest.mark.asyncio
async def test_every_scenario_verb_and_marked_kind_is_there_at_zero_before_it_happens():
    async with emulated_cluster(2, seed=5, namespaces={"public/default": 2}) as cluster:
        metrics = ClusterMetrics(cluster)
        seen = marks(metrics)
        metrics.close()
    verbs = {spec.__struct_config__.tag for spec in EVENT_TYPES}
    assert {name for kind, name in seen if kind == "scenario_event"} == verbs
    for key in (("decision", "unload"), ("decision", "split"), ("broker_started", "broker_started"),
                ("leader_elected", "leader_elected"), ("admin", "split")):
        assert seen[key] == 0, key


@pytest.mark.asyncio
async def test_the_marks_are_scraped_but_not_recorded():
    """A recording already holds these events (events.jsonl): its samples do not change."""
    async with emulated_cluster(2, seed=5, namespaces={"public/default": 2}) as cluster:
        metrics = ClusterMetrics(cluster)
        recorded = {key[0] for key, _ in metrics.rows()}
        exposed = metrics.exposition().decode()
        metrics.close()
    assert EVENTS not in recorded
    assert f'{EVENTS}{{cluster="cluster",kind="scenario_event",name="add_brokers"}} 0.0' in exposed
