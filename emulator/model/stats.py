"""Small statistics: the 95 % interval of a mean and Welch's test (SciPy), percentiles, TDTV.

Pure functions of their arguments, so the Spark job, the sweep's comparison table, `compare`, `report`,
the expectations' KPIs and the tests share one definition of each figure. The intervals and tests are
`scipy.stats`'s (a well-kept library, not formulas of our own), imported on first use.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

TDTV_EXPONENT = 0.8  # CockroachDB asim history/thrashing.go: "somewhat arbitrary, a reasonable trade-off"


CONFIDENCE = 0.95
"""The confidence of `mean_ci95`'s interval."""
ALPHA = 0.05
"""A difference is significant when Welch's two-sided p-value is below this (per comparison, uncorrected)."""


def _scipy_stats() -> Any:
    """scipy.stats, imported when a figure needs it: a run's start-up (percentile, tdtv) never pays for it."""
    from scipy import stats

    return stats


def student_t_cdf(x: float, df: float) -> float:
    """P(T <= x) for Student's t with `df` degrees of freedom (`scipy.stats.t.cdf`)."""
    if not df > 0:
        raise ValueError(f"df = {df!r}: degrees of freedom must be > 0")
    return float(_scipy_stats().t.cdf(x, df))


def student_t_ppf(p: float, df: float) -> float:
    """The p-quantile of Student's t (`scipy.stats.t.ppf`)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p = {p!r}: must be strictly between 0 and 1")
    if not df > 0:
        raise ValueError(f"df = {df!r}: degrees of freedom must be > 0")
    return float(_scipy_stats().t.ppf(p, df))


def ci95_half_width(std: float | None, n: int) -> float | None:
    """Half-width of the two-sided 95 % confidence interval of a mean: t(0.975, n-1) * s / sqrt(n).

    `std` is the sample standard deviation (n - 1 in the denominator). None for fewer than 2 values:
    one value has no spread to estimate, so no interval (not a zero-width one)."""
    if n < 2 or std is None or math.isnan(std):
        return None
    return student_t_ppf(0.5 + CONFIDENCE / 2, n - 1) * std / math.sqrt(n)


def _clean(values: Sequence[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and not math.isnan(float(v))]


def mean_ci95(values: Sequence[float | None]) -> tuple[float | None, float | None]:
    """(mean, 95 % half-width) of a sample, Student t over `scipy.stats.sem`; (None, None) when empty,
    (mean, None) for one value. None and NaN values are left out (a KPI undefined in that run)."""
    xs = _clean(values)
    if not xs:
        return None, None
    mean = math.fsum(xs) / len(xs)
    if len(xs) < 2:
        return mean, None
    stats = _scipy_stats()
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, len(xs) - 1) * stats.sem(xs))
    return mean, (0.0 if math.isnan(half) else half)


def welch_p(a: Sequence[float | None], b: Sequence[float | None]) -> float | None:
    """Two-sided p-value of Welch's t-test that samples `a` and `b` have the same mean
    (`scipy.stats.ttest_ind(equal_var=False)`: seeds of two configurations need not share a variance).

    None when either sample has fewer than 2 values, or both have no spread and equal means (no test
    is possible); 0.0 when neither has spread but the means differ (scipy's t = inf)."""
    xs, ys = _clean(a), _clean(b)
    if len(xs) < 2 or len(ys) < 2:
        return None
    import warnings

    with warnings.catch_warnings():   # "catastrophic cancellation" for near-constant samples
        warnings.simplefilter("ignore", RuntimeWarning)
        p = float(_scipy_stats().ttest_ind(xs, ys, equal_var=False).pvalue)
    return None if math.isnan(p) else p


def significant(p: float | None, alpha: float = ALPHA) -> bool:
    """Whether a p-value says the means differ at level `alpha` (False when there was no test)."""
    return p is not None and p < alpha


def tdtv(up: float, down: float) -> float:
    """Trend-discounted total variation of a series with upward and downward variation `up`, `down`.

    CockroachDB asim's thrashing figure: 0 when the series moves one way only, about up + down when it
    has no trend, 2 * up when up == down; alpha = (min/max) ** 0.8 blends the two."""
    lo, hi = min(up, down), max(up, down)
    if lo == 0:
        return 0.0
    alpha: float = (lo / hi) ** TDTV_EXPONENT  # a float: lo / hi > 0
    return alpha * (up + down) + (1.0 - alpha) * lo


def percentile(values: Sequence[float], p: float) -> float | None:
    """Exact percentile with linear interpolation between closest ranks (Spark's `percentile`)."""
    xs = sorted(values)
    if not xs:
        return None
    pos = p * (len(xs) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    if lo == hi:
        return xs[lo]
    return (hi - pos) * xs[lo] + (pos - lo) * xs[hi]
