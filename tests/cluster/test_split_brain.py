"""Split brain (issue 27, item 2): a broker whose session expired without it noticing keeps serving its
bundle while another broker takes it; the second owner's managed-ledger open fences the first owner's
ledger, and the first owner's producers are disconnected and reconnect. The double ownership stays
visible to the invariant checker."""

from __future__ import annotations

import anyio
import pytest

from emulator.cluster.events import HandleDisconnected, HandleReconnected
from emulator.cluster.network import service_url_of
from emulator.observe.invariants import InvariantChecker
from emulator.observe.publish import publish_accounting
from emulator.testing import emulated_cluster

NS = "public/default"
BUNDLE = f"{NS}/0x00000000_0xffffffff"
TOPIC = f"persistent://{NS}/t-0"
OTHER = f"persistent://{NS}/t-1"


async def _never_notices() -> None:
    """A broker that misses its SessionLost (a long GC pause, a partition from the store only)."""


@pytest.mark.asyncio
async def test_the_second_owner_fences_the_first_whose_producers_reconnect() -> None:
    async with emulated_cluster(3, seed=7, namespaces={NS: 1}, check_invariants=False) as cluster:
        acc = publish_accounting(cluster)
        first = cluster.add_client("first")
        first.create_handles((TOPIC,), per_topic=3)
        first.create_handles((OTHER,))          # same client, same broker, a topic nobody else opens
        await cluster.wait_until(lambda: first.connected_count() == 4)
        victim = cluster.owner_of(BUNDLE)
        others = sorted(b for b in cluster.live_brokers() if b != victim)
        cluster.brokers[victim]._on_session_lost = _never_notices   # type: ignore[method-assign]
        assert await cluster.expire_session(victim)
        await anyio.sleep(0.1)
        assert cluster.owner_of(BUNDLE) is None and BUNDLE in cluster.brokers[victim].owned_bundle_names()

        downs: list[HandleDisconnected] = []
        backs: list[HandleReconnected] = []
        cluster.events.subscribe(lambda e: downs.append(e) if isinstance(e, HandleDisconnected)
                                 and e.client == "first" else None)
        cluster.events.subscribe(lambda e: backs.append(e) if isinstance(e, HandleReconnected)
                                 and e.client == "first" else None)
        second = cluster.add_client("second", service_urls=[service_url_of(b) for b in others])
        second.create_handles((TOPIC,))
        await cluster.wait_until(lambda: second.connected_count() == 1)
        new_owner = cluster.owner_of(BUNDLE)
        assert new_owner is not None and new_owner != victim

        # the open at the new owner fenced the victim's ledger: its three producers were closed
        bookies = cluster.bookies
        assert bookies.fenced >= 1 and bookies.fenced_topics >= 1 and bookies.fenced_handles >= 3
        assert len(downs) >= 3 and all(d.reason == "closed by broker" for d in downs[:3])
        # the failed add's SendError closed the client's whole connection (ClientCnx.handleSendError):
        # the other topic's producer, never fenced, reconnects too
        assert any(d.topic == OTHER and d.reason.startswith("send error") for d in downs)
        await cluster.wait_until(lambda: len(backs) >= 4)
        # both still believe they own the bundle: the checker reports it
        found = InvariantChecker(cluster).check_now()
        assert any(v.invariant == "single-owner" and set(v.brokers) == {victim, new_owner} for v in found)
        # the outage of the fenced producers is in the publish accounting
        await anyio.sleep(1.0)
        assert acc.window_total > 0


@pytest.mark.asyncio
async def test_without_a_second_owner_nothing_is_fenced() -> None:
    async with emulated_cluster(3, seed=7, namespaces={NS: 1}) as cluster:
        client = cluster.add_client()
        client.create_handles((TOPIC,), per_topic=3)
        await cluster.wait_until(lambda: client.connected_count() == 3)
        owner = cluster.owner_of(BUNDLE)
        target = next(b for b in sorted(cluster.live_brokers()) if b != owner)
        assert (await cluster.unload_bundle(BUNDLE, destination=target)).ok
        await cluster.wait_until(lambda: client.connected_count() == 3 and cluster.owner_of(BUNDLE) == target)
        # the unload closed the ledger: the new owner's open recovers nothing and fences nobody
        assert cluster.bookies.fenced == 0 and cluster.bookies.recoveries == 0
