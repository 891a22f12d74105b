"""A broker draining for shutdown, as clients see it: ServerCnx refuses its lookups, a refused attach
keeps the connection, and a "service" client's lookup connection is one pooled connection that moves
only when it is closed."""

from __future__ import annotations

import anyio
import pytest

from emulator.cluster.client import ClientSettings
from emulator.cluster.cluster import ClusterSettings
from emulator.cluster.messages import HandleKind, LookupTopic, LookupType, ServerError
from emulator.testing import emulated_cluster

NS = "public/default"
TOPICS = [f"persistent://{NS}/t-{i}" for i in range(200)]
SLOW_DRAIN = ClusterSettings(bundle_close_time=2.0)   # each bundle takes 2 s to unload


async def _producing_client(cluster, settings: ClientSettings | None = None):
    """A client with a producer on each of TOPICS, every one connected."""
    client = cluster.add_client(settings=settings) if settings else cluster.add_client()
    client.create_handles(TOPICS, HandleKind.PRODUCER)
    await cluster.wait_until(lambda: client.connected_count() == len(TOPICS), timeout=120)
    return client


def _owner_with_bundles(cluster, leader: str) -> str:
    """A follower that owns at least two bundles (its drain lasts 4 s or more)."""
    counts: dict[str, int] = {}
    for owner in cluster.ownership().values():
        counts[owner] = counts.get(owner, 0) + 1
    return max((b for b in counts if b != leader), key=lambda b: (counts[b], b))


@pytest.mark.asyncio
async def test_a_draining_broker_refuses_every_lookup_with_service_not_ready():
    async with emulated_cluster(3, seed=3, namespaces={NS: 8}, settings=SLOW_DRAIN) as cluster:
        leader = await cluster.wait_for_leader()
        client = await _producing_client(cluster)
        draining = _owner_with_bundles(cluster, leader)
        broker = cluster.brokers[draining]
        # a topic it still owns: before the drain, the lookup is answered Connect
        mine = next(h.topic for h in client.handles.values() if h.broker_id == draining)
        before = await broker.ask(LookupTopic(mine, authoritative=False))
        assert before.response is LookupType.CONNECT
        async with anyio.create_task_group() as tg:
            tg.start_soon(cluster.stop_broker, draining, "graceful")
            await anyio.sleep(1.0)    # inside the first bundle's 2 s unload
            assert broker.closing and broker.alive
            during = await broker.ask(LookupTopic(mine, authoritative=True))
            assert during.response is LookupType.FAILED
            assert during.error is ServerError.SERVICE_NOT_READY
            assert during.message == "Failed due to pulsar service is not ready"
        await cluster.wait_until(lambda: client.connected_count() == len(TOPICS), timeout=300)


@pytest.mark.asyncio
async def test_a_refused_attach_keeps_the_connection_and_its_other_producers():
    """ClientCnx.handleError fails the one request; checkServerError (which closes the connection
    on ServiceNotReady) runs for lookup answers only."""
    async with emulated_cluster(3, seed=4, namespaces={NS: 8}) as cluster:
        await cluster.wait_for_leader()
        client = await _producing_client(cluster)
        handles = list(client.handles.values())
        broker_a = handles[0].broker_id
        on_a = [h for h in handles if h.broker_id == broker_a]
        elsewhere = next(h.topic for h in handles if h.broker_id != broker_a)
        # a stale lookup answer sends a new producer of `elsewhere` to broker A, which refuses it
        (hid,) = client.create_handles([elsewhere], HandleKind.PRODUCER)
        h = client.handles[hid]
        client._on_broker(h, broker_a, None)   # the lookup's answer; its own first grabCnx then stands down
        await cluster.wait_until(lambda: h.state == "connected", timeout=60)
        assert client.stats.attach_failures >= 1
        assert h.broker_id != broker_a
        assert all(p.state == "connected" and p.broker_id == broker_a for p in on_a)
        assert client.stats.reconnects == 0


