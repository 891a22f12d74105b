"""Both `BundleWindows` give the same numbers, bit for bit, through the interface alone.

(`tests/cluster/test_bundle_windows.py` drives them through the load manager, with preallocations,
splits and placements in between.)
"""

from __future__ import annotations

import copy
import random
import struct
from typing import Any

import msgspec
import pytest

from emulator.model.bundle_windows import ColumnWindows, ObjectWindows, make_bundle_windows
from emulator.model.loaddata import (
    BrokerData,
    BundleData,
    LocalBrokerData,
    NamespaceBundleStats,
    TimeAverageMessageData,
)

BUNDLES = [f"t/n/0x{i:08x}_0x{i + 1:08x}" for i in range(40)]
BROKERS = ["a:8080", "b:8080", "c:8080"]


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


def _numbers(data: dict[str, BundleData]) -> list[Any]:
    return [(b, d.topics, *[(w.max_samples, w.num_samples, *map(_bits, (w.msg_rate_in, w.msg_rate_out,
                                                                       w.msg_throughput_in, w.msg_throughput_out)))
                            for w in (d.short_term_data, d.long_term_data)]) for b, d in data.items()]


def _brokers(rng: random.Random) -> dict[str, BrokerData]:
    out = {}
    for broker in BROKERS:
        owned = rng.sample(BUNDLES, rng.randint(0, 12))  # overlaps: some bundles reported twice
        stats = {b: NamespaceBundleStats(rng.choice([-0.0, rng.lognormvariate(3, 4)]), rng.uniform(0, 1e3),
                                         rng.uniform(0, 1e7), rng.choice([0.0, 1e300]), topics=rng.randint(0, 3))
                 for b in owned}
        out[broker] = BrokerData(local_data=LocalBrokerData(bundles=set(stats), last_stats=stats))
    return out


def _averages(brokers: dict[str, BrokerData]) -> list[bytes]:
    return [_bits(getattr(d.time_average_data, f)) for d in brokers.values()
            for f in d.time_average_data.__struct_fields__]


@pytest.mark.parametrize("seed", range(20))
def test_objects_and_columns_give_the_same_numbers(seed: int) -> None:
    rng = random.Random(seed)
    persisted = {b: BundleData(TimeAverageMessageData(10, rng.randint(0, 3), 1.5, 2.5, 3.5, 4.5),
                               TimeAverageMessageData(1000, 2, 7.0, -0.0, 1e300, 5.0), 3)
                 for b in rng.sample(BUNDLES, 8)}
    windows = [ObjectWindows(persisted), ColumnWindows(persisted)]
    brokers = _brokers(rng)
    views = [copy.deepcopy(brokers), brokers]  # each implementation writes its own time averages
    for _ in range(25):
        if rng.random() < 0.4:
            brokers = _brokers(rng)
            views = [copy.deepcopy(brokers), brokers]
        seen: list[list[Any]] = [[], []]
        removed = [w.update(v, lambda broker, data, log=log, w=w: log.append((broker, list(w.data))))
                   for w, v, log in zip(windows, views, seen)]
        assert removed[0] == removed[1]
        assert seen[0] == seen[1]  # each broker's turn sees the same members, in the same order
        assert _averages(views[0]) == _averages(views[1])
        if rng.random() < 0.3:
            bundle = rng.choice(BUNDLES)
            got = [w.get(bundle) for w in windows]
            assert (got[0] is None) == (got[1] is None)
            if got[0] is not None and got[1] is not None:
                assert _numbers({bundle: got[0]}) == _numbers({bundle: got[1]})
        if rng.random() < 0.2:
            bundle = rng.choice(BUNDLES)
            assert _numbers({bundle: windows[0].admit(bundle)}) == _numbers({bundle: windows[1].admit(bundle)})
        _remove_and_compare(rng, windows, remove=0.2, compare=0.5)
    windows[1].current()
    assert _numbers(windows[0].data) == _numbers(windows[1].data)


def _remove_and_compare(rng: random.Random, windows: list[Any], remove: float, compare: float) -> None:
    """With these chances, a random bundle leaves both windows, and the columns made current give the
    objects' numbers."""
    if rng.random() < remove:
        bundle = rng.choice(BUNDLES)
        for w in windows:
            w.remove(bundle)
    if rng.random() < compare:
        windows[1].current()
        assert _numbers(windows[0].data) == _numbers(windows[1].data)


