"""Snapshots: export a cluster through Pulsar's admin paths, turn the folder into a scenario, run it.

The source cluster is an emulated one served on loopback by the emulator's own HTTP server, on the
virtual clock (the export runs in a thread with the clock frozen, so every file is of one instant).
"""

from __future__ import annotations

import json
import tomllib
import urllib.request
from pathlib import Path
from typing import Any

import msgspec
import pytest

from emulator.cli import main
from emulator.cluster.events import InitialState
from emulator.model.dynamic_config import runtime_configuration
from emulator.model.loaddata import LocalBrokerData
from emulator.model.service_config import ServiceConfig
from emulator.observe.attach import observe
from emulator.observe.topics_http import PULSAR_VERSION
from emulator.runtime import run_external
from emulator.snapshot.export import export
from emulator.snapshot.to_scenario import read_snapshot, scenario_dict, to_toml
from emulator.workload import loader
from tests.workload.harness import observed

SOURCE_SETTINGS = {"loadBalancerLoadSheddingStrategy": "org.apache.pulsar.broker.loadbalance.impl.OverloadShedder",
                   "loadBalancerBrokerOverloadedThresholdPercentage": 90, "loadBalancerNamespaceBundleMaxTopics": 500,
                   "defaultNamespaceBundleSplitAlgorithm": "topic_count_equally_divide"}
MODULAR = "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"
SAMPLE = Path(__file__).resolve().parents[2] / "emulator" / "snapshot" / "sample"

SOURCE = """
[scenario]
name = "source"
description = "the cluster a snapshot is taken of"
duration = "1h"
seed = 5
[cluster]
brokers = 3
[settings]
loadBalancerLoadSheddingStrategy = "org.apache.pulsar.broker.loadbalance.impl.OverloadShedder"
loadBalancerBrokerOverloadedThresholdPercentage = 90
loadBalancerNamespaceBundleMaxTopics = 500
defaultNamespaceBundleSplitAlgorithm = "topic_count_equally_divide"
[cluster.overrides]
broker-3 = { cores = 4, nic_gbps = 25, heap_mb = 4096 }
[[namespaces]]
name = "acme/orders"
bundles = 4
[[namespaces]]
name = "acme/logs"
bundles = 2
[[topics]]
namespace = "acme/orders"
count = 12
rate = { distribution = "uniform", low = 10, high = 200 }
consumers = 2
msg_size = 512
[[topics]]
namespace = "acme/logs"
count = 5
name = "log-{i}"
producers = 2
consumers = 0
rate = { distribution = "zipf", total = 300 }
"""


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.read()


def topic_rates(cluster: Any) -> dict[str, float]:
    """msgRateIn of every topic, as the brokers' broker-stats/topics views say."""
    from emulator.observe.pulsar_admin import broker_topic_stats

    out: dict[str, float] = {}
    for b in cluster.live_brokers():
        for bundles in broker_topic_stats(cluster.brokers[b]).values():
            for domains in bundles.values():
                for topics in domains.values():
                    out.update({t: s["msgRateIn"] for t, s in topics.items()})
    return out


async def take_snapshot(tmp: Path, scenario_text: str = SOURCE) -> dict[str, Any]:
    """Run the source cluster 2 minutes, export it; what the cluster was at that instant."""
    scenario = loader.loads(scenario_text, "source.toml")
    async with observed(scenario) as run:
        async with observe(run.cluster, metrics_port=0) as obs:
            await run.sleep_until(120)
            c = run.cluster
            index = await run_external(export, obs.url, tmp / "snap")
            # the command does the same (same instant: the clock stands while a thread works)
            rc = await run_external(main, ["snapshot", "export", "--url", obs.url, str(tmp / "cli")])
            assert rc == 0
            # read back a few answers directly: the files are the bodies, byte for byte
            direct = {call.file: await run_external(get, call.url) for call in index.calls if call.file}
            return {"index": index, "direct": direct, "ownership": c.ownership(), "rates": topic_rates(c),
                    "reports": {b: msgspec.structs.replace(c.brokers[b].local_data) for b in c.live_brokers()},
                    "leader": c.leader(), "brokers": c.live_brokers(), "url": obs.url,
                    "runtime": runtime_configuration(c.conf)}


