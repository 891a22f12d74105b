"""Publish latency as a fluid model: pure math, no clock, no I/O.

No message is ever sent. A producer publishes its share of its topic's rate; a message sent while the
producer is connected is acknowledged after a *base latency* (client -> broker -> bookie quorum write
-> ack, `BaseLatency`). A message sent while the producer is disconnected waits in the producer's
pending queue until it reconnects (ProducerImpl keeps it in `pendingMessages` and `resendMessages`
sends it on the new connection), so its latency is the remaining outage plus the base latency; or it
fails, by the send timeout or because the queue is full (`PendingQueue`, `outage_outcome`).

Over one outage of length D at a steady rate, the send times of the waiting messages are uniform, so
their waits are uniform: the latency of one outage's messages is `Base + U(lo, hi)`. A topic's (or the
cluster's) latency distribution is the mixture of the base distribution (messages sent while
connected) and one `Base + U(lo, hi)` per outage. Its CDF has a closed form for a log-normal base
(`BaseLatency.cdf_plus_uniform`, from the log-normal's partial expectation), and the quantiles are
found by bisection on that CDF (`mixture_quantiles`, `grouped_quantiles`): exact to the far tail
(P99.99 at 1,000 msg/s), with work per outage window and never per message. `WaitBins` keeps a whole
cluster's outages in a fixed number of fine log-spaced bins, so the cluster's quantiles cost the same
whatever the number of producers.
"""

from __future__ import annotations

import math
from typing import Sequence

import msgspec
import numpy as np

__all__ = ["BaseLatency", "OutageOutcome", "TabulatedMixture", "PUBLISH_LATENCY_BUCKETS", "PendingQueue", "QUANTILES",
           "WaitBins", "grouped_quantiles", "mixture_cdf", "mixture_quantiles", "outage_outcome"]

PUBLISH_LATENCY_BUCKETS = (0.0005, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 1.0)
"""Seconds: Pulsar's publish-side latency buckets, `ManagedLedgerMBeanImpl.ENTRY_LATENCY_BUCKETS_USEC`
({500, 1_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 1000_000} us), which the broker exports
as `pulsar_storage_write_latency_le_*` (and the same bounds for the ledger write latency). Prometheus
adds +Inf; everything an outage delays beyond 1 s lands there, so the quantiles never come from these
buckets (see the module docstring)."""

QUANTILES = (0.5, 0.99, 0.999, 0.9999)
"""P50, P99, P99.9, P99.99: P99.99 is the figure of the published Pulsar 3.0 restart experiment."""

_SQRT2 = math.sqrt(2.0)


def _erfc(x: np.ndarray) -> np.ndarray:
    """Complementary error function (Numerical Recipes' erfcc, |relative error| < 1.2e-7), vectorised:
    numpy has no erf and scipy is not a dependency."""
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277))))))))
    r = t * np.exp(poly)
    out: np.ndarray = np.where(x >= 0, r, 2.0 - r)
    return out


def _phi(z: np.ndarray) -> np.ndarray:
    """Standard normal CDF."""
    return 0.5 * _erfc(-z / _SQRT2)


