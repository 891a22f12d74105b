"""MetadataStore actor: ZooKeeper node semantics, sessions, watches, latency, dump."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from emulator.cluster.metadata_client import MetadataClient
from emulator.cluster.metadata_messages import (
    BadVersion,
    BadVersionNoNode,
    CloseSession,
    Create,
    Delete,
    DeleteRecursive,
    Dump,
    Exists,
    ExpireSession,
    Get,
    GetChildren,
    Heartbeat,
    MetadataStoreError,
    NodeExists,
    NotEmpty,
    NotFound,
    Notification,
    OpenSession,
    SessionEvent,
    SessionExpired,
    Set,
    Watch,
)
from emulator.cluster.metadata_store import MetadataStore
from emulator.runtime import Actor, ActorSystem, Reply, VirtualClock


class Probe(Actor):
    """Records what it is told, with the emulated time of arrival."""

    def __init__(self, name: str, system: ActorSystem) -> None:
        super().__init__(name, system)
        self.got: list[tuple[float, Any]] = []
        self.md = MetadataClient(self)

    async def receive(self, msg: Any, reply: Reply) -> None:
        self.got.append((self.now, msg))
        reply.ok()

    def notes(self) -> list[tuple[str, str]]:
        return [(m.type, m.path) for _, m in self.got if isinstance(m, Notification)]


@asynccontextmanager
async def running(**store_options: Any) -> AsyncIterator[tuple[ActorSystem, MetadataStore]]:
    async with ActorSystem(7, VirtualClock()) as system:
        store = system.spawn(MetadataStore("metadata-store", system, **store_options))
        yield system, store


async def settle() -> None:
    """Let told messages be handled (no emulated time passes)."""
    for _ in range(5):
        await anyio.lowlevel.checkpoint()


# --------------------------------------------------------------------------- nodes and versions


@pytest.mark.asyncio
async def test_create_returns_version_0_and_a_second_create_is_node_exists() -> None:
    async with running() as (_, store):
        await anyio.sleep(1.5)
        stat = await store.ask(Create("/a/b", b"x"))
        assert (stat.path, stat.version, stat.ephemeral) == ("/a/b", 0, False)
        assert stat.creation_timestamp == stat.modification_timestamp == 1500  # emulated ms
        with pytest.raises(NodeExists) as err:
            await store.ask(Create("/a/b", b"y"))
        assert isinstance(err.value, BadVersion)  # Pulsar reports create-on-existing as BadVersion
        got = await store.ask(Get("/a/b"))
        assert got.data == b"x"
        # the parent was created implicitly, persistent and empty
        parent = await store.ask(Get("/a"))
        assert parent.data == b"" and not parent.stat.ephemeral
        assert await store.ask(Get("/nope")) is None
        assert await store.ask(Exists("/nope")) is None
        assert (await store.ask(Exists("/a/b"))).version == 0


@pytest.mark.asyncio
async def test_set_bumps_version_and_a_stale_expected_version_is_bad_version() -> None:
    async with running() as (_, store):
        await store.ask(Create("/n", b"0"))
        s1 = await store.ask(Set("/n", b"1", 0))
        s2 = await store.ask(Set("/n", b"2"))  # unconditional
        assert (s1.version, s2.version) == (1, 2)
        with pytest.raises(BadVersion):
            await store.ask(Set("/n", b"stale", 1))
        assert (await store.ask(Get("/n"))).data == b"2"
        # -1 on a missing node creates it (persistent); a real version on a missing node fails
        created = await store.ask(Set("/fresh/x", b"v"))
        assert created.version == 0 and not created.ephemeral
        with pytest.raises(BadVersionNoNode) as err:
            await store.ask(Set("/missing", b"v", 0))
        assert isinstance(err.value, NotFound) and isinstance(err.value, BadVersion)
        assert await store.ask(Exists("/missing")) is None


@pytest.mark.asyncio
async def test_delete_checks_existence_then_version_then_children() -> None:
    async with running() as (_, store):
        with pytest.raises(NotFound):
            await store.ask(Delete("/x"))
        await store.ask(Create("/x/child", b""))
        await store.ask(Set("/x", b"v"))  # /x now at version 1
        with pytest.raises(BadVersion):
            await store.ask(Delete("/x", 0))  # version is checked before emptiness (ZooKeeper)
        with pytest.raises(NotEmpty):
            await store.ask(Delete("/x", 1))
        with pytest.raises(BadVersion):
            await store.ask(Delete("/x/child", 3))
        assert await store.ask(Delete("/x/child", 0)) is None
        assert await store.ask(Delete("/x", 1)) is None
        assert await store.ask(Exists("/x")) is None


@pytest.mark.asyncio
async def test_children_are_sorted_names_and_a_missing_node_has_none() -> None:
    async with running() as (_, store):
        for name in ["b", "a10", "c", "a2"]:
            await store.ask(Create(f"/p/{name}", b""))
        await store.ask(Create("/p/a2/deeper", b""))
        assert await store.ask(GetChildren("/p")) == ["a10", "a2", "b", "c"]
        assert await store.ask(GetChildren("/")) == ["p"]
        assert await store.ask(GetChildren("/no/such")) == []


@pytest.mark.asyncio
async def test_delete_recursive_removes_a_subtree_and_ignores_a_missing_node() -> None:
    async with running() as (_, store):
        await store.ask(Create("/r/a/b", b""))
        await store.ask(Create("/r/c", b""))
        await store.ask(Create("/other", b""))
        await store.ask(DeleteRecursive("/r"))
        assert await store.ask(GetChildren("/")) == ["other"]
        await store.ask(DeleteRecursive("/r"))  # no-op, as Pulsar's deleteRecursive


@pytest.mark.asyncio
async def test_no_children_under_an_ephemeral_node() -> None:
    async with running() as (_, store):
        sid = await store.ask(OpenSession("b1"))
        await store.ask(Create("/e", b"", True, sid))
        with pytest.raises(MetadataStoreError, match="ephemeral"):
            await store.ask(Create("/e/child", b""))


@pytest.mark.asyncio
async def test_bad_arguments_are_refused_with_the_value_and_the_store_survives() -> None:
    async with running() as (system, store):
        with pytest.raises(ValueError, match="'a/b'"):
            await store.ask(Create("a/b", b""))
        with pytest.raises(ValueError, match="'/a/'"):
            await store.ask(Get("/a/"))
        with pytest.raises(ValueError, match="'/a//b'"):
            await store.ask(Create("/a//b", b""))
        with pytest.raises(TypeError, match="data must be bytes"):
            await store.ask(Create("/a", "text"))  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="expected_version = -2"):
            await store.ask(Set("/a", b"", -2))
        with pytest.raises(ValueError, match="session_id"):
            await store.ask(Create("/a", b"", True, None))
        with pytest.raises(ValueError, match="root"):
            await store.ask(Delete("/"))
        with pytest.raises(TypeError, match="does not handle"):
            await store.ask("hello")
        assert store.alive
        assert await store.ask(GetChildren("/")) == []
        with pytest.raises(ValueError, match="session_timeout = 0"):
            MetadataStore("bad", system, session_timeout=0)
        with pytest.raises(ValueError, match="op_latency = -1"):
            MetadataStore("bad", system, op_latency=-1)
        with pytest.raises(TypeError, match="latency_fn"):
            MetadataStore("bad", system, latency_fn=0.5)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- watches


@pytest.mark.asyncio
async def test_watchers_get_every_change_under_their_prefix_in_order() -> None:
    async with running() as (system, store):
        brokers = system.spawn(Probe("brokers-watcher", system))
        leader = system.spawn(Probe("leader-watcher", system))
        everything = system.spawn(Probe("root-watcher", system))
        await store.ask(Watch("/loadbalance/brokers", brokers.name))
        await store.ask(Watch("/loadbalance/leader", leader.name))
        await store.ask(Watch("/", everything.name))

        await store.ask(Create("/loadbalance/brokers/b1", b"r"))
        await store.ask(Set("/loadbalance/brokers/b1", b"r2"))
        await store.ask(Delete("/loadbalance/brokers/b1"))
        await store.ask(Create("/loadbalance/brokersX", b""))  # a sibling sharing the prefix text
        await settle()

        assert brokers.notes() == [
            ("Created", "/loadbalance/brokers"),  # implicit parent; its parent is not watched
            ("Created", "/loadbalance/brokers/b1"),
            ("ChildrenChanged", "/loadbalance/brokers"),
            ("Modified", "/loadbalance/brokers/b1"),
            ("Deleted", "/loadbalance/brokers/b1"),
            ("ChildrenChanged", "/loadbalance/brokers"),
        ]
        assert leader.notes() == []
        # top-level nodes have no parent notification (Pulsar's parent("/x") is null)
        assert everything.notes()[:2] == [("Created", "/loadbalance"),
                                          ("Created", "/loadbalance/brokers")]
        assert ("ChildrenChanged", "/") not in everything.notes()
        assert everything.notes()[-2:] == [("Created", "/loadbalance/brokersX"),
                                          ("ChildrenChanged", "/loadbalance")]
        assert store.stats["notifications"] == len(brokers.notes()) + len(everything.notes())


@pytest.mark.asyncio
async def test_a_watch_with_kinds_gets_only_those_and_a_second_watch_widens_it() -> None:
    """A broker watches /loadbalance/brokers for registrations only: the reports written there are
    not sent to it; watching the same prefix again adds kinds (no kinds: every kind)."""
    async with running() as (system, store):
        registry = system.spawn(Probe("registry-watcher", system))
        await store.ask(Watch("/loadbalance/brokers", registry.name, ("Created", "Deleted")))
        await store.ask(Create("/loadbalance/brokers/b1", b"r"))
        await store.ask(Set("/loadbalance/brokers/b1", b"r2"))
        await store.ask(Delete("/loadbalance/brokers/b1"))
        await settle()
        assert registry.notes() == [("Created", "/loadbalance/brokers"),
                                     ("Created", "/loadbalance/brokers/b1"),
                                     ("Deleted", "/loadbalance/brokers/b1")]
        await store.ask(Watch("/loadbalance/brokers", registry.name, ("Modified",)))
        await store.ask(Create("/loadbalance/brokers/b2", b"r"))
        await store.ask(Set("/loadbalance/brokers/b2", b"r2"))
        await settle()
        assert registry.notes()[3:] == [("Created", "/loadbalance/brokers/b2"),
                                        ("Modified", "/loadbalance/brokers/b2")]
        await store.ask(Watch("/loadbalance/brokers", registry.name))
        await store.ask(Delete("/loadbalance/brokers/b2"))
        await settle()
        assert registry.notes()[5:] == [("Deleted", "/loadbalance/brokers/b2"),
                                        ("ChildrenChanged", "/loadbalance/brokers")]


def test_watches_find_subscribers_by_kind_and_forget_them_whole() -> None:
    """A change of a kind a subscriber does not watch for leaves it out of the targets altogether
    (1,000 brokers watch for registrations where every report is rewritten); widening the kinds and
    dropping the subscriber keep the index by kind exact."""
    from emulator.cluster.metadata_messages import Notification
    from emulator.cluster.metadata_watches import Watches

    watches, actor = Watches(), object()
    for i in range(3):
        watches.add(f"b{i}", actor, "/loadbalance/brokers", frozenset({"Created", "Deleted"}))
    watches.add("leader", actor, "/loadbalance", None)
    report = Notification("Modified", "/loadbalance/brokers/b1")
    joined = Notification("Created", "/loadbalance/brokers/b3")
    assert watches.targets([report]) == [("leader", [report])]
    assert [s for s, _ in watches.targets([report, joined])] == ["b0", "b1", "b2", "leader"]
    assert watches.targets([report, joined])[0] == ("b0", [joined])
    watches.add("b1", actor, "/loadbalance/brokers", frozenset({"Modified"}))
    assert watches.targets([report]) == [("b1", [report]), ("leader", [report])]
    for name in ("b0", "b1", "b2", "leader"):
        watches.drop(name)
    assert watches.targets([report, joined]) == [] and not watches and watches._by_prefix == {}


@pytest.mark.asyncio
async def test_a_change_is_told_only_to_watchers_of_its_ancestors_in_the_order_they_watched() -> None:
    """The store visits the watchers of a path's ancestors (and "/"), not every watcher; they hear it
    in the order they first watched, and an actor of a dead watcher's name watches afresh."""
    async with running() as (system, store):
        late = system.spawn(Probe("late", system))
        early = system.spawn(Probe("early", system))
        root = system.spawn(Probe("root", system))
        other = system.spawn(Probe("other", system))
        await store.ask(Watch("/a/b", early.name))
        await store.ask(Watch("/a", late.name))
        await store.ask(Watch("/", root.name))
        await store.ask(Watch("/x", other.name))
        await store.ask(Create("/a/b/c", b""))
        await settle()
        assert ("Created", "/a/b/c") in early.notes() and ("Created", "/a/b/c") in late.notes()
        assert ("Created", "/a/b/c") in root.notes() and other.notes() == []
        assert store.stats["notifications"] == len(early.notes()) + len(late.notes()) + len(root.notes())
        other.kill()
        again = system.spawn(Probe("other", system))   # the same name, a new actor
        await store.ask(Watch("/y", again.name, ("Created",)))
        await store.ask(Create("/x", b""))
        await store.ask(Create("/y", b""))
        await settle()
        assert again.notes() == [("Created", "/y")]
        assert list(store.watches.by_subscriber) == ["early", "late", "root", "other"]
        assert store.watches.by_subscriber["other"] == {"/y": frozenset({"Created"})}


