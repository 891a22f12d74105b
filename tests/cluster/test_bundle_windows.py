"""The columnar bundle windows must leave exactly what the object-by-object updateBundleData leaves.

Two load managers, one on `ColumnWindows` and one on `ObjectWindows`, get the same random history
(reports that change or stay, bundles that come, go, move and are reported twice mid-transfer,
assignments, splits, persisted data, odd window sizes) and must agree bit for bit after every step.
"""

from __future__ import annotations

import copy
import random
import struct
from typing import Any

import pytest

import strategies
from emulator.loadmanagers.modular.actors.modular_load_manager import ModularLoadManager
from emulator.model.bundle_columns import BundleColumns
from emulator.model.loaddata import namespace_of
from emulator.model.config import ServiceConfig
from emulator.model.loaddata import (
    BundleData,
    LocalBrokerData,
    NamespaceBundleStats,
    BrokerData,
    ResourceUsage,
    TimeAverageMessageData,
    encode_json,
)

BROKERS = [f"b{i}:8080" for i in range(5)]
BUNDLES = [f"t/n{i % 3}/0x{i:08x}_0x{i + 1:08x}" for i in range(60)]


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


def _snapshot(m: ModularLoadManager) -> Any:
    """Everything observable, floats as bit patterns (-0.0 and NaN payloads included)."""
    ld = m.view()
    bundle_data = [
        (b, d.topics, *[(w.max_samples, w.num_samples, *map(_bits, (w.msg_rate_in, w.msg_rate_out,
                                                                        w.msg_throughput_in, w.msg_throughput_out)))
                        for w in (d.short_term_data, d.long_term_data)])
        for b, d in ld.bundle_data.items()
    ]
    brokers = [
        (b, [_bits(getattr(bd.time_average_data, f)) for f in bd.time_average_data.__struct_fields__],
         [(p, _bits(d.long_term_data.msg_rate_in), _bits(d.short_term_data.msg_rate_out))
          for p, d in bd.preallocated_bundle_data.items()])
        for b, bd in ld.broker_data.items()
    ]
    ranges = {b: {ns: m.bundle_range_cache.ranges(b, ns) for ns in m.bundle_range_cache.namespaces(b)}
              for b in m.bundle_range_cache.brokers()}
    return bundle_data, brokers, ranges, dict(m.preallocated_bundle_to_broker), encode_json(ld)


def _stats(rng: random.Random) -> NamespaceBundleStats:
    pick = rng.random()
    if pick < 0.05:
        value = -0.0
    elif pick < 0.1:
        value = 0.0
    else:
        value = rng.choice([rng.uniform(0, 1e4), rng.lognormvariate(3, 4), float(rng.randint(0, 500))])
    return NamespaceBundleStats(msg_rate_in=value, msg_rate_out=rng.uniform(0, 1e3),
                                msg_throughput_in=rng.uniform(0, 1e7), msg_throughput_out=value * 1024,
                                topics=rng.randint(0, 4))


def _report(owned: list[str], rng: random.Random) -> LocalBrokerData:
    stats = {b: _stats(rng) for b in owned}
    return LocalBrokerData(cpu=ResourceUsage(rng.uniform(0, 100), 100.0), bundles=set(stats),
                           last_stats=stats, msg_rate_in=sum(s.msg_rate_in for s in stats.values()))


class _ReadsEveryBundle(strategies.BasePlacementStrategy):
    """A user strategy that reads other bundles' windows: the columns must all be synced for it."""

    def select_broker(self, candidates, bundle_to_assign, load_data, conf):  # type: ignore[no-untyped-def]
        return self.select_broker_explained(candidates, None, bundle_to_assign, load_data, conf).broker

    def select_broker_explained(self, candidates, bundle_name, bundle_to_assign, load_data, conf):  # type: ignore[no-untyped-def]
        totals = {b: 0.0 for b in candidates}
        for broker, data in load_data.broker_data.items():
            if broker in totals:
                for bundle in data.local_data.last_stats:
                    known = load_data.bundle_data.get(bundle)
                    if known is not None:
                        totals[broker] += known.short_term_data.msg_rate_in + known.long_term_data.num_samples
        return strategies.Selection(min(sorted(totals), key=lambda b: totals[b]) if totals else None, totals)


