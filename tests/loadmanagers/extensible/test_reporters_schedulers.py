"""The load-data reporters (cadence, thresholds, tombstones) and the Unload/Split schedulers driving
TransferShedder and the split strategy from main, publishing into the channel, on the virtual clock."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

import shedders
from emulator.loadmanagers.extensible.actors.load_data_store import LoadDataStore
from emulator.loadmanagers.extensible.actors.managers import SplitManager, UnloadManager
from emulator.loadmanagers.extensible.actors.periodic import at_fixed_rate
from emulator.loadmanagers.extensible.actors.reporters import (
    BrokerLoadDataReporter,
    BrokerUsage,
    TopBundleLoadDataReporter,
    percent_change,
)
from emulator.loadmanagers.extensible.actors.schedulers import SplitScheduler, UnloadScheduler, channel_ownership
from emulator.loadmanagers.extensible.actors.system_topic import (
    BROKER_LOAD_DATA_STORE_TOPIC,
    TOP_BUNDLES_LOAD_DATA_STORE_TOPIC,
    SystemTopic,
)
from emulator.loadmanagers.extensible.actors.topic_latency import TopicLatencies
from emulator.model.config import ServiceConfig
from emulator.loadmanagers.extensible.model.context import LoadManagerContext
from emulator.loadmanagers.extensible.model.counters import SplitCounter, UnloadCounter
from emulator.loadmanagers.extensible.model.decisions import SplitLabel, SplitReason, UnloadLabel, UnloadReason
from emulator.loadmanagers.extensible.model.load_data import BrokerLoadData, BrokerLookupData, TopBundlesLoadData
from emulator.loadmanagers.extensible.model.split_strategy import DefaultNamespaceBundleSplitStrategy
from emulator.loadmanagers.extensible.model.state import ServiceUnitState, ServiceUnitStateData
from emulator.model.loaddata import NamespaceBundleStats, ResourceUsage
from emulator.runtime import ActorSystem, VirtualClock

from .fakes import FakeCluster

S = ServiceUnitState
NS = "public/default"
QUARTERS = [f"{NS}/0x00000000_0x40000000", f"{NS}/0x40000000_0x80000000",
            f"{NS}/0x80000000_0xc0000000", f"{NS}/0xc0000000_0xffffffff"]


def usage(cpu: float, throughput: float = 0.0, bundles: int = 0) -> BrokerUsage:
    zero = ResourceUsage(0.0, 100.0)
    return BrokerUsage(cpu=ResourceUsage(cpu, 100.0), memory=zero, direct_memory=zero, bandwidth_in=zero,
                       bandwidth_out=zero, msg_throughput_in=throughput, msg_rate_in=throughput / 1000,
                       bundle_count=bundles, topics=bundles)


@asynccontextmanager
async def world(conf: ServiceConfig | None = None) -> AsyncIterator[tuple[FakeCluster, dict[str, Any]]]:
    async with ActorSystem(11, VirtualClock()) as system:
        c = FakeCluster(system, conf or ServiceConfig())
        zero = TopicLatencies.zero()
        broker_topic = system.spawn(SystemTopic(BROKER_LOAD_DATA_STORE_TOPIC, system, latencies=zero))
        top_topic = system.spawn(SystemTopic(TOP_BUNDLES_LOAD_DATA_STORE_TOPIC, system, latencies=zero))
        stores: dict[str, Any] = {}
        for i in range(3):
            broker = f"broker-{i}:8080"
            # the channel owns the broker's load-data handles, so its clean-up can remove a dead one
            channel = await c.add_broker(broker)
            broker_store: LoadDataStore[BrokerLoadData] = LoadDataStore(broker_topic, channel)
            top_store: LoadDataStore[TopBundlesLoadData] = LoadDataStore(top_topic, channel)
            await broker_store.start_table_view()
            await top_store.start_table_view()
            channel.load_data_stores = (broker_store, top_store)
            stores[broker] = (broker_store, top_store)
        c.leader = "broker-0:8080"
        c.channel(c.leader).play_leader()
        yield c, stores
        assert c.violations == []


def test_percent_change_is_javas() -> None:
    assert percent_change(0, 0) == 0
    assert percent_change(0, 5) == float("inf")
    assert percent_change(200, 150) == 25


@pytest.mark.asyncio
async def test_the_broker_reporter_publishes_on_a_change_over_the_threshold_or_after_the_max_interval() -> None:
    async with world() as (c, stores):
        broker = "broker-1:8080"
        channel = c.channel(broker)
        cpu = {"value": 40.0}
        reporter = BrokerLoadDataReporter(broker, stores[broker][0], c.conf, lambda: usage(cpu["value"]),
                                          lambda: channel.now_ms)
        published: list[float] = []

        async def job() -> None:
            if await reporter.report():
                published.append(c.system.now())

        interval = c.conf.load_balancer_report_update_min_interval_millis / 1000
        channel.start_soon(at_fixed_rate, lambda: channel.now, interval, interval, job)
        await anyio.sleep(60)
        assert published == [5.0]  # the first run differs from the default (max usage 1.0)
        cpu["value"] = 45.0  # +5 points of max usage: under the 10 % threshold
        await anyio.sleep(60)
        assert published == [5.0]
        cpu["value"] = 60.0  # +20 points: published by the run at this very instant
        await anyio.sleep(5)
        assert published == [5.0, 120.0]
        await anyio.sleep(15 * 60 + 1)  # nothing changes: the next publish is the max interval's
        assert published == [5.0, 120.0, 1025.0]
        leader_view = stores["broker-0:8080"][0]
        data = leader_view.get(broker)
        # the value sent is the data as it was at send time: reportedAt is still the previous publish's
        assert data is not None and data.reported_at == 120_000 and data.updated_at == 1025_000
        assert c.system.now() * 1000 - data.updated_at < c.conf.load_balancer_broker_load_data_ttl_in_seconds * 1000


@pytest.mark.asyncio
async def test_the_top_bundles_reporter_publishes_fresh_stats_and_tombstones_when_it_takes_a_bundle() -> None:
    async with world() as (c, stores):
        broker = "broker-2:8080"
        channel = c.channel(broker)
        stats = {"at": 0}
        bundle_stats = {b: NamespaceBundleStats(msg_throughput_in=1e6 * (i + 1), topics=3)
                        for i, b in enumerate(QUARTERS)}
        reporter = TopBundleLoadDataReporter(broker, stores[broker][1], c.conf, lambda: (stats["at"], bundle_stats),
                                             lambda: channel.now_ms)
        assert not await reporter.report()  # stats never refreshed
        stats["at"] = 60_000
        assert await reporter.report()
        assert not await reporter.report()
        await anyio.sleep(0.01)
        top = stores["broker-0:8080"][1].get(broker)
        assert [e.bundle_name for e in top.top_bundles_load_data] == QUARTERS  # least loaded first
        owned = ServiceUnitStateData(state=S.OWNED, dst_broker=broker, force=False, timestamp=0, version_id=2)
        reporter.handle_event(QUARTERS[0], owned, None)
        reporter.handle_event(QUARTERS[1], owned, None)  # within 10 s: skipped
        await anyio.sleep(0.01)
        assert reporter.tombstones == 1
        assert stores["broker-0:8080"][1].get(broker) is None


def bundle_stats_of(c: FakeCluster, broker: str) -> dict[str, NamespaceBundleStats]:
    return {b: NamespaceBundleStats(msg_throughput_in=1e6, msg_rate_in=1000, topics=10)
            for b in sorted(c.hosts[broker].serving)}


@pytest.mark.asyncio
async def test_the_leaders_unload_scheduler_transfers_from_an_overloaded_broker_through_the_channel() -> None:
    async with world() as (c, stores):
        hot = "broker-1:8080"
        for bundle in QUARTERS:
            assert await c.channel(hot).publish_assign(bundle, hot) == hot
        cpu = {"broker-0:8080": 10.0, hot: 90.0, "broker-2:8080": 10.0}
        reporters = []
        for broker in c.registry:
            channel = c.channel(broker)
            reporters.append(BrokerLoadDataReporter(
                broker, stores[broker][0], c.conf,
                lambda b=broker: usage(cpu[b], 1e6 * len(c.hosts[b].serving), len(c.hosts[b].serving)),
                lambda ch=channel: ch.now_ms))
            reporters.append(TopBundleLoadDataReporter(
                broker, stores[broker][1], c.conf,
                lambda ch=channel, b=broker: (ch.now_ms // 60_000 * 60_000 + 1, bundle_stats_of(c, b)),
                lambda ch=channel: ch.now_ms))
        for r in reporters:
            interval = c.conf.load_balancer_report_update_min_interval_millis / 1000
            r_channel = c.channel(r.broker_id)
            r_channel.listen(getattr(r, "handle_event", lambda *a: None))
            r_channel.start_soon(at_fixed_rate, lambda ch=r_channel: ch.now, interval, interval,
                                 lambda r=r: r.report())

        leader = c.channel("broker-0:8080")
        broker_store, top_store = stores["broker-0:8080"]

        async def context() -> LoadManagerContext:
            owners, splitting = channel_ownership(leader)
            return LoadManagerContext(
                conf=c.conf, broker_load_data=broker_store.items(), top_bundles_load_data=top_store.items(),
                available_brokers={b: BrokerLookupData(broker_id=b) for b in c.registry},
                owners=owners, splitting=splitting, now_ms=leader.now_ms)

        counter = UnloadCounter()
        shedder = shedders.create_extensible(
            "org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder", random.Random(1))
        shedder.counter = counter  # one UnloadCounter per load manager, shared (TransferShedder.initialize)
        manager = UnloadManager(counter, lambda: leader.now_ms)
        leader.listen(manager.handle_event)
        scheduler = UnloadScheduler(leader, manager, shedder, c.conf, context, counter)
        scheduler.start(leader)
        await anyio.sleep(3 * 60 + 1)
        assert scheduler.runs == 3 and counter.count(UnloadLabel.SKIP, UnloadReason.HIT_COUNT) == 3
        await anyio.sleep(60)  # the 4th run: the hit count passes loadBalancerSheddingConditionHitCountThreshold
        moved = [d.unload for d in scheduler.last_decisions if d.label is UnloadLabel.SUCCESS]
        assert moved and all(u is not None and u.source_broker == hot and u.dest_broker != hot for u in moved)
        assert counter.count(UnloadLabel.SUCCESS, UnloadReason.OVERLOADED) == len(moved)
        assert counter.unload_broker_count == 1
        table = c.table()
        for u in moved:
            assert u is not None
            assert table[u.service_unit].state is S.OWNED and table[u.service_unit].dst_broker == u.dest_broker
            assert u.service_unit in scheduler.recently_unloaded_bundles
            assert u.service_unit in c.hosts[u.dest_broker or ""].serving
        assert hot in scheduler.recently_unloaded_brokers


@pytest.mark.asyncio
async def test_a_brokers_split_scheduler_splits_its_hot_bundle_through_the_channel() -> None:
    async with world() as (c, stores):
        owner = "broker-2:8080"
        parent = f"{NS}/0x00000000_0xffffffff"
        c.bundles[NS] = {parent}
        assert await c.channel(owner).publish_assign(parent, owner) == owner
        channel = c.channel(owner)
        counter = SplitCounter()
        manager = SplitManager(counter, lambda: channel.now_ms)
        channel.listen(manager.handle_event)

        async def context() -> LoadManagerContext:
            owners, splitting = channel_ownership(channel)
            return LoadManagerContext(conf=c.conf, owners=owners, splitting=splitting, now_ms=channel.now_ms)

        def stats() -> dict[str, NamespaceBundleStats]:
            return {b: NamespaceBundleStats(topics=2000) for b in sorted(c.hosts[owner].serving)}

        scheduler = SplitScheduler(channel, manager, DefaultNamespaceBundleSplitStrategy(counter), c.conf, context,
                                   stats, lambda: {NS: len(c.bundles[NS])})
        scheduler.start(channel)
        await anyio.sleep(3 * 60 + 1)
        assert scheduler.runs == 3 and c.hosts[owner].splits == []
        await anyio.sleep(60)  # hot in more than 3 consecutive checks
        assert [p for _, p in c.hosts[owner].splits] == [parent]
        assert counter.count(SplitLabel.SUCCESS, SplitReason.TOPICS) == 1
        children = {f"{NS}/0x00000000_0x7fffffff", f"{NS}/0x7fffffff_0xffffffff"}
        assert c.bundles[NS] == children
        assert {b for b, d in c.table().items() if d.state is S.OWNED and d.dst_broker == owner} == children
