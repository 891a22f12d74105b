"""Decision cost: one `select_broker` and one `find_bundles_for_unloading` call, as the inputs grow.

Every built-in placement strategy picks among 10, 100 and 1,000 candidates (10 bundles each); every
built-in shedder plans over 1,000, 10,000 and 100,000 bundles on 100 brokers. The load data is
synthetic and seeded: Zipf-like bundle traffic, broker usages spread from idle to overloaded so
that the shedders have work to do. The figure of each row is the log-log slope of the per-call
time over the sizes (1.0 = linear); the per-call times are in `details`. Target: slope <= 1.2.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import shedders
import strategies
from emulator.model.config import ServiceConfig
from emulator.model.loaddata import (
    BrokerData,
    BundleData,
    LoadData,
    LocalBrokerData,
    NamespaceBundleStats,
    ResourceUsage,
    TimeAverageBrokerData,
    TimeAverageMessageData,
)

from .harness import Options, Row, Target, log_log_slope

NS = "public/bench"
SHED_BROKERS = 100
BUNDLES_PER_CANDIDATE = 10
BROKER_MSG_RATE = 62_500.0  # msg/s per broker before its heat: what 1,000 bundles each carried


def _window(max_samples: int, rate: float, size: float) -> TimeAverageMessageData:
    return TimeAverageMessageData(max_samples=max_samples, num_samples=max_samples,
                                  msg_rate_in=rate, msg_rate_out=rate,
                                  msg_throughput_in=rate * size, msg_throughput_out=rate * size)


def load_data(brokers: int, bundles: int, seed: int) -> LoadData:
    """`brokers` brokers sharing `bundles` bundles round-robin, as the leader would hold them."""
    rng = random.Random(seed)
    names = [f"broker-{i + 1}:8080" for i in range(brokers)]
    step = (1 << 32) // bundles
    bundle_names = [f"{NS}/0x{i * step:08x}_0x{(i + 1) * step if i + 1 < bundles else 0xffffffff:08x}"
                    for i in range(bundles)]
    bundle_data: dict[str, BundleData] = {}
    owned: dict[str, list[str]] = {b: [] for b in names}
    # Zipf-like bundle rates, scaled so that each broker's bundles add up to the same traffic at
    # every size (heat x BROKER_MSG_RATE): more bundles split the same load. Unscaled, a broker's
    # traffic grew with its bundle count, the shedders' minimum-throughput gates let 3 of 100
    # brokers through at 1k bundles but 39 at 100k, and a series measured its input's growth
    # (1,300x the bundles ranked for 100x the bundles) rather than the decision's cost.
    raw = [20_000.0 / (1 + rng.randrange(bundles)) ** 0.8 + 50.0 + rng.random() * 5
           for _ in range(bundles)]
    totals = [0.0] * brokers
    for k, r in enumerate(raw):
        totals[k % brokers] += r
    for k, bundle in enumerate(bundle_names):
        owner = k % brokers
        # hotter brokers are the higher-numbered ones, with enough bytes to pass the shedders'
        # minimum-throughput gates: every shedder has bundles to rank and unload
        heat = 1.0 + 3.0 * owner / max(1, brokers - 1)
        rate = heat * BROKER_MSG_RATE * raw[k] / totals[owner]
        bundle_data[bundle] = BundleData(short_term_data=_window(10, rate * rng.uniform(0.7, 1.3), 1024),
                                         long_term_data=_window(1000, rate, 1024), topics=rng.randint(1, 20))
        owned[names[owner]].append(bundle)
    broker_data: dict[str, BrokerData] = {}
    for i, b in enumerate(names):
        mine = owned[b]
        rate_in = sum(bundle_data[x].short_term_data.msg_rate_in for x in mine)
        cpu = 5.0 + 90.0 * i / max(1, brokers - 1)  # idle ... overloaded
        local = LocalBrokerData(
            cpu=ResourceUsage(usage=cpu * 4, limit=400.0),
            memory=ResourceUsage(usage=1024.0, limit=4096.0),
            direct_memory=ResourceUsage(usage=256.0, limit=4096.0),
            bandwidth_in=ResourceUsage(usage=rate_in * 8.0, limit=10 * 1024 * 1024.0),
            bandwidth_out=ResourceUsage(usage=rate_in * 8.0, limit=10 * 1024 * 1024.0),
            msg_rate_in=rate_in, msg_rate_out=rate_in,
            msg_throughput_in=rate_in * 1024, msg_throughput_out=rate_in * 1024,
            num_bundles=len(mine), num_topics=sum(bundle_data[x].topics for x in mine),
            bundles=set(mine),
            last_stats={x: NamespaceBundleStats(msg_rate_in=bundle_data[x].short_term_data.msg_rate_in,
                                                msg_rate_out=bundle_data[x].short_term_data.msg_rate_out,
                                                topics=bundle_data[x].topics) for x in mine},
        )
        tad = TimeAverageBrokerData()
        tad.reset(mine, bundle_data, NamespaceBundleStats())
        broker_data[b] = BrokerData(local_data=local, time_average_data=tad, preallocated_bundle_data={})
    return LoadData(broker_data=broker_data, bundle_data=bundle_data, recently_unloaded_bundles={})


def _per_call(fn: Any, calls: int, reps: int) -> tuple[float, list[float]]:
    """Median over `reps` runs of the mean seconds per call of `calls` calls."""
    runs = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        runs.append((time.perf_counter() - t) / calls)
    return statistics.median(runs), runs


def _series_row(name: str, sizes: list[int], per_call: list[float], unit_size: str,
                reps: int, samples: dict[str, list[float]]) -> Row:
    slope = log_log_slope([float(s) for s in sizes], per_call)
    return Row(name=name, figure=slope, unit="slope", target=Target("figure", "<=", 1.2), reps=reps,
               samples=[slope],
               details={"sizes": sizes, "size_unit": unit_size,
                        "us_per_call": [round(x * 1e6, 3) for x in per_call],
                        "runs_us": {k: [round(x * 1e6, 3) for x in v] for k, v in samples.items()}})


def _measure(make_call: Callable[[int], Callable[[], None]], sizes: list[int], max_calls: int,
             budget: float, reps: int) -> tuple[list[float], dict[str, list[float]]]:
    """Median us per call at each size (`make_call(size)` gives the call), and every repetition's."""
    per_call, samples = [], {}
    for n in sizes:
        call = make_call(n)
        t = _per_call(call, 1, 1)[0]
        calls = max(3, min(max_calls, int(budget / max(t, 1e-7))))
        med, runs = _per_call(call, calls, reps)
        per_call.append(med)
        samples[str(n)] = runs
    return per_call, samples


