"""SampleFacts: what the KPIs read of a timeline's samples, reduced as the blocks come."""

from __future__ import annotations

import math
import random

import pytest

from emulator.observe.timeline import COUNTERS, RATE, THROUGHPUT, USAGE, LiveTimeline, SampleFacts, Timeline


def _timeline() -> LiveTimeline:
    tl = LiveTimeline.__new__(LiveTimeline)   # take() needs no cluster
    Timeline.__init__(tl, t0=0.0)
    tl._labels = {}
    tl._plan_keys = None
    tl._last_sample_t = None
    return tl


def _reference(samples):
    """The per-tick figures and counter increases computed from the whole list of samples at once
    (the KPIs' first pass before the samples stopped being kept)."""
    usage, rate, tput, points = {}, {}, {}, {}
    for t, name, labels, value in samples:
        broker = dict(labels).get("broker")
        if name in COUNTERS.values():
            points.setdefault((name, labels), []).append((t, value))
        elif broker is not None and name == USAGE:
            usage[(t, broker)] = max(usage.get((t, broker), -math.inf), value)
        elif broker is not None:
            table = rate if name in RATE else tput
            table[(t, broker)] = table.get((t, broker), 0.0) + value
    ticks = sorted({t for t, _ in usage})
    rows = []
    for t in ticks:
        vals = [v for (u, _), v in usage.items() if u == t]
        mean = math.fsum(vals) / len(vals)
        std = math.sqrt(math.fsum((v - mean) ** 2 for v in vals) / len(vals))
        row = [max(vals) - min(vals), max(vals) / mean if mean > 0 else None, std, std / mean if mean > 0 else None]
        for table in (rate, tput):
            xs = [v for (u, _), v in table.items() if u == t]
            row.append(max(xs) / min(xs) if xs and min(xs) > 0 else None)
        rows.append(row)
    increases = []
    for pts in points.values():
        prev, kept = None, []
        for t, v in pts:
            inc = v if prev is None or v < prev else v - prev
            prev = v
            if inc != 0:
                kept.append((t, inc))
        increases.append(kept)
    return ticks, rows, increases


def _rows(facts: SampleFacts):
    cols = [facts.range, facts.mom, facts.std, facts.cv, facts.rate, facts.tput]
    return [[None if v != v else v for v in row] for row in zip(*cols)]


def test_blocks_reduce_to_the_figures_a_pass_over_all_samples_gives():
    """Live blocks (several usages of one broker, rates summed in order, counters with drops and
    repeats, brokerless rows, rows not sampled, zeros and -0.0, a layout change) reduce to the same
    per-tick figures, per-broker usage and counter increases as the samples taken all at once."""
    rng = random.Random(5)
    counter = next(iter(COUNTERS.values()))
    brokers = ["b1", "b2", "b3"]

    def keys(n_brokers: int) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
        out = [("pulsar_not_sampled", ("broker",), ("b1",)), (counter, ("cluster",), ("c",))]
        for b in brokers[:n_brokers]:
            out += [(USAGE, ("broker", "cluster", "metric"), (b, "c", m)) for m in ("cpu", "memory")]
            out += [(name, ("cluster", "broker"), ("c", b)) for name in (*RATE, *THROUGHPUT)]
        out.append((RATE[0], ("cluster",), ("c",)))   # no broker label
        return out

    tl = _timeline()
    samples = []
    level = 0.0
    for block in range(40):
        ks = keys(3 if block < 25 else 2)
        values = [rng.choice([rng.uniform(0, 100), 0.0, -0.0, 7.0]) for _ in ks]
        level = 0.0 if block == 30 else level + rng.choice([0.0, 0.0, 3.0])   # a reset, repeats
        values[1] = level
        t = 10.0 * block
        tl.take(t, list(zip(ks, values)))
        samples += [(t, k[0], tuple(sorted(zip(k[1], k[2]))), v) for k, v in zip(ks, values)
                    if k[0] != "pulsar_not_sampled"]
    facts = tl.sample_facts()
    ticks, rows, increases = _reference(samples)
    assert facts.ticks.tolist() == ticks and len(ticks) == 40
    assert repr(_rows(facts)) == repr(rows)
    assert [list(zip(t.tolist(), i.tolist())) for t, i in facts.counters.values()] == increases
    assert all(inc != 0 for _, incs in facts.counters.values() for inc in incs)
    assert facts.usage["b3"][0].tolist() == ticks[:25] and facts.usage["b1"][0].tolist() == ticks
    again = SampleFacts.of(samples)
    assert repr(_rows(again)) == repr(rows) and again.count == facts.count == len(samples)


def test_a_sample_older_than_a_summed_tick_is_refused():
    facts = SampleFacts()
    labels = (("broker", "b1"),)
    facts.add(10.0, USAGE, labels, 50.0)
    facts.add(10.0, USAGE, labels, 60.0)       # the same tick: the larger usage
    facts.add(20.0, USAGE, labels, 40.0)       # closes t = 10
    with pytest.raises(ValueError, match="t=10.0 after the tick"):
        facts.add(10.0, USAGE, labels, 1.0)
    facts.close()
    with pytest.raises(ValueError, match="time order"):
        facts.add(20.0, USAGE, labels, 1.0)
    assert facts.usage["b1"][1].tolist() == [60.0, 40.0]


def test_a_finished_timeline_ignores_the_recorders_closing_block():
    tl = _timeline()
    tl.take(0.0, [((USAGE, ("broker",), ("b1",)), 5.0)])
    tl.end = 0.0
    tl.take(0.0, [((USAGE, ("broker",), ("b1",)), 9.0)])
    assert tl.sample_facts().usage["b1"][1].tolist() == [5.0]


def test_a_sample_a_float_step_before_the_open_tick_is_that_ticks():
    """The samplers stamp a block with the grid instant the clock is a hair short of; a run ending at
    that instant samples its end a float step earlier: one tick, not a refusal (nor a second tick)."""
    facts = SampleFacts()
    labels = (("broker", "b1"),)
    counter = (("cluster", "c"),)
    facts.add(600.0000000001, USAGE, labels, 50.0)
    facts.add(600.0000000001, COUNTERS["lookups"], counter, 3.0)
    facts.add(600.0, USAGE, labels, 70.0)
    facts.add(600.0, COUNTERS["lookups"], counter, 5.0)
    facts.close()
    assert facts.ticks.tolist() == [600.0000000001]
    assert facts.usage["b1"][1].tolist() == [70.0]
    assert [t.tolist() for t, _ in facts.counters.values()] == [[600.0000000001, 600.0000000001]]
    with pytest.raises(ValueError):
        facts.add(599.0, USAGE, labels, 1.0)
