"""RoundRobinBrokerSelector (§5.3)."""

from __future__ import annotations

import random

from emulator.model.config import ServiceConfig
from emulator.model.loaddata import BundleData, LoadData
from strategies.round_robin import INTEGER_MAX_VALUE, RoundRobinBrokerSelector

CONF = ServiceConfig()


def pick(s: RoundRobinBrokerSelector, cands: set[str]) -> str | None:
    return s.select_broker(cands, BundleData.default(), LoadData(), CONF)


def test_cycles_in_sorted_order() -> None:
    s = RoundRobinBrokerSelector(random.Random(0))
    cands = {"c:1", "a:1", "b:1"}
    assert [pick(s, cands) for _ in range(7)] == ["a:1", "b:1", "c:1", "a:1", "b:1", "c:1", "a:1"]


def test_membership_change_refreshes_the_cached_list() -> None:
    s = RoundRobinBrokerSelector(random.Random(0))
    assert pick(s, {"a:1", "b:1", "c:1"}) == "a:1"  # count 0 → idx 0
    # Same size, different member: cached [a, b, c][1] = b is still a candidate.
    assert pick(s, {"a:1", "b:1", "d:1"}) == "b:1"
    # idx 2 → cached c is gone → re-list [a, b, d] → d.
    assert pick(s, {"a:1", "b:1", "d:1"}) == "d:1"
    assert s.cache == ["a:1", "b:1", "d:1"]
    # Size change → fresh list; count 3 % 2 = 1.
    assert pick(s, {"x:1", "y:1"}) == "y:1"


def test_counter_wraps_like_a_java_int() -> None:
    s = RoundRobinBrokerSelector(random.Random(0))
    s.count = INTEGER_MAX_VALUE
    cands = {"a:1", "b:1", "c:1"}
    assert pick(s, cands) == sorted(cands)[INTEGER_MAX_VALUE % 3]
    assert s.count == 0
    assert pick(s, cands) == "a:1"


def test_empty_candidates_give_none_without_advancing() -> None:
    s = RoundRobinBrokerSelector(random.Random(0))
    assert pick(s, set()) is None
    assert s.count == 0
