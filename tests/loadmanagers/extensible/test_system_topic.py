"""System topics: the compacted log, table views in log order after their delivery delay, compaction
with the channel's conflict resolver, tombstones, non-persistent topics, latency draws."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from emulator.loadmanagers.extensible.actors.system_topic import BROKER_LOAD_DATA_STORE_TOPIC, SystemTopic
from emulator.loadmanagers.extensible.actors.table_view import TableView
from emulator.loadmanagers.extensible.actors.topic_latency import TopicLatencies
from emulator.cluster.latency import Constant
from emulator.loadmanagers.extensible.model.channel_rules import SERVICE_UNIT_STATE_TOPIC
from emulator.loadmanagers.extensible.model.state import ServiceUnitState, ServiceUnitStateData, should_keep_left
from emulator.runtime import Actor, ActorSystem, VirtualClock

S = ServiceUnitState
BUNDLE = "public/default/0x00000000_0x40000000"


def record(state: ServiceUnitState, version: int, dst: str | None = None,
           src: str | None = None) -> ServiceUnitStateData:
    return ServiceUnitStateData(state=state, dst_broker=dst, source_broker=src, force=False, timestamp=0,
                                version_id=version)


class Reader(Actor):
    """A broker-side actor that owns views (it has no messages)."""


def channel_topic(system: ActorSystem, latencies: TopicLatencies | None = None, **options: Any) -> SystemTopic:
    return system.spawn(SystemTopic(SERVICE_UNIT_STATE_TOPIC, system, strategy=should_keep_left,
                                    latencies=latencies or TopicLatencies.zero(), **options))


@pytest.mark.asyncio
async def test_a_losing_write_is_skipped_by_the_view_and_dropped_by_compaction() -> None:
    async with ActorSystem(1, VirtualClock()) as system:
        topic = channel_topic(system)
        reader = system.spawn(Reader("b1", system))
        view: TableView[ServiceUnitStateData] = TableView(topic, reader, strategy=should_keep_left)
        applied: list[Any] = []
        skipped: list[Any] = []
        view.listen(lambda k, v: applied.append(v.state))
        view.listen_skipped(lambda k, v: skipped.append(v))
        await view.start()
        await topic.publish(reader, BUNDLE, record(S.ASSIGNING, 1, dst="b1"))
        await topic.publish(reader, BUNDLE, record(S.OWNED, 2, dst="b1"))
        loser = record(S.OWNED, 2, dst="b2")  # same version: shouldKeepLeft keeps the held value
        await topic.publish(reader, BUNDLE, loser)
        await view.refresh(1.0)
        assert applied == [S.ASSIGNING, S.OWNED]
        assert skipped == [loser]
        assert view.get(BUNDLE) == record(S.OWNED, 2, dst="b1")

        assert topic.compact() == 1
        assert topic.dropped_by_compaction == 1
        assert topic.compacted == {BUNDLE: record(S.OWNED, 2, dst="b1")}
        assert topic.tail == []
        late: TableView[ServiceUnitStateData] = TableView(topic, reader, strategy=should_keep_left)
        existing: list[tuple[str, Any]] = []
        await late.start(existing=lambda k, v: existing.append((k, v.dst_broker)))
        assert existing == [(BUNDLE, "b1")]


@pytest.mark.asyncio
async def test_a_tombstone_removes_the_key_from_views_and_from_the_compacted_log() -> None:
    async with ActorSystem(1, VirtualClock()) as system:
        topic = channel_topic(system)
        reader = system.spawn(Reader("b1", system))
        view: TableView[ServiceUnitStateData] = TableView(topic, reader, strategy=should_keep_left)
        await view.start()
        await topic.publish(reader, BUNDLE, record(S.FREE, 7, src="b1"))
        await topic.publish(reader, BUNDLE, None)
        await view.refresh(1.0)
        assert view.get(BUNDLE) is None
        topic.compact()
        assert topic.compacted == {}


@pytest.mark.asyncio
async def test_compaction_runs_when_the_tail_passes_the_threshold() -> None:
    async with ActorSystem(1, VirtualClock()) as system:
        topic = channel_topic(system, compaction_threshold_bytes=300)
        reader = system.spawn(Reader("b1", system))
        for version in range(1, 6):
            await topic.publish(reader, f"public/default/0x0000000{version}_0x40000000",
                                record(S.OWNED, version, dst="b1"))
        assert topic.compactions >= 1
        assert topic.tail and len(topic.tail) < 5
        assert len(topic.compacted) + len(topic.tail) == 5


@pytest.mark.asyncio
async def test_each_view_applies_in_log_order_after_its_own_delivery_delay() -> None:
    latencies = TopicLatencies()  # the documented defaults: lognormal, so readers see entries at different times
    async with ActorSystem(3, VirtualClock()) as system:
        topic = channel_topic(system, latencies)
        readers = [system.spawn(Reader(f"b{i}", system)) for i in range(3)]
        seen: dict[str, list[tuple[float, int]]] = {r.name: [] for r in readers}
        for r in readers:
            view: TableView[ServiceUnitStateData] = TableView(topic, r)  # no strategy: every entry applies
            view.listen(lambda k, v, name=r.name: seen[name].append((system.now(), v.version_id)))
            await view.start()
        producer = readers[0]
        acks = [topic.publish(producer, BUNDLE, record(S.OWNED if v % 2 else S.RELEASING, v,
                                                       dst="b1" if v % 2 else "b2", src=None if v % 2 else "b1"))
                for v in range(1, 6)]
        offsets = [await a for a in acks]
        assert offsets == sorted(offsets)
        await anyio.sleep(1.0)
        for name, got in seen.items():
            times = [t for t, _ in got]
            assert times == sorted(times), name
            assert [v for _, v in got] == [1, 2, 3, 4, 5]
            assert all(t > 0 for t in times)
        arrival = {name: got[0][0] for name, got in seen.items()}
        assert len(set(arrival.values())) > 1  # each reader has its own delay


@pytest.mark.asyncio
async def test_a_non_persistent_topic_keeps_nothing_for_a_late_reader() -> None:
    async with ActorSystem(1, VirtualClock()) as system:
        topic = system.spawn(SystemTopic(BROKER_LOAD_DATA_STORE_TOPIC, system, latencies=TopicLatencies.zero()))
        assert not topic.persistent
        reader = system.spawn(Reader("b1", system))
        early: TableView[dict[str, int]] = TableView(topic, reader)
        await early.start()
        await topic.publish(reader, "b1:8080", {"x": 1})
        await early.refresh(1.0)
        late: TableView[dict[str, int]] = TableView(topic, reader)
        await late.start()
        assert early.get("b1:8080") == {"x": 1}
        assert late.get("b1:8080") is None
        await topic.publish(reader, "b1:8080", {"x": 2})
        await late.refresh(1.0)
        assert late.get("b1:8080") == {"x": 2}


@pytest.mark.asyncio
async def test_publish_latency_is_drawn_from_the_named_distribution() -> None:
    latencies = TopicLatencies(persistent_publish=Constant(0.004), non_persistent_publish=Constant(0.001),
                               delivery=Constant(0.002))
    async with ActorSystem(1, VirtualClock()) as system:
        topic = channel_topic(system, latencies)
        reader = system.spawn(Reader("b1", system))
        view: TableView[ServiceUnitStateData] = TableView(topic, reader, strategy=should_keep_left)
        await view.start()
        t0 = system.now()
        applied: list[float] = []
        view.listen(lambda k, v: applied.append(system.now()))
        await topic.publish(reader, BUNDLE, record(S.OWNED, 1, dst="b1"))
        assert system.now() - t0 == pytest.approx(0.004)
        await anyio.sleep(0.01)
        assert applied == [pytest.approx(t0 + 0.006)]


@pytest.mark.asyncio
async def test_a_dead_readers_view_stops_applying() -> None:
    async with ActorSystem(1, VirtualClock()) as system:
        topic = channel_topic(system, TopicLatencies(delivery=Constant(0.01)))
        reader = system.spawn(Reader("b1", system))
        producer = system.spawn(Reader("b2", system))
        view: TableView[ServiceUnitStateData] = TableView(topic, reader, strategy=should_keep_left)
        await view.start()
        topic.publish(producer, BUNDLE, record(S.OWNED, 1, dst="b1"))
        await anyio.sleep(0.005)
        reader.kill()
        await anyio.sleep(0.1)
        assert view.get(BUNDLE) is None


def _named(data: ServiceUnitStateData) -> tuple[str | None, str | None]:
    return data.dst_broker, data.source_broker


@pytest.mark.asyncio
async def test_a_tagged_view_is_handed_only_what_names_it_or_what_it_watches_and_reads_the_shared_copy() -> None:
    async with ActorSystem(1, VirtualClock()) as system:
        topic = channel_topic(system, TopicLatencies(delivery=Constant(0.002)))
        actors = {n: system.spawn(Reader(n, system)) for n in ("b1", "b2", "b3")}
        views: dict[str, TableView[ServiceUnitStateData]] = {}
        heard: dict[str, list[tuple[str, int]]] = {n: [] for n in actors}
        for name, actor in actors.items():
            view: TableView[ServiceUnitStateData] = TableView(topic, actor, strategy=should_keep_left,
                                                               tag=name, names=_named)
            view.listen(lambda k, v, name=name: heard[name].append((k, v.version_id)))
            await view.start()
            views[name] = view
        other = "public/default/0x40000000_0x80000000"
        views["b3"].watch(other)
        await topic.publish(actors["b1"], BUNDLE, record(S.ASSIGNING, 1, dst="b2", src="b1"))
        await topic.publish(actors["b1"], other, record(S.OWNED, 1, dst="b1"))
        await anyio.sleep(0.01)
        assert heard == {"b1": [(BUNDLE, 1), (other, 1)], "b2": [(BUNDLE, 1)], "b3": [(other, 1)]}
        for view in views.values():   # every view reads every value, handed or not
            assert view.get(BUNDLE) == record(S.ASSIGNING, 1, dst="b2", src="b1")
            assert dict(view.data) == topic.resolved
        views["b3"].unwatch(other)
        await topic.publish(actors["b1"], other, record(S.RELEASING, 2, dst="b2", src="b1"))
        await anyio.sleep(0.01)
        assert heard["b3"] == [(other, 1)]
        assert views["b3"].get(other) == record(S.RELEASING, 2, dst="b2", src="b1")


@pytest.mark.asyncio
async def test_a_tagged_view_reads_its_own_value_of_a_key_until_it_applies_the_entry_handed_to_it() -> None:
    async with ActorSystem(1, VirtualClock()) as system:
        topic = channel_topic(system, TopicLatencies(delivery=Constant(0.002)))
        fast, slow = system.spawn(Reader("b1", system)), system.spawn(Reader("b2", system))
        view1: TableView[ServiceUnitStateData] = TableView(topic, fast, strategy=should_keep_left, tag="b1",
                                                            names=_named)
        view2: TableView[ServiceUnitStateData] = TableView(topic, slow, strategy=should_keep_left, tag="b2",
                                                            names=_named)
        await view1.start()
        await view2.start()
        t0 = system.now()
        await topic.publish(fast, BUNDLE, record(S.ASSIGNING, 1, dst="b2"))
        view2.deliver = lambda entry, delay, d=view2.deliver: d(entry, 0.02)  # type: ignore[method-assign]
        await topic.publish(fast, BUNDLE, record(S.OWNED, 2, dst="b2"))
        t1 = system.now()
        await anyio.sleep(0.005)    # the shared copy has it; the view it names has not applied it yet
        assert view1.get(BUNDLE) == record(S.OWNED, 2, dst="b2")
        assert view2.get(BUNDLE) == record(S.ASSIGNING, 1, dst="b2")
        assert dict(view2.data) == {BUNDLE: record(S.ASSIGNING, 1, dst="b2")}
        await anyio.sleep(t1 + 0.021 - system.now())
        assert view2.get(BUNDLE) == record(S.OWNED, 2, dst="b2")
        assert not view2._private and t1 > t0    # back on the shared copy


@pytest.mark.asyncio
async def test_a_key_watched_while_its_entry_is_on_the_way_is_handed_over_when_the_shared_copy_applies_it() -> None:
    async with ActorSystem(1, VirtualClock()) as system:
        topic = channel_topic(system, TopicLatencies(delivery=Constant(0.01)))
        actor = system.spawn(Reader("b3", system))
        view: TableView[ServiceUnitStateData] = TableView(topic, actor, strategy=should_keep_left, tag="b3",
                                                           names=_named)
        heard: list[tuple[float, int]] = []
        view.listen(lambda k, v: heard.append((system.now(), v.version_id)))
        await view.start()
        await topic.publish(actor, BUNDLE, record(S.OWNED, 1, dst="b1"))
        t = system.now()
        view.watch(BUNDLE)
        assert view.get(BUNDLE) is None
        await anyio.sleep(0.02)
        assert heard == [(pytest.approx(t + 0.01), 1)]
        assert view.get(BUNDLE) == record(S.OWNED, 1, dst="b1")
        assert await view.refresh(1.0)
