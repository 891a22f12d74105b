"""SimpleLoadManagerImpl behind the LoadManager seam: its reports, ranking, placement by strategy, the
leader's quota writes and shedding, the live switch Simple -> Modular -> Simple, and the monitor's table.
The invariant checker runs throughout (one owner per bundle, coverage, every lookup ends)."""

from __future__ import annotations

import json

import msgspec
import pytest

from emulator.cluster import load_manager as lm
from emulator.cluster.events import Assignment, LoadManagerChanged
from emulator.cluster.messages import HandleKind
from emulator.loadmanagers.simple.actors.simple_load_manager import SimpleLoadManagerImpl
from emulator.model.config import ServiceConfig
from emulator.model.loaddata import LocalBrokerData, ResourceUsage
from emulator.loadmanagers.simple.model import LoadReport, ResourceQuota, SystemResourceUsage
from emulator.observe import monitor as monitor_module
from emulator.observe.http import AdminViews
from emulator.observe.monitor import broker_rows, format_broker_table, load_report_table
from emulator.runtime.clock import DEFAULT_START_EPOCH_MS
from emulator.testing import emulated_cluster

NS = "public/default"


def topics(n: int, prefix: str = "t") -> list[str]:
    return [f"persistent://{NS}/{prefix}-{i}" for i in range(n)]


def simple_conf(**kw) -> ServiceConfig:
    return ServiceConfig(load_manager_class_name=lm.SIMPLE, **kw)


def stored_reports(cluster) -> dict[str, bytes]:
    return {b: cluster.store.peek(f"/loadbalance/brokers/{b}")
            for b in cluster.store.peek_children("/loadbalance/brokers")}


def admin_report(cluster, broker: str) -> dict:
    status, _, body = AdminViews(cluster, None).handle(f"/admin/v2/broker-stats/load-report/{broker}")
    assert status == 200
    return json.loads(body)


@pytest.mark.asyncio
async def test_every_broker_writes_a_load_report_and_ranks_every_broker():
    assignments: list[Assignment] = []
    async with emulated_cluster(3, seed=11, conf=simple_conf(), namespaces={NS: 8}) as cluster:
        cluster.events.subscribe(lambda e: assignments.append(e) if isinstance(e, Assignment) else None)
        client = cluster.add_client()
        client.create_handles(topics(120), HandleKind.PRODUCER)
        await cluster.wait_until(lambda: client.connected_count() == 120, timeout=120)
        assert len(cluster.ownership()) == 8
        # the bundles join the reports with a later write (bundle count changed)
        await cluster.wait_until(lambda: sum(json.loads(d)["numBundles"] for d in stored_reports(cluster).values())
                                 == 8, timeout=180)
        for broker, data in stored_reports(cluster).items():
            report = json.loads(data)
            assert report["loadReportType"] == "LoadReport" and report["name"] == broker
            assert report["loadManagerClassName"] == lm.SIMPLE
            assert "allocatedCPU" in report and "cpu" in report["systemResourceUsage"]
            # System.currentTimeMillis(): epoch ms of the run's stated start (2024-01-01 by default)
            start = DEFAULT_START_EPOCH_MS
            assert start <= report["timestamp"] <= start + cluster.system.clock.now_ms()
            assert report["lastUpdate"] == report["timestamp"]
        for b in cluster.brokers.values():
            m = b.load_manager
            assert isinstance(m, SimpleLoadManagerImpl)
            assert sorted(m.placement.rankings) == sorted(cluster.brokers)   # updateRanking on watch
            assert m.load_balancing_metrics()["load_rank"] >= 0
        # leastLoadedServer is centralized: the leader decided every assignment
        assert assignments and not any(e.local for e in assignments)


@pytest.mark.asyncio
@pytest.mark.parametrize("strategy, centralized", [("leastLoadedServer", True),
                                                   ("weightedRandomSelection", False)])