def _managers(literal: bool, persisted: dict[str, BundleData], strategy: str = "LeastLongTermMessageRate"
              ) -> list[ModularLoadManager]:
    conf = ServiceConfig(emulator_preallocation_literal_cleanup=literal,  # some bundles hot by value
                         load_balancer_namespace_bundle_max_msg_rate=4000,
                         load_balancer_namespace_bundle_max_bandwidth_mbytes=6)
    out = []
    for windows in ("columns", "objects"):
        placement = (_ReadsEveryBundle(random.Random(3)) if strategy == "user"
                     else strategies.create(strategy, random.Random(3)))
        out.append(ModularLoadManager(conf, placement, random.Random(3), broker_id=BROKERS[0],
                                      persisted_bundle_data=copy.deepcopy(persisted),
                                      windows=windows))
    return out


@pytest.mark.parametrize("strategy", ["LeastLongTermMessageRate", "user"])
@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("literal", [False, True])
def test_columns_match_the_object_loop_bit_for_bit(seed: int, literal: bool, strategy: str) -> None:
    rng = random.Random(seed)
    persisted = {
        b: BundleData(TimeAverageMessageData(rng.choice([0, 1, 10]), rng.randint(0, 3), 1.5, 2.5, 3.5, 4.5),
                      TimeAverageMessageData(rng.choice([0, 2, 1000]), rng.randint(0, 3), 7.0, -0.0, 1e300, 5.0), 3)
        for b in rng.sample(BUNDLES, 10)
    }
    managers = _managers(literal, persisted, strategy)
    owner = {b: rng.choice(BROKERS) for b in rng.sample(BUNDLES, 40)}
    reports: dict[str, LocalBrokerData | None] = {}
    for broker in BROKERS:
        reports[broker] = _report([b for b, o in owner.items() if o == broker], rng)
    alive = list(BROKERS)
    for _step in range(60):
        action = rng.random()
        if action < 0.35:  # one broker writes a new report
            broker = rng.choice(alive)
            reports[broker] = _report([b for b, o in owner.items() if o == broker], rng)
        elif action < 0.45:  # a bundle moves; the old owner may still report it (reported twice)
            bundle = rng.choice(BUNDLES)
            target = rng.choice(alive)
            old = owner.get(bundle)
            owner[bundle] = target
            reports[target] = _report([b for b, o in owner.items() if o == target], rng)
            if old is not None and old != target and rng.random() < 0.5:
                reports[old] = _report([b for b, o in owner.items() if o == old] + [bundle], rng)
        elif action < 0.5:  # a bundle disappears from its owner's report
            if owner:
                bundle = rng.choice(sorted(owner))
                old = owner.pop(bundle)
                if old in alive:
                    reports[old] = _report([b for b, o in owner.items() if o == old], rng)
        elif action < 0.6:  # assignments (preallocations, new bundle data)
            for bundle in rng.sample(BUNDLES, 3):
                results = [m.select_broker_for_assignment(bundle) for m in managers]
                assert repr(results[0]) == repr(results[1])  # the choice and its trace (NaN scores too)
        elif action < 0.65:  # split detection's removal
            bundle = rng.choice(BUNDLES)
            for m in managers:
                m.remove_bundle_data(bundle)
        elif action < 0.7:  # a broker dies or comes back
            broker = rng.choice(BROKERS[1:])
            if broker in alive:
                alive.remove(broker)
                for m in managers:
                    m.reap_dead_broker_preallocations(alive)
            else:
                alive.append(broker)
                reports[broker] = _report([b for b, o in owner.items() if o == broker], rng)
        elif action < 0.8:  # the 15-minute writer's extra update, same reports
            owned = rng.sample(BUNDLES, 20)
            removed = [m.update_bundle_data(owned) for m in managers]
            assert removed[0] == removed[1]
            continue
        owned = rng.sample(BUNDLES, 20)
        results = [m.update_all(alive, {b: reports[b] for b in alive}, owned) for m in managers]
        assert results[0] == results[1]
        if rng.random() < 0.7:  # the leader's split check after an update, on unsynced columns
            counts = rng.choice([0, 1, 2])
            assert managers[0].find_bundles_to_split(lambda ns, counts=counts: counts) == \
                managers[1].find_bundles_to_split(lambda ns, counts=counts: counts)
            assert managers[0].reported_namespaces() == managers[1].reported_namespaces() == \
                list(dict.fromkeys(namespace_of(b) for d in managers[0].load_data.broker_data.values()
                                   for b in d.local_data.last_stats))   # the union, kept or made again
        if rng.random() < 0.5:  # read at some steps only: columns may lag several updates behind
            assert _snapshot(managers[0]) == _snapshot(managers[1])
            assert managers[0].bundle_data_to_write() == managers[1].bundle_data_to_write()
    assert _snapshot(managers[0]) == _snapshot(managers[1])