def _new_report(rng: random.Random, data: BrokerData, same_bundles: bool) -> None:
    owned = list(data.local_data.last_stats) if same_bundles else rng.sample(BUNDLES, rng.randint(0, 12))
    stats = {b: NamespaceBundleStats(rng.lognormvariate(3, 4), rng.uniform(0, 1e3), rng.uniform(0, 1e7),
                                     rng.uniform(0, 1e5), topics=rng.randint(0, 3)) for b in owned}
    data.local_data = LocalBrokerData(bundles=set(stats), last_stats=stats)


@pytest.mark.parametrize("seed", range(20))
def test_columns_patching_the_last_layout_give_the_same_numbers(seed: int) -> None:
    """With `busy`, updates where a few brokers send new reports (same bundles or not; bundles gone,
    removed while reported, or reported twice) give the numbers of the full walk, and `between` visits
    at least every broker with a new report or busy, each seeing what the full walk's turn saw."""
    rng = random.Random(seed)
    windows = [ObjectWindows({}), ColumnWindows({})]
    brokers = _brokers(rng)
    views = [copy.deepcopy(brokers), brokers]
    for _ in range(40):
        changed = set()
        for broker, data in brokers.items():
            if rng.random() < 0.3:
                _new_report(rng, data, same_bundles=rng.random() < 0.7)
                views[0][broker].local_data = data.local_data
                changed.add(broker)
        busy = set(rng.sample(list(brokers), rng.randint(0, 2)))
        seen: list[list[Any]] = [[], []]
        removed = [w.update(v, lambda broker, data, log=log, w=w: log.append((broker, list(w.data))), busy)
                   for w, v, log in zip(windows, views, seen)]
        assert removed[0] == removed[1]
        assert all(turn in seen[0] for turn in seen[1])
        assert changed | busy <= {broker for broker, _ in seen[1]}
        assert _averages(views[0]) == _averages(views[1])
        _remove_and_compare(rng, windows, remove=0.15, compare=0.3)
    windows[1].current()
    assert _numbers(windows[0].data) == _numbers(windows[1].data)


def test_the_choice_is_made_by_name() -> None:
    assert isinstance(make_bundle_windows("objects", {}), ObjectWindows)
    assert isinstance(make_bundle_windows("columns", {}), ColumnWindows)
    with pytest.raises(ValueError, match="expected 'objects' or 'columns'"):
        make_bundle_windows("rows", {})  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(20))
def test_split_candidates_hold_every_bundle_detection_finds(seed: int) -> None:
    """Detection over the columns' prefilter selects what the walk over every report selects, at
    thresholds around the random numbers (rate, throughput, topics, sessions), stale objects or not."""
    from emulator.model.config import ServiceConfig
    from emulator.model.loaddata import LoadData
    from emulator.model.split_detection import MIBI, find_bundles_to_split

    rng = random.Random(seed)
    windows = ColumnWindows({})
    found = 0
    for _ in range(15):
        brokers = _brokers(rng)
        for data in brokers.values():
            stats_map = data.local_data.last_stats
            for bundle, stats in stats_map.items():
                stats_map[bundle] = msgspec.structs.replace(stats, producer_count=rng.randint(0, 3),
                                                            consumer_count=rng.randint(0, 3))
        windows.update(brokers, lambda broker, data: None)
        if rng.random() < 0.3:
            windows.current()
        conf = ServiceConfig(load_balancer_namespace_bundle_max_topics=rng.choice([1, 2, 1000]),
                             load_balancer_namespace_bundle_max_sessions=rng.choice([0, 3, 1000]),
                             load_balancer_namespace_bundle_max_msg_rate=rng.choice([1, 100, 30000]),
                             load_balancer_namespace_bundle_max_bandwidth_mbytes=rng.choice([1, 100]))
        max_rate = conf.load_balancer_namespace_bundle_max_msg_rate
        max_bandwidth = conf.load_balancer_namespace_bundle_max_bandwidth_mbytes * MIBI
        windows.prepare_split_check(brokers, max_rate, max_bandwidth)
        candidates = windows.split_candidates(brokers, conf.load_balancer_namespace_bundle_max_topics,
                                              conf.load_balancer_namespace_bundle_max_sessions, max_rate,
                                              max_bandwidth)
        assert candidates is not None
        load_data = LoadData(broker_data=brokers, bundle_data=windows.data)
        every = find_bundles_to_split(load_data, conf, lambda ns: 1)
        found += len(every)
        assert find_bundles_to_split(load_data, conf, lambda ns: 1, candidates) == every
    assert found  # the thresholds above catch some
