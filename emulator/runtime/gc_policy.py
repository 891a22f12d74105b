"""Garbage-collector settings for a run: collect the young generation less often.

A cluster keeps tens of thousands of live objects that wait (tasks, futures, handles, bundle
data), and every hop allocates a few short-lived containers. With CPython's default first
threshold (700 allocations) the young collections keep promoting waiting objects, and the full
collections that growth then triggers walk the whole heap: in a 30,000-topic lookup storm they
took 60-70% of the wall time. Raising the first threshold lets short-lived objects die by
reference counting before any collection sees them; measured in the same storm (process time):
9.1 s at 700, 4.2 s at 20,000-100,000, 3.5 s with the collector off. Cycles are still collected,
so memory stays bounded (peak RSS unchanged in that storm).

The second threshold (young collections between two collections of the middle generation) is
raised from 10 to 50 as well. A storm's producers and their requests live for a few young
collections and then die by reference counting; every 10 young collections the middle generation
walked all of them again. Measured at 100,000 topics, interleaved: lookups/s +8-10 % (threshold 10
-> 50, the same with 100); the restart case (100 brokers, 65,000 bundles, 100,000 producers)
spent 20.6 s instead of 33.2 s collecting, for a peak RSS of 3.76 instead of 3.64 GiB (100 gave
3.86 GiB, hence 50).

The first threshold went from 50,000 to 200,000 with issue 31, measured back to back in pairs on
`pulsar-large` (process CPU, the pair run side by side): 40.6 -> 38.3 s at 100,000 topics and 162.6 ->
152.5 s at 300,000 (-6 %), for a peak RSS of 555 -> 563 MiB and 1,594 -> 1,618 MiB (+1.5 %). A young
collection costs what it finds alive (its cost per object grows with the heap it points into: 19 ms at
100,000 topics, 39 ms at 1,000,000); four times fewer of them leave most in-flight objects dead by then.

The threshold is process-wide state, so it is set for the duration of one run and restored
afterwards; runs in several threads at once would share it.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["RUN_GC_THRESHOLD", "RUN_GC_THRESHOLD1", "gc_tuned"]

RUN_GC_THRESHOLD = 200_000
"""Allocations (net of frees) between young-generation collections during a run."""

RUN_GC_THRESHOLD1 = 50
"""Young collections between two collections of the middle generation during a run."""


@contextlib.contextmanager
def gc_tuned(threshold0: int | None = RUN_GC_THRESHOLD,
             threshold1: int = RUN_GC_THRESHOLD1) -> Iterator[None]:
    """Raise the collector's first two thresholds to at least `threshold0` and `threshold1` inside
    the block (threshold0 None: leave the collector alone); the previous thresholds come back on
    exit."""
    if threshold0 is not None and not _positive_int(threshold0):
        raise ValueError(f"gc threshold0 = {threshold0!r}; expected an int >= 1 or None")
    if not _positive_int(threshold1):
        raise ValueError(f"gc threshold1 = {threshold1!r}; expected an int >= 1")
    if threshold0 is None:
        yield
        return
    old = gc.get_threshold()
    gc.set_threshold(max(threshold0, old[0]), max(threshold1, old[1]), *old[2:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