def test_one_report_reused_many_times_matches() -> None:
    bundle = BUNDLES[0]
    managers = _managers(False, {})
    rep = LocalBrokerData(bundles={bundle}, last_stats={bundle: NamespaceBundleStats(msg_rate_in=0.1, topics=2)})
    for _ in range(1500):  # past the long window's 1000 samples
        for m in managers:
            m.update_all([BROKERS[0]], {BROKERS[0]: rep}, [])
    assert _snapshot(managers[0]) == _snapshot(managers[1])
    assert managers[0].view().bundle_data[bundle].long_term_data.num_samples == 1000


def test_sums_add_left_to_right_from_zero() -> None:
    import numpy as np

    values = np.array([[-0.0] * 8, [1e16] * 8, [1.0] * 8, [-1e16] * 8], dtype=np.float64)
    loop = 0.0
    for v in values[:, 0].tolist():
        loop += v
    assert BundleColumns.sums(values)[0] == loop == 0.0  # pairwise summation would give 1.0
    assert _bits(BundleColumns.sums(values[:1])[0]) == _bits(0.0)


def _broker() -> BrokerData:
    return BrokerData(local_data=LocalBrokerData())


def test_preallocated_sum_is_the_loop_sum() -> None:
    p = _broker()
    rng = random.Random(5)
    expected = 0.0
    for i in range(200):
        d = BundleData.default()
        d.long_term_data.msg_rate_in = rng.lognormvariate(2, 3)
        p.preallocate(f"b{i}", d)
        expected += d.long_term_data.msg_rate_in + d.long_term_data.msg_rate_out
        assert p.preallocated_long_term_msg_rate() == expected
    p.release_preallocation("b3")
    again = 0.0
    for d in p.preallocated_bundle_data.values():
        again += d.long_term_data.msg_rate_in + d.long_term_data.msg_rate_out
    assert p.preallocated_long_term_msg_rate() == again
    p.clear_preallocations()
    assert p.preallocated_long_term_msg_rate() == 0.0 and p.preallocated_bundle_data == {}