@pytest.mark.asyncio
async def test_a_dead_watcher_is_dropped_silently() -> None:
    async with running() as (system, store):
        doomed = system.spawn(Probe("doomed", system))
        await store.ask(Watch("/a", doomed.name))
        doomed.kill()
        await store.ask(Create("/a", b""))
        await settle()
        assert store.alive
        assert store.watches.by_subscriber == {}
        with pytest.raises(ValueError, match="no running actor"):
            await store.ask(Watch("/a", "doomed"))


# --------------------------------------------------------------------------- sessions


@pytest.mark.asyncio
async def test_a_killed_owners_ephemerals_vanish_together_exactly_at_the_session_timeout() -> None:
    async with running() as (system, store):
        watcher = system.spawn(Probe("watcher", system))
        await store.ask(Watch("/", watcher.name))
        broker = system.spawn(Probe("broker-1", system))
        await broker.md.open_session()
        await broker.md.create("/loadbalance/brokers/broker-1", b"{}", ephemeral=True)
        await broker.md.create("/namespace/public/default/0x00000000_0xffffffff", b"{}",
                               ephemeral=True)
        await broker.md.create("/persistent", b"{}")
        broker.kill()  # t = 0: no heartbeat was ever sent
        watcher.got.clear()

        await anyio.sleep(29.9)
        assert store.peek("/loadbalance/brokers/broker-1") is not None
        assert store.peek("/namespace/public/default/0x00000000_0xffffffff") is not None
        await anyio.sleep(0.1 + 1e-6)
        assert store.peek("/loadbalance/brokers/broker-1") is None
        assert store.peek("/namespace/public/default/0x00000000_0xffffffff") is None
        assert store.peek("/persistent") == b"{}"
        await settle()
        deleted = [(t, m.path) for t, m in watcher.got if m.type == "Deleted"]
        assert [p for _, p in deleted] == ["/loadbalance/brokers/broker-1",
                                          "/namespace/public/default/0x00000000_0xffffffff"]
        assert {t for t, _ in deleted} == {30.0}  # one batch, at one instant
        assert store.stats["sessions_expired"] == 1
        with pytest.raises(SessionExpired):
            await store.ask(Create("/late", b"", True, broker.md.session_id))


