"""Java's `List.sort(comparator)` for the comparators Pulsar's load managers use, some of which are not
consistent (their order then depends on the sorting algorithm): shared by the Modular shedders and the
Extensible load manager's TopKBundles, so it lives in the model layer."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["java_list_sort"]

T = TypeVar("T")


def java_list_sort(items: Sequence[T], compare: Callable[[T, T], int]) -> list[T]:
    """`List.sort(comparator)` as Java's TimSort does it, for comparators that may be inconsistent.

    With a consistent comparator any stable sort gives the same answer; with an inconsistent one
    (AvgShedder's old `(int)(s1 - s2)`) the answer depends on the algorithm. Below 32 elements Java
    sorts with `countRunAndMakeAscending` + `binarySort`, ported here exactly. From 32 elements up
    Java merges runs with galloping, which we do not port: Python's own TimSort is used instead, so
    ties between scores less than one point apart may come out in another order there.
    """
    a = list(items)
    n = len(a)
    if n < 2:
        return a
    if n >= 32:
        return sorted(a, key=functools.cmp_to_key(compare))
    # countRunAndMakeAscending
    run_hi = 1
    if compare(a[run_hi], a[0]) < 0:
        run_hi += 1
        while run_hi < n and compare(a[run_hi], a[run_hi - 1]) < 0:
            run_hi += 1
        a[0:run_hi] = a[0:run_hi][::-1]
    else:
        run_hi += 1
        while run_hi < n and compare(a[run_hi], a[run_hi - 1]) >= 0:
            run_hi += 1
    # binarySort from the end of the run
    for start in range(run_hi, n):
        pivot = a[start]
        left, right = 0, start
        while left < right:
            mid = (left + right) >> 1
            if compare(pivot, a[mid]) < 0:
                right = mid
            else:
                left = mid + 1
        a[left + 1 : start + 1] = a[left:start]
        a[left] = pivot
    return a
