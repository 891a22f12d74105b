"""The client's connect path as a state machine (client.Phase): each transition as ConnectionHandler
makes it, watched at the step that makes it."""

from __future__ import annotations

import anyio
import pytest

from emulator.cluster.client import Phase
from emulator.cluster.events import HandleDisconnected
from emulator.cluster.messages import HandleKind
from emulator.testing import emulated_cluster
import anyio.lowlevel

NS = "public/default"
TOPICS = [f"persistent://{NS}/t-{i}" for i in range(40)]


def _watch(client, method: str, seen: list) -> None:
    """Record (handle id, phase) each time `method` is entered."""
    inner = getattr(client, method)

    def spy(h, *args):
        seen.append((h.id, h.phase))
        return inner(h, *args)

    setattr(client, method, spy)


@pytest.mark.asyncio
async def test_a_handle_backs_off_looks_up_follows_redirects_connects_and_attaches():
    async with emulated_cluster(3, seed=3, namespaces={NS: 8}) as cluster:
        client = cluster.add_client()
        grabbed, attached, ended = [], [], []
        _watch(client, "_grab_cnx", grabbed)
        _watch(client, "_attach", attached)
        lookup_ended = client._lookup_ended

        def spy(lookup, *args):
            ended.append((lookup.redirects, [w.phase for w in lookup.waiters]))
            return lookup_ended(lookup, *args)

        client._lookup_ended = spy
        ids = client.create_handles(TOPICS, HandleKind.PRODUCER)
        assert {client.handles[i].phase for i in ids} == {Phase.BACKING_OFF}
        await cluster.wait_until(lambda: client.connected_count() == len(TOPICS), timeout=60)
        assert {p for _, p in grabbed} == {Phase.BACKING_OFF}
        assert any(redirects for redirects, _ in ended), "3 brokers, 8 bundles: some lookups redirect"
        for redirects, phases in ended:
            assert set(phases) == {Phase.REDIRECTED if redirects else Phase.LOOKING_UP}
        assert {p for _, p in attached} == {Phase.CONNECTING}
        assert all(h.phase is Phase.ATTACHED and h.state == "connected" for h in client.handles.values())


@pytest.mark.asyncio
async def test_an_unload_backs_the_handle_off_then_it_attaches_again():
    async with emulated_cluster(3, seed=5, namespaces={NS: 4}) as cluster:
        client = cluster.add_client()
        (hid,) = client.create_handles(TOPICS[:1], HandleKind.PRODUCER)
        h = client.handles[hid]
        await cluster.wait_until(lambda: h.phase is Phase.ATTACHED, timeout=60)
        phases = []
        cluster.events.subscribe(lambda e: isinstance(e, HandleDisconnected) and phases.append(h.phase))
        bundle = (await cluster.namespace_bundles(NS)).find_bundle(h.topic)
        await cluster.unload_bundle(bundle)
        await cluster.wait_until(lambda: h.phase is Phase.ATTACHED and client.stats.reconnects == 1,
                                 timeout=60)
        assert phases == [Phase.BACKING_OFF]


@pytest.mark.asyncio
async def test_a_handle_closed_during_its_lookup_stays_closed():
    async with emulated_cluster(3, seed=7, namespaces={NS: 4}) as cluster:
        client = cluster.add_client()
        answered = []
        _watch(client, "_on_broker", answered)
        (hid,) = client.create_handles(TOPICS[:1], HandleKind.CONSUMER)
        h = client.handles[hid]
        await anyio.lowlevel.checkpoint()   # the first grabCnx ran: the lookup is in flight
        assert h.phase in (Phase.LOOKING_UP, Phase.REDIRECTED)
        await client.close_handle(hid)
        await anyio.sleep(5)
        assert answered and h.phase is Phase.CLOSED and h.state == "closed"
        assert client.connected_count() == 0


@pytest.mark.asyncio
async def test_closing_a_connection_disconnects_exactly_the_handles_attached_there_in_id_order():
    """`close_connection` reads the client's index of attached handles per broker, not every handle:
    the ones attached there reconnect (in handle-id order, as the walk over `handles` had it); a
    handle that moved away, one closed, and those on other brokers stay as they are."""
    async with emulated_cluster(3, seed=11, namespaces={NS: 8}) as cluster:
        client = cluster.add_client()
        client.create_handles(TOPICS, HandleKind.PRODUCER)
        await cluster.wait_until(lambda: client.connected_count() == len(TOPICS), timeout=60)
        by_broker: dict[str, list[int]] = {}
        for h in client.handles.values():
            by_broker.setdefault(h.broker_id, []).append(h.id)
        broker = max(by_broker, key=lambda b: len(by_broker[b]))
        assert len(by_broker[broker]) >= 3
        moved = client.handles[by_broker[broker][0]]
        bundle = (await cluster.namespace_bundles(NS)).find_bundle(moved.topic)
        await cluster.unload_bundle(bundle)
        await cluster.wait_until(lambda: client.connected_count() == len(TOPICS), timeout=60)
        closed = next(h for h in client.handles.values() if h.broker_id == broker and h is not moved)
        await client.close_handle(closed.id)
        expected = [h.id for h in client.handles.values()
                    if h.phase is Phase.ATTACHED and h.broker_id == broker]
        others = {h.id: h.broker_id for h in client.handles.values()
                  if h.phase is Phase.ATTACHED and h.broker_id != broker}
        assert expected and others
        seen: list[int] = []
        cluster.events.subscribe(lambda e: isinstance(e, HandleDisconnected) and seen.append(e.handle))
        client.close_connection(broker, reason="test")
        assert seen == expected
        assert closed.phase is Phase.CLOSED
        assert {h.id: h.broker_id for h in client.handles.values() if h.phase is Phase.ATTACHED} == others
        client.close_connection(broker, reason="again")   # nothing attached there any more
        assert seen == expected