@pytest.mark.asyncio
async def test_expiry_counts_from_the_last_heartbeat() -> None:
    async with running() as (system, store):
        broker = system.spawn(Probe("broker-1", system))
        await broker.md.open_session()
        await broker.md.create("/e", b"", ephemeral=True)
        await anyio.sleep(25.0)  # heartbeats at 10 and 20
        broker.kill()
        await anyio.sleep(49.99 - 25.0)
        assert store.peek("/e") is not None
        await anyio.sleep(0.01 + 1e-6)
        assert store.peek("/e") is None
        assert store.stats["Heartbeat"] == 2


def _expiries(told: bool) -> list[tuple[str, float, list[tuple[float, str]]]]:
    """Six clients open sessions at different instants and die at various times, exact heartbeat
    instants (10 s apart from the open) and instants where the reaper wakes among them; returns
    each session's ephemeral deletion time and the order of the deletions and of the test's steps."""
    from emulator.runtime import run

    async def main() -> list[tuple[str, float, list[tuple[float, str]]]]:
        async with running() as (system, store):
            if told:
                # the reference: each beat told to the store as a Heartbeat message, as before
                store.heartbeat = lambda sid: store.tell(Heartbeat(sid))   # type: ignore[method-assign]
            watcher = system.spawn(Probe("watcher", system))
            await store.ask(Watch("/", watcher.name))
            order: list[tuple[float, str]] = []
            probes = []
            for i, (start, death) in enumerate([(0.0, 40.0), (0.0, 600.0), (3.3, 33.3), (3.3, 47.0),
                                                (7.0, 57.0), (7.25, 1000.0)]):
                async def life(i: int = i, start: float = start, death: float = death) -> None:
                    await anyio.sleep(start)
                    p = system.spawn(Probe(f"b{i}", system))
                    probes.append(p)
                    await p.md.open_session()
                    await p.md.create(f"/e{i}", b"", ephemeral=True)
                    await anyio.sleep(death - start)
                    order.append((system.clock.now(), f"kill b{i}"))
                    p.kill()
                system.spawn(Probe(f"driver{i}", system)).start_soon(life)
            await anyio.sleep(200.0)
            deleted = [(m.path, t) for t, m in watcher.got if m.type == "Deleted"]
            return [(path, t, order) for path, t in deleted]

    return run(main, clock=VirtualClock())


