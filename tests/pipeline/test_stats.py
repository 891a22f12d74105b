"""The pure statistics: Student t quantiles, the 95 % interval, percentiles, and asim's TDTV."""

from __future__ import annotations

import math

import pytest

from emulator.model.stats import ci95_half_width, mean_ci95, percentile, student_t_ppf, tdtv


@pytest.mark.parametrize("df, expected", [(1, 12.706204736174707), (2, 4.302652729749464),
                                          (4, 2.7764451051977934), (9, 2.2621571628540993),
                                          (30, 2.0422724563012373), (1000, 1.9623390808264078)])
def test_student_t_quantiles_match_the_tables(df, expected):
    assert student_t_ppf(0.975, df) == pytest.approx(expected, abs=1e-9)
    assert student_t_ppf(0.025, df) == pytest.approx(-expected, abs=1e-9)


def test_confidence_interval_of_a_mean():
    mean, ci = mean_ci95([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5
    assert ci == pytest.approx(3.182446305284263 * math.sqrt(5 / 3) / 2, rel=1e-12)
    assert mean_ci95([7.0]) == (7.0, None)  # one seed: no interval
    assert mean_ci95([]) == (None, None)
    assert ci95_half_width(None, 5) is None


def test_bad_quantile_arguments_name_themselves():
    with pytest.raises(ValueError, match="p = 1.0"):
        student_t_ppf(1.0, 3)
    with pytest.raises(ValueError, match="df = 0"):
        student_t_ppf(0.9, 0)


def test_percentile_interpolates_like_spark():
    assert percentile([1, 2, 3, 4], 0.5) == 2.5
    assert percentile([10.0, 0.0, 5.0], 0.99) == pytest.approx(9.9)
    assert percentile([3.0], 0.99) == 3.0
    assert percentile([], 0.5) is None


def _thrashing(values):
    d = [b - a for a, b in zip(values, values[1:])]
    up, down = sum(x for x in d if x >= 0), sum(-x for x in d if x < 0)
    return tdtv(up, down), up, down


def test_tdtv_matches_cockroach_asim_vectors():
    """history/testdata (asim): TestTDTV sweeps tu + td = 1; TestThrashing/oscillate is 972.15%."""
    row = [round(tdtv(i / 10, 1 - i / 10), 2) for i in range(11)]
    assert row == [0.0, 0.26, 0.46, 0.66, 0.83, 1.0, 0.83, 0.66, 0.46, 0.26, 0.0]
    sine = [round(math.sin(math.pi * i / 10), 6) for i in range(100)]
    value, up, down = _thrashing(sine)
    assert round(100 * value / (max(sine) - min(sine)), 2) == 972.15
    assert (round(up, 1), round(down, 1)) == (9.7, 10.0)
    assert _thrashing([1, 2, 3, 4])[0] == 0.0  # monotonic: no thrashing
    assert tdtv(3.0, 3.0) == 6.0 and tdtv(5.0, 0.0) == 0.0
