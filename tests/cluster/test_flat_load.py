"""FlatLoad: stats per bundle kept while the bundle's topic table is unchanged."""

from __future__ import annotations

import pytest

from emulator.cluster.load_source import FlatLoad, TopicLoad, TopicTable


def table(**producers: int) -> TopicTable:
    t = TopicTable()
    for topic, n in producers.items():
        t[topic] = TopicLoad(producers=n, consumers=1)
    return t


def stats_of(load: FlatLoad, t, broker: str = "x:8080"):
    return load.bundle_stats(broker, 0.0, {"ns/0x0_0x1": t})["ns/0x0_0x1"]


def test_sums_are_kept_until_the_table_changes_and_match_a_fresh_computation(monkeypatch):
    load = FlatLoad(rate=10.0, msg_size=100, topic_rates={"b": 30.0})
    t = table(a=1, b=1)
    walks = []
    real = load._sums_of
    monkeypatch.setattr(load, "_sums_of", lambda topics: walks.append(1) or real(topics))
    first = stats_of(load, t)
    assert (first.msg_rate_in, first.msg_rate_out, first.msg_throughput_in, first.topics) == (
        40.0, 40.0, 4000.0, 2)
    again = stats_of(load, t)
    assert again == first and len(walks) == 1          # not walked again
    t["c"] = TopicLoad(producers=1)
    t.version += 1
    changed = stats_of(load, t)
    assert (changed.msg_rate_in, changed.topics) == (50.0, 3) and len(walks) == 2
    # another table object for the same bundle (a new owner after an unload) is not mistaken
    other = table(a=1)
    other.version = t.version
    assert stats_of(load, other).topics == 1 and len(walks) == 3
    # plain dicts carry no version: walked every time, the same numbers
    plain = {"a": TopicLoad(producers=1, consumers=1), "b": TopicLoad(producers=1, consumers=1)}
    assert stats_of(load, plain) == first and stats_of(load, plain) == first and len(walks) == 5


def test_an_unchanged_table_gets_the_same_frozen_stats_object_back():
    """Frozen, so one object serves every report tick while the table is unchanged (a day-curve
    wrapper makes scaled copies); a changed table gets a new one."""
    load = FlatLoad(rate=10.0)
    t = table(a=1)
    s = stats_of(load, t)
    with pytest.raises(AttributeError):
        s.msg_rate_in *= 0.5
    assert stats_of(load, t) is s
    t["b"] = TopicLoad(producers=1)
    t.version += 1
    assert stats_of(load, t) is not s and stats_of(load, t).topics == 2


def test_brokers_sharing_one_load_source_keep_their_own_entries(monkeypatch):
    load = FlatLoad(rate=10.0)
    tables = {f"b{i}": {f"ns/0x{i}_0x{i + 1}": table(**{f"t{i}": 1})} for i in range(3000)}
    for b, t in tables.items():
        load.bundle_stats(b, 0.0, t)
    walks = []
    real = load._sums_of
    monkeypatch.setattr(load, "_sums_of", lambda topics: walks.append(1) or real(topics))
    for b, t in tables.items():
        load.bundle_stats(b, 5.0, t)
    assert walks == []  # every broker's sums survived the other 2,999 brokers' ticks
