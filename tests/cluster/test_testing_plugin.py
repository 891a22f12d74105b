"""The pytest plugin users get: the `pulsar_cluster` fixture, registered through the entry point."""

import pytest

from emulator.observe.invariants import InvariantViolation


@pytest.mark.asyncio
async def test_pulsar_cluster_fixture_runs_a_cluster_with_the_invariant_checker(pulsar_cluster):
    async with pulsar_cluster(brokers=2, seed=5) as cluster:
        client = cluster.add_client()
        client.create_handles([f"persistent://public/default/p{i}" for i in range(20)])
        await cluster.wait_until(lambda: client.connected_count() == 20)
        import anyio

        await anyio.sleep(3)
        assert cluster.invariants is not None and cluster.invariants.checks >= 3


@pytest.mark.asyncio
async def test_a_broken_invariant_fails_the_block(pulsar_cluster):
    with pytest.raises(InvariantViolation, match="single-owner"):
        async with pulsar_cluster(brokers=2, seed=5) as cluster:
            client = cluster.add_client()
            client.create_handles(["persistent://public/default/x"])
            await cluster.wait_until(lambda: client.connected_count() == 1)
            owner, other = sorted(cluster.live_brokers(), key=lambda b: not cluster.brokers[b].owned)
            # forge a second owner behind the store's back: the checker must catch it
            cluster.brokers[other].owned.update(cluster.brokers[owner].owned)
            import anyio

            await anyio.sleep(2)