def test_recorded_heartbeats_expire_sessions_exactly_as_told_ones():
    """MetadataStore.heartbeat records a beat instead of a told Heartbeat: every expiry happens at
    the same instant, in the same order, deaths on a beat's instant included."""
    recorded, told = _expiries(False), _expiries(True)
    assert recorded == told
    assert sorted(path for path, _, _ in recorded) == ["/e0", "/e2", "/e3", "/e4"]


@pytest.mark.asyncio
async def test_a_heartbeating_session_never_expires() -> None:
    async with running() as (system, store):
        broker = system.spawn(Probe("broker-1", system))
        sid = await broker.md.open_session()
        await broker.md.create("/e", b"", ephemeral=True)
        await anyio.sleep(600.0)
        assert store.peek("/e") == b""
        assert store.stats["sessions_expired"] == 0
        assert store.stats["Heartbeat"] == 59  # every session_timeout / 3: at 10, 20, ..., 590 s
        assert (await store.ask(Exists("/e", sid))).ephemeral_owner == sid


@pytest.mark.asyncio
async def test_close_session_deletes_at_once_and_the_session_is_dead_afterwards() -> None:
    async with running() as (system, store):
        watcher = system.spawn(Probe("watcher", system))
        await store.ask(Watch("/", watcher.name))
        sid = await store.ask(OpenSession("b1"))
        other = await store.ask(OpenSession("b2"))
        assert other == sid + 1  # sequential ids
        await store.ask(Create("/e1", b"", True, sid))
        await store.ask(Create("/e2", b"", True, other))
        await settle()  # the watcher has handled the set-up's notifications
        watcher.got.clear()
        await store.ask(CloseSession(sid))
        await settle()
        assert watcher.notes() == [("Deleted", "/e1")]
        assert store.peek("/e2") is not None
        for msg in (Create("/e3", b"", True, sid), Get("/e2", sid), Set("/e2", b"", -1, sid),
                    Delete("/e2", -1, sid), GetChildren("/", sid), Exists("/e2", sid)):
            with pytest.raises(SessionExpired):
                await store.ask(msg)
        store.tell(Heartbeat(sid))  # does not revive it
        await store.ask(CloseSession(sid))  # idempotent
        assert store.stats["sessions_closed"] == 1 and store.stats["sessions_expired"] == 0


