"""The traffic model: every topic's publish rate as a function of emulated time, as numpy arrays.

A fluid model (DESIGN.md "Runtime rules"): no message is ever sent. Each topic has a base rate (msg/s)
and a message size (bytes) in flat arrays indexed by a topic → index map; patterns (ramp, spike,
diurnal, noise) and traffic events (spike, ramp, set/scale rate) are *modifiers* that multiply slices
of the rate array at a given time. `rates(now)` evaluates them all at once and caches the result per instant;
a broker's report, at an instant of its own, evaluates only its own topics through a `TopicSubset` (the
same floats, a twentieth of the work on 20 brokers). `TopicSubset.linear` gives the same rates in closed
form, w (1 + alpha sin(omega t) + beta cos(omega t)) until the next breakpoint, from each modifier's
`piece`, for the stats windows' exact time means.

What is *served* (a topic carries traffic only while a producer is connected, and out = in × connected
consumers) is decided from the brokers' actual producers and consumers in `load.py`; this module only
knows what the applications would like to publish.

Randomness (uniform and Zipf rates, hot sets, diurnal phase jitter, random selections) comes from numpy
Generators seeded with `derive_seed(seed, "traffic/<group>")`, so a group's topics do not change when
another group is added.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

from emulator.runtime import derive_seed

from .schema import (
    DiurnalPattern,
    NoisePattern,
    RampPattern,
    Scenario,
    SpikePattern,
    SteadyPattern,
    TopicGroup,
    TopicSelector,
)

__all__ = ["Linear", "Modifier", "Piece", "TrafficModel", "base_rates", "topic_names"]


def topic_names(group: TopicGroup) -> list[tuple[str, str]]:
    """(topic, partitioned-topic name) for every topic of a group, in index order.

    Non-partitioned topics are their own partitioned name; a partitioned topic `x` of N partitions gives
    `x-partition-0` ... `x-partition-{N-1}` (Pulsar's TopicName.getPartition)."""
    out: list[tuple[str, str]] = []
    prefix = f"{group.persistence}://{group.namespace}/"
    for i in range(group.size):
        base = prefix + group.local_name(i)
        if group.partitions:
            out.extend((f"{base}-partition-{p}", base) for p in range(group.partitions))
        else:
            out.append((base, base))
    return out


def base_rates(group: TopicGroup, rng: np.random.Generator) -> np.ndarray:
    """Base msg/s of each *partitioned* topic of the group (length `count`), from its RateSpec."""
    spec = group.rate
    n = group.size
    if spec.distribution == "explicit":
        return np.array(spec.rates, dtype=float)   # the loader checked: one per topic
    if spec.distribution == "constant":
        return np.full(n, spec.rate, dtype=float)
    if spec.distribution == "uniform":
        low = spec.low if spec.low is not None else 0.0
        high = spec.high if spec.high is not None else spec.rate
        return rng.uniform(low, high, n)
    if spec.distribution == "zipf":
        total = spec.total if spec.total is not None else spec.rate * n
        weights = 1.0 / np.arange(1, n + 1, dtype=float) ** spec.exponent
        weights = weights[rng.permutation(n)]
        return total * weights / weights.sum()
    # hot_set
    rates = np.full(n, spec.rate, dtype=float)
    if spec.hot_count is not None:
        hot = min(spec.hot_count, n)
    else:
        hot = min(n, max(1, round((spec.hot_fraction or 0.0) * n))) if spec.hot_fraction else 0
    if hot:
        rates[np.sort(rng.choice(n, size=hot, replace=False))] *= spec.hot_factor
    return rates


class Modifier:
    """A time-dependent multiplier on some topics (`indices`, None = all). Subclasses give `factor`."""

    __slots__ = ("indices", "end")

    def __init__(self, indices: np.ndarray | None, end: float = math.inf) -> None:
        self.indices = indices
        self.end = end

    def factor(self, now: float) -> float | np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def finished(self, now: float) -> bool:
        """True once the modifier is 1 for ever after `now` (so it can be dropped)."""
        return now >= self.end

    def restricted(self, pos: np.ndarray) -> Modifier:
        """A modifier whose factor is this one's at positions `pos` of its factor array (for a
        scalar factor, this one). Each element comes from the same float operations as in `factor`,
        so rates evaluated for a subset of the topics are bit for bit the full evaluation's."""
        return self

    def piece(self, now: float) -> Piece | None:
        """The factor from `now` on in closed form (see `Piece`), or None if it has none here (a
        ramp in progress, an unknown modifier): the caller then samples `factor` instead."""
        return None


class Piece:
    """A modifier's factor over [now, `until`): the constant `value` (a float or one per topic) or,
    when `omega` is set, 1 + alpha sin(omega t) + beta cos(omega t) (t: time since the model's
    origin). What `TopicSubset.linear` builds a bundle's traffic curve from."""

    __slots__ = ("value", "until", "omega", "alpha", "beta")

    def __init__(self, value: float | np.ndarray = 1.0, until: float = math.inf, omega: float = 0.0,
                 alpha: float | np.ndarray = 0.0, beta: float | np.ndarray = 0.0) -> None:
        self.value, self.until, self.omega, self.alpha, self.beta = value, until, omega, alpha, beta


class _Spike(Modifier):
    __slots__ = ("start", "value")

    def __init__(self, indices: np.ndarray | None, start: float, duration: float, factor: float) -> None:
        super().__init__(indices, start + duration)
        self.start = start
        self.value = factor

    def factor(self, now: float) -> float:
        return self.value if self.start <= now < self.end else 1.0

    def piece(self, now: float) -> Piece:
        if now < self.start:
            return Piece(1.0, self.start)
        return Piece(self.value, self.end) if now < self.end else Piece(1.0)


class _Ramp(Modifier):
    __slots__ = ("start", "stop", "f0", "f1")

    def __init__(self, indices: np.ndarray | None, start: float, stop: float, f0: float, f1: float) -> None:
        super().__init__(indices)
        self.start, self.stop, self.f0, self.f1 = start, stop, f0, f1

    def factor(self, now: float) -> float:
        if now <= self.start:
            return self.f0
        if now >= self.stop:
            return self.f1
        return self.f0 + (self.f1 - self.f0) * (now - self.start) / (self.stop - self.start)

    def piece(self, now: float) -> Piece | None:
        if now < self.start:
            return Piece(self.f0, self.start)
        return Piece(self.f1) if now >= self.stop else None   # ramping: sampled


class _Diurnal(Modifier):
    """1 + amplitude * sin(omega * (now + phase)). With a phase per topic (jitter) the sine is
    taken apart, sin(a + b) = sin a cos b + cos a sin b, around the topics' fixed phase terms: two
    products per topic instead of a sine per topic on every report (the same curve to within a few
    ulps; every broker's report evaluates it over all topics)."""

    __slots__ = ("amplitude", "omega", "phase", "_a_cos", "_a_sin")

    def __init__(self, indices: np.ndarray | None, amplitude: float, period: float,
                 phase: float | np.ndarray) -> None:
        super().__init__(indices)
        self.amplitude = amplitude
        self.omega = 2.0 * math.pi / period
        self.phase = phase
        self._a_cos: np.ndarray | None = None
        self._a_sin: np.ndarray | None = None
        if isinstance(phase, np.ndarray):
            self._a_cos = amplitude * np.cos(self.omega * phase)
            self._a_sin = amplitude * np.sin(self.omega * phase)

    def factor(self, now: float) -> float | np.ndarray:
        if self._a_cos is None or self._a_sin is None:
            return 1.0 + self.amplitude * math.sin(self.omega * (now + self.phase))
        return _jittered_sine(self._a_cos, self._a_sin, self.omega * now)

    def restricted(self, pos: np.ndarray) -> Modifier:
        if self._a_cos is None or self._a_sin is None:
            return self
        return _DiurnalSubset(self, pos)

    def piece(self, now: float) -> Piece:
        if self._a_cos is None or self._a_sin is None:   # sin(a + b) taken apart around the phase
            phase = self.omega * float(self.phase)
            return Piece(omega=self.omega, alpha=self.amplitude * math.cos(phase),
                         beta=self.amplitude * math.sin(phase))
        return Piece(omega=self.omega, alpha=self._a_cos, beta=self._a_sin)


def _jittered_sine(a_cos: np.ndarray, a_sin: np.ndarray, wt: float) -> np.ndarray:
    """1 + a_cos * sin(wt) + a_sin * cos(wt), elementwise, always in this order (a subset must give
    the same floats)."""
    out = a_cos * math.sin(wt)
    out += a_sin * math.cos(wt)
    out += 1.0
    return out


class _DiurnalSubset(Modifier):
    """A jittered `_Diurnal` at some of its topics only: the same terms, products for those topics
    alone (one broker's report needs its own few hundred topics, not all of them)."""

    __slots__ = ("omega", "_a_cos", "_a_sin")

    def __init__(self, full: _Diurnal, pos: np.ndarray) -> None:
        super().__init__(full.indices, full.end)
        assert full._a_cos is not None and full._a_sin is not None
        self.omega = full.omega
        self._a_cos = full._a_cos[pos]
        self._a_sin = full._a_sin[pos]

    def factor(self, now: float) -> np.ndarray:
        return _jittered_sine(self._a_cos, self._a_sin, self.omega * now)

    def piece(self, now: float) -> Piece:
        return Piece(omega=self.omega, alpha=self._a_cos, beta=self._a_sin)


class _Noise(Modifier):
    """Per-topic N(1, sd) factors, piecewise constant over `interval`; each interval's draw comes from
    its own generator (seed, label, interval number), so the value at a time never depends on which
    times were asked before."""

    __slots__ = ("sd", "interval", "seed", "label", "_bucket", "_values")

    def __init__(self, indices: np.ndarray | None, n: int, sd: float, interval: float, seed: int,
                 label: str) -> None:
        super().__init__(indices)
        self.sd, self.interval, self.seed, self.label = sd, interval, seed, label
        self._bucket: int | None = None
        self._values = np.ones(n)

    def factor(self, now: float) -> np.ndarray:
        return self.values_at(math.floor(now / self.interval))

    def values_at(self, bucket: int) -> np.ndarray:
        """The factors of interval number `bucket` (the last one asked is kept)."""
        if bucket != self._bucket:
            gen = np.random.default_rng(derive_seed(self.seed, f"traffic/noise/{self.label}/{bucket}"))
            self._values = np.maximum(0.0, 1.0 + self.sd * gen.standard_normal(len(self._values)))
            self._bucket = bucket
        return self._values

    def bucket(self, now: float) -> tuple[int, float]:
        """The interval `now` falls in and when it ends (never at or before `now`, whatever the
        rounding of the division)."""
        bucket = math.floor(now / self.interval)
        until = (bucket + 1) * self.interval
        if until <= now:
            bucket += 1
            until = (bucket + 1) * self.interval
        return bucket, until

    def piece(self, now: float) -> Piece:
        bucket, until = self.bucket(now)
        return Piece(self.values_at(bucket), until)

    def restricted(self, pos: np.ndarray) -> Modifier:
        return _NoiseSubset(self, pos)


class _NoiseSubset(Modifier):
    """A `_Noise` at some of its topics: the full draw (once per interval, shared), then only
    those topics' values, picked once per interval."""

    __slots__ = ("full", "pos", "_drawn", "_values")

    def __init__(self, full: _Noise, pos: np.ndarray) -> None:
        super().__init__(full.indices, full.end)
        self.full, self.pos = full, pos
        self._drawn: np.ndarray | None = None
        self._values = np.ones(len(pos))

    def factor(self, now: float) -> np.ndarray:
        return self._pick(self.full.factor(now))

    def _pick(self, drawn: np.ndarray) -> np.ndarray:
        if drawn is not self._drawn:
            self._drawn, self._values = drawn, drawn[self.pos]
        return self._values

    def piece(self, now: float) -> Piece:
        bucket, until = self.full.bucket(now)
        return Piece(self._pick(self.full.values_at(bucket)), until)


class Linear(NamedTuple):
    """What `TopicSubset.linear` returns besides w: the diurnal terms (omega 0: none) and until when
    (emulated time) they and w hold."""

    until: float
    omega: float = 0.0
    origin: float = 0.0
    alpha: np.ndarray | None = None
    beta: np.ndarray | None = None


class TopicSubset:
    """`TrafficModel.rates(now)[idx]` for a fixed index array `idx`, without evaluating every topic.

    Each element gets the same float operations in the same order as in `rates` (the base rate times
    each modifier's factor, modifier by modifier), so the values are identical; a modifier's
    per-topic terms are restricted to the topics in `idx` once, when the model's modifiers change."""

    __slots__ = ("model", "idx", "_plan", "_for", "_version")

    def __init__(self, model: TrafficModel, idx: np.ndarray) -> None:
        self.model = model
        self.idx = np.asarray(idx, dtype=np.intp)
        self._plan: list[tuple[np.ndarray | None, Modifier]] = []
        self._for: list[Modifier] | None = None   # the model's modifier list the plan was made for
        self._version = -1

    def rates(self, now: float, out: np.ndarray) -> np.ndarray:
        """Fill `out` (length len(idx)) with the topics' msg/s at emulated time `now`."""
        model = self.model
        t = now - model.origin
        mods = model._live_modifiers(t)
        if mods is not self._for or model._version != self._version:
            self._replan(mods)
        model.base_rate.take(self.idx, out=out)
        for where, m in self._plan:
            f = m.factor(t)
            if where is None:
                out *= f
            else:
                out[where] *= f
        return out

    def linear(self, now: float, out: np.ndarray) -> Linear | None:
        """The topics' rates from `now` on in closed form: fills `out` with w (the base rate times
        every piecewise-constant factor at `now`) and returns the diurnal terms and how long this
        holds, so that rate(t) = w (1 + alpha sin(omega t) + beta cos(omega t)) on [now, until)
        (t since the model's origin). None when the live modifiers have no such form at `now` (a
        ramp in progress, two diurnal curves, a modifier without `piece`)."""
        model = self.model
        t = now - model.origin
        lin = self._linear_at(t, out)
        if lin is None or lin.until == math.inf:
            return lin
        # the piece ends at the first emulated time whose time since the origin reaches its end
        # (as `rates` computes it, rounding included): never at or before `now`
        until = model.origin + lin.until
        while until - model.origin < lin.until:
            until = math.nextafter(until, math.inf)
        return lin._replace(until=until)

    def _linear_at(self, t: float, out: np.ndarray) -> Linear | None:
        model = self.model
        mods = model._live_modifiers(t)
        if mods is not self._for or model._version != self._version:
            self._replan(mods)
        model.base_rate.take(self.idx, out=out)
        until = math.inf
        sine: tuple[np.ndarray | None, Piece] | None = None
        for where, m in self._plan:
            p = m.piece(t)
            if p is None:
                return None
            if p.omega:
                if sine is not None:
                    return None
                sine = (where, p)
                continue
            until = min(until, p.until)
            if where is None:
                out *= p.value
            else:
                out[where] *= p.value
        if sine is None:
            return Linear(until)
        where, p = sine
        n = len(self.idx)
        alpha, beta = np.zeros(n), np.zeros(n)
        if where is None:
            alpha[:], beta[:] = p.alpha, p.beta
        else:
            alpha[where], beta[where] = p.alpha, p.beta
        return Linear(until, p.omega, model.origin, alpha, beta)

    def _replan(self, mods: list[Modifier]) -> None:
        """For each modifier: where in `idx` its topics are (None: everywhere) and the modifier
        restricted to them."""
        n = len(self.model.base_rate)
        plan: list[tuple[np.ndarray | None, Modifier]] = []
        for m in mods:
            if m.indices is None:
                plan.append((None, m.restricted(self.idx)))
                continue
            slot = np.full(n, -1, dtype=np.intp)      # topic -> its position in m.indices
            slot[m.indices] = np.arange(len(m.indices), dtype=np.intp)
            pos = slot[self.idx]
            where = np.flatnonzero(pos >= 0)
            if len(where):
                plan.append((where, m.restricted(pos[where])))
        self._plan, self._for, self._version = plan, mods, self.model._version


class TrafficModel:
    """Per-topic arrays: `names`, `base_rate` (msg/s), `msg_size` (bytes), `partitions` (of the topic
    each index belongs to, 1 when not partitioned), plus the group / namespace each topic belongs to."""

    def __init__(self, names: Sequence[str], base_rate: np.ndarray, msg_size: np.ndarray, *,
                 partitioned_names: Sequence[str] | None = None,
                 groups: dict[str, np.ndarray] | None = None, seed: int = 0) -> None:
        n = len(names)
        if base_rate.shape != (n,) or msg_size.shape != (n,):
            raise ValueError(f"base_rate has shape {base_rate.shape}, msg_size {msg_size.shape}: "
                             f"both need one value per topic, shape ({n},)")
        self.names: list[str] = list(names)
        self.index: dict[str, int] = {t: i for i, t in enumerate(self.names)}
        if len(self.index) != n:
            dup = next(t for t in self.names if self.names.count(t) > 1)
            raise ValueError(f"topic {dup!r} appears twice in the traffic model")
        self.base_rate = np.asarray(base_rate, dtype=float).copy()
        self.msg_size = np.asarray(msg_size, dtype=float).copy()
        self.partitioned_names = list(partitioned_names) if partitioned_names is not None else self.names
        counts: dict[str, int] = {}
        for p in self.partitioned_names:
            counts[p] = counts.get(p, 0) + 1
        self.partitions = np.array([counts[p] for p in self.partitioned_names], dtype=float)
        self.groups: dict[str, np.ndarray] = dict(groups or {"all": np.arange(n)})
        self.namespaces = [t.split("://", 1)[-1].rsplit("/", 1)[0] for t in self.names]
        self.seed = seed
        self.origin = 0.0
        """Emulated time of the run start: patterns and events are written in offsets from it."""
        self._modifiers: list[Modifier] = []
        self._version = 0
        self._cache_key: tuple[float, int] | None = None
        self._cache = self.base_rate

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_scenario(cls, scenario: Scenario, seed: int | None = None) -> TrafficModel:
        """Build every topic group of the scenario, its rates and patterns; `seed` defaults to the
        scenario's."""
        seed = scenario.seed if seed is None else seed
        names: list[str] = []
        partitioned: list[str] = []
        rates: list[np.ndarray] = []
        sizes: list[np.ndarray] = []
        groups: dict[str, np.ndarray] = {}
        for gi, group in enumerate(scenario.topics):
            label = group.label(gi)
            pairs = topic_names(group)
            start = len(names)
            names.extend(t for t, _ in pairs)
            partitioned.extend(p for _, p in pairs)
            rng = np.random.default_rng(derive_seed(seed, f"traffic/{label}"))
            per_topic = base_rates(group, rng)
            if group.partitions:
                per_topic = np.repeat(per_topic / group.partitions, group.partitions)
            rates.append(per_topic)
            sizes.append(np.full(len(pairs), float(group.msg_size)))
            groups[label] = np.arange(start, len(names))
        base = np.concatenate(rates) if rates else np.zeros(0)
        size = np.concatenate(sizes) if sizes else np.zeros(0)
        model = cls(names, base * scenario.traffic.scale, size, partitioned_names=partitioned,
                    groups=groups, seed=seed)
        for gi, group in enumerate(scenario.topics):
            label = group.label(gi)
            rng = np.random.default_rng(derive_seed(seed, f"traffic/{label}/patterns"))
            model.add_patterns(group.patterns, groups[label], rng, label)
        model.add_patterns(scenario.traffic.patterns, None,
                           np.random.default_rng(derive_seed(seed, "traffic/patterns")), "traffic")
        return model

    def add_patterns(self, patterns: Iterable[object], within: np.ndarray | None,
                     rng: np.random.Generator, label: str = "all") -> None:
        for k, p in enumerate(patterns):
            if isinstance(p, SteadyPattern):
                continue
            if isinstance(p, RampPattern):
                self.add(_Ramp(within, p.start, p.end, p.from_factor, p.to_factor))
            elif isinstance(p, SpikePattern):
                self.add(_Spike(self.select(p.select, rng, within=within), p.at, p.duration, p.factor))
            elif isinstance(p, DiurnalPattern):
                n = len(within) if within is not None else len(self.names)
                phase: float | np.ndarray = float(p.phase)
                if p.phase_jitter > 0:
                    phase = p.phase + rng.uniform(-p.phase_jitter, p.phase_jitter, n)
                self.add(_Diurnal(within, p.amplitude, p.period, phase))
            elif isinstance(p, NoisePattern):
                idx = self.select(p.select, rng, within=within)
                n = len(idx) if idx is not None else len(self.names)
                self.add(_Noise(idx, n, p.sd, p.interval, self.seed, f"{label}/{k}"))
            else:  # pragma: no cover - the schema admits no other kind
                raise TypeError(f"unknown pattern {p!r}")

    # ------------------------------------------------------------------ evaluation

    def rates(self, now: float) -> np.ndarray:
        """msg/s each topic would publish at emulated time `now` (read-only: shared by every caller
        at `now`)."""
        key = (now, self._version)
        if key == self._cache_key:
            return self._cache
        now = now - self.origin
        mods = self._live_modifiers(now)
        r = self.base_rate.copy()
        for m in mods:
            f = m.factor(now)
            if m.indices is None:
                r *= f
            else:
                r[m.indices] *= f
        r.flags.writeable = False
        self._cache_key, self._cache = key, r
        return r

    def _live_modifiers(self, now: float) -> list[Modifier]:
        """The modifiers still in effect at `now` (time since `origin`); the finished ones, 1 for
        ever after, are dropped for good."""
        mods = self._modifiers
        if any(m.finished(now) for m in mods):
            self._modifiers = mods = [m for m in mods if not m.finished(now)]
        return mods

    def subset(self, idx: np.ndarray) -> TopicSubset:
        """An evaluator of the rates of topics `idx` alone (in that order), for a caller that asks
        for the same topics again and again at instants of its own (a broker's load report)."""
        return TopicSubset(self, idx)

    # ------------------------------------------------------------------ changes (events)

    def add(self, modifier: Modifier) -> None:
        self._modifiers.append(modifier)
        self._version += 1

    def spike(self, indices: np.ndarray | None, factor: float, start: float, duration: float) -> None:
        self.add(_Spike(indices, start, duration, factor))

    def ramp(self, indices: np.ndarray | None, factor: float, start: float, over: float) -> None:
        self.add(_Ramp(indices, start, start + over, 1.0, factor))

    def set_rate(self, indices: np.ndarray | None, rate: float) -> None:
        """Base rate of the selected topics = `rate` msg/s per topic (split over partitions)."""
        idx = slice(None) if indices is None else indices
        self.base_rate[idx] = rate / self.partitions[idx]
        self._version += 1

    def scale(self, indices: np.ndarray | None, factor: float) -> None:
        idx = slice(None) if indices is None else indices
        self.base_rate[idx] *= factor
        self._version += 1

    # ------------------------------------------------------------------ selection

    def select(self, sel: TopicSelector, rng: np.random.Generator, *,
               within: np.ndarray | None = None) -> np.ndarray | None:
        """Sorted unique indices of the selected topics (None = all topics, nothing filtered)."""
        if sel == TopicSelector() and within is None:
            return None
        mask = np.zeros(len(self.names), dtype=bool)
        if within is None:
            mask[:] = True
        else:
            mask[within] = True
        if sel.group is not None:
            if sel.group not in self.groups:
                raise ValueError(f"group = {sel.group!r}: no such topic group; known: "
                                 + ", ".join(self.groups))
            in_group = np.zeros_like(mask)
            in_group[self.groups[sel.group]] = True
            mask &= in_group
        if sel.namespace is not None:
            mask &= np.fromiter((ns == sel.namespace for ns in self.namespaces), bool, len(self.names))
        if sel.topics:
            named = np.zeros_like(mask)
            named[self.resolve_names(sel.topics)] = True
            mask &= named
        chosen = np.flatnonzero(mask)
        if sel.hottest is not None:
            order = np.argsort(-self.base_rate[chosen], kind="stable")
            chosen = np.sort(chosen[order[: sel.hottest]])
        if sel.random is not None:
            k = min(sel.random, len(chosen))
            chosen = np.sort(rng.choice(chosen, size=k, replace=False)) if k else chosen[:0]
        if sel.fraction is not None:
            k = round(sel.fraction * len(chosen))
            k = max(k, 1) if sel.fraction > 0 and len(chosen) else k
            chosen = np.sort(rng.choice(chosen, size=k, replace=False)) if k else chosen[:0]
        return chosen

    def resolve_names(self, names: Iterable[str]) -> list[int]:
        """Indices of topics named fully or as `tenant/ns/x`; a partitioned name gives all partitions."""
        out: list[int] = []
        for name in names:
            full = name if "://" in name else f"persistent://{name}"
            if full in self.index:
                out.append(self.index[full])
                continue
            parts = [i for i, p in enumerate(self.partitioned_names) if p == full]
            if not parts:
                raise ValueError(f"topic {name!r} is not in the scenario's topics")
            out.extend(parts)
        return out