class BaseLatency(msgspec.Struct, frozen=True, kw_only=True):
    """Publish latency of a connected producer: log-normal, given by its median and P99 (seconds).

    Default: median 3 ms, P99 9 ms. Source: StreamNative, "Apache Pulsar vs. Apache Kafka 2022
    Benchmark" (M. Merli, P. Li, Apr 2022; OpenMessaging Benchmark on AWS i3en, journal on NVMe,
    quorum writes to 2 of 3 bookies): Pulsar's P99 publish latency stays single-digit milliseconds;
    and Mukkolakkal, arXiv:2603.29113 (2026), 3.88 ms median publish latency on a tuned 3-node
    cluster. The log-normal shape is a fit of those two figures, not a measurement of the tail; the
    P99.99 it gives (about 20 ms) is far below what a reconnection adds."""

    median: float = 0.003
    p99: float = 0.009

    def __post_init__(self) -> None:
        if not (self.median > 0 and self.p99 > self.median and math.isfinite(self.p99)):
            raise ValueError(f"publish base latency median = {self.median!r}, p99 = {self.p99!r}: "
                             "need 0 < median < p99, both finite seconds")

    @property
    def mu(self) -> float:
        return math.log(self.median)

    @property
    def sigma(self) -> float:
        return math.log(self.p99 / self.median) / 2.3263478740408408   # z of 0.99

    @property
    def mean(self) -> float:
        return math.exp(self.mu + self.sigma ** 2 / 2.0)

    def quantile(self, p: float) -> float:
        return math.exp(self.mu + self.sigma * _normal_ppf(p))

    @property
    def support_end(self) -> float:
        """Past this the CDF is 1 to 1e-13: `cdf`, `pdf` and `integral_cdf` use their closed limits
        there (and 0 at or below 0), and evaluate the log-normal only in between. An outage's waits
        are seconds long, so most of a mixture's terms fall outside and cost a subtraction."""
        return self.quantile(1.0 - 1e-13)

    def _inside(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Indices (flat) of x strictly between 0 and the support end, and those x."""
        flat = x.ravel()
        idx = np.flatnonzero((flat > 0) & (flat < self.support_end))
        return idx, flat[idx]

    def _z(self, x: np.ndarray) -> np.ndarray:
        z: np.ndarray = (np.log(x) - self.mu) / self.sigma
        return z

    def cdf(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        out = (x >= self.support_end).astype(float)
        idx, v = self._inside(x)
        if len(idx):
            out.ravel()[idx] = _phi(self._z(v))
        return out

    def pdf(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        out = np.zeros(x.shape)
        idx, v = self._inside(x)
        if len(idx):
            z = self._z(v)
            out.ravel()[idx] = np.exp(-0.5 * z * z) / (v * self.sigma * math.sqrt(2.0 * math.pi))
        return out

    def integral_cdf(self, x: np.ndarray) -> np.ndarray:
        """I(x) = integral of the CDF from 0 to x = x G(x) - E[B; B <= x] (the partial expectation of
        the log-normal: exp(mu + sigma^2/2) Phi(z - sigma)); x - E[B] past the support end."""
        x = np.asarray(x, dtype=float)
        end = self.support_end
        out = np.where(x >= end, x - self.mean, 0.0)
        idx, v = self._inside(x)
        if len(idx):
            z = self._z(v)
            out.ravel()[idx] = v * _phi(z) - self.mean * _phi(z - self.sigma)
        return out

    def cdf_plus_uniform(self, x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """P(B + U(lo, hi) <= x) = (I(x - lo) - I(x - hi)) / (hi - lo); G(x - lo) when hi == lo."""
        x, lo, hi = np.asarray(x, float), np.asarray(lo, float), np.asarray(hi, float)
        width = hi - lo
        wide = width > 1e-12
        safe = np.where(wide, width, 1.0)
        spread = (self.integral_cdf(x - lo) - self.integral_cdf(x - hi)) / safe
        return np.where(wide, np.clip(spread, 0.0, 1.0), self.cdf(x - lo))


def _normal_ppf(p: float) -> float:
    """Inverse standard normal CDF (Acklam's rational approximation refined by one Halley step)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"quantile {p!r}: must be in (0, 1)")
    a = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
         1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00)
    b = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
         6.680131188771972e+01, -1.328068155288572e+01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
         -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00)
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00)
    if p < 0.02425:
        q = math.sqrt(-2 * math.log(p))
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / \
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    elif p > 1 - 0.02425:
        q = math.sqrt(-2 * math.log(1 - p))
        x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / \
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    else:
        q = p - 0.5
        r = q * q
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / \
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    e = 0.5 * math.erfc(-x / _SQRT2) - p
    u = e * math.sqrt(2 * math.pi) * math.exp(x * x / 2)
    return x - u / (1 + x * u / 2)


class PendingQueue(msgspec.Struct, frozen=True, kw_only=True):
    """The producer's pending queue limits (Pulsar 3.x defaults).

    * `send_timeout` = ProducerConfigurationData.sendTimeoutMs, 30 000 ms. ProducerImpl.run (the send
      timeout timer) looks at the *oldest* pending message: once it is older than sendTimeoutMs it
      fails **every** pending message (`failPendingMessages`) and re-arms the timer for a full
      sendTimeoutMs. So during an outage starting at s, everything sent in [s, s + T) fails at s + T,
      everything sent in [s + T, s + 2T) at s + 2T, and so on: a message sent just before s + T
      fails after waiting almost nothing. That is Pulsar's surprise, kept.
    * `max_pending_messages` = ProducerConfigurationData.maxPendingMessages, default 0 since 2.10
      (PIP-120: no per-producer count limit); 0 means none.
    * `memory_limit_bytes` = ClientConfigurationData.memoryLimitBytes, 64 MiB. In Pulsar it bounds
      the pending bytes of all producers of one PulsarClient (MemoryLimitController); choice here: it
      bounds each producer on its own, as if each producer had its own client (the emulator's client
      actors stand for many application processes). With blockIfQueueFull = false (default) a send
      past the limit fails at once (ProducerQueueIsFullError) until the queue empties, i.e. until the
      next send timeout batch fails or the producer reconnects.
    """

    send_timeout: float = 30.0
    max_pending_messages: int = 0
    memory_limit_bytes: int = 64 * 1024 * 1024

    def capacity(self, msg_size: float) -> float:
        """Messages the queue holds at most (inf when unlimited)."""
        cap = math.inf
        if self.max_pending_messages > 0:
            cap = float(self.max_pending_messages)
        if self.memory_limit_bytes > 0 and msg_size > 0:
            cap = min(cap, self.memory_limit_bytes / msg_size)
        return cap