def run_bench(opts: Options) -> list[Row]:
    conf = ServiceConfig()
    reps = opts.repetitions(5, 3)
    cand_sizes = [10, 30, 100] if opts.quick else [10, 100, 1000]
    bundle_sizes = [300, 1000, 3000] if opts.quick else [1000, 10_000, 100_000]
    budget = 0.02 if opts.quick else 0.2  # seconds of calls per size and repetition (about)
    rows: list[Row] = []
    placements = {n: load_data(n, n * BUNDLES_PER_CANDIDATE, opts.seed) for n in cand_sizes}
    new_bundle = BundleData.default()
    for name in strategies.names():
        def placement_call(n: int, name: str = name) -> Callable[[], None]:
            data = placements[n]
            candidates = set(data.broker_data)
            strategy = strategies.create(name, rng=random.Random(opts.seed))
            strategy.on_active_brokers_change(set(candidates))
            return lambda: strategy.select_broker(candidates, new_bundle, data, conf)

        per_call, samples = _measure(placement_call, cand_sizes, 20_000, budget, reps)
        rows.append(_series_row(f"decision.select_broker.{name}", cand_sizes, per_call, "candidates",
                                reps, samples))
    sheds = {n: load_data(SHED_BROKERS, n, opts.seed) for n in bundle_sizes}
    for name in shedders.names():
        def shedding_call(n: int, name: str = name) -> Callable[[], None]:
            data = sheds[n]
            shedder = shedders.create(name, rng=random.Random(opts.seed))
            shedder.on_active_brokers_change(set(data.broker_data))
            return lambda: shedder.find_bundles_for_unloading(data, conf)

        per_call, samples = _measure(shedding_call, bundle_sizes, 2_000, budget, reps)
        rows.append(_series_row(f"decision.find_bundles.{name}", bundle_sizes, per_call, "bundles",
                                reps, samples))
    return rows