@pytest.mark.asyncio
async def test_expire_session_is_an_immediate_expiry_and_tells_an_opted_in_owner() -> None:
    async with running() as (system, store):
        listener = system.spawn(Probe("listener", system))
        silent = system.spawn(Probe("silent", system))
        sid = await store.ask(OpenSession("listener", session_events=True))
        sid2 = await store.ask(OpenSession("silent"))
        await store.ask(Create("/e", b"", True, sid))
        assert await store.ask(ExpireSession(sid)) is True
        assert await store.ask(ExpireSession(sid)) is False
        assert await store.ask(ExpireSession(sid2)) is True
        await settle()
        assert store.peek("/e") is None
        assert [m for _, m in listener.got] == [SessionEvent("SessionLost", sid)]
        assert silent.got == []


@pytest.mark.asyncio
async def test_one_reaper_task_serves_all_sessions() -> None:
    async with running() as (_, store):
        for i in range(50):
            await store.ask(OpenSession(f"b{i}"))
        reapers = [t for t in asyncio.all_tasks() if t.get_name().endswith("session-reaper")]
        assert len(reapers) == 1
        await anyio.sleep(30.0 + 1e-6)
        assert store.tree.live_sessions() == []
        assert store.stats["sessions_expired"] == 50
        assert not store._reaper_running  # it ends when no session is left, restarts on demand
        sid = await store.ask(OpenSession("late"))
        assert store._reaper_running
        await anyio.sleep(30.0 + 1e-6)
        assert sid not in store.tree.live_sessions()