@pytest.mark.asyncio
async def test_a_service_client_keeps_one_lookup_connection_until_it_is_closed():
    settings = ClientSettings(service_url="service", record_lookups=True)
    async with emulated_cluster(4, seed=6, namespaces={NS: 8}, settings=SLOW_DRAIN) as cluster:
        leader = await cluster.wait_for_leader()
        client = await _producing_client(cluster, settings)
        first_hops = {r.hops[0][0] for r in client.records}
        assert len(first_hops) == 1     # every lookup's first hop went over the same connection
        (service_broker,) = first_hops
        assert service_broker != leader   # seed 6: the drain below is a follower's
        client.records.clear()
        closes_before = client.stats.connection_closes
        await cluster.stop_broker(service_broker, "graceful")
        await cluster.wait_until(lambda: client.connected_count() == len(TOPICS), timeout=300)
        refused = [r for r in client.records
                   if r.hops and r.hops[0][0] == service_broker and r.outcome.startswith("Failed")]
        later = [r for r in client.records if r.hops and r.hops[0][0] != service_broker]
        # the drain refused the lookups that reached it (its own producers' reconnects)...
        assert refused and all("ServiceNotReady" in r.outcome for r in refused)
        # ...which closed the service connection only: a new one went to one other, ready broker
        assert later and len({r.hops[0][0] for r in later}) == 1
        assert client.stats.connection_closes > closes_before
        assert all(r.outcome.startswith("Connect") for r in later)


@pytest.mark.asyncio
async def test_a_follower_deciding_locally_never_picks_a_broker_gone_from_the_registry():
    """ModularLoadManagerImpl reads getAvailableBrokers() on every decision: a follower's local view
    built before a broker left must not send the next bundle there (NotFound for the client)."""
    from emulator.cluster import paths

    async with emulated_cluster(3, seed=7, namespaces={NS: 16}) as cluster:
        leader = await cluster.wait_for_leader()
        follower, gone = [b for b in cluster.live_brokers() if b != leader]
        f = cluster.brokers[follower]
        nb = await cluster.namespace_bundles(NS)
        bundles = nb.names
        await f.load_manager._select_locally(bundles[0], False)           # the view is built now, `gone` in it
        await cluster.stop_broker(gone, "graceful")
        await cluster.wait_until(lambda: gone not in f.available_brokers, timeout=5)
        assert f.now - f.load_manager._local_lm_time < f.report_interval   # still inside the view's interval
        picks = [await f.load_manager._select_locally(b, False) for b in bundles[1:]]
        assert gone not in picks
        assert set(picks) <= {leader, follower}
        assert gone not in cluster.store.peek_children(paths.BROKERS)


@pytest.mark.asyncio
async def test_an_unload_tells_the_clients_first_and_releases_the_bundle_after_the_ledgers_close():
    """PersistentTopic.close(closeWithoutWaitingClientDisconnect=true) sends CloseProducer at once;
    the ownership node goes only once the managed ledgers are closed (2 s here)."""
    async with emulated_cluster(3, seed=8, namespaces={NS: 4}, settings=SLOW_DRAIN) as cluster:
        await cluster.wait_for_leader()
        client = await _producing_client(cluster)
        nb = await cluster.namespace_bundles(NS)
        bundle, owner = next(iter(sorted(cluster.ownership().items())))
        moved = [h for h in client.handles.values() if nb.find_bundle(h.topic) == bundle]
        assert moved
        async with anyio.create_task_group() as tg:
            tg.start_soon(cluster.brokers[owner].unload_bundle, bundle)
            await anyio.sleep(0.5)
            assert all(h.state == "connecting" for h in moved)     # told at the start...
            assert cluster.ownership().get(bundle) == owner        # ...while the bundle is still held
        await cluster.wait_until(lambda: client.connected_count() == len(TOPICS), timeout=120)


@pytest.mark.asyncio
@pytest.mark.parametrize("before_302, expected", [(False, ServerError.METADATA_ERROR),
                                                  (True, ServerError.SERVICE_NOT_READY)])