async def test_placement_spreads_bundles_with_each_strategy(strategy: str, centralized: bool):
    conf = simple_conf(load_balancer_placement_strategy=strategy)
    assignments: list[Assignment] = []
    async with emulated_cluster(4, seed=12, conf=conf, namespaces={NS: 16}) as cluster:
        cluster.events.subscribe(lambda e: assignments.append(e) if isinstance(e, Assignment) else None)
        client = cluster.add_client()
        client.create_handles(topics(200), HandleKind.PRODUCER)
        await cluster.wait_until(lambda: client.connected_count() == 200, timeout=180)
        owners = cluster.ownership()
        assert len(owners) == 16
        assert len(set(owners.values())) >= 3
        assert all(b.load_manager.is_centralized() is centralized for b in cluster.brokers.values())
        assert assignments and all(e.local is not centralized for e in assignments)
        if centralized:
            assert {e.leader for e in assignments} == {cluster.leader()}


@pytest.mark.asyncio
async def test_the_leader_writes_load_factors_and_quotas():
    async with emulated_cluster(3, seed=13, conf=simple_conf(), namespaces={NS: 4}) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(40), HandleKind.PRODUCER)
        await cluster.wait_until(lambda: client.connected_count() == 40, timeout=120)
        follower = next(b for b in cluster.brokers.values() if not b.is_leader)
        await follower.load_manager.write_resource_quotas()      # only the leader writes
        assert cluster.store.peek("/loadbalance/settings/load_factor_cpu") is None
        leader = cluster.brokers[cluster.leader()]
        await leader.load_manager.write_resource_quotas()
        cpu = json.loads(cluster.store.peek("/loadbalance/settings/load_factor_cpu"))
        assert float(cpu["loadFactorCPU"]) > 0
        for bundle, quota in leader.load_manager.store.bundles.items():
            stored = cluster.store.peek(f"/loadbalance/resource-quota/{bundle}")
            assert msgspec.json.decode(stored, type=ResourceQuota) == quota


@pytest.mark.asyncio
async def test_shedding_unloads_from_an_overloaded_broker_through_the_owner():
    async with emulated_cluster(3, seed=14, conf=simple_conf(), namespaces={NS: 8}) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(80), HandleKind.PRODUCER)
        await cluster.wait_until(lambda: client.connected_count() == 80, timeout=120)
        leader = cluster.brokers[cluster.leader()]
        m = leader.load_manager
        await cluster.wait_until(lambda: sum(len(r.bundle_stats) for r in m.reports.values()) == 8, timeout=180)
        owners = cluster.ownership()
        busiest = max(cluster.brokers, key=lambda b: sum(1 for o in owners.values() if o == b))
        report = m.reports[busiest]
        assert len(report.bundle_stats) >= 2
        hot = SystemResourceUsage(cpu=ResourceUsage(usage=95.0, limit=100.0),
                                  memory=ResourceUsage(usage=1.0, limit=100.0),
                                  direct_memory=ResourceUsage(usage=1.0, limit=100.0),
                                  bandwidth_in=ResourceUsage(usage=1.0, limit=100.0),
                                  bandwidth_out=ResourceUsage(usage=1.0, limit=100.0))
        m.reports[busiest] = msgspec.structs.replace(report, system_resource_usage=hot)
        done = await m.do_load_shedding()
        assert len(done) == 1 and done[0][0] == busiest and owners[done[0][1]] == busiest
        await cluster.wait_until(lambda: client.connected_count() == 80, timeout=120)
        # the grace period keeps the same bundle from being shed again at once
        assert await m.do_load_shedding() == []


@pytest.mark.asyncio
async def test_live_switch_simple_modular_simple_keeps_the_invariants_and_changes_the_report():
    changes: list[LoadManagerChanged] = []
    async with emulated_cluster(3, seed=15, conf=simple_conf(), namespaces={NS: 8}) as cluster:
        cluster.events.subscribe(lambda e: changes.append(e) if isinstance(e, LoadManagerChanged) else None)
        client = cluster.add_client()
        client.create_handles(topics(100), HandleKind.PRODUCER)
        await cluster.wait_until(lambda: client.connected_count() == 100, timeout=120)
        broker = "broker-2:8080"
        assert admin_report(cluster, broker)["loadReportType"] == "LoadReport"
        owners = cluster.ownership()

        for target in (lm.MODULAR, lm.SIMPLE):
            cluster.set_config("loadManagerClassName", target)
            await cluster.wait_until(lambda target=target: all(b.load_manager.class_name == target
                                                 for b in cluster.brokers.values()), timeout=60)
            await cluster.wait_until(lambda: len(stored_reports(cluster)) == 3, timeout=10)
            shown = admin_report(cluster, broker)
            stored = {b: json.loads(d) for b, d in stored_reports(cluster).items()}
            if target == lm.MODULAR:
                # Modular's LocalBrokerData: its own loadReportType, and the bundle stats
                assert shown["loadReportType"] == "LocalBrokerData" and "lastStats" in shown
                assert all("allocatedCPU" not in r for r in stored.values())
            else:
                assert shown["loadReportType"] == "LoadReport" and "allocatedCPU" in shown
                assert all(r["loadReportType"] == "LoadReport" for r in stored.values())
            assert cluster.ownership() == owners and client.connected_count() == 100
        # a new namespace is placed by Simple again
        more = cluster.add_client()
        await cluster.create_namespace("public/other", 4)
        more.create_handles([f"persistent://public/other/x-{i}" for i in range(20)], HandleKind.PRODUCER)
        await cluster.wait_until(lambda: more.connected_count() == 20, timeout=120)
    assert len(changes) == 6