# --------------------------------------------------------------------------- latency


@pytest.mark.asyncio
async def test_latency_delays_the_reply_and_notifications_but_not_the_write() -> None:
    async with running(op_latency=0.25) as (system, store):
        watcher = system.spawn(Probe("watcher", system))
        await store.ask(Watch("/", watcher.name))
        t0 = store.now
        assert t0 == 0.25
        answered: list[float] = []

        async def create() -> None:
            await store.ask(Create("/n", b"v"))
            answered.append(store.now)

        async with anyio.create_task_group() as tg:
            tg.start_soon(create)
            await anyio.sleep(0.1)
            assert store.peek("/n") == b"v"  # applied on arrival
            assert answered == [] and watcher.got == []
        assert answered == [pytest.approx(t0 + 0.25, abs=1e-12)]
        await settle()
        assert [(t, m.type) for t, m in watcher.got] == [(pytest.approx(0.5, abs=1e-12), "Created")]


@pytest.mark.asyncio
async def test_latency_fn_draws_per_op_and_replies_leave_in_order() -> None:
    draws = iter([0.5, 0.1, 0.2])
    async with running(latency_fn=lambda rng: next(draws)) as (_, store):
        done: list[tuple[str, float]] = []

        async def op(path: str) -> None:
            await store.ask(Create(path, b""))
            done.append((path, store.now))

        async with anyio.create_task_group() as tg:
            for path in ("/a", "/b", "/c"):
                tg.start_soon(op, path)
        # /b drew 0.1 but waits behind /a (FIFO pipeline); /c leaves at its own 0.2 < 0.5 too
        assert done == [("/a", 0.5), ("/b", 0.5), ("/c", 0.5)]


@pytest.mark.asyncio
async def test_latency_fn_gets_the_store_rng() -> None:
    seen: list[random.Random] = []

    def fn(rng: random.Random) -> float:
        seen.append(rng)
        return rng.uniform(0.001, 0.002)

    async with running(latency_fn=fn) as (_, store):
        await store.ask(Create("/a", b""))
        assert 0.001 <= store.now <= 0.002
        assert seen == [store.rng]


# --------------------------------------------------------------------------- dump


@pytest.mark.asyncio
async def test_dump_is_a_json_tree_with_decoded_data() -> None:
    async with running() as (_, store):
        sid = await store.ask(OpenSession("broker-1"))
        await store.ask(Create("/loadbalance/leader", b'{"brokerId": "b1:8080"}', True, sid))
        await store.ask(Create("/text", b"plain"))
        await store.ask(Create("/bin", b"\xff\x00"))
        await store.ask(Set("/text", b"plain2"))
        tree = await store.ask(Dump())
        assert list(tree) == ["/bin", "/loadbalance", "/loadbalance/leader", "/text"]
        assert tree["/loadbalance/leader"] == {"data": {"brokerId": "b1:8080"}, "version": 0,
                                               "ephemeral_owner": sid, "owner": "broker-1"}
        assert tree["/text"] == {"data": "plain2", "version": 1, "ephemeral_owner": None,
                                 "owner": None}
        assert tree["/bin"]["data"] == {"base64": "/wA="}
        assert json.loads(store.dump_json()) == tree
        assert store.peek_children("/loadbalance") == ["leader"]
        assert store.peek_children("/none") == []
        assert store.peek_prefix("/loadbalance/") == [("/loadbalance/leader",
                                                      b'{"brokerId": "b1:8080"}')]