async def test_a_lookup_of_a_bundle_being_unloaded_answers_by_release(before_302, expected):
    """MetadataError since PR #21211 (3.0.2); ServiceNotReady before, which closes the connection."""
    from emulator.model.config import ServiceConfig

    conf = ServiceConfig().with_overrides(
        {"emulator_lookup_failures_as_service_not_ready": str(before_302).lower()}, source="test")
    async with emulated_cluster(3, seed=8, conf=conf, namespaces={NS: 4}, settings=SLOW_DRAIN) as cluster:
        await cluster.wait_for_leader()
        await _producing_client(cluster)
        nb = await cluster.namespace_bundles(NS)
        bundle, owner = next(iter(sorted(cluster.ownership().items())))
        topic = next(t for t in TOPICS if nb.find_bundle(t) == bundle)
        async with anyio.create_task_group() as tg:
            tg.start_soon(cluster.brokers[owner].unload_bundle, bundle)
            await anyio.sleep(0.5)
            answer = await cluster.brokers[owner].ask(LookupTopic(topic, authoritative=True))
        assert answer.response is LookupType.FAILED
        assert "being unloaded" in answer.message
        assert answer.error is expected


@pytest.mark.asyncio
async def test_a_draining_broker_takes_no_new_connection_but_serves_the_ones_it_has():
    """ServerCnx.handleConnect refuses while the broker is not running (PR #17314)."""
    from emulator.cluster.messages import Attach

    async with emulated_cluster(3, seed=3, namespaces={NS: 8}, settings=SLOW_DRAIN) as cluster:
        leader = await cluster.wait_for_leader()
        connected = await _producing_client(cluster)
        stranger = cluster.add_client()
        draining = _owner_with_bundles(cluster, leader)
        broker = cluster.brokers[draining]
        nb = await cluster.namespace_bundles(NS)
        async with anyio.create_task_group() as tg:
            tg.start_soon(cluster.stop_broker, draining, "graceful")
            # before the first reconnects (~100 ms backoff): their lookups, refused here, would close
            # `connected`'s connection to this broker too
            await anyio.sleep(0.05)
            assert broker.closing and cluster.network.is_connected(connected.name, draining)
            active = {b for b, o in broker.owned.items() if o.active}
            topic = next(t for t in TOPICS if nb.find_bundle(t) in active)
            served = await broker.ask(Attach(topic, 10_001, connected.name, HandleKind.PRODUCER))
            refused = await broker.ask(Attach(topic, 1, stranger.name, HandleKind.PRODUCER))
            assert served.ok
            assert not refused.ok and refused.connection_refused
            assert refused.error is ServerError.SERVICE_NOT_READY
        await cluster.wait_until(lambda: connected.connected_count() == len(TOPICS), timeout=300)


@pytest.mark.asyncio
async def test_rejections_on_the_service_connection_close_that_connection_only():
    """checkServerError's TooManyRequests count (the 51st within 60 s: getAndIncrement() >= 50) runs
    per connection: on the service-name connection it closes that one, not the producers' connection
    to the same broker."""
    settings = ClientSettings(service_url="service")
    async with emulated_cluster(3, seed=6, namespaces={NS: 8}) as cluster:
        await cluster.wait_for_leader()
        client = await _producing_client(cluster, settings)
        service_broker = client.pool.service_connection()
        attached = sum(1 for h in client.handles.values() if h.broker_id == service_broker)
        assert attached > 0
        for _ in range(client.settings.max_rejected_per_connection):
            client._on_server_error(service_broker, ServerError.TOO_MANY_REQUESTS, service=True)
        assert client.pool.service_broker == service_broker
        client._on_server_error(service_broker, ServerError.TOO_MANY_REQUESTS, service=True)
        assert client.pool.service_broker is None
        assert client.connected_count() == len(TOPICS) and client.stats.reconnects == 0