@pytest.mark.asyncio
async def test_export_writes_every_answer_unchanged_one_file_per_call(tmp_path):
    snap = await take_snapshot(tmp_path)
    index = snap["index"]
    folder = tmp_path / "snap"
    assert index.broker_url == "{url}/emulator/brokers/{broker}"      # the emulator was recognised
    kinds = [c.kind for c in index.calls]
    assert kinds[:4] == ["clusters", "brokers", "leader", "runtime_config"]
    assert kinds.count("load_report") == kinds.count("broker_topics") == kinds.count("owned_namespaces") == 3
    # public/default: every cluster has it (Pulsar's initialisation), served though never written here
    assert sorted(c.namespace for c in index.calls if c.kind == "policies") == [
        "acme/logs", "acme/orders", "public/default"]
    for call in index.calls:
        if call.file:
            assert (folder / call.file).read_bytes() == snap["direct"][call.file]
    on_disk = {p.name for p in folder.iterdir()} - {"index.json"}
    assert on_disk == {c.file for c in index.calls if c.file}
    assert {p.name: p.read_bytes() for p in (tmp_path / "cli").iterdir()} == {
        p.name: p.read_bytes() for p in folder.iterdir()}
    # "nothing set" answers are listed without a file: Pulsar's 404 for isolation policies never set,
    # and the anti-affinity group (not served by this branch's emulator: 404)
    absent = {c.kind for c in index.calls if c.file is None}
    assert "isolation_policies" in absent
    by_kind = {(c.kind, c.broker or c.namespace): json.loads((folder / c.file).read_bytes())
               for c in index.calls if c.file}
    assert by_kind[("clusters", None)] == ["cluster"]
    assert by_kind[("brokers", None)] == snap["brokers"]
    assert by_kind[("leader", None)]["brokerId"] == snap["leader"]
    assert by_kind[("runtime_config", None)] == snap["runtime"]
    for b in snap["brokers"]:
        report = msgspec.json.decode((folder / next(c.file for c in index.calls if c.kind == "load_report"
                                                    and c.broker == b)).read_bytes(), type=LocalBrokerData)
        assert report == msgspec.structs.replace(snap["reports"][b], broker_version_string=PULSAR_VERSION)
        owned = by_kind[("owned_namespaces", b)]
        assert set(owned) == {k for k, v in snap["ownership"].items() if v == b}
    assert by_kind[("bundles", "acme/orders")] == {
        "boundaries": ["0x00000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"], "numBundles": 4}
    assert by_kind[("policies", "acme/logs")]["bundles"]["numBundles"] == 2
    assert by_kind[("failure_domains", None)] == {}
    # per-topic rates: every topic of the source, each on the broker owning its bundle
    exported: dict[str, float] = {}
    for b in snap["brokers"]:
        for ns, bundles in by_kind[("broker_topics", b)].items():
            for rng, domains in bundles.items():
                assert snap["ownership"][f"{ns}/{rng}"] == b
                exported.update({t: s["msgRateIn"] for t, s in domains["persistent"].items()})
    assert exported == snap["rates"] and len(exported) == 17 and all(r > 0 for r in exported.values())


@pytest.mark.asyncio
async def test_to_scenario_states_brokers_capacities_bundles_owners_and_rates(tmp_path):
    snap = await take_snapshot(tmp_path)
    scenario, skipped = scenario_dict(read_snapshot(tmp_path / "snap"), duration="10m")
    assert skipped == []
    text = to_toml(scenario)
    assert tomllib.loads(text) == scenario                                # valid TOML, nothing lost
    c = scenario["cluster"]
    assert c["brokers"] == ["broker-1:8080", "broker-2:8080", "broker-3:8080"]
    placement = ServiceConfig().load_balancer_load_placement_strategy   # the defaults are written too
    assert scenario["settings"] == {**SOURCE_SETTINGS, "emulator_first_leader": snap["leader"],
                                    "loadManagerClassName": MODULAR, "loadBalancerLoadPlacementStrategy": placement}
    assert c["capacity"] == {"cores": 8.0, "nic_gbps": 10.0, "heap_mb": 2048.0, "direct_mb": 4096.0}
    assert c["overrides"] == {"broker-3:8080": {"cores": 4.0, "nic_gbps": 25.0, "heap_mb": 4096.0}}
    assert [n["name"] for n in scenario["namespaces"]] == ["acme/logs", "acme/orders"]
    owners = {}
    for ns in scenario["initial"]["namespaces"]:
        b = ns["boundaries"]
        owners.update({f"{ns['name']}/{lo}_{up}": o for lo, up, o in zip(b, b[1:], ns["owners"])})
    assert owners == snap["ownership"]
    rates = {}
    for g in scenario["topics"]:
        assert g["rate"]["distribution"] == "explicit"
        rates.update({f"persistent://{g['namespace']}/{n}": r for n, r in zip(g["names"], g["rate"]["rates"])})
    assert rates == snap["rates"]
    shapes = {(g["namespace"], g["producers"], g["consumers"], g["msg_size"]) for g in scenario["topics"]}
    assert shapes == {("acme/orders", 1, 2, 512), ("acme/logs", 2, 0, 1024)}


