"""LoadedTopics drops exactly the topics of an unloaded bundle's range on that broker, as a scan of
every loaded name would."""

from __future__ import annotations

import random

from emulator.model.bundles import FULL_UPPER, bundle_name, topic_hash, topic_namespace
from emulator.observe.loaded_topics import LoadedTopics


def _in_bundle(topic: str, namespace: str, lower: int, upper: int) -> bool:
    h = topic_hash(topic)
    return topic_namespace(topic) == namespace and (lower <= h < upper or (upper == FULL_UPPER and h == upper))


def test_add_says_whether_the_topic_is_new_on_that_broker() -> None:
    loaded = LoadedTopics()
    assert loaded.add("b1", "persistent://t/ns/a")
    assert not loaded.add("b1", "persistent://t/ns/a")
    assert loaded.add("b2", "persistent://t/ns/a")
    loaded.drop_broker("b1")
    assert loaded.add("b1", "persistent://t/ns/a")
    assert loaded.topics("b1") == {"persistent://t/ns/a"}


def test_drop_bundle_matches_a_scan_of_every_name() -> None:
    rng = random.Random(3)
    namespaces = ["t/ns-0", "t/ns-1", "t/c/ns-2"]
    topics = [f"persistent://{namespaces[i % 3]}/topic-{i}" for i in range(600)] + ["short-name"]
    bounds = [0, 0x40000000, 0x80000000, 0xC0000000, FULL_UPPER]
    loaded = LoadedTopics()
    expected: dict[str, set[str]] = {"b0": set(), "b1": set()}
    loaded.seed("b0", topics[:100])
    expected["b0"] = set(topics[:100])
    for step in range(400):
        broker = f"b{rng.randrange(2)}"
        if rng.random() < 0.7:
            topic = rng.choice(topics)
            assert loaded.add(broker, topic) == (topic not in expected[broker])
            expected[broker].add(topic)
        else:
            k = rng.randrange(4)
            ns = rng.choice(namespaces + ["public/default"])
            lower, upper = bounds[k], bounds[k + 1]
            loaded.drop_bundle(broker, bundle_name(ns, lower, upper))
            expected[broker] = {t for t in expected[broker] if not _in_bundle(t, ns, lower, upper)}
        assert loaded.topics(broker) == expected[broker], step
    assert any(expected.values())


def test_the_last_bundle_holds_the_top_hash() -> None:
    loaded = LoadedTopics()
    topic = "persistent://t/ns/x"
    loaded.add("b", topic)
    h = topic_hash(topic)
    loaded.drop_bundle("b", bundle_name("t/ns", 0, h))          # upper open: h is not in it
    assert loaded.topics("b") == {topic}
    loaded.drop_bundle("b", bundle_name("t/ns", h, FULL_UPPER))
    assert loaded.topics("b") == set()
