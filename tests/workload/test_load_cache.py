"""The load source's per-broker arrays, kept while the bundle owners' topic tables keep their version,
give exactly (not approximately) the floats of the plain one-pass computation, through attaches,
detaches, reconnects, unloads, splits and crashes."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest

from emulator.cluster.load_source import TopicLoad, TopicTable
from emulator.workload import library
from emulator.workload.load import WorkloadLoadSource, bundle_sums

from tests.workload.harness import observed

MIN = 60.0


class _Traffic:
    """What the load source reads of a TrafficModel."""

    def __init__(self, rates: np.ndarray, msg_size: np.ndarray, index: dict[str, int]) -> None:
        self._rates, self.msg_size, self.index = rates, msg_size, index

    def rates(self, now: float) -> np.ndarray:
        return self._rates

    def subset(self, idx: np.ndarray) -> _Subset:
        return _Subset(self._rates, idx)


class _Subset:
    def __init__(self, rates: np.ndarray, idx: np.ndarray) -> None:
        self._rates, self.idx = rates, idx

    def rates(self, now: float, out: np.ndarray) -> np.ndarray:
        return self._rates.take(self.idx, out=out)


def _plain(src: WorkloadLoadSource, now: float, bundles: Any) -> Any:
    t = src.traffic
    return bundle_sums(t.rates(now), t.msg_size, t.index, {b: dict(topics) for b, topics in bundles.items()})


def test_versioned_tables_give_the_plain_sums_bit_for_bit_as_they_change():
    rng = random.Random(11)
    names = [f"persistent://a/x/t{i}" for i in range(400)]
    traffic = _Traffic(np.array([rng.uniform(0, 100) for _ in names]),
                       np.array([float(rng.choice([100, 1024, 4096])) for _ in names]),
                       {t: i for i, t in enumerate(names)})
    src = WorkloadLoadSource(traffic, None)  # type: ignore[arg-type]
    bundles = {f"a/x/b{b}": TopicTable() for b in range(5)}
    for step in range(300):
        table = bundles[rng.choice(list(bundles))]
        topic = rng.choice(names + ["persistent://a/x/unknown"])
        load = table.setdefault(topic, TopicLoad())
        if rng.random() < 0.5:
            load.producers = max(0, load.producers + rng.choice([-1, 1]))
        else:
            load.consumers = max(0, load.consumers + rng.choice([-1, 1, 1, 2]))
        if rng.random() < 0.05:
            del table[topic]
        if rng.random() < 0.03:   # a bundle unloaded and owned again: a new table
            bundles[rng.choice(list(bundles))] = TopicTable()
        table.version += 1
        for _ in range(2):        # the second call reads the cached arrays
            assert src.bundle_stats("broker-1", 0.0, bundles) == _plain(src, 0.0, bundles), step
    assert src.bundle_stats("broker-1", 0.0, {}) == {}


@pytest.mark.asyncio
@pytest.mark.parametrize("name, minutes", [("hot-topic", 12), ("broker-crash", 8)])
async def test_every_report_of_a_scenario_equals_the_plain_computation(monkeypatch, name, minutes):
    cached = WorkloadLoadSource.bundle_stats
    calls = {"tables": 0, "hits": 0}

    def checked(self: WorkloadLoadSource, broker_id: str, now: float, bundles: Any) -> Any:
        before = self._brokers.get(broker_id)
        got = cached(self, broker_id, now, bundles)
        assert got == _plain(self, now, bundles), (broker_id, now)
        if bundles and all(type(t) is TopicTable for t in bundles.values()):
            calls["tables"] += 1
            calls["hits"] += self._brokers.get(broker_id) is before
        return got

    monkeypatch.setattr(WorkloadLoadSource, "bundle_stats", checked)
    # the sampled path (what a traffic model without a closed form takes): no curves
    monkeypatch.setattr(WorkloadLoadSource, "bundle_curves", lambda self, *a: None)
    async with observed(library.load(name), check_interval=10.0) as run:
        await run.sleep_until(minutes * MIN)
        assert run.summary().handles_connected > 0
    assert calls["tables"] > 100 and calls["hits"] > calls["tables"] // 2, calls


# ---------------------------------------------------------------------------- closed form


def _at(c: Any, t: float) -> dict[str, tuple[float, float, float, float]]:
    """A TrafficCurves evaluated at `t`: bundle -> its four rates."""
    x = c.omega * (t - c.origin)
    v = c.coef[0] + c.coef[1] * math.sin(x) + c.coef[2] * math.cos(x)
    nb = len(c.names)
    return {n: (v[b], v[nb + b], v[2 * nb + b], v[3 * nb + b]) for b, n in enumerate(c.names)}


@pytest.mark.asyncio
@pytest.mark.parametrize("name, minutes", [("default", 10), ("hot-topic", 8), ("broker-crash", 6)])
async def test_every_closed_form_a_scenario_asks_for_gives_the_plain_rates(monkeypatch, name, minutes):
    """The fast path's curves, at the instant they are made, equal the plain per-topic computation
    (to rounding: the diurnal terms are summed per bundle first) and its counts exactly; hot-topic's
    noise and set_rate event and broker-crash's table changes included. These scenarios have a closed
    form at every tick, so their windows never sample. (A report tick asks again only when the
    broker's tables or the traffic's piece changed: test_stats_windows.py checks the ticks between.)"""
    curves = WorkloadLoadSource.bundle_curves
    seen = {"curves": 0, "none": 0}

    def checked(self: WorkloadLoadSource, broker_id: str, now: float, bundles: Any) -> Any:
        c = curves(self, broker_id, now, bundles)
        if c is None:
            seen["none"] += 1
            return c
        seen["curves"] += 1
        assert c.valid_from <= now < c.until
        plain = _plain(self, now, bundles)
        got = _at(c, now)
        assert list(got) == list(plain)
        for bundle, s in plain.items():
            want = (s.msg_rate_in, s.msg_rate_out, s.msg_throughput_in, s.msg_throughput_out)
            assert got[bundle] == pytest.approx(want, rel=1e-12, abs=1e-9), (bundle, now)
        assert (c.consumers, c.producers, c.topics) == (
            [s.consumer_count for s in plain.values()], [s.producer_count for s in plain.values()],
            [s.topics for s in plain.values()])
        return c

    monkeypatch.setattr(WorkloadLoadSource, "bundle_curves", checked)
    async with observed(library.load(name), check_interval=10.0) as run:
        await run.sleep_until(minutes * MIN)
        assert run.summary().handles_connected > 0
    assert seen["curves"] > 20 and seen["none"] == 0, seen


@pytest.mark.asyncio
@pytest.mark.parametrize("name, minutes", [("hot-topic", 8), ("broker-crash", 6), ("rolling-restart", 12)])
async def test_a_tick_that_skips_the_tables_uses_the_curve_they_would_give(monkeypatch, name, minutes):
    """A report tick whose broker's ownership epoch has not moved skips its tables
    (BrokerWindows.advance): the curve it uses is the very one `bundle_curves` gives for the tables
    of that instant. Splits, unloads, a crash, restarts, attaches and the traffic's pieces included."""
    from emulator.cluster.local_data import BrokerLoadData
    from emulator.cluster.stats_window import BrokerWindows

    sample, advance = BrokerLoadData._sample_windows, BrokerWindows.advance
    taken = {"fast": 0, "tables": 0}
    flag = {"fast": False}

    def advanced(self: BrokerWindows, now: float) -> Any:
        flag["fast"] = True
        return advance(self, now)

    def checked(self: Any) -> Any:
        flag["fast"] = False
        totals = sample(self)
        if flag["fast"]:
            taken["fast"] += 1
            topics = {b: o.actor.topics for b, o in self.owned.items() if o.active and o.actor}
            assert self.load_source.bundle_curves(self.broker_id, self.now, topics) is self.windows._seg
        else:
            taken["tables"] += 1
        return totals

    monkeypatch.setattr(BrokerWindows, "advance", advanced)
    monkeypatch.setattr(BrokerLoadData, "_sample_windows", checked)
    async with observed(library.load(name), check_interval=10.0) as run:
        await run.sleep_until(minutes * MIN)
        assert run.summary().handles_connected > 0
    assert taken["fast"] > 100 and taken["tables"] > 0, taken


def test_a_ramp_in_progress_has_no_closed_form_and_one_before_and_after_it():
    from emulator.workload.traffic import TrafficModel

    model = TrafficModel(["persistent://a/x/t0", "persistent://a/x/t1"], np.array([10.0, 20.0]),
                         np.array([100.0, 100.0]))
    model.ramp(None, 3.0, start=100.0, over=50.0)
    sub = model.subset(np.array([1, 0]))
    out = np.zeros(2)
    before = sub.linear(10.0, out)
    assert before is not None and before.until == 100.0 and out.tolist() == [20.0, 10.0]
    assert sub.linear(120.0, out) is None
    after = sub.linear(150.0, out)
    assert after is not None and after.until == math.inf and out.tolist() == [60.0, 30.0]
