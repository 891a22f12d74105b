"""Scaling: wall seconds per emulated minute as the cluster grows, and the log-log slope of each series.

Two series around one middle cluster: brokers in {10, 50, 100, 200} with 4,000 bundles, and bundles
in {1k, 4k, 16k, 64k} on 50 brokers. Each cluster gets one topic (one producer) per bundle spread
over 4 namespaces, traffic with a one-hour day curve (so that load reports keep being written and
the leader keeps updating its view), the default shedder and placement, the invariant checker
every `CHECK_INTERVAL` emulated seconds. After every producer is connected and `WARMUP` emulated
seconds have passed, each of `MINUTES` emulated minutes is timed on its own; a point is the median
minute. A series' figure is the slope of log(wall per minute) over log(size): 1.0 is linear.
Target: slope <= 1.2.
"""

from __future__ import annotations

import functools
import statistics
import time
from typing import Any

import anyio
import anyio.lowlevel

from emulator.cluster.load_source import FlatLoad
from emulator.cluster.messages import HandleKind
from emulator.runtime import VirtualClock, run
from emulator.testing import emulated_cluster

from .fallback import DiurnalLoad, zipf_rates
from .harness import Options, Row, Target, log_log_slope, quiet_logs

CHECK_INTERVAL = 60.0
NAMESPACES = 4


class _HourlyLoad(DiurnalLoad):
    """DiurnalLoad squeezed into one hour: reports change by more than 10 % every few minutes."""

    def factor(self, now: float) -> float:
        return super().factor(now * 24.0)


async def minute_costs(brokers: int, bundles: int, minutes: int, warmup: float,
                       seed: int) -> dict[str, Any]:
    ns = [f"public/scale-{i}" for i in range(NAMESPACES)]
    per_ns = max(1, bundles // NAMESPACES)
    topics = per_ns * NAMESPACES
    names = [f"persistent://{ns[i % NAMESPACES]}/t-{i}" for i in range(topics)]
    load = _HourlyLoad(FlatLoad(rate=20.0, cores=1, topic_rates=zipf_rates(names, seed)))
    clients = max(1, min(100, topics // 1000))
    async with emulated_cluster(brokers, seed=seed, namespaces={n: per_ns for n in ns},
                                load_source=load, check_interval=CHECK_INTERVAL) as cluster:
        if cluster.decision_log is not None:
            cluster.decision_log.close()
        cs = [cluster.add_client() for _ in range(clients)]
        await anyio.lowlevel.checkpoint()
        t = time.perf_counter()
        for i, c in enumerate(cs):
            c.create_handles(names[i::clients], HandleKind.PRODUCER)
        await cluster.wait_until(lambda: sum(c.connected_count() for c in cs) == topics,
                                 timeout=3600, poll=1.0, what="every producer connected")
        connect_wall = time.perf_counter() - t
        await anyio.sleep(warmup)
        walls = []
        for _ in range(minutes):
            t = time.perf_counter()
            await anyio.sleep(60.0)
            walls.append(time.perf_counter() - t)
        return {"brokers": brokers, "bundles": per_ns * NAMESPACES, "topics": topics,
                "bundles_owned": len(cluster.ownership()), "connect_wall_s": connect_wall,
                "minute_walls_s": walls, "wall_per_minute_s": statistics.median(walls),
                "reports_written": cluster.events.counts.get("load_report", 0)}


def series(opts: Options) -> dict[str, tuple[list[int], int]]:
    """Series name -> (sizes, the other dimension's fixed value)."""
    if opts.quick:
        return {"brokers": ([5, 10, 20], 400), "bundles": ([200, 400, 800], 10)}
    return {"brokers": ([10, 50, 100, 200], 4000), "bundles": ([1000, 4000, 16000, 64000], 50)}


def run_bench(opts: Options) -> list[Row]:
    quiet_logs()
    minutes = 2 if opts.quick else 5
    warmup = 30.0 if opts.quick else 120.0
    rows = []
    cache: dict[tuple[int, int], dict[str, Any]] = {}
    for dim, (sizes, fixed) in series(opts).items():
        points = []
        for size in sizes:
            key = (size, fixed) if dim == "brokers" else (fixed, size)
            if key not in cache:
                fn = functools.partial(minute_costs, key[0], key[1], minutes, warmup, opts.seed)
                cache[key] = run(fn, clock=VirtualClock())
            points.append(cache[key])
        per_minute = [p["wall_per_minute_s"] for p in points]
        slope = log_log_slope([float(s) for s in sizes], per_minute)
        rows.append(Row(
            name=f"scaling.{dim}", figure=slope, unit="slope", target=Target("figure", "<=", 1.2),
            reps=minutes, samples=[slope],
            note=f"{'bundles' if dim == 'brokers' else 'brokers'} fixed at {fixed}; wall s per "
                 f"emulated minute: " + ", ".join(f"{s}: {w:.3g}" for s, w in zip(sizes, per_minute)),
            details={"sizes": sizes, "fixed": fixed, "points": points}))
    return rows