def _without_initial(scenario: dict[str, Any]) -> dict[str, Any]:
    """The scenario with brokers by count and no [initial]: what this branch can run on its own."""
    out = json.loads(json.dumps(scenario))
    out["cluster"]["brokers"] = len(scenario["cluster"]["brokers"])
    out.pop("initial", None)
    return out


@pytest.mark.asyncio
async def test_the_converted_topics_publish_the_exported_rates_on_brokers_of_the_exported_capacity(tmp_path):
    snap = await take_snapshot(tmp_path)
    scenario, _ = scenario_dict(read_snapshot(tmp_path / "snap"), duration="10m")
    replay = loader.from_dict(_without_initial(scenario), "replay.toml")
    async with observed(replay) as run:
        await run.sleep_until(60)
        assert topic_rates(run.cluster) == pytest.approx(snap["rates"], rel=1e-12)
        for b in run.cluster.live_brokers():
            mine, theirs = run.cluster.brokers[b].local_data, snap["reports"][b]
            for key in ("cpu", "memory", "direct_memory", "bandwidth_in"):
                assert getattr(mine, key).limit == pytest.approx(getattr(theirs, key).limit)


@pytest.mark.asyncio
async def test_export_to_scenario_run_reproduces_the_exported_ownership_and_rates(tmp_path):
    snap = await take_snapshot(tmp_path)
    scenario, _ = scenario_dict(read_snapshot(tmp_path / "snap"), duration="10m")
    replay = loader.loads(to_toml(scenario), "replay.toml")
    async with observed(replay) as run:
        at_t0 = owners_when_stated(run)
        await run.sleep_until(60)
        assert at_t0 == [snap["ownership"]]                                  # t = 0: the exported owners
        assert run.cluster.live_brokers() == snap["brokers"]
        assert run.cluster.leader() == snap["leader"]                         # the exported leader
        assert runtime_configuration(run.cluster.conf) == snap["runtime"]    # the cluster's own settings
        assert snap["leader"] != "broker-1:8080"   # not the replay's own first winner (so the switch works)
        assert topic_rates(run.cluster) == pytest.approx(snap["rates"], rel=1e-12)


def owners_when_stated(run) -> list[dict[str, str]]:
    """The cluster's ownership at the moment the scenario's `[initial]` state is in place (t0 + the
    start-up latencies), filled in by the `initial_state` event."""
    seen: list[dict[str, str]] = []
    run.cluster.events.subscribe(lambda e: seen.append(run.cluster.ownership())
                                 if isinstance(e, InitialState) else None)
    return seen


def _sample_owners() -> dict[str, str]:
    owners = {}
    for f in SAMPLE.glob("*ownedNamespaces.json"):
        broker = f.name.split("_brokers_cluster_")[1].split("_ownedNamespaces")[0].replace("_8080", ":8080")
        owners.update({bundle: broker for bundle in json.loads(f.read_bytes())})
    return owners


def test_the_sample_snapshot_converts_to_its_brokers_owners_rates_and_policies():
    scenario, skipped = scenario_dict(read_snapshot(SAMPLE))
    assert skipped == []
    assert tomllib.loads(to_toml(scenario)) == scenario
    assert scenario["cluster"]["brokers"] == ["broker-1:8080", "broker-2:8080", "broker-3:8080"]
    owners = {}
    for ns in scenario["initial"]["namespaces"]:
        b = ns["boundaries"]
        owners.update({f"{ns['name']}/{lo}_{up}": o for lo, up, o in zip(b, b[1:], ns["owners"])})
    assert owners == _sample_owners() and len(owners) == 6
    assert scenario["isolation_policies"] == [{
        "name": "logs-isolation", "namespaces": ["acme/logs"], "primary": ["broker-[13]"], "secondary": ["broker-2"],
        "auto_failover_policy": {"policy_type": "min_available",
                                 "parameters": {"min_limit": "1", "usage_threshold": "80"}}}]
    assert scenario["failure_domains"] == [{"name": "rack-a", "brokers": ["broker-1:8080", "broker-2:8080"]},
                                           {"name": "rack-b", "brokers": ["broker-3:8080"]}]
    # an export without the runtime configuration (older): failure domains enabled, and the leader
    assert scenario["settings"] == {"failureDomainsEnabled": True, "emulator_first_leader": "broker-1:8080"}
    assert sum(len(g["names"]) for g in scenario["topics"]) == 17


@pytest.mark.asyncio
async def test_the_sample_snapshot_runs_from_its_stated_owners():
    scenario, _ = scenario_dict(read_snapshot(SAMPLE), duration="5m")
    replay = loader.loads(to_toml(scenario), "sample.toml")
    async with observed(replay) as run:
        at_t0 = owners_when_stated(run)
        await run.sleep_until(60)
        assert at_t0 == [_sample_owners()]
        rates = topic_rates(run.cluster)
        assert len(rates) == 17 and all(r > 0 for r in rates.values())