def test_peek_prefix_walks_the_subtree_and_finds_what_a_scan_of_every_node_finds():
    """peek_prefix walks only the subtree under the prefix's last whole component: on a random tree
    (names sharing prefixes, "-" sorting before "/") and random prefixes, ending mid-name, at a "/" or
    on a node, it answers what a scan of every node answers, in the same order."""
    from emulator.cluster.metadata_store import MetadataTree

    rng = random.Random(7)
    tree = MetadataTree()
    names = ["a", "ab", "a-b", "b", "ns", "ns-1", "0x0_0x8"]
    for _ in range(300):
        path = "/" + "/".join(rng.choice(names) for _ in range(rng.randint(1, 4)))
        if tree.stat(path) is None:
            tree.create(path, path.encode(), None, 0)
    every = [p for p in tree.dump() if p != "/"]
    prefixes = ["/", "/a", "/a/", "/a-", "/ns/a", "/ns/a/", "/zz/", "/b/ab/a", "/n"]
    prefixes += [p[:rng.randint(1, len(p))] for p in rng.sample(every, 40)]
    for prefix in prefixes:
        scan = sorted(p for p in every if p.startswith(prefix))
        assert tree.peek_prefix(prefix) == [(p, tree.get(p).data) for p in scan], prefix


def test_peek_prefix_follows_every_change_under_its_prefix_and_hands_out_copies():
    """peek_prefix keeps its last answer per prefix until a node it could hold changes: a create,
    set or delete under the prefix (an ephemeral node gone with its session included) shows at once;
    a change elsewhere leaves the answer as it was; a caller changing the list changes no later one."""
    from emulator.cluster.metadata_store import MetadataTree

    tree = MetadataTree()
    tree.create("/namespace/a/0x0_0x8", b"1", None, 0)
    tree.create("/admin/local-policies/a", b"p", None, 0)
    first = tree.peek_prefix("/namespace/")
    assert first == [("/namespace/a", b""), ("/namespace/a/0x0_0x8", b"1")]
    first.clear()
    assert tree.peek_prefix("/namespace/") == [("/namespace/a", b""), ("/namespace/a/0x0_0x8", b"1")]
    tree.set("/admin/local-policies/a", b"q", -1, 1)                      # elsewhere
    assert tree.peek_prefix("/admin/") == [("/admin/local-policies", b""), ("/admin/local-policies/a", b"q")]
    tree.set("/namespace/a/0x0_0x8", b"2", -1, 2)
    assert tree.peek_prefix("/namespace/")[-1] == ("/namespace/a/0x0_0x8", b"2")
    session = tree.open_session("broker-1")
    tree.create("/namespace/a/0x8_0xf", b"3", session, 3)
    assert [p for p, _ in tree.peek_prefix("/namespace/a/")] == ["/namespace/a/0x0_0x8", "/namespace/a/0x8_0xf"]
    assert [p for p, _ in tree.peek_prefix("/name")][-1] == "/namespace/a/0x8_0xf"   # no top-level node named
    tree.end_session(session)
    assert [p for p, _ in tree.peek_prefix("/namespace/a/")] == ["/namespace/a/0x0_0x8"]
    assert [p for p, _ in tree.peek_prefix("/name")] == ["/namespace", "/namespace/a", "/namespace/a/0x0_0x8"]
    tree.delete("/namespace/a/0x0_0x8", -1)
    assert tree.peek_prefix("/namespace/a/") == [] and tree.peek_prefix("/") == [
        ("/admin", b""), ("/admin/local-policies", b""), ("/admin/local-policies/a", b"q"),
        ("/namespace", b""), ("/namespace/a", b"")]


def test_children_as_a_set_are_shared_until_a_child_comes_or_goes() -> None:
    """GetChildren with as_set answers the children as one frozenset for every reader, made again
    when a child is created or deleted (not when one is written), frozenset() for a missing node."""
    from emulator.cluster.metadata_store import MetadataTree

    tree = MetadataTree()
    tree.create("/loadbalance/brokers/b1", b"1", None, 0)
    first = tree.children_set("/loadbalance/brokers")
    assert first == {"b1"} and tree.children_set("/loadbalance/brokers") is first
    tree.set("/loadbalance/brokers/b1", b"2", -1, 1)
    assert tree.children_set("/loadbalance/brokers") is first
    tree.create("/loadbalance/brokers/b2", b"", None, 2)
    assert tree.children_set("/loadbalance/brokers") == {"b1", "b2"} and first == {"b1"}
    tree.delete("/loadbalance/brokers/b1", -1)
    assert tree.children_set("/loadbalance/brokers") == set(tree.children("/loadbalance/brokers")) == {"b2"}
    assert tree.children_set("/none") == frozenset()
