"""FlatLoad: stats per bundle, kept while the bundle's topic table is unchanged."""

from __future__ import annotations

from emulator.cluster.load_source import FlatLoad, TopicLoad, TopicTable


def table(**producers: int) -> TopicTable:
    t = TopicTable()
    for topic, n in producers.items():
        t[topic] = TopicLoad(producers=n, consumers=1)
    return t


def test_stats_are_reused_until_the_table_changes_and_match_a_fresh_computation():
    load = FlatLoad(rate=10.0, msg_size=100, topic_rates={"b": 30.0})
    t = table(a=1, b=1)
    first = load.bundle_stats("x:8080", 0.0, {"ns/0x0_0x1": t})["ns/0x0_0x1"]
    assert (first.msg_rate_in, first.msg_rate_out, first.topics) == (40.0, 40.0, 2)
    assert load.bundle_stats("x:8080", 5.0, {"ns/0x0_0x1": t})["ns/0x0_0x1"] is first
    t["c"] = TopicLoad(producers=1)
    t.version += 1
    changed = load.bundle_stats("x:8080", 10.0, {"ns/0x0_0x1": t})["ns/0x0_0x1"]
    assert changed is not first and (changed.msg_rate_in, changed.topics) == (50.0, 3)
    # another table object for the same bundle (a new owner after an unload) is not mistaken
    other = table(a=1)
    other.version = t.version
    assert load.bundle_stats("x:8080", 15.0, {"ns/0x0_0x1": other})["ns/0x0_0x1"].topics == 1
    # plain dicts carry no version: computed every time, the same numbers
    plain = {"a": TopicLoad(producers=1, consumers=1), "b": TopicLoad(producers=1, consumers=1)}
    assert load.bundle_stats("x:8080", 0.0, {"ns/0x0_0x1": plain})["ns/0x0_0x1"] == first


def test_brokers_sharing_one_load_source_keep_their_own_entries():
    load = FlatLoad(rate=10.0)
    tables = {f"b{i}": {f"ns/0x{i}_0x{i + 1}": table(**{f"t{i}": 1})} for i in range(3000)}
    first = {b: load.bundle_stats(b, 0.0, t) for b, t in tables.items()}
    again = {b: load.bundle_stats(b, 5.0, t) for b, t in tables.items()}
    # every broker's stats survived the other 2,999 brokers' ticks
    assert all(again[b][k] is first[b][k] for b in tables for k in tables[b])