def test_a_held_object_keeps_its_last_samples_after_removal() -> None:
    """Literal clean-up keeps a preallocation of an owned bundle; when no report lists the bundle
    any more it leaves `bundle_data`, but the preallocation still scores with its last values."""
    bundle = BUNDLES[0]
    a, b = BROKERS[0], BROKERS[1]
    managers = _managers(True, {})
    with_bundle = LocalBrokerData(bundles={bundle}, last_stats={bundle: NamespaceBundleStats(msg_rate_in=300.0)})
    empty = LocalBrokerData()
    for m in managers:
        m.update_all([a, b], {a: with_bundle, b: empty}, [bundle])
        m._preallocate(bundle, b)  # as select_broker_for_assignment would
        m.update_all([a, b], {a: with_bundle, b: empty}, [bundle])  # a sample the objects never saw read
        m.update_all([a, b], {a: empty, b: empty}, [bundle])  # gone from every report
    held = [m.load_data.broker_data[b].preallocated_bundle_data[bundle] for m in managers]
    assert held[0].long_term_data == held[1].long_term_data
    assert held[0].long_term_data.num_samples == 2


def test_preallocated_topics_follow_the_map() -> None:
    p = _broker()
    for i in range(5):
        d = BundleData.default()
        d.topics = i
        p.preallocate(f"b{i}", d)
    assert p.preallocated_topics() == 10
    p.preallocated_bundle_data["b0"].topics = 7  # changed in place: only the owner's call tells
    p.preallocated_data_changed()
    assert p.preallocated_topics() == 17
    p.release_preallocation("b4")
    assert p.preallocated_topics() == 13
    p.preallocate("b1", BundleData.default())  # replaced: added up again
    assert p.preallocated_topics() == 12


def test_preallocated_sums_see_the_map_changed_behind_them() -> None:
    """Entries added or removed without `preallocate` (a hand-built BrokerData, a test) or a map
    replaced are added up again; a plain BrokerData works without any of the methods."""
    p = _broker()
    p.preallocate("a", BundleData.default())
    assert p.preallocated_long_term_msg_rate() == 100.0
    p.preallocated_bundle_data["b"] = BundleData.default()
    assert p.preallocated_long_term_msg_rate() == 200.0
    del p.preallocated_bundle_data["a"]
    assert p.preallocated_topics() == 0 and p.preallocated_long_term_msg_rate() == 100.0
    p.preallocated_bundle_data = {}
    assert p.preallocated_long_term_msg_rate() == 0.0
    assert BrokerData(local_data=LocalBrokerData(), preallocated_bundle_data={"x": BundleData.default()}
                      ).preallocated_long_term_msg_rate() == 100.0


def test_bundle_data_of_brings_just_that_bundle_up_to_date() -> None:
    managers = _managers(False, {})
    stats = {b: NamespaceBundleStats(msg_rate_in=float(i + 1), topics=1) for i, b in enumerate(BUNDLES[:3])}
    rep = LocalBrokerData(bundles=set(stats), last_stats=stats)
    for m in managers:
        m.update_all([BROKERS[0]], {BROKERS[0]: rep}, [])
        m.update_all([BROKERS[0]], {BROKERS[0]: rep}, [])
    one = [m.bundle_data_of(BUNDLES[1]) for m in managers]
    assert one[0] == one[1] and one[0] is not None and one[0].short_term_data.num_samples == 2
    assert managers[0].bundle_data_of("t/none/0x00000000_0xffffffff") is None
    assert _snapshot(managers[0]) == _snapshot(managers[1])


@pytest.mark.parametrize("sizes", [[3, 0, 5, 1], [0, 0], [7], [1, 200] + [1] * 39])
def test_segment_sums_are_the_sums_of_each_segment(sizes: list[int]) -> None:
    import numpy as np

    rng = random.Random(sum(sizes))
    pool = [-0.0, 0.0, 1e308, 1e308, -1e308, float("nan"), float("inf"), 1e-300, 3.5, -2.25, 1e16, 1.0]
    values = np.array([[rng.choice(pool) if rng.random() < 0.3 else rng.lognormvariate(0, 6)
                        for _ in range(8)] for _ in range(sum(sizes))], dtype=np.float64).reshape(-1, 8)
    expected, start = [], 0
    for size in sizes:
        expected.append([_bits(x) for x in BundleColumns.sums(values[start:start + size])])
        start += size
    got = [[_bits(x) for x in row] for row in BundleColumns.segment_sums(values, sizes)]
    assert got == expected