class OutageOutcome(msgspec.Struct, frozen=True):
    """What one outage did to the messages sent during it.

    `delivered` messages waited U(`wait_lo`, `wait_hi`) seconds before the base latency;
    `failed_timeout` were failed by the send timeout; `failed_queue_full` were refused at once."""

    delivered: float
    wait_lo: float
    wait_hi: float
    failed_timeout: float
    failed_queue_full: float


def outage_outcome(duration: float, messages: float, msg_size: float, queue: PendingQueue) -> OutageOutcome:
    """Split the `messages` sent at a steady rate during an outage of `duration` seconds that ended with
    a reconnect (see `PendingQueue` for the rules)."""
    if duration <= 0 or messages <= 0:
        return OutageOutcome(0.0, 0.0, 0.0, 0.0, 0.0)
    rate = messages / duration
    cap = queue.capacity(msg_size)
    t = queue.send_timeout
    batches = math.floor(duration / t) if t > 0 else 0   # at s + k T the timer fails the queue
    rest = duration - batches * t
    timed, full = 0.0, 0.0
    if batches:
        per_batch = rate * t
        accepted = min(per_batch, cap)
        timed += batches * accepted
        full += batches * (per_batch - accepted)
    # the last segment: the first `cap` messages are queued, the rest refused until the reconnect
    sent = rate * rest
    accepted = min(sent, cap)
    full += sent - accepted
    queued_for = accepted / rate if rate > 0 else 0.0   # the queued ones were sent in [0, queued_for)
    return OutageOutcome(accepted, rest - queued_for, rest, timed, full)


def mixture_cdf(x: np.ndarray, base: BaseLatency, direct: float, n: np.ndarray, lo: np.ndarray,
                hi: np.ndarray) -> np.ndarray:
    """CDF at each x of `direct` messages ~ Base plus, for each window k, n[k] ~ Base + U(lo[k], hi[k])."""
    x = np.atleast_1d(np.asarray(x, dtype=float))
    total = direct + float(np.sum(n))
    if total <= 0:
        return np.zeros_like(x)
    acc = direct * base.cdf(x)
    if len(n):
        h = base.cdf_plus_uniform(x[:, None], lo[None, :], hi[None, :])
        acc = acc + h @ n
    return acc / total


def mixture_quantiles(ps: Sequence[float], base: BaseLatency, direct: float, n: np.ndarray,
                      lo: np.ndarray, hi: np.ndarray, *, start: Sequence[float] | None = None,
                      max_iterations: int = 100, tolerance: float = 1e-9) -> list[float]:
    """Quantiles of one mixture (see `mixture_cdf`); the base's own when there is no window.

    All quantiles in one vectorised rtsafe search (see `grouped_quantiles`), from `start` when given:
    the previous answer of a mixture that grew a little (a recorder sample every 10 s) is a few Newton
    steps from the new one."""
    n, lo, hi = (np.asarray(a, dtype=float) for a in (n, lo, hi))
    if not len(n) or float(np.sum(n)) <= 0:
        return [base.quantile(p) for p in ps]
    total = float(direct) + float(np.sum(n))
    target = np.asarray(ps, dtype=float)
    left = np.zeros(len(ps))
    right = np.full(len(ps), float(np.max(hi)) + base.quantile(1 - 1e-9))
    guess = start if start is not None else [base.quantile(p) for p in ps]
    x = np.clip(np.asarray(guess, dtype=float), 0.0, right)
    direct_arr = np.array([float(direct)])
    for _ in range(max_iterations):
        # the Q quantiles as Q copies of the mixture: windows repeated per copy
        q = len(x)
        f, d = _cdf_pdf(base, x, np.repeat(direct_arr, q), np.repeat(np.arange(q), len(n)),
                        np.tile(n, q), np.tile(lo, q), np.tile(hi, q))
        f = f / total - target
        d = d / total
        below = f < 0
        left = np.where(below, x, left)
        right = np.where(below, right, x)
        met = np.abs(f) <= 1e-12
        done = (right - left <= tolerance) | met
        if done.all():
            return [float(v) for v in np.where(met, x, right)]
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = x - f / d
        inside = (d > 0) & (newton > left) & (newton < right)
        x = np.where(done, np.where(met, x, right), np.where(inside, newton, (left + right) / 2.0))
    return [float(v) for v in x]


