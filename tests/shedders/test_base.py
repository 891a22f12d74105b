"""Java arithmetic and ordering helpers in shedders.base."""

from __future__ import annotations

import functools
import math
import random

import pytest

from shedders.base import (
    INTEGER_MAX_VALUE,
    INTEGER_MIN_VALUE,
    BaseShedder,
    java_double_key,
    java_int,
    java_int_add,
    java_list_sort,
    select_until_offloaded,
    sorted_by_traffic_desc,
)


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (1999.9, 1999),
        (-1000.7, -1000),
        (0.99, 0),
        (-0.99, 0),
        (math.nan, 0),
        (1e20, INTEGER_MAX_VALUE),
        (-1e20, INTEGER_MIN_VALUE),
        (math.inf, INTEGER_MAX_VALUE),
    ],
)
def test_java_int_cast(x: float, expected: int) -> None:
    assert java_int(x) == expected


def test_java_int_add_wraps() -> None:
    assert java_int_add(INTEGER_MAX_VALUE, 1) == INTEGER_MIN_VALUE
    assert java_int_add(1999, java_int(-1000.7)) == 999


def test_double_compare_order() -> None:
    values = [1.0, math.nan, -0.0, 0.0, -math.inf, math.inf]
    ordered = sorted(values, key=java_double_key)
    assert ordered[:2] == [-math.inf, -0.0] and math.copysign(1.0, ordered[1]) == -1.0
    assert ordered[2:5] == [0.0, 1.0, math.inf] and math.isnan(ordered[5])


def test_traffic_desc_is_stable_for_ties() -> None:
    pairs = [("a", 1.0), ("b", 2.0), ("c", 1.0), ("d", 2.0)]
    assert [b for b, _ in sorted_by_traffic_desc(pairs)] == ["b", "d", "a", "c"]


def test_select_until_offloaded_walks_the_whole_list() -> None:
    assert select_until_offloaded([("a", 5.0), ("b", 3.0)], 0.0) == ["a"]  # at least one
    assert select_until_offloaded([("a", 5.0), ("b", 3.0), ("c", 1.0)], 6.0) == ["a", "b"]
    assert select_until_offloaded([], 6.0) == []


def int_cmp(scores: dict[str, float]):  # type: ignore[no-untyped-def]
    return lambda a, b: java_int(scores[a] - scores[b])


def test_java_list_sort_matches_any_stable_sort_for_a_consistent_comparator() -> None:
    rng = random.Random(4)
    for n in (0, 1, 2, 5, 17, 31, 32, 60):
        items = [rng.randrange(10) for _ in range(n)]
        indexed = list(enumerate(items))
        cmp = lambda x, y: (x[1] > y[1]) - (x[1] < y[1])  # noqa: E731
        assert java_list_sort(indexed, cmp) == sorted(indexed, key=functools.cmp_to_key(cmp))


def test_java_list_sort_with_an_inconsistent_comparator_follows_timsort() -> None:
    """Worked by hand through countRunAndMakeAscending + binarySort (n < 32)."""
    s = {"a": 50.9, "b": 50.2, "c": 10.0}
    assert java_list_sort(["a", "b", "c"], int_cmp(s)) == ["c", "a", "b"]
    s = {"x": 5.0, "y": 3.0, "z": 2.5}  # strictly descending run [x, y] is reversed first
    assert java_list_sort(["x", "y", "z"], int_cmp(s)) == ["y", "z", "x"]


def test_base_shedder_checks_its_rng() -> None:
    with pytest.raises(TypeError, match="rng must be a random.Random, got int"):
        BaseShedder(3)  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError):
        BaseShedder(random.Random(0)).find_bundles_for_unloading(None, None)  # type: ignore[arg-type]
