"""Issue 12: an actor crash is loud (an emulator bug); a user's strategy or shedder fault is Pulsar's."""

from __future__ import annotations

import gzip
import json

import anyio
import pytest
from structlog.testing import capture_logs

from emulator.cluster.cluster import ClusterSettings
from emulator.model.config import ServiceConfig
from emulator.observe.attach import observe
from emulator.observe.summary import format_summary, summarize
from emulator.testing import ActorFailed, emulated_cluster
from strategies.least_long_term_message_rate import LeastLongTermMessageRate

NS = "public/default"
FAULTY = "tests.cluster.faulty_strategies"


def topics(n: int) -> list[str]:
    return [f"persistent://{NS}/t-{i}" for i in range(n)]


async def _boom() -> None:
    raise RuntimeError("injected emulator bug")


# --------------------------------------------------------------------------- emulator faults


@pytest.mark.asyncio
async def test_an_actor_crash_fails_the_test_block_and_is_logged_once_with_its_traceback():
    with capture_logs() as logs:
        with pytest.raises(ActorFailed, match=r"broker-2:8080 at t=.*RuntimeError\('injected emulator bug'\)"):
            async with emulated_cluster(3, seed=1) as cluster:
                cluster.brokers["broker-2:8080"].start_soon(_boom)
                await anyio.sleep(1.0)
                assert not cluster.brokers["broker-2:8080"].alive
    crashed = [e for e in logs if e["event"] == "actor crashed"]
    assert len(crashed) == 1 and isinstance(crashed[0]["exc_info"], RuntimeError)


@pytest.mark.asyncio
async def test_an_actor_crash_is_counted_summarized_first_and_recorded(tmp_path):
    async with emulated_cluster(3, seed=2, strict=False) as cluster:
        async with observe(cluster, record_dir=tmp_path / "run", record_interval=5.0) as obs:
            await anyio.sleep(2.0)
            assert obs.metrics.value("pulsar_lb_emulator_actor_failures_total") == 0
            cluster.brokers["broker-3:8080"].start_soon(_boom)
            await anyio.sleep(2.0)
            assert obs.metrics.value("pulsar_lb_emulator_actor_failures_total") == 1
            text = format_summary(summarize(cluster))
        first, second = text.splitlines()[:2]
        assert first.startswith("EMULATOR BUG: 1 actor failure(s)")
        assert "broker-3:8080" in second and "injected emulator bug" in second
    events = [json.loads(line) for line in
              gzip.decompress((tmp_path / "run" / "events.jsonl.gz").read_bytes()).decode().splitlines()]
    failed = [e for e in events if e["kind"] == "actor_failed"]
    assert [e["actor"] for e in failed] == ["broker-3:8080"] and failed[0]["t"] == pytest.approx(2.0)
    assert json.loads((tmp_path / "run" / "run.json").read_text())["actor_failures"] == 1


@pytest.mark.asyncio
async def test_a_broker_that_raises_drops_its_clients_like_a_dead_process():
    async with emulated_cluster(3, seed=3, namespaces={NS: 8}, strict=False) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(60))
        await cluster.wait_until(lambda: client.connected_count() == 60, timeout=60)
        victim = "broker-2:8080"
        on_victim = sum(1 for h in client.handles.values() if h.broker_id == victim)
        assert on_victim > 0
        cluster.brokers[victim].start_soon(_boom)
        await anyio.sleep(0.5)
        # its connections dropped: those handles are down (reconnecting), not counted as connected
        assert client.connected_count() == 60 - on_victim
        assert not cluster.network.is_listening(victim)
        assert cluster.system.failures and cluster.system.failures[0].actor == victim


@pytest.mark.asyncio
async def test_a_builtin_strategy_that_raises_is_an_emulator_bug_not_a_user_fault(monkeypatch):
    def broken(self, *args, **kwargs):
        raise KeyError("built-in bug")

    # the leader asks a built-in for its scores too, through select_broker_explained
    monkeypatch.setattr(LeastLongTermMessageRate, "select_broker_explained", broken)
    with pytest.raises(ActorFailed, match="built-in bug"):
        async with emulated_cluster(3, seed=3) as cluster:
            client = cluster.add_client()
            client.create_handles(topics(5))
            await anyio.sleep(5.0)
    assert cluster.events.counts["placement_failed"] == 0


