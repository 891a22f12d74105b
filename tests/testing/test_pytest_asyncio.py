"""pytest-asyncio tests run on the emulator's virtual time when they use a cluster fixture."""

import asyncio
import time

import pytest

from emulator.runtime import VirtualEventLoop
from emulator.testing import NotOnVirtualTime, WaitTimeout, emulated_cluster


@pytest.mark.asyncio
async def test_a_cluster_fixture_puts_the_test_on_virtual_time(pulsar_cluster):
    assert isinstance(asyncio.get_running_loop(), VirtualEventLoop)
    started = time.perf_counter()
    async with pulsar_cluster(brokers=2, seed=3) as cluster:
        client = cluster.add_client()
        client.create_handles([f"persistent://public/default/v{i}" for i in range(10)])
        await cluster.wait_until(lambda: client.connected_count() == 10, timeout="1m")
        t0 = cluster.system.clock.now()
        await asyncio.sleep(3600)                         # an emulated hour
        assert cluster.system.clock.now() - t0 == pytest.approx(3600)
        assert client.connected_count() == 10
    assert time.perf_counter() - started < 60             # not a real hour


@pytest.mark.asyncio
async def test_a_test_without_the_fixtures_keeps_asyncio_default_loop():
    assert not isinstance(asyncio.get_running_loop(), VirtualEventLoop)


@pytest.mark.asyncio
async def test_emulated_cluster_on_a_plain_loop_says_how_to_get_virtual_time():
    with pytest.raises(NotOnVirtualTime, match="pulsar_cluster"):
        async with emulated_cluster(brokers=1):
            pass


@pytest.mark.asyncio(loop_scope="module")
async def test_the_user_chooses_the_loop_scope_first(pulsar_cluster):
    loop = asyncio.get_running_loop()
    assert isinstance(loop, VirtualEventLoop)
    test_the_user_chooses_the_loop_scope_first.loop = loop


@pytest.mark.asyncio(loop_scope="module")
async def test_the_user_chooses_the_loop_scope_second(pulsar_cluster):
    assert asyncio.get_running_loop() is test_the_user_chooses_the_loop_scope_first.loop


@pytest.mark.asyncio
async def test_wait_until_takes_emulated_durations_and_times_out_on_the_emulated_clock(pulsar_cluster):
    async with pulsar_cluster(brokers=1, seed=2) as cluster:
        t0 = cluster.system.clock.now()
        with pytest.raises(WaitTimeout, match="never not reached within 5m") as info:
            await cluster.wait_until(lambda: False, timeout="5m", poll="10s", what="never")
        assert info.value.time - t0 == pytest.approx(300, abs=10)


@pytest.mark.anyio
async def test_the_anyio_path_still_runs_on_virtual_time(pulsar_cluster):
    assert isinstance(asyncio.get_running_loop(), VirtualEventLoop)
    async with pulsar_cluster(brokers=2, seed=5) as cluster:
        await asyncio.sleep(600)
        assert cluster.system.clock.now() >= 600
