"""gc_tuned: the collector's first two thresholds are raised for a run, then restored."""

from __future__ import annotations

import gc

import pytest

from emulator.runtime import VirtualClock, gc_tuned, run
from emulator.runtime.gc_policy import RUN_GC_THRESHOLD, RUN_GC_THRESHOLD1


@pytest.fixture
def default_thresholds():
    old = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*old)


def test_threshold_raised_inside_and_restored_after(default_thresholds):
    with gc_tuned(50_000):
        assert gc.get_threshold() == (50_000, 50, 10)
    assert gc.get_threshold() == (700, 10, 10)
    with gc_tuned(50_000, 20):
        assert gc.get_threshold() == (50_000, 20, 10)


def test_restored_even_when_the_block_raises(default_thresholds):
    with pytest.raises(KeyError):
        with gc_tuned(12_345):
            raise KeyError("x")
    assert gc.get_threshold() == (700, 10, 10)


def test_never_lowers_a_higher_threshold_and_none_leaves_it_alone(default_thresholds):
    gc.set_threshold(200_000, 80, 10)
    with gc_tuned(50_000):
        assert gc.get_threshold()[:2] == (200_000, 80)
    with gc_tuned(None):
        assert gc.get_threshold()[:2] == (200_000, 80)


def test_run_applies_it_for_the_duration_of_the_run(default_thresholds):
    async def main():
        return gc.get_threshold()[:2]

    assert run(main, clock=VirtualClock()) == (RUN_GC_THRESHOLD, RUN_GC_THRESHOLD1) == (200_000, 50)
    assert run(main, clock=VirtualClock(), gc_threshold=None) == (700, 10)
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "50000"])
def test_a_bad_threshold_is_named(bad):
    with pytest.raises(ValueError, match="gc threshold0"):
        with gc_tuned(bad):
            pass
    with pytest.raises(ValueError, match="gc threshold1"):
        with gc_tuned(50_000, bad):
            pass
