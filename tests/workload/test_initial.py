"""[initial] (issue 16 item 1): stated owners and bundle boundaries at t = 0, the owner generators, the
warm start, and the named-broker list of [cluster]."""

from __future__ import annotations

import random

import msgspec
import pytest

from emulator.cli import main
from emulator.cluster import paths
from emulator.cluster.broker import NamespaceEphemeralData
from emulator.cluster.events import InitialState, Unload, WarmStarted
from emulator.model.bundles import NamespaceBundles
from emulator.model.loaddata import DEFAULT_MESSAGE_RATE, BundleData
from emulator.workload.initial import even_owners, msg_rate, skewed_owners
from emulator.workload.loader import loads

from .harness import observed

HEAD = """
[scenario]
name = "initial"
description = "d"
duration = "10m"
seed = 5
"""


def _ratio(rates: dict[str, float]) -> float:
    return max(rates.values()) / min(rates.values())


def _leader(cluster):
    return cluster.brokers[cluster.leader()].leader_actor


# ------------------------------------------------------------------------------------ generators


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("ratio", [1.0, 1.5, 2.5, 4.0])
def test_skewed_owners_reach_the_ratio(seed, ratio):
    rng = random.Random(seed)
    rates = {f"b{i}": rng.lognormvariate(0, 1) * 100 for i in range(48)}
    brokers = [f"broker-{i}:8080" for i in range(1, 5)]
    owners = skewed_owners(rates, brokers, ratio)
    load = dict.fromkeys(brokers, 0.0)
    for bundle, broker in owners.items():
        load[broker] += rates[bundle]
    assert set(owners) == set(rates)
    assert _ratio(load) == pytest.approx(ratio, abs=0.1)


def test_even_owners_balance_msg_rate_and_spread_idle_bundles():
    rng = random.Random(3)
    rates = {f"b{i}": rng.lognormvariate(0, 1) * 100 for i in range(60)}
    rates.update({f"idle{i}": 0.0 for i in range(6)})
    brokers = ["x:8080", "y:8080", "z:8080"]
    owners = even_owners(rates, brokers)
    load = {b: sum(rates[k] for k, v in owners.items() if v == b) for b in brokers}
    assert _ratio(load) < 1.01
    idle = [owners[f"idle{i}"] for i in range(6)]
    assert len(set(idle)) == 3     # idle bundles spread, not all on the least loaded broker


# ------------------------------------------------------------------------------------ cluster runs

SKEWED = HEAD + """
[cluster]
brokers = 4
placement = "AvgShedder"
shedder = "AvgShedder"

[[namespaces]]
name = "public/default"
bundles = 32

[[topics]]
namespace = "public/default"
count = 160
rate = { distribution = "uniform", low = 20, high = 200 }

[initial]
owners = "skewed"
ratio = 2.5
warm = "30m"
"""


@pytest.mark.asyncio
async def test_skewed_at_2_5_is_measured_at_2_5_in_the_first_report_cycle_before_any_shedding():
    scenario = loads(SKEWED, "skewed.toml")
    seen: dict[str, object] = {}
    async with observed(scenario) as run:
        cluster = run.cluster

        def on_event(e):
            if isinstance(e, WarmStarted) and "rates" not in seen:
                view = _leader(cluster).lm.load_data.broker_data
                seen["rates"] = {b: d.local_data.msg_rate_in + d.local_data.msg_rate_out
                                 for b, d in view.items()}
                seen["t"] = e.t
            if isinstance(e, Unload):
                seen.setdefault("first_unload", e.t)

        cluster.events.subscribe(on_event)
        await run.sleep_until(30)
        assert "rates" in seen, "no warm start"
        rates = seen["rates"]
        assert len(rates) == 4 and min(rates.values()) > 0
        assert _ratio(rates) == pytest.approx(2.5, abs=0.1)
        assert seen["t"] - run.t0 < 5.0            # the first report cycle, at t = 0
        assert "first_unload" not in seen           # before any shedding
        # the plan's own account agrees with what the brokers report
        plan = run.workload.initial
        planned = plan.broker_msg_rates(sorted(rates))
        for b, r in rates.items():
            assert r == pytest.approx(planned[b], rel=1e-9)