def grouped_quantiles(ps: Sequence[float], base: BaseLatency, direct: np.ndarray, group: np.ndarray,
                      n: np.ndarray, lo: np.ndarray, hi: np.ndarray, *, max_iterations: int = 100,
                      tolerance: float = 1e-9) -> np.ndarray:
    """Quantiles of many mixtures at once: mixture g has `direct[g]` base messages and the windows k
    with `group[k] == g`. Returns shape (len(direct), len(ps)).

    For each quantile, one vectorised root search over all groups: Newton steps on the exact CDF (its
    density is closed-form too), kept inside a bracket that every step shrinks, bisecting whenever
    Newton would leave it (rtsafe). A group drops out of the search once its bracket is narrower than
    `tolerance` s or its CDF is met to 1e-12, so later steps only touch the groups still moving."""
    direct = np.asarray(direct, dtype=float)
    group = np.asarray(group, dtype=np.int64)
    n, lo, hi = (np.asarray(a, dtype=float) for a in (n, lo, hi))
    g_count = len(direct)
    total = direct + (np.bincount(group, weights=n, minlength=g_count) if len(n) else 0.0)
    safe_total = np.where(total > 0, total, 1.0)
    top = _group_max(group, hi, g_count) + base.quantile(1 - 1e-9)
    out = np.empty((g_count, len(ps)))
    for j, p in enumerate(ps):
        x = np.minimum(np.full(g_count, base.quantile(p)), top)
        left = np.zeros(g_count)
        right = top.copy()
        active = np.arange(g_count)
        # windows of the active groups, and their group's position in `active`
        w_idx = np.arange(len(n))
        w_pos = group.copy()
        for _ in range(max_iterations):
            xa = x[active]
            f, d = _cdf_pdf(base, xa, direct[active], w_pos, n[w_idx], lo[w_idx], hi[w_idx])
            f = f / safe_total[active] - p
            d = d / safe_total[active]
            below = f < 0
            la = np.where(below, xa, left[active])
            ra = np.where(below, right[active], xa)
            left[active], right[active] = la, ra
            done = (ra - la <= tolerance) | (np.abs(f) <= 1e-12)
            with np.errstate(divide="ignore", invalid="ignore"):
                newton = xa - f / d
            inside = (d > 0) & (newton > la) & (newton < ra)
            x[active] = np.where(done, np.where(np.abs(f) <= 1e-12, xa, ra),
                                 np.where(inside, newton, (la + ra) / 2.0))
            if done.all():
                break
            keep = ~done
            if not keep.all():
                position = np.full(len(active), -1)
                position[keep] = np.arange(int(keep.sum()))
                active = active[keep]
                w_new = position[w_pos]
                moving = w_new >= 0
                w_idx, w_pos = w_idx[moving], w_new[moving]
        out[:, j] = x
    return out