# --------------------------------------------------------------------------- the fast path, declared


class _BrokerLevelUser(strategies.BasePlacementStrategy):
    """A user's strategy that declares it reads no bundle windows."""

    placement_reads_bundle_data = False

    def select_broker(self, candidates, bundle_to_assign, load_data, conf):  # type: ignore[no-untyped-def]
        return min(candidates) if candidates else None


def _pending_rows(m: ModularLoadManager) -> int:
    columns = m.windows.columns  # type: ignore[attr-defined]
    return int(columns.dirty[:len(columns.names)].sum())


@pytest.mark.parametrize("placement, pending_after", [(_BrokerLevelUser, 2), (_ReadsEveryBundle, 0)])
def test_only_a_strategy_that_declares_it_skips_making_every_window_current(placement: Any,
                                                                              pending_after: int) -> None:
    m = ModularLoadManager(ServiceConfig(), placement(random.Random(1)), random.Random(1), broker_id=BROKERS[0])
    stats = {b: NamespaceBundleStats(msg_rate_in=float(i + 1), topics=1) for i, b in enumerate(BUNDLES[:3])}
    m.update_all(BROKERS[:2], {BROKERS[0]: LocalBrokerData(bundles=set(stats), last_stats=stats),
                               BROKERS[1]: LocalBrokerData()}, [])
    assert _pending_rows(m) == 3
    chosen, _ = m.select_broker(BUNDLES[0])  # the bundle to assign is always made current
    assert chosen in BROKERS[:2]
    assert _pending_rows(m) == pending_after
    assert m.view().bundle_data[BUNDLES[1]].short_term_data.msg_rate_in == 2.0
    assert _pending_rows(m) == 0


def test_the_built_ins_declare_the_fast_path_and_the_core_imports_none_of_them() -> None:
    import emulator.loadmanagers.modular.actors.modular_load_manager as core
    import shedders

    for name in strategies.names():
        assert strategies.create(name, random.Random(1)).placement_reads_bundle_data is False, name
    for name in shedders.names():
        assert getattr(shedders.create(name, random.Random(1)), "shedding_reads_bundle_data", True), name
    concrete = [v for v in vars(core).values() if isinstance(v, type)
                and v.__module__.split(".")[0] in ("strategies", "shedders")]
    assert concrete == []


# --------------------------------------------------------------------------- reports, immutable


def test_a_report_changed_after_it_was_handed_over_changes_nothing() -> None:
    """The manager keeps a `last_stats` of its own and the stats are frozen: whatever the caller
    does to the report afterwards, the manager's view and the caches keyed by it stay as they were."""
    managers = _managers(False, {})
    stats = {b: NamespaceBundleStats(msg_rate_in=float(i + 1), topics=2) for i, b in enumerate(BUNDLES[:4])}
    rep = LocalBrokerData(bundles=set(stats), last_stats=stats)
    for m in managers:
        m.update_all([BROKERS[0]], {BROKERS[0]: rep}, [])
    with pytest.raises(AttributeError):
        stats[BUNDLES[0]].msg_rate_in = 1e9  # type: ignore[misc]
    stats[BUNDLES[1]] = NamespaceBundleStats(msg_rate_in=1e9, topics=9)  # the caller's dict, not ours
    del stats[BUNDLES[2]]
    for m in managers:
        m.update_all([BROKERS[0]], {BROKERS[0]: rep}, [])  # the same object: the same report
        held = m.view().broker_data[BROKERS[0]].local_data.last_stats
        assert list(held) == BUNDLES[:4] and held[BUNDLES[1]].msg_rate_in == 2.0
        assert m.view().bundle_data[BUNDLES[1]].short_term_data.msg_rate_in == 2.0
        assert m.view().broker_data[BROKERS[0]].time_average_data.short_term_msg_rate_in == 10.0
    assert _snapshot(managers[0]) == _snapshot(managers[1])