EXPLICIT = HEAD + """
[cluster]
brokers = ["alpha:8080", "beta", "gamma:8080"]

[[namespaces]]
name = "t/split"

[[namespaces]]
name = "t/rest"
bundles = 3

[[topics]]
namespace = "t/split"
count = 40

[[topics]]
namespace = "t/rest"
count = 12

[initial]
owners = "all_on"
broker = "gamma"

[[initial.namespaces]]
name = "t/split"
boundaries = ["0x00000000", "0x10000000", "0x30000000", "0x80000000", "0xc0000000", "0xffffffff"]
owners = ["beta:8080", "alpha:8080", "beta", "alpha:8080", "gamma:8080"]
"""


@pytest.mark.asyncio
async def test_explicit_owners_are_exactly_the_owners_at_t0():
    scenario = loads(EXPLICIT, "explicit.toml")
    at_t0: dict[str, object] = {}
    async with observed(scenario) as run:
        cluster = run.cluster

        def on_event(e):
            if isinstance(e, InitialState):
                at_t0["owners"] = cluster.ownership()
                at_t0["t"] = e.t

        cluster.events.subscribe(on_event)
        await run.sleep_until(20)
        assert cluster.live_brokers() == ["alpha:8080", "beta:8080", "gamma:8080"]
        split = NamespaceBundles.from_boundaries(
            "t/split", [0, 0x10000000, 0x30000000, 0x80000000, 0xC0000000, 0xFFFFFFFF])
        rest = NamespaceBundles.default("t/rest", 3)
        assert (await cluster.namespace_bundles("t/split")).names == split.names
        expected = dict(zip(split.names, ["beta:8080", "alpha:8080", "beta:8080", "alpha:8080",
                                          "gamma:8080"]))
        expected.update(dict.fromkeys(rest.names, "gamma:8080"))
        assert at_t0["owners"] == expected
        assert at_t0["t"] - run.t0 < 1.0
        # the locks are Pulsar's: ephemeral nodes of the owner's session with its NamespaceEphemeralData
        for bundle, owner in expected.items():
            data = msgspec.json.decode(cluster.store.peek(paths.ownership_path(bundle)),
                                       type=NamespaceEphemeralData)
            assert data.http_url == f"http://{owner}"
            assert cluster.store.ephemeral_owner(paths.ownership_path(bundle)) == \
                cluster.brokers[owner].md.session_id
        # nothing was placed by a load manager: the clients connected to the stated owners
        assert not cluster.decision_log.of("assignment")
        assert cluster.ownership() == expected
        for client in cluster.clients.values():
            for h in client.handles.values():
                nb = split if h.topic.startswith("persistent://t/split/") else rest
                bundle = nb.find_bundle(h.topic)
                assert h.state == "connected" and h.broker_id == expected[bundle], (h.topic, h.broker_id)
                assert h.topic in cluster.brokers[expected[bundle]].owned[bundle].actor.topics


WARM = HEAD + """
[cluster]
brokers = 3
shedder = "ThresholdShedder"

[[namespaces]]
name = "w/ns"
bundles = 12

[[topics]]
namespace = "w/ns"
count = 60
msg_size = 2048
consumers = 2
rate = { distribution = "uniform", low = 5, high = 400 }

[initial]
warm = "30m"
"""