def _cdf_pdf(base: BaseLatency, x: np.ndarray, direct: np.ndarray, pos: np.ndarray, n: np.ndarray,
             lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unnormalised mixture CDF and density at x[g] for each group g (windows at positions `pos`)."""
    acc = direct * base.cdf(x)
    dens = direct * base.pdf(x)
    if len(n):
        xw = x[pos]
        width = hi - lo
        wide = width > 1e-12
        c = base.cdf_plus_uniform(xw, lo, hi) * n
        d = np.where(wide, (base.cdf(xw - lo) - base.cdf(xw - hi)) / np.where(wide, width, 1.0),
                     base.pdf(xw - lo)) * n
        acc = acc + np.bincount(pos, weights=c, minlength=len(x))
        dens = dens + np.bincount(pos, weights=d, minlength=len(x))
    return acc, dens


def _group_max(group: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(size)
    np.maximum.at(out, group, values)
    return out


class WaitBins:
    """A cluster's outage windows in fine log-spaced bins of the wait length, for its quantiles.

    U(lo, hi) is written as the signed mix (hi U(0, hi) - lo U(0, lo)) / (hi - lo), so each window adds
    at most two weights, each to the bin of its length. A bin stands for its windows by their
    weighted mean length (its geometric centre when the weights cancel), which is within the bin: 64
    bins a decade keep that within 1.8 % of any window's length. Waits shorter than `floor` count as
    no wait."""

    def __init__(self, floor: float = 1e-4, ceiling: float = 1e5, per_decade: int = 64) -> None:
        self.floor = floor
        self.per_decade = per_decade
        self.size = int(math.ceil(math.log10(ceiling / floor) * per_decade)) + 1
        self.weight = np.zeros(self.size)
        self.weighted_length = np.zeros(self.size)
        self.no_wait = 0.0
        self.version = 0
        """Bumped by every `add`: what a `TabulatedMixture` of these bins is valid for."""

    def add(self, n: float, lo: float, hi: float) -> None:
        if n <= 0:
            return
        self.version += 1
        if hi - lo <= 1e-12:
            self._add(n, hi)    # a point wait: U(0, hi) is close enough only when hi is tiny
            return
        self._add(n * hi / (hi - lo), hi)
        if lo > 0:
            self._add(-n * lo / (hi - lo), lo)

    def _add(self, w: float, length: float) -> None:
        if length < self.floor:
            self.no_wait += w
            return
        i = min(self.size - 1, int(math.log10(length / self.floor) * self.per_decade))
        self.weight[i] += w
        self.weighted_length[i] += w * length

    def windows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(n, lo, hi) arrays of the non-empty bins, as U(0, L) windows."""
        used = np.nonzero(np.abs(self.weight) > 1e-12)[0]
        w = self.weight[used]
        centre = self.floor * 10.0 ** ((used + 0.5) / self.per_decade)
        left = self.floor * 10.0 ** (used / self.per_decade)
        right = self.floor * 10.0 ** ((used + 1) / self.per_decade)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = self.weighted_length[used] / w
        length = np.where((mean >= left) & (mean <= right), mean, centre)
        return w, np.zeros(len(used)), length


class TabulatedMixture:
    """The windows' part of a mixture's CDF, sum_k n_k P(B + U(lo_k, hi_k) <= x), tabulated once on a
    fine log grid and at given bounds, so that the mixture's CDF for
    *any* number of base messages is one vector operation: what a recorder sample every 10 s needs,
    when the windows (a cluster's `WaitBins`) change only at the next outage. Quantiles are read off the
    tabulated exact CDF by linear interpolation on a grid 0.4 % apart (4,096 points from 10 us to the
    longest wait); `mixture_quantiles` gives the exact ones (the run's end)."""

    def __init__(self, base: BaseLatency, n: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                 bounds: Sequence[float] = (), points: int = 4096) -> None:
        self.base = base
        self.windows_total = float(np.sum(n)) if len(n) else 0.0
        top = (float(np.max(hi)) if len(hi) else 0.0) + base.quantile(1 - 1e-9)
        self.xs = np.concatenate([[0.0], np.geomspace(1e-5, top, points)])
        self.g = base.cdf(self.xs)
        self.w = self._windows_cdf(self.xs, n, lo, hi)
        self.bounds = np.asarray(bounds, dtype=float)
        self.g_bounds = base.cdf(self.bounds)
        self.w_bounds = self._windows_cdf(self.bounds, n, lo, hi)

    def _windows_cdf(self, x: np.ndarray, n: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        out = np.zeros(len(x))
        step = max(1, (1 << 20) // max(1, len(x)))     # bounded temporaries
        for i in range(0, len(n), step):
            sl = slice(i, i + step)
            out += self.base.cdf_plus_uniform(x[:, None], lo[None, sl], hi[None, sl]) @ n[sl]
        return out

    def counts(self, direct: float) -> np.ndarray:
        """Messages at or below each bound (cumulative), for `direct` base messages."""
        counts: np.ndarray = direct * self.g_bounds + self.w_bounds
        return counts

    def quantiles(self, ps: Sequence[float], direct: float) -> list[float]:
        total = direct + self.windows_total
        if total <= 0 or self.windows_total <= 0:
            return [self.base.quantile(p) for p in ps]
        cdf = np.maximum.accumulate((direct * self.g + self.w) / total)
        out = []
        for p in ps:
            i = int(np.searchsorted(cdf, p, side="left"))
            if i <= 0:
                out.append(float(self.xs[0]))
            elif i >= len(cdf):
                out.append(float(self.xs[-1]))
            else:
                c0, c1 = cdf[i - 1], cdf[i]
                frac = (p - c0) / (c1 - c0) if c1 > c0 else 1.0
                out.append(float(self.xs[i - 1] + frac * (self.xs[i] - self.xs[i - 1])))
        return out
