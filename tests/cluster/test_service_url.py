"""How a client's serviceUrl resolves: a static broker list (round robin, removed brokers refuse) or one
Service name in front of the ready brokers (`ClientSettings.service_url`)."""

from __future__ import annotations

import pytest

from emulator.cluster.client import ClientSettings
from emulator.cluster.messages import HandleKind
from emulator.testing import emulated_cluster

NS = "public/default"
TOPICS = [f"persistent://{NS}/t-{i}" for i in range(300)]


async def _drain_two_then_reconnect(mode: str) -> tuple[int, int]:
    """Stop two of four brokers gracefully (not the leader); return (lookups refused, connected)."""
    settings = ClientSettings(service_url=mode, record_lookups=True)
    async with emulated_cluster(4, seed=5, namespaces={NS: 8}) as cluster:
        leader = await cluster.wait_for_leader()
        client = cluster.add_client(settings=settings)
        client.create_handles(TOPICS, HandleKind.PRODUCER)
        await cluster.wait_until(lambda: client.connected_count() == len(TOPICS), timeout=120)
        for broker in [b for b in cluster.live_brokers() if b != leader][:2]:
            await cluster.stop_broker(broker, "graceful")
        client.records.clear()
        await cluster.wait_until(lambda: client.connected_count() == len(TOPICS), timeout=600)
        refused = sum(1 for r in client.records if r.outcome == "Failed:connection refused")
        return refused, client.connected_count()


@pytest.mark.asyncio
async def test_a_static_list_keeps_trying_the_removed_brokers():
    refused, connected = await _drain_two_then_reconnect("list")
    assert connected == len(TOPICS)
    assert refused > 0   # half the list is gone: their round-robin turns are refused


@pytest.mark.asyncio
async def test_a_service_name_only_routes_to_listening_brokers():
    refused, connected = await _drain_two_then_reconnect("service")
    assert connected == len(TOPICS)
    assert refused == 0