@pytest.mark.asyncio
async def test_monitor_prints_the_simple_table_of_simple_reports():
    async with emulated_cluster(2, seed=16, conf=simple_conf(), namespaces={NS: 4}) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(20), HandleKind.PRODUCER)
        await cluster.wait_until(lambda: client.connected_count() == 20, timeout=120)
        rows = broker_rows(cluster)
        assert [r.report is not None for r in rows] == [True, True]
        text = format_broker_table(rows)
        assert text.count("Load Report for ") == 2 and "Broker Data for " not in text
        for label in ("COUNT", "RAW SYSTEM", "ALLOC SYSTEM", "RAW MSG", "ALLOC MSG"):
            assert text.count(f"||{label} ") == 2
        assert "Overall Broker Data:" in text


def test_simple_table_cells_follow_broker_monitor():
    usage = SystemResourceUsage(cpu=ResourceUsage(usage=50.0, limit=200.0),
                                memory=ResourceUsage(usage=100.0, limit=1000.0),
                                direct_memory=ResourceUsage(usage=10.0, limit=100.0),
                                bandwidth_in=ResourceUsage(usage=2048.0, limit=10000.0),
                                bandwidth_out=ResourceUsage(usage=4096.0, limit=10000.0))
    report = LoadReport(system_resource_usage=usage, allocated_cpu=300.0, allocated_memory=250.0,
                        allocated_bandwidth_in=1024.0, allocated_bandwidth_out=2048.0,
                        allocated_msg_rate_in=40.0, allocated_msg_rate_out=120.0,
                        bundle_gains={"a/b/0x0_0x1"}).with_derived()
    lines = load_report_table("b:8080", report).splitlines()
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:-1]]
    assert cells[0][0] == "COUNT" and cells[1][1:] == ["0", "0", "0", "0", "1", "0"]
    assert cells[2][0] == "RAW SYSTEM" and cells[3][1:] == ["25.00", "10.00", "10.00", "20.48", "40.96", "40.96"]
    # allocated CPU 300 of 200 is capped at 100 %; no direct-memory cell
    assert cells[4][0] == "ALLOC SYSTEM" and cells[5][1:] == ["100.00", "25.00", "", "10.24", "20.48", "100.00"]
    assert cells[6][0] == "RAW MSG" and cells[7][4:] == ["2.00", "4.00", "6.00"]
    assert cells[8][0] == "ALLOC MSG" and cells[9][1:] == ["40.00", "120.00", "160.00", "1.00", "2.00", "3.00"]


def test_watch_prints_the_tables_again_every_interval(monkeypatch):
    printed: list[str] = []
    pauses: list[float] = []
    monkeypatch.setattr(monitor_module, "monitor", lambda url, timeout=10.0, extensions=False:
                        f"{'extensions' if extensions else 'table'} {len(printed)}")
    n = monitor_module.watch("http://127.0.0.1:1", 5.0, count=3, write=printed.append, sleep=pauses.append)
    assert n == 3 and printed == ["table 0\n", "table 1\n", "table 2\n"] and pauses == [5.0, 5.0]
    monitor_module.watch("http://127.0.0.1:1", 5.0, count=1, write=printed.append, extensions=True)
    assert printed[-1] == "extensions 3\n"


def test_a_modular_report_is_not_read_as_a_load_report():
    data = msgspec.json.encode(LocalBrokerData(num_bundles=3))
    assert b"allocated" not in data
