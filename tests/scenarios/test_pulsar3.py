"""The five pulsar3-* scenarios (the Pulsar 3.0.0 load-manager table, Modular column) run at reduced size
with the invariant checker on, and each one's figure is measurable: the scale-up moves load and then
stops, the scale-down re-homes every bundle, the split reaches the namespace's bundle cap, the restart
reconnects every producer, the rolling restart restarts every broker and yields a latency figure (or,
before the publish-latency model, the outage it will be computed from).

The reduced versions are `bench.pulsar3.reduced` (what `python -m bench.pulsar3 --quick` runs); the
full-size scenarios are checked only for what their comments promise about their shape.
"""

from __future__ import annotations

import collections

import pytest

from bench.harness import quiet_logs
from bench.pulsar3 import MEASURES, PUBLISHED, SCENARIOS, Run, measure, publish_latency, reduced, render
from emulator.workload import library

QUIET = 120.0   # the reduced runs are short: two quiet minutes count as settled


def run(name: str, seed: int = 1, check_interval: float = 1.0):
    quiet_logs()                 # rendering thousands of lookup logs would cost more than the run
    r = measure(reduced(name), seed, check_interval=check_interval, quiet=QUIET)
    assert r.violations == 0, r
    assert not r.details.get("event_errors"), r.details
    return r


def test_pulsar3_scenarios_are_built_in_with_a_measure_and_a_published_figure():
    names = {n for n in library.names() if n.startswith("pulsar3-")}
    assert names == set(SCENARIOS) == set(MEASURES) == set(PUBLISHED)
    for n in names:
        text = library.source(n)
        assert "Published figure (Modular)" in text and "Assumptions" in text and "PR #652" in text


def test_pulsar3_full_sizes_are_the_published_setups():
    up, down = library.load("pulsar3-scale-up"), library.load("pulsar3-scale-down")
    for s, brokers in ((up, 5), (down, 10)):
        assert s.cluster.brokers == brokers and s.namespaces[0].bundles == 100
        assert sum(g.count * g.producers for g in s.topics) == 10_000
    assert [e.count for e in up.events] == [5] and [e.count for e in down.events] == [5]
    split = library.load("pulsar3-split")
    assert split.namespaces[0].bundles == 1 and split.topics[0].count == 10_000
    assert split.settings["loadBalancerNamespaceMaximumBundles"] == 128
    restart = library.load("pulsar3-restart")
    assert restart.cluster.brokers == 100 and sum(ns.bundles for ns in restart.namespaces) == 65_000
    assert sum(g.count * g.producers for g in restart.topics) == 100_000
    # one rolling restart of every broker on a fixed cadence: the 100th goes down within 2 minutes
    [ev] = restart.events
    assert ev.every is not None and ev.brokers == [] and ev.batch == 1 and ev.mode == "graceful"
    assert 99 * ev.every <= 120.0
    rolling = library.load("pulsar3-rolling-restart")
    assert rolling.cluster.brokers == 10 and rolling.namespaces[0].bundles == 1000
    assert rolling.topics[0].partitions == 10_000 and rolling.topics[0].rate.rate == 1000


def test_pulsar3_scale_up__new_brokers_take_bundles_then_moves_stop():
    r = run("pulsar3-scale-up")
    assert r.figure is not None and 0 < r.figure < 25 * 60, r
    assert r.details["moves"] >= 1 and r.details["bundles_min"] >= 1   # every new broker got some


def test_pulsar3_scale_down__every_bundle_owned_again_and_every_producer_back():
    r = run("pulsar3-scale-down")
    assert r.figure is not None, r
    assert r.details["moves"] >= 8                       # the two removed brokers' bundles
    assert r.details["all_connected_after_s"] is not None
    assert r.details["bundles_min"] >= 1


def test_pulsar3_split__the_namespace_reaches_its_bundle_cap():
    r = run("pulsar3-split")
    assert r.figure is not None and r.figure > 0, r
    assert r.details["bundles"] == r.details["target_bundles"] == 16
    assert r.details["splits"] == 15                     # range_equally_divide: one bundle in, two out


@pytest.mark.slow
def test_pulsar3_restart__every_producer_reconnects():
    r = run("pulsar3-restart", check_interval=5.0)      # a check walks every bundle
    assert r.figure is not None and r.figure > 0, r
    assert r.details["connected_at_end"] == r.details["producers"] == 500
    assert r.details["fewest_connected"] < 500           # the restarts really cut producers off
    assert r.details["broker_starts"] == 20               # 10 at boot, 10 restarts


def test_pulsar3_rolling_restart__every_broker_restarts_and_latency_is_measurable():
    r = run("pulsar3-rolling-restart")
    assert r.details["broker_starts"] == 8                # 4 at boot, 4 restarts, one by one
    if r.figure is not None:                              # with the publish-latency model
        assert r.figure > 0
    else:
        assert "no publish P99.99" in r.note
        assert r.details["unavailable_max_s"] > 0         # the outage the latency will come from


@pytest.mark.parametrize("fields, expected", [
    ({"publish_latency_p50": 0.004, "publish_latency_p99_99": 1.9, "publish_failed": 3},
     {"P50": 0.004, "P99.99": 1.9, "failed": 3.0}),
    ({"publish_latency": {"p99": 0.01, "p99_9": 0.2, "p99_99": 1.5}},
     {"P99": 0.01, "P99.9": 0.2, "P99.99": 1.5}),
    ({"publish_p9999_ms": 1841.0}, {"P99.99": 1.841}),
    ({"publish": {"topic": "", "t": 900.0, "messages": 9e5, "failed_timeout": 1.0, "failed_queue_full": 2.0,
                  "failed_closed": 0.0, "p50": 0.005, "p99": 0.01, "p999": 0.3, "p9999": 1.8}},
     {"P50": 0.005, "P99": 0.01, "P99.9": 0.3, "P99.99": 1.8, "failed": 3.0}),
    ({"unavailable_max": 3.0}, {}),
])
def test_publish_latency_reads_the_quantiles_in_any_spelling(fields, expected):
    import msgspec

    Summary = msgspec.defstruct("Summary", [(k, type(v)) for k, v in fields.items()])
    assert publish_latency(Summary(**fields)) == pytest.approx(expected)


def test_render_gives_ratio_and_the_factor_two_verdict():
    runs = [Run(scenario="pulsar3-split", seed=s, figure=f) for s, f in ((1, 600.0), (2, 1200.0))]
    runs.append(Run(scenario="pulsar3-rolling-restart", seed=1, figure=None, note="no model"))
    lines = render(runs).splitlines()
    split = next(line for line in lines if line.startswith("pulsar3-split"))
    assert "15.0 min" in split and "15.0 min" in split.split("15.0 min", 1)[1]   # mean 900 s = published
    assert "1.00" in split and " yes " in split and "2/2" in split
    rolling = next(line for line in lines if line.startswith("pulsar3-rolling-restart"))
    assert "1,841 ms" in rolling and "n/a" in rolling and "no model" in rolling
    assert collections.Counter(line.split()[0] for line in lines[1:]) == {"pulsar3-split": 1,
                                                                         "pulsar3-rolling-restart": 1}