@pytest.mark.asyncio
async def test_warm_start_the_leaders_first_view_is_the_traffic_model_not_the_defaults():
    scenario = loads(WARM, "warm.toml")
    first: dict[str, object] = {}
    async with observed(scenario) as run:
        cluster = run.cluster

        def on_event(e):
            if isinstance(e, WarmStarted) and not first:
                leader = _leader(cluster)
                data = leader.lm.load_data
                first["bundles"] = {b: msgspec.structs.replace(
                    d, short_term_data=msgspec.structs.replace(d.short_term_data),
                    long_term_data=msgspec.structs.replace(d.long_term_data))
                    for b, d in data.bundle_data.items()}
                first["time_average"] = {b: d.time_average_data for b, d in data.broker_data.items()}
                first["local"] = {b: d.local_data for b, d in data.broker_data.items()}
                first["hist"] = dict(leader.shedder.history)
                first["usage"] = {b: leader.shedder._usage(d.local_data, cluster.conf)
                                  for b, d in data.broker_data.items()}

        cluster.events.subscribe(on_event)
        await run.sleep_until(75)
        plan = run.workload.initial
        assert first, "no warm start"
        bundles: dict[str, BundleData] = first["bundles"]
        assert set(bundles) == set(plan.stats)
        for bundle, stats in plan.stats.items():
            d = bundles[bundle]
            for window in (d.short_term_data, d.long_term_data):
                assert window.num_samples >= 1
                assert window.msg_rate_in == pytest.approx(stats.msg_rate_in, rel=1e-9)
                assert window.msg_rate_out == pytest.approx(stats.msg_rate_out, rel=1e-9)
                assert window.msg_throughput_in == pytest.approx(stats.msg_throughput_in, rel=1e-9)
                assert window.msg_throughput_out == pytest.approx(stats.msg_throughput_out, rel=1e-9)
                assert window.msg_rate_in != DEFAULT_MESSAGE_RATE
            assert d.topics == stats.topics
        # broker time averages: the sums of their bundles' windows; the reports: the same traffic
        for broker, avg in first["time_average"].items():
            owned = [b for b, o in plan.owners.items() if o == broker]
            assert avg.long_term_msg_rate_in == pytest.approx(sum(plan.stats[b].msg_rate_in for b in owned))
            assert avg.short_term_msg_rate_out == pytest.approx(sum(plan.stats[b].msg_rate_out for b in owned))
            local = first["local"][broker]
            assert local.msg_rate_in == pytest.approx(sum(plan.stats[b].msg_rate_in for b in owned))
            assert local.bandwidth_in.usage > 0   # a host sample of the steady traffic, not a first sample
        # ThresholdShedder's EMA holds each broker's usage, as after 30 steady cycles
        assert first["hist"] == pytest.approx(first["usage"])
        # persisted as the leader's writer would have: bundle data and broker time averages
        node = cluster.store.peek(paths.bundle_data_path(next(iter(plan.stats))))
        assert msgspec.json.decode(node, type=BundleData).long_term_data.num_samples == 6  # 3 brokers x 30m/15m
        # a warm broker's next stats period reports the same traffic (windows went on from the warm fill)
        for broker in cluster.brokers.values():
            assert broker.windows.stats_updated_at - run.t0 > 50.0
            for bundle, stats in broker.windows.bundle_stats.items():
                assert stats.msg_rate_in == pytest.approx(plan.stats[bundle].msg_rate_in, rel=1e-6)


@pytest.mark.asyncio
async def test_avg_shedder_hit_counters_start_empty_on_a_warm_start():
    scenario = loads(SKEWED.replace('warm = "30m"', 'warm = "2h"'), "skewed.toml")
    async with observed(scenario) as run:
        cluster = run.cluster
        hits: list[tuple[dict, dict]] = []
        cluster.events.subscribe(lambda e: hits.append(
            (dict(_leader(cluster).shedder.hit_count_high), dict(_leader(cluster).shedder.hit_count_low)))
            if isinstance(e, WarmStarted) else None)
        await run.sleep_until(10)
        assert hits == [({}, {})]


@pytest.mark.asyncio
async def test_cold_initial_state_reports_the_owners_traffic_after_the_first_stats_period():
    scenario = loads(SKEWED.replace('warm = "30m"\n', ''), "cold.toml")
    async with observed(scenario) as run:
        cluster = run.cluster
        await run.sleep_until(5)
        assert all(not b.local_data.bundles for b in cluster.brokers.values())   # cold: nothing yet
        await run.sleep_until(75)
        rates = {b: br.local_data.msg_rate_in + br.local_data.msg_rate_out for b, br in cluster.brokers.items()}
        assert _ratio(rates) == pytest.approx(2.5, abs=0.1)


# ------------------------------------------------------------------------------------ bad input

BAD_BASE = HEAD + """
[[namespaces]]
name = "a/b"
bundles = 3
"""

