"""LiveTimeline.take: the samples and the KPIs' first pass it keeps as blocks come."""

from __future__ import annotations

import math
import random

from emulator.observe.timeline import COUNTERS, RATE, THROUGHPUT, USAGE, LiveTimeline, SampleFacts


def _timeline() -> LiveTimeline:
    tl = LiveTimeline.__new__(LiveTimeline)   # take() needs no cluster
    tl.samples = []
    tl._labels = {}
    tl._facts = SampleFacts()
    tl._plan_keys = None
    tl._last_sample_t = None
    return tl


def test_blocks_keep_the_samples_and_the_same_facts_as_a_pass_over_them():
    """Per block: every sampled row as (t, name, sorted labels, float value) in row order, and facts
    equal, dict order included, to SampleFacts.of over the samples (several usages of one broker,
    rates summed in order, counters, brokerless rows, rows not sampled, NaN and -0.0, a layout change)."""
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
    for block in range(40):
        ks = keys(3 if block < 25 else 2)
        values = [rng.choice([rng.uniform(0, 100), 0.0, -0.0, math.nan, 7]) for _ in ks]
        tl.take(10.0 * block, list(zip(ks, values)))
    assert len(tl.samples) == 25 * (1 + 3 * 6 + 1) + 15 * (1 + 2 * 6 + 1)
    assert all(type(s[3]) is float for s in tl.samples)
    again = SampleFacts.of(tl.samples)
    live = tl._facts
    assert live.count == again.count == len(tl.samples)
    for field in ("usage", "rate", "tput", "counters"):
        assert repr(list(getattr(live, field).items())) == repr(list(getattr(again, field).items())), field
