"""The invariant checker remembers parsed names and decoded nodes between checks: a node or an
ownership that changes must still be seen at the next check, and one that heals must clear."""

from __future__ import annotations

import pytest

from emulator.cluster import paths
from emulator.observe.invariants import InvariantChecker
from emulator.testing import emulated_cluster

NS = "public/default"


@pytest.mark.asyncio
async def test_changed_policies_and_forged_owners_are_seen_despite_the_memos():
    async with emulated_cluster(2, seed=5, namespaces={NS: 4}, check_invariants=False) as cluster:
        checker = InvariantChecker(cluster)
        client = cluster.add_client()
        client.create_handles([f"persistent://{NS}/t{i}" for i in range(20)])
        await cluster.wait_until(lambda: client.connected_count() == 20)
        assert checker.check_now() == [] and checker.check_now() == []
        tree, path = cluster.store.tree, paths.local_policies_path(NS)
        good = tree.get(path).data
        tree.set(path, good.replace(b"0xffffffff", b"0xfffffff0"), -1, 0)   # a gap at the top
        assert [v.invariant for v in checker.check_now()] == ["coverage"]
        tree.set(path, b"{not json", -1, 0)
        assert "unreadable policies" in checker.check_now()[0].detail
        tree.set(path, good, -1, 0)
        assert checker.check_now() == []
        owner, other = sorted(cluster.live_brokers(), key=lambda b: not cluster.brokers[b].owned)
        cluster.brokers[other].owned.update(cluster.brokers[owner].owned)
        assert {v.invariant for v in checker.check_now()} == {"single-owner"}


@pytest.mark.asyncio
async def test_a_parent_and_its_children_overlap_only_while_their_broker_splits_the_parent():
    """splitAndOwnBundle holds the children's locks before it releases the parent: on that broker, in
    that window, the overlap is Pulsar's; anywhere else it is a violation."""
    from emulator.cluster.broker import OwnedBundle

    async with emulated_cluster(2, seed=5, namespaces={NS: 4}, check_invariants=False) as cluster:
        checker = InvariantChecker(cluster)
        client = cluster.add_client()
        client.create_handles([f"persistent://{NS}/t{i}" for i in range(20)])
        await cluster.wait_until(lambda: client.connected_count() == 20)
        assert checker.check_now() == []
        bundle, owner = next(iter(sorted(cluster.ownership().items())))
        broker = cluster.brokers[owner]
        from emulator.model.bundles import parse_bundle

        ns, lower, upper = parse_bundle(bundle)
        child = f"{ns}/0x{lower:08x}_0x{(lower + upper) // 2:08x}"
        forged = OwnedBundle(child, broker.owned[bundle].acquired)
        forged.active, forged.actor = True, broker.owned[bundle].actor
        broker.owned[child] = forged
        assert {v.invariant for v in checker.check_now()} == {"single-owner"}
        broker.splitting.add(bundle)
        assert checker.check_now() == []
        broker.splitting.discard(bundle)
        assert {v.invariant for v in checker.check_now()} == {"single-owner"}
        del broker.owned[child]
        assert checker.check_now() == []