BAD = {
    "unknown_owner": ('[[initial.namespaces]]\nname = "a/b"\nowners = ["broker-1", "broker-7", "broker-2"]\n',
                      ["initial.namespaces[0].owners[1]", "broker-7", "no such broker at t = 0"]),
    "not_ascending": ('[[initial.namespaces]]\nname = "a/b"\nboundaries = ["0x00000000", "0x90000000", '
                      '"0x20000000", "0xffffffff"]\n',
                      ["initial.namespaces[0].boundaries[2]", "0x20000000", "strictly ascending"]),
    "not_covering": ('[[initial.namespaces]]\nname = "a/b"\nboundaries = ["0x00000000", "0x40000000", '
                     '"0x80000000", "0xf0000000"]\n',
                     ["initial.namespaces[0].boundaries[3]", "0xf0000000", "0xffffffff"]),
    "not_from_zero": ('[[initial.namespaces]]\nname = "a/b"\nboundaries = ["0x00000010", "0x40000000", '
                      '"0x80000000", "0xffffffff"]\n',
                      ["initial.namespaces[0].boundaries[0]", "0x00000010", "0x00000000"]),
    "owners_count": ('[[initial.namespaces]]\nname = "a/b"\nowners = ["broker-1", "broker-2"]\n',
                     ["initial.namespaces[0].owners", "2 owners for 3 bundles"]),
    "ratio_below_1": ('[initial]\nowners = "skewed"\nratio = 0.8\n', ["initial.ratio", "0.8", ">= 1"]),
    "unknown_all_on": ('[initial]\nowners = "all_on"\nbroker = "broker-4"\n',
                       ["initial.broker", "broker-4", "no such broker"]),
    "unknown_key": ('[initial]\nwarmth = "30m"\n', ["initial.warmth", "unknown key"]),
    "named_twice": ('[cluster]\nbrokers = ["x:8080", "x"]\n', ["cluster.brokers[1]", "named twice"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_initial_input_is_one_line_and_exit_2(tmp_path, capsys, case):
    body, needles = BAD[case]
    path = tmp_path / "s.toml"
    path.write_text(BAD_BASE + body)
    code = main(["run", str(path), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for needle in [str(path), *needles]:
        assert needle in lines[0], (needle, lines[0])


def test_the_plan_sums_bundles_as_the_load_source_does():
    scenario = loads(WARM, "warm.toml")
    from emulator.workload.build import Workload

    plan = Workload(scenario).initial
    total = sum(msg_rate(s) for s in plan.stats.values())
    rates = Workload(scenario).traffic.rates(0.0)
    assert total == pytest.approx(float(rates.sum()) * 3)   # in, plus out to 2 consumers


def test_an_empty_stated_owner_is_placed_by_the_generator_as_snapshot_to_scenario_writes_it():
    """`snapshot to-scenario` writes "" for a bundle nobody owned: the loader takes it, and the plan
    gives that bundle the generator's owner (here all_on: gamma) while the stated ones stay."""
    scenario = loads(EXPLICIT.replace('owners = ["beta:8080", "alpha:8080", "beta",',
                                      'owners = ["beta:8080", "", "beta",'), "explicit.toml")
    from emulator.workload.build import Workload

    owners = Workload(scenario).initial.owners
    split = NamespaceBundles.from_boundaries(
        "t/split", [0, 0x10000000, 0x30000000, 0x80000000, 0xC0000000, 0xFFFFFFFF])
    assert [owners[b] for b in split.names] == ["beta:8080", "gamma:8080", "beta:8080", "alpha:8080",
                                                "gamma:8080"]


@pytest.mark.asyncio
async def test_warm_start_fills_the_placement_strategys_own_history():
    """LeastResourceUsageWithWeight keeps a per-broker EMA of its own: warm, it holds each broker's
    weighted usage of the warm traffic (the EMA's fixed point), not nothing until the first lookup."""
    from emulator.model.selection import weighted_max_usage

    scenario = loads(WARM.replace('shedder = "ThresholdShedder"',
                                  'shedder = "ThresholdShedder"\nplacement = "LeastResourceUsageWithWeight"'),
                     "warm.toml")
    seen: dict[str, object] = {}
    async with observed(scenario) as run:
        cluster = run.cluster

        def on_event(e):
            if isinstance(e, WarmStarted) and not seen:
                leader = _leader(cluster)
                seen["history"] = dict(leader.placement.history)
                seen["live"] = set(cluster.live_brokers())
                seen["usage"] = {b: weighted_max_usage(d.local_data, cluster.conf)
                                 for b, d in leader.lm.load_data.broker_data.items()}

        cluster.events.subscribe(on_event)
        await run.sleep_until(75)
    assert seen, "no warm start"
    assert set(seen["history"]) == seen["live"] == set(seen["usage"])
    assert seen["history"] == pytest.approx(seen["usage"])
    assert all(v > 0 for v in seen["history"].values())