def test_the_cli_exits_3_on_an_actor_failure_with_the_failure_on_top_of_the_summary(monkeypatch, capsys):
    from emulator.cli import main
    from emulator.loadmanagers.modular.actors.leader import LoadManagerLeader

    def broken(self):
        raise RuntimeError("leader bug")

    monkeypatch.setattr(LoadManagerLeader, "_update_all", broken)
    assert main(["run", "idle-new-broker", "--duration", "30s", "--quiet"]) == 3
    out, err = capsys.readouterr()
    assert out.startswith("EMULATOR BUG: ")
    assert "leader bug" in out.splitlines()[1]
    assert "actor failure" in err and "Traceback" in err


def test_a_clean_run_exits_0(capsys):
    from emulator.cli import main

    assert main(["run", "idle-new-broker", "--duration", "30s", "--quiet"]) == 0
    assert not capsys.readouterr().out.startswith("EMULATOR BUG")


# --------------------------------------------------------------------------- user faults


@pytest.mark.asyncio
async def test_a_placement_that_raises_fails_those_lookups_and_the_clients_retry():
    settings = ClusterSettings(placement=f"{FAULTY}:FlakyPlacement")
    with capture_logs() as logs:
        async with emulated_cluster(3, seed=4, settings=settings) as cluster:
            client = cluster.add_client()
            client.create_handles(topics(40))
            await cluster.wait_until(lambda: client.connected_count() == 40, timeout=120)
            assert cluster.events.counts["placement_failed"] == 3
            assert client.stats.lookups_failed >= 1
            assert all(b.alive for b in cluster.brokers.values())
            summary = summarize(cluster)
            assert summary.placement_failures == 3
            assert "user code raised   placement 3 times" in format_summary(summary)
        assert cluster.system.failures == []
    warned = [e for e in logs if e["event"].startswith("placement strategy raised")]
    assert len(warned) == 1     # logged once per distinct error, counted every time
    assert warned[0]["strategy"] == f"{FAULTY}:FlakyPlacement"
    assert isinstance(warned[0]["exc_info"], RuntimeError)


@pytest.mark.asyncio
async def test_a_shedder_that_raises_skips_each_cycle_and_the_run_goes_on():
    conf = ServiceConfig().with_overrides({"loadBalancerSheddingIntervalMinutes": "1"}, source="test")
    settings = ClusterSettings(shedder=f"{FAULTY}:RaisingShedder")
    with capture_logs() as logs:
        async with emulated_cluster(3, seed=5, conf=conf, settings=settings) as cluster:
            from emulator.observe.metrics import ClusterMetrics

            metrics = ClusterMetrics(cluster)
            client = cluster.add_client()
            client.create_handles(topics(10))
            await anyio.sleep(5 * 60 + 1)
            cycles = cluster.events.counts["shedding_failed"]
            assert cycles >= 4
            assert metrics.value("pulsar_lb_emulator_shedding_failures_total") == cycles
            leader = cluster.brokers[cluster.leader()].leader_actor
            assert leader is not None and leader.alive
            assert client.connected_count() == 10
            assert summarize(cluster).shedding_failures == cycles
        assert cluster.system.failures == []
    warned = [e for e in logs if e["event"].startswith("shedding strategy raised")]
    assert len(warned) == 1 and "shedding cycle skipped" in warned[0]["event"]
    assert isinstance(warned[0]["exc_info"], ZeroDivisionError)


@pytest.mark.asyncio
async def test_a_follower_deciding_locally_reports_the_fault_and_fails_that_decision():
    from emulator.cluster.user_faults import UserCodeError

    conf = ServiceConfig().with_overrides(
        {"loadBalancerLoadPlacementStrategy": f"{FAULTY}:FlakyPlacement"}, source="test")
    async with emulated_cluster(3, seed=6, conf=conf, namespaces={NS: 1}) as cluster:
        follower = next(b for b in cluster.brokers.values() if not b.is_leader)
        bundle = f"{NS}/0x00000000_0xffffffff"
        with pytest.raises(UserCodeError, match="flaky placement"):
            await follower.load_manager._select_locally(bundle, False)
        assert cluster.events.counts["placement_failed"] == 1
        assert follower.alive
