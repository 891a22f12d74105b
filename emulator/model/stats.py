"""Small pure statistics without SciPy: Student t quantiles, the 95 % interval, percentiles, TDTV.

Pure functions of their arguments, so the Spark job, the sweep's comparison table, the expectations' KPIs
and the tests share one definition of each figure.
"""

from __future__ import annotations

import math
from typing import Sequence

TDTV_EXPONENT = 0.8  # CockroachDB asim history/thrashing.go: "somewhat arbitrary, a reasonable trade-off"


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def student_t_cdf(x: float, df: float) -> float:
    """P(T <= x) for Student's t with `df` degrees of freedom."""
    if df <= 0:
        raise ValueError(f"df = {df!r}: degrees of freedom must be > 0")
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + x * x))
    return 1.0 - tail if x >= 0 else tail


def student_t_ppf(p: float, df: float) -> float:
    """The p-quantile of Student's t (bisection on the CDF; 1e-12 accurate)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p = {p!r}: must be strictly between 0 and 1")
    if df <= 0:
        raise ValueError(f"df = {df!r}: degrees of freedom must be > 0")
    if p < 0.5:
        return -student_t_ppf(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while student_t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if student_t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-13 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


def ci95_half_width(std: float | None, n: int) -> float | None:
    """Half-width of the two-sided 95 % confidence interval of a mean: t(0.975, n-1) * s / sqrt(n).

    `std` is the sample standard deviation (n - 1 in the denominator). None for fewer than 2 values."""
    if n < 2 or std is None or math.isnan(std):
        return None
    return student_t_ppf(0.975, n - 1) * std / math.sqrt(n)


def mean_ci95(values: Sequence[float]) -> tuple[float | None, float | None]:
    """(mean, 95 % half-width) of a sample; (None, None) when empty."""
    xs = [float(v) for v in values if v is not None and not math.isnan(v)]
    if not xs:
        return None, None
    mean = sum(xs) / len(xs)
    if len(xs) < 2:
        return mean, None
    std = math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))
    return mean, ci95_half_width(std, len(xs))


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
