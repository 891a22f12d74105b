"""The pure ModularLoadManagerImpl core: update cycle, preallocation, the §3 selection pipeline."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

import strategies
from emulator.loadmanagers.modular.actors.modular_load_manager import ModularLoadManager, SelectionTrace
from emulator.model.config import ServiceConfig
from emulator.model.loaddata import (
    BundleData,
    LocalBrokerData,
    NamespaceBundleStats,
    ResourceUsage,
    TimeAverageMessageData,
)
from emulator.model.policies import ClusterPolicies, NamespaceIsolationPolicy, PolicyView

A, B, C = "a:8080", "b:8080", "c:8080"


def report(rate: float = 0.0, cpu: float = 10.0, stats: dict[str, NamespaceBundleStats] | None = None,
           **kw: Any) -> LocalBrokerData:
    """A load report whose `rate` msg/s is spread over its bundles (or carried by one 'load' bundle)."""
    stats = dict(stats) if stats is not None else {}
    if rate and not stats:
        stats = {f"load/{kw.pop('tag', 'x')}/0x00000000_0xffffffff": NamespaceBundleStats(msg_rate_in=rate, topics=1)}
    return LocalBrokerData(
        cpu=ResourceUsage(usage=cpu, limit=100.0),
        bundles=set(stats),
        last_stats=stats,
        msg_rate_in=sum(s.msg_rate_in for s in stats.values()),
        **kw,
    )


def manager(conf: ServiceConfig | None = None, strategy: str | Any = "LeastLongTermMessageRate",
            seed: int = 1, **kw: Any) -> ModularLoadManager:
    conf = conf or ServiceConfig()
    placement = strategies.create(strategy, random.Random(seed)) if isinstance(strategy, str) else strategy
    return ModularLoadManager(conf, placement, random.Random(seed), broker_id=A, **kw)


def bundles(n: int, ns: str = "t/burst") -> list[str]:
    step = 0x100000000 // n
    bounds = [i * step for i in range(n)] + [0xFFFFFFFF]
    return [f"{ns}/0x{bounds[i]:08x}_0x{bounds[i + 1]:08x}" for i in range(n)]


# --------------------------------------------------------------------------- preallocation


def test_preallocation_makes_repeated_assignment_idempotent() -> None:
    m = manager()
    m.update_all([A, B, C], {A: report(), B: report(), C: report()}, [])
    bundle = bundles(4)[0]
    first, trace = m.select_broker_for_assignment(bundle)
    assert first is not None and not trace.preallocated
    for _ in range(5):
        again, trace = m.select_broker_for_assignment(bundle)
        assert again == first
        assert trace.preallocated
    assert m.preallocated_bundle_to_broker == {bundle: first}
    assert bundle in m.load_data.broker_data[first].preallocated_bundle_data


def test_preallocation_adds_100_msgs_to_the_llmtr_score_and_spreads_a_burst() -> None:
    conf = ServiceConfig(load_balancer_distribute_bundles_evenly_enabled=False)
    m = manager(conf)
    m.update_all([A, B, C], {A: report(10, tag="a"), B: report(20, tag="b"), C: report(30, tag="c")}, [])
    burst = bundles(9)
    chosen = []
    for bundle in burst:
        broker, trace = m.select_broker_for_assignment(bundle)
        chosen.append(broker)
    # First pick: the least loaded broker a (10); then a = 110 > b (20) → b; then c; ...
    assert chosen[:3] == [A, B, C]
    _, trace = m.select_broker(bundles(9, "t/other")[0])
    assert trace.scores == {A: 310.0, B: 320.0, C: 330.0}
    assert Counter(chosen) == {A: 3, B: 3, C: 3}


def test_without_preallocation_a_burst_piles_onto_one_broker() -> None:
    conf = ServiceConfig(load_balancer_distribute_bundles_evenly_enabled=False, emulator_preallocation_enabled=False)
    m = manager(conf)
    m.update_all([A, B, C], {A: report(10, tag="a"), B: report(20, tag="b"), C: report(30, tag="c")}, [])
    chosen = [m.select_broker_for_assignment(b)[0] for b in bundles(9)]
    assert chosen == [A] * 9
    assert m.preallocated_bundle_to_broker == {}
    assert all(not d.preallocated_bundle_data for d in m.load_data.broker_data.values())


def test_preallocations_are_cleared_at_the_next_update() -> None:
    conf = ServiceConfig(load_balancer_distribute_bundles_evenly_enabled=False)
    m = manager(conf)
    reports = {A: report(10, tag="a"), B: report(20, tag="b")}
    m.update_all([A, B], reports, [])
    to_leader, _ = m.select_broker_for_assignment(bundles(4)[0])
    to_other, _ = m.select_broker_for_assignment(bundles(4)[1])
    assert (to_leader, to_other) == (A, B)
    # The leader (a) now owns its bundle but has not reported it yet.
    m.update_all([A, B], reports, owned_by_self=[bundles(4)[0]])
    assert m.preallocated_bundle_to_broker == {}
    assert list(m.load_data.broker_data[A].preallocated_bundle_data) == [bundles(4)[0]]
    assert m.load_data.broker_data[B].preallocated_bundle_data == {}
    # Once a reports it (and its data exists) the leader's own preallocation goes too.
    stats = {bundles(4)[0]: NamespaceBundleStats(msg_rate_in=5, topics=1)}
    m.update_all([A, B], {A: report(stats=stats), B: reports[B]}, owned_by_self=[bundles(4)[0]])
    assert m.load_data.broker_data[A].preallocated_bundle_data == {}


def test_simplified_cleanup_clears_every_preallocation() -> None:
    conf = ServiceConfig(emulator_preallocation_literal_cleanup=False)
    m = manager(conf)
    m.update_all([A, B], {A: report(), B: report()}, [])
    b0 = bundles(2)[0]
    m.select_broker_for_assignment(b0)
    m.update_all([A, B], {A: report(), B: report()}, owned_by_self=[b0])
    assert m.preallocated_bundle_to_broker == {}
    assert all(not d.preallocated_bundle_data for d in m.load_data.broker_data.values())


def test_reap_dead_broker_preallocations() -> None:
    m = manager(ServiceConfig(load_balancer_distribute_bundles_evenly_enabled=False))
    m.update_all([A, B], {A: report(10, tag="a"), B: report(20, tag="b")}, [])
    b0, b1 = bundles(2)
    assert m.select_broker_for_assignment(b0)[0] == A
    assert m.select_broker_for_assignment(b1)[0] == B
    assert m.reap_dead_broker_preallocations([B]) == [b0]
    assert m.preallocated_bundle_to_broker == {b1: B}


# --------------------------------------------------------------------------- update cycle


class SpyStrategy(strategies.BasePlacementStrategy):
    def __init__(self, rng: random.Random) -> None:
        super().__init__(rng)
        self.active_changes: list[set[str]] = []

    def select_broker(self, candidates, bundle_to_assign, load_data, conf):  # type: ignore[no-untyped-def]
        return min(candidates) if candidates else None

    def on_active_brokers_change(self, active_brokers: set[str]) -> None:
        self.active_changes.append(set(active_brokers))


def test_dead_broker_data_removed_and_strategies_told() -> None:
    placement, shedding = SpyStrategy(random.Random(0)), SpyStrategy(random.Random(0))
    m = manager(strategy=placement, shedding_strategy=shedding)
    m.update_all([A, B, C], {A: report(), B: report(), C: report()}, [])
    result = m.update_all([A, C], {A: report(), C: report()}, [])
    assert result.dead_brokers == [B]
    assert list(m.load_data.broker_data) == [A, C]
    assert placement.active_changes[-1] == {A, C}
    assert shedding.active_changes[-1] == {A, C}
    # A follower's core does not notify the strategies.
    m.update_all([A], {A: report()}, [], is_leader=False)
    assert placement.active_changes[-1] == {A, C}


def test_broker_without_report_is_dropped_and_not_a_candidate() -> None:
    m = manager(strategy=SpyStrategy(random.Random(0)))
    result = m.update_all([A, B], {A: report(), B: None}, [])
    assert result.brokers_without_report == [B]
    assert list(m.load_data.broker_data) == [A]
    _, trace = m.select_broker("t/n/0x00000000_0xffffffff")
    assert trace.policies == [A]


def test_never_seen_bundle_gets_defaults_or_persisted_data() -> None:
    persisted = BundleData(
        short_term_data=TimeAverageMessageData(max_samples=10, num_samples=10, msg_rate_in=7.0),
        long_term_data=TimeAverageMessageData(max_samples=1000, num_samples=1000, msg_rate_in=7.0),
        topics=3,
    )
    m = manager(persisted_bundle_data={"t/p/0x00000000_0xffffffff": persisted})
    m.update_all([A], {A: report()}, [])
    m.select_broker("t/n/0x00000000_0xffffffff")
    assert m.view().bundle_data["t/n/0x00000000_0xffffffff"] == BundleData.default()
    m.select_broker("t/p/0x00000000_0xffffffff")
    loaded = m.view().bundle_data["t/p/0x00000000_0xffffffff"]
    assert loaded == persisted and loaded is not persisted


def test_one_sample_per_update_call_per_bundle() -> None:
    bundle = "t/n/0x00000000_0xffffffff"
    m = manager()
    stats = {bundle: NamespaceBundleStats(msg_rate_in=200.0, topics=2)}
    m.update_all([A], {A: report(stats=stats)}, [])
    data = m.view().bundle_data[bundle]
    # The first sample overwrites the 50 msg/s default.
    assert data.short_term_data.num_samples == 1 and data.short_term_data.msg_rate_in == 200.0
    for _ in range(4):
        m.update_bundle_data([])  # the 15-minute writer's extra call, same (unchanged) report
    # the same object, brought up to date when load_data is read again (the windows are columns)
    assert m.view().bundle_data[bundle] is data
    assert data.short_term_data.num_samples == 5
    assert data.long_term_data.num_samples == 5
    assert data.topics == 2
    assert m.time_average_data()[A].long_term_msg_rate_in == 200.0


def test_unreported_bundles_are_removed() -> None:
    m = manager()
    b0, b1 = bundles(2, "t/n")
    m.update_all([A], {A: report(stats={b0: NamespaceBundleStats(), b1: NamespaceBundleStats()})}, [])
    result = m.update_all([A], {A: report(stats={b1: NamespaceBundleStats()})}, [])
    assert result.removed_bundles == [b0]
    assert list(m.view().bundle_data) == [b1]


def test_system_namespaces_are_not_in_the_shedding_view() -> None:
    stats = {
        "pulsar/system/0x00000000_0xffffffff": NamespaceBundleStats(),
        "pulsar/c1/a:8080/0x00000000_0xffffffff": NamespaceBundleStats(),
        "pulsar/a:8080/0x00000000_0xffffffff": NamespaceBundleStats(),
        "sla-monitor/c1/a:8080/0x00000000_0xffffffff": NamespaceBundleStats(),
        "public/default/0x00000000_0xffffffff": NamespaceBundleStats(),
    }
    m = manager()
    m.update_all([A], {A: report(stats=stats)}, [])
    assert len(m.view().bundle_data) == 5
    assert list(m.view().bundle_data_for_load_shedding()) == ["public/default/0x00000000_0xffffffff"]


# --------------------------------------------------------------------------- selection pipeline


def test_even_distribution_spreads_a_namespace_despite_load() -> None:
    m = manager()  # distribute evenly is on by default
    m.update_all([A, B], {A: report(10, tag="a"), B: report(10_000, tag="b")}, [])
    chosen = [m.select_broker_for_assignment(b)[0] for b in bundles(4)]
    assert Counter(chosen) == {A: 2, B: 2}


def test_system_namespace_is_always_distributed_evenly() -> None:
    conf = ServiceConfig(load_balancer_distribute_bundles_evenly_enabled=False, emulator_preallocation_enabled=False)
    m = manager(conf)
    stats_a = {"pulsar/system/0x00000000_0x80000000": NamespaceBundleStats()}
    m.update_all([A, B], {A: report(stats=stats_a), B: report(10_000, tag="b")}, [])
    broker, trace = m.select_broker("pulsar/system/0x80000000_0xffffffff")
    assert trace.even_distribution == [B] and broker == B
    _, trace = m.select_broker("t/n/0x00000000_0xffffffff")
    assert trace.even_distribution is None


def test_overload_retry_asks_the_strategy_over_the_full_policy_set() -> None:
    m = manager()
    ns_bundles = bundles(4, "t/n")
    # b already holds 2 bundles of t/n; a is overloaded and holds 1 → even distribution leaves only a.
    m.update_all(
        [A, B],
        {
            A: report(cpu=95.0, stats={ns_bundles[0]: NamespaceBundleStats()}),
            B: report(cpu=20.0, stats={ns_bundles[1]: NamespaceBundleStats(), ns_bundles[2]: NamespaceBundleStats()}),
        },
        [],
    )
    broker, trace = m.select_broker(ns_bundles[3])
    assert trace.candidates == [A]
    assert trace.overload_retry
    assert trace.overload_candidates == [A, B]
    assert broker == B == trace.chosen
    # the one filtered candidate was overloaded: LeastLongTermMessageRate's own random fallback, flagged
    assert trace.selector_fallback == "all_overloaded_random" and trace.overload_selector_fallback is None
    # and the decision log's one-line form keeps every flag
    from emulator.observe.decision_log import trace_summary

    short = trace_summary(trace)
    assert short["overload_retry"] and short["selector_fallback"] == "all_overloaded_random"
    assert short["chosen"] == B and short["n_candidates"] == 1 and short["n_overload_candidates"] == 2


def test_exactly_at_threshold_is_not_overloaded() -> None:
    m = manager()
    m.update_all([A, B], {A: report(cpu=85.0), B: report(cpu=10.0, rate=1e6, tag="b")}, [])
    broker, trace = m.select_broker("t/n/0x00000000_0xffffffff")
    assert broker == A and not trace.overload_retry


def test_filter_exception_restores_the_policy_set() -> None:
    conf = ServiceConfig(prefer_later_versions=True, load_balancer_distribute_bundles_evenly_enabled=False)
    m = manager(conf)
    m.update_all([A, B], {A: report(broker_version_string="4.0.0"), B: report(broker_version_string="")}, [])
    _, trace = m.select_broker("t/n/0x00000000_0xffffffff")
    assert trace.fallback == "filter_exception" and trace.filters is None
    assert trace.candidates == [A, B]
    m.update_all([A, B], {A: report(broker_version_string="4.0.0"), B: report(broker_version_string="3.3.0")}, [])
    broker, trace = m.select_broker("t/n/0x00000000_0xffffffff")
    assert trace.filters == [A] and broker == A


def test_empty_after_filters_restores_the_policy_set() -> None:
    m = manager()
    other = "x.ExtensibleLoadManagerImpl"
    m.update_all([A, B], {A: report(load_manager_class_name=other), B: report(load_manager_class_name=other)}, [])
    broker, trace = m.select_broker("t/n/0x00000000_0xffffffff")
    assert trace.filters == [] and trace.fallback == "empty"
    assert broker in (A, B)


def test_shedding_excluded_namespaces_are_placed_round_robin() -> None:
    conf = ServiceConfig(load_balancer_shedding_excluded_namespaces=["t/ex"],
                         load_balancer_distribute_bundles_evenly_enabled=False,
                         emulator_preallocation_enabled=False)
    m = manager(conf)
    m.update_all([A, B, C], {A: report(10, tag="a"), B: report(20, tag="b"), C: report(30, tag="c")}, [])
    picks = []
    for bundle in bundles(6, "t/ex"):
        broker, trace = m.select_broker_for_assignment(bundle)
        assert trace.selector == "RoundRobinBrokerSelector"
        picks.append(broker)
    assert picks == [A, B, C, A, B, C]
    assert m.select_broker("t/in/0x00000000_0xffffffff")[1].selector == "LeastLongTermMessageRate"


def test_isolation_policy_limits_candidates() -> None:
    policy = NamespaceIsolationPolicy(namespaces=["t/iso"], primary=["c"])
    m = manager(policies=PolicyView(ClusterPolicies(isolation={"p": policy})))
    m.update_all([A, B, C], {A: report(), B: report(), C: report(1e6, tag="c")}, [])
    broker, trace = m.select_broker("t/iso/0x00000000_0xffffffff")
    assert broker == C and trace.policies == [C]
    _, trace = m.select_broker("t/shared/0x00000000_0xffffffff")
    assert trace.policies == [A, B]


def test_no_broker_gives_none() -> None:
    m = manager()
    m.update_all([], {}, [])
    broker, trace = m.select_broker_for_assignment("t/n/0x00000000_0xffffffff")
    assert broker is None and trace.chosen is None
    assert m.preallocated_bundle_to_broker == {}


def test_trace_encodes_to_json() -> None:
    import msgspec

    m = manager()
    m.update_all([A, B], {A: report(), B: report(cpu=99.0)}, [])
    _, trace = m.select_broker("t/n/0x00000000_0xffffffff")
    decoded = msgspec.json.decode(msgspec.json.encode(trace), type=SelectionTrace)
    assert decoded.scores == {A: 0.0, B: None}  # +inf (overloaded) is JSON null
    assert msgspec.structs.replace(decoded, scores=trace.scores) == trace


@pytest.mark.parametrize("name", strategies.names())
def test_selection_is_deterministic_for_every_strategy(name: str) -> None:
    def run() -> list[str | None]:
        m = manager(ServiceConfig(load_balancer_distribute_bundles_evenly_enabled=False), strategy=name, seed=42)
        m.update_all([A, B, C], {A: report(10, tag="a"), B: report(10, tag="b"), C: report(10, tag="c")}, [])
        return [m.select_broker_for_assignment(b)[0] for b in bundles(12)]

    first = run()
    assert first == run()
    assert set(first) <= {A, B, C}


# --------------------------------------------------------------------------- split and persistence


def test_split_detection_needs_more_than_one_broker_and_the_switch() -> None:
    hot = "t/n/0x00000000_0xffffffff"
    stats = {hot: NamespaceBundleStats(topics=1001)}
    m = manager()
    m.update_all([A], {A: report(stats=stats)}, [])
    assert m.find_bundles_to_split(lambda ns: 1) == {}
    m.update_all([A, B], {A: report(stats=stats), B: report()}, [])
    assert m.find_bundles_to_split(lambda ns: 1) == {hot: A}
    m.conf = ServiceConfig(load_balancer_auto_bundle_split_enabled=False)
    assert m.find_bundles_to_split(lambda ns: 1) == {}
    m.remove_bundle_data(hot)
    assert hot not in m.view().bundle_data


def test_bundle_data_to_write_top_k_skips_excluded_namespaces() -> None:
    stats = {
        "t/n/0x00000000_0x40000000": NamespaceBundleStats(msg_throughput_in=5e6),
        "t/n/0x40000000_0x80000000": NamespaceBundleStats(msg_throughput_in=1e6),
        "t/n/0x80000000_0xc0000000": NamespaceBundleStats(msg_throughput_in=3e6),
        "t/n/0xc0000000_0xffffffff": NamespaceBundleStats(msg_throughput_in=2e6),
        "t/ex/0x00000000_0xffffffff": NamespaceBundleStats(msg_throughput_in=9e9),
    }
    conf = ServiceConfig(load_balancer_max_number_of_bundles_in_bundle_load_report=1,
                         load_balancer_shedding_excluded_namespaces=["t/ex"])
    m = manager(conf)
    m.update_all([A, B], {A: report(stats=stats), B: report()}, [])
    assert list(m.bundle_data_to_write()) == ["t/n/0x00000000_0x40000000", "t/n/0x80000000_0xc0000000"]
    m.conf = ServiceConfig(load_balancer_max_number_of_bundles_in_bundle_load_report=0)
    assert len(m.bundle_data_to_write()) == 5


def test_constructor_rejects_bad_arguments() -> None:
    conf = ServiceConfig()
    s = strategies.create("LeastLongTermMessageRate", random.Random(0))
    with pytest.raises(TypeError, match="conf"):
        ModularLoadManager({}, s, random.Random(0), broker_id=A)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="placement_strategy"):
        ModularLoadManager(conf, "LeastLongTermMessageRate", random.Random(0), broker_id=A)
    with pytest.raises(ValueError, match="broker_id"):
        ModularLoadManager(conf, s, random.Random(0), broker_id="")
