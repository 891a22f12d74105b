"""MetadataClient: ops through an owner actor, session heartbeats, Pulsar's ResourceLock rules."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from emulator.cluster.metadata_client import MetadataClient
from emulator.cluster.metadata_messages import (
    BadVersion,
    ExpireSession,
    LockBusy,
    MetadataStoreError,
    NodeExists,
    Notification,
    SessionEvent,
    SessionExpired,
    Set,
)
from emulator.cluster.metadata_store import MetadataStore
from emulator.runtime import Actor, ActorDead, ActorSystem, AskTimeout, Reply, VirtualClock


class Broker(Actor):
    """A stand-in for a broker: owns a MetadataClient, records what it is told."""

    def __init__(self, name: str, system: ActorSystem, **client_options: Any) -> None:
        super().__init__(name, system)
        self.md = MetadataClient(self, **client_options)
        self.got: list[Any] = []

    async def receive(self, msg: Any, reply: Reply) -> None:
        self.got.append(msg)
        reply.ok()


@asynccontextmanager
async def cluster(**store_options: Any) -> AsyncIterator[tuple[ActorSystem, MetadataStore]]:
    async with ActorSystem(3, VirtualClock()) as system:
        store = system.spawn(MetadataStore("metadata-store", system, **store_options))
        yield system, store


async def settle() -> None:
    for _ in range(5):
        await anyio.lowlevel.checkpoint()


BROKER_1 = b'{"nativeUrl": "pulsar://broker-1:6650", "httpUrl": "http://broker-1:8080"}'
BROKER_2 = b'{"nativeUrl": "pulsar://broker-2:6650", "httpUrl": "http://broker-2:8080"}'
BUNDLE = "/namespace/public/default/0x00000000_0x40000000"


# --------------------------------------------------------------------------- ops and sessions


@pytest.mark.asyncio
async def test_ops_go_through_the_store_with_the_clients_session() -> None:
    async with cluster() as (system, store):
        b1 = system.spawn(Broker("broker-1", system))
        assert b1.md.session_id is None
        sid = await b1.md.open_session()
        assert b1.md.session_id == sid
        stat = await b1.md.create("/loadbalance/brokers/broker-1", b"r", ephemeral=True)
        assert (stat.ephemeral_owner, stat.owner) == (sid, "broker-1")
        stat = await b1.md.set("/loadbalance/brokers/broker-1", b"r2", expected_version=0)
        assert stat.version == 1
        with pytest.raises(BadVersion):
            await b1.md.set("/loadbalance/brokers/broker-1", b"r3", expected_version=0)
        with pytest.raises(NodeExists):
            await b1.md.create("/loadbalance/brokers/broker-1", b"r")
        assert (await b1.md.get("/loadbalance/brokers/broker-1")).data == b"r2"
        assert await b1.md.children("/loadbalance/brokers") == ["broker-1"]
        assert (await b1.md.exists("/loadbalance")).ephemeral is False
        await b1.md.delete("/loadbalance/brokers/broker-1", expected_version=1)
        assert await b1.md.exists("/loadbalance/brokers/broker-1") is None
        with pytest.raises(ValueError, match="open_session"):
            await MetadataClient(b1).create("/e", b"", ephemeral=True)


@pytest.mark.asyncio
async def test_watch_delivers_notifications_to_the_owners_mailbox() -> None:
    async with cluster() as (system, _):
        b1 = system.spawn(Broker("broker-1", system))
        b2 = system.spawn(Broker("broker-2", system))
        await b1.md.watch("/loadbalance/brokers")
        await b2.md.create("/loadbalance/brokers/broker-2", b"")
        await settle()
        assert b1.got == [Notification("Created", "/loadbalance/brokers"),
                          Notification("Created", "/loadbalance/brokers/broker-2"),
                          Notification("ChildrenChanged", "/loadbalance/brokers")]


@pytest.mark.asyncio
async def test_close_session_deletes_ephemerals_at_once_and_stops_heartbeats() -> None:
    async with cluster() as (system, store):
        b1 = system.spawn(Broker("broker-1", system))
        await b1.md.open_session()
        await b1.md.create("/e", b"", ephemeral=True)
        await anyio.sleep(10.0)
        await b1.md.close_session()
        assert store.peek("/e") is None and b1.md.session_id is None
        beats = store.stats["Heartbeat"]
        await anyio.sleep(60.0)
        assert store.stats["Heartbeat"] == beats == 1
        await b1.md.close_session()  # no session: nothing to do


@pytest.mark.asyncio
async def test_an_expired_session_fails_every_op_until_a_new_one_is_opened() -> None:
    async with cluster() as (system, store):
        b1 = system.spawn(Broker("broker-1", system))
        old = await b1.md.open_session(session_events=True)
        await b1.md.create("/e", b"", ephemeral=True)
        await store.ask(ExpireSession(old))
        await settle()
        assert b1.got == [SessionEvent("SessionLost", old)]
        with pytest.raises(SessionExpired):
            await b1.md.get("/e")
        with pytest.raises(SessionExpired):
            await b1.md.create("/e", b"", ephemeral=True)
        new = await b1.md.open_session()
        assert new != old
        assert (await b1.md.create("/e", b"", ephemeral=True)).ephemeral_owner == new


@pytest.mark.asyncio
async def test_the_heartbeat_loop_dies_with_its_owner() -> None:
    async with cluster() as (system, store):
        b1 = system.spawn(Broker("broker-1", system))
        await b1.md.open_session()
        await b1.md.create("/loadbalance/leader", b"{}", ephemeral=True)
        await anyio.sleep(12.0)  # one heartbeat, at 10 s
        b1.kill()
        await anyio.sleep(39.99 - 12.0)
        assert store.peek("/loadbalance/leader") == b"{}"
        await anyio.sleep(0.01 + 1e-6)
        assert store.peek("/loadbalance/leader") is None


@pytest.mark.asyncio
async def test_a_dead_or_slow_store_is_a_metadata_store_error() -> None:
    async with cluster(op_latency=5.0) as (system, store):
        b1 = system.spawn(Broker("broker-1", system, op_timeout=1.0))
        with pytest.raises(MetadataStoreError) as slow:
            await b1.md.get("/x")
        assert isinstance(slow.value.__cause__, AskTimeout)
        b1.md.op_timeout = 10.0
        async with anyio.create_task_group() as tg:
            tg.start_soon(_kill_after, store, 1.0)
            with pytest.raises(MetadataStoreError) as died:
                await b1.md.get("/x")  # answered at +5 s, but the store dies at +1 s
        assert isinstance(died.value.__cause__, ActorDead)
        with pytest.raises(MetadataStoreError, match="not running"):
            await b1.md.get("/x")
        with pytest.raises(ValueError, match="op_timeout = 0"):
            MetadataClient(b1, op_timeout=0)


async def _kill_after(actor: Actor, delay: float) -> None:
    await anyio.sleep(delay)
    actor.kill()


# --------------------------------------------------------------------------- locks (spec §2.5)


@pytest.mark.asyncio
async def test_a_lock_held_by_another_broker_is_busy() -> None:
    async with cluster() as (system, store):
        b1 = system.spawn(Broker("broker-1", system))
        b2 = system.spawn(Broker("broker-2", system))
        await b1.md.open_session()
        await b2.md.open_session()
        stat = await b1.md.acquire_lock(BUNDLE, BROKER_1)
        assert stat.ephemeral_owner == b1.md.session_id
        with pytest.raises(LockBusy, match=f"Resource at {BUNDLE} is already locked"):
            await b2.md.acquire_lock(BUNDLE, BROKER_2)
        assert store.peek(BUNDLE) == BROKER_1
        assert b2.md.held_locks() == [] and b1.md.held_locks() == [BUNDLE]
        # a persistent node is never a lock
        await b1.md.create("/persistent", b"x")
        with pytest.raises(LockBusy, match="non-ephemeral"):
            await b2.md.acquire_lock("/persistent", b"x")


@pytest.mark.asyncio
async def test_acquiring_again_in_the_same_session_adopts_the_node() -> None:
    async with cluster() as (system, store):
        watcher = system.spawn(Broker("watcher", system))
        b1 = system.spawn(Broker("broker-1", system))
        await b1.md.open_session()
        first = await b1.md.acquire_lock(BUNDLE, BROKER_1)
        await watcher.md.watch(BUNDLE)
        await anyio.sleep(1.0)
        again = await b1.md.acquire_lock(BUNDLE, BROKER_1)
        await settle()
        assert again == first  # same node, same version, same ctime: adopted, not re-created
        assert watcher.got == []


@pytest.mark.asyncio
async def test_a_restarted_broker_reclaims_its_stale_lock_at_once() -> None:
    async with cluster() as (system, store):
        watcher = system.spawn(Broker("watcher", system))
        await watcher.md.watch(BUNDLE)
        old = system.spawn(Broker("broker-1", system))
        await old.md.open_session()
        await old.md.acquire_lock(BUNDLE, BROKER_1)
        old.kill()  # crash: the old session lives on for 30 s
        await anyio.sleep(5.0)
        new = system.spawn(Broker("broker-1", system))
        sid = await new.md.open_session()
        stat = await new.md.acquire_lock(BUNDLE, BROKER_1)
        assert stat.ephemeral_owner == sid and stat.creation_timestamp == 5000
        await settle()
        assert [(m.type, m.path) for m in watcher.got] == [
            ("Created", BUNDLE), ("Deleted", BUNDLE), ("Created", BUNDLE)]
        await anyio.sleep(30.0)  # the old session expires: the reclaimed lock survives it
        assert store.peek(BUNDLE) == BROKER_1
        assert (await new.md.exists(BUNDLE)).ephemeral_owner == sid


@pytest.mark.asyncio
async def test_different_data_in_the_same_session_is_rewritten() -> None:
    async with cluster() as (system, store):
        b1 = system.spawn(Broker("broker-1", system))
        await b1.md.open_session()
        await b1.md.acquire_lock(BUNDLE, BROKER_1)
        disabled = BROKER_1.replace(b"}", b', "disabled": true}')
        stat = await b1.md.acquire_lock(BUNDLE, disabled)
        assert store.peek(BUNDLE) == disabled and stat.version == 0


@pytest.mark.asyncio
async def test_release_deletes_only_the_held_version_and_tolerates_not_found() -> None:
    async with cluster() as (system, store):
        b1 = system.spawn(Broker("broker-1", system))
        b2 = system.spawn(Broker("broker-2", system))
        await b1.md.open_session()
        await b2.md.open_session()
        await b1.md.acquire_lock(BUNDLE, BROKER_1)
        updated = await b1.md.update_lock(BUNDLE, BROKER_1 + b" ")
        assert updated.version == 1
        await b1.md.release_lock(BUNDLE)
        assert store.peek(BUNDLE) is None and b1.md.held_locks() == []
        await b2.md.acquire_lock(BUNDLE, BROKER_2)
        await b1.md.release_lock(BUNDLE)  # not held by b1 any more: must not delete b2's lock
        assert store.peek(BUNDLE) == BROKER_2
        await b2.md.acquire_lock("/other", BROKER_2)
        await b2.md.delete("/other")
        await b2.md.release_lock("/other")  # already gone: fine
        await b2.md.acquire_lock("/third", BROKER_2)
        await store.ask(Set("/third", b"raced"))  # someone else bumped it
        with pytest.raises(BadVersion):
            await b2.md.release_lock("/third")


@pytest.mark.asyncio
async def test_update_lock_writes_at_the_held_version_and_set_keeps_it_current() -> None:
    async with cluster() as (system, store):
        b1 = system.spawn(Broker("broker-1", system))
        await b1.md.open_session()
        assert (await b1.md.update_lock("/loadbalance/brokers/broker-1", b"r0")).version == 0
        stat = await b1.md.set("/loadbalance/brokers/broker-1", b"r1", expected_version=0)
        assert stat.version == 1
        assert (await b1.md.update_lock("/loadbalance/brokers/broker-1", b"r2")).version == 2
        await b1.md.release_lock("/loadbalance/brokers/broker-1")
        assert store.peek("/loadbalance/brokers/broker-1") is None
        with pytest.raises(ValueError, match="open_session"):
            await MetadataClient(b1).acquire_lock("/x", b"")


@pytest.mark.asyncio
async def test_a_lock_that_vanished_after_node_exists_is_created_again() -> None:
    """The revalidate path: create failed, then the node is gone on the read."""
    async with cluster() as (system, store):
        b1 = system.spawn(Broker("broker-1", system))
        b2 = system.spawn(Broker("broker-2", system))
        await b1.md.open_session()
        sid2 = await b2.md.open_session()
        await b1.md.acquire_lock(BUNDLE, BROKER_1)
        original_get = b2.md.get

        async def get_after_release(path: str) -> Any:
            await b1.md.release_lock(path)  # the holder lets go between create and read
            return await original_get(path)

        b2.md.get = get_after_release  # type: ignore[method-assign]
        stat = await b2.md.acquire_lock(BUNDLE, BROKER_2)
        assert stat.ephemeral_owner == sid2 and store.peek(BUNDLE) == BROKER_2


# --------------------------------------------------------------------------- throughput


@pytest.mark.asyncio
async def test_ten_thousand_creates_and_gets_through_the_client() -> None:
    async with cluster() as (system, store):
        b1 = system.spawn(Broker("broker-1", system))
        await b1.md.open_session()
        started = time.perf_counter()
        for i in range(10_000):
            await b1.md.create(f"/bulk/{i // 100}/n{i}", b"x", ephemeral=i % 2 == 0)
        for i in range(10_000):
            assert (await b1.md.get(f"/bulk/{i // 100}/n{i}")).data == b"x"
        wall = time.perf_counter() - started
        print(f"\n10,000 creates + 10,000 gets through MetadataClient: {wall:.2f} s wall")
        assert len(store.tree) == 10_000 + 100 + 1
        assert store.stats["Create"] == 10_000 and store.stats["Get"] == 10_000
        assert wall < 20.0
        assert store.now == 0.0  # no emulated time passes at zero latency
