"""A failing emulated test reads like a report: emulated time, broker, bundle, decisions, seed, command."""

import asyncio

import pytest

from emulator.cluster.cluster import ClusterSettings
from emulator.testing import ActorFailed, InvariantViolation, WaitTimeout

GHOST = "tests.testing.broken_strategies:PicksAGhost"
BUNDLE = r"public/default/0x[0-9a-f]{8}_0x[0-9a-f]{8}"


def notes(exc: BaseException) -> str:
    return "\n".join(getattr(exc, "__notes__", ()))


@pytest.mark.asyncio
async def test_a_broken_strategy_fails_the_wait_with_time_broker_bundle_decisions_and_seed(pulsar_cluster, request):
    with pytest.raises(WaitTimeout, match="4 producers connected not reached within 2m") as info:
        async with pulsar_cluster(brokers=2, seed=4, settings=ClusterSettings(placement=GHOST)) as cluster:
            client = cluster.add_client()
            client.create_handles([f"persistent://public/default/g{i}" for i in range(4)])
            await cluster.wait_until(lambda: client.connected_count() == 4, timeout="2m",
                                     what="4 producers connected")
    report = notes(info.value)
    assert "failed wait: 4 producers connected" in report
    assert "emulated time: t=120.100s (00:02:00 emulated)" in report
    assert "broker(s) in the last decisions: broker-99:8080" in report      # the ghost it placed on
    assert __import__("re").search(rf"bundle\(s\) in the last decisions: {BUNDLE}", report)
    assert "assignment bundle=public/default/" in report and "broker=broker-99:8080" in report
    assert "seed: 4" in report
    assert f"reproduce: python -m pytest {request.node.nodeid}" in report


@pytest.mark.asyncio
async def test_an_invariant_violation_names_the_bundle_both_owners_and_the_decisions_on_them(pulsar_cluster):
    with pytest.raises(InvariantViolation, match="single-owner") as info:
        async with pulsar_cluster(brokers=2, seed=5) as cluster:
            client = cluster.add_client()
            client.create_handles(["persistent://public/default/x"])
            await cluster.wait_until(lambda: client.connected_count() == 1)
            bundle, owner = next(iter(cluster.ownership().items()))
            other = next(b for b in cluster.live_brokers() if b != owner)
            cluster.brokers[other].owned.update(cluster.brokers[owner].owned)   # forge a second owner
            await asyncio.sleep(2)
    text = str(info.value)
    assert "failed invariant single-owner at t=" in text
    assert f"bundle(s) involved: {bundle}" in text
    assert owner in text.split("broker(s) involved: ")[1].splitlines()[0]
    assert other in text.split("broker(s) involved: ")[1].splitlines()[0]
    touching = text.split("last decisions touching them (newest last):")[1]
    assert f"assignment bundle={bundle} broker={owner}" in touching
    assert "seed: 5" in text and "reproduce: python -m pytest " in text


async def _boom() -> None:
    raise RuntimeError("injected emulator bug in public/default/0x00000000_0x40000000")


@pytest.mark.asyncio
async def test_an_actor_failure_names_the_actor_time_and_seed(pulsar_cluster):
    with pytest.raises(ActorFailed) as info:
        async with pulsar_cluster(brokers=3, seed=1) as cluster:
            cluster.brokers["broker-2:8080"].start_soon(_boom)
            await asyncio.sleep(1.0)
    text = str(info.value)
    assert "failed: actor broker-2:8080 raised RuntimeError" in text
    assert "broker(s) involved: broker-2:8080" in text
    assert "bundle(s) involved: public/default/0x00000000_0x40000000" in text
    assert "emulated time: t=" in text and "seed: 1" in text


@pytest.mark.asyncio
async def test_a_failed_assert_of_the_test_keeps_its_message_and_gets_the_report_as_a_note(pulsar_scenario):
    with pytest.raises(AssertionError, match="deliberately") as info:
        async with pulsar_scenario("broker-crash", seed=10, placement="RoundRobinBrokerSelector") as scenario:
            await scenario.run_until("3m")
            raise AssertionError("deliberately")
    report = notes(info.value)
    assert "emulated time: t=" in report and "seed: 10" in report
    assert "scenario=broker-crash, placement=RoundRobinBrokerSelector" in report
    assert ("the run alone: python -m emulator run broker-crash --seed 10 "
            "--placement RoundRobinBrokerSelector") in report
