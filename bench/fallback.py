"""A stand-in for the built-in `default` scenario while the workload layer is being written.

Same shape as `default`: B brokers, T topics spread over N namespaces, one producer and one
consumer per topic (spread over C clients), Zipf-like per-topic rates with a diurnal swing,
ThresholdShedder + LeastLongTermMessageRate (Pulsar's defaults), bundle splits on. Built from
`emulator.testing.emulated_cluster` and a `FlatLoad` whose rates follow the time of day.
Only the benchmarks use it; `standard_day` prefers the real scenario when it exists.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.lowlevel

from emulator.cluster.load_source import FlatLoad, SystemUsage, TopicLoad
from emulator.cluster.messages import HandleKind
from emulator.model.loaddata import NamespaceBundleStats
from emulator.testing import emulated_cluster

DAY = 86_400.0


class DiurnalLoad:
    """FlatLoad's per-topic rates times a day curve: `low` at 04:00, 1.0 at 16:00 (a cosine)."""

    def __init__(self, flat: FlatLoad, low: float = 0.3) -> None:
        self.flat = flat
        self.low = low

    def factor(self, now: float) -> float:
        phase = 2 * math.pi * ((now % DAY) - 16 * 3600) / DAY
        return self.low + (1 - self.low) * (1 + math.cos(phase)) / 2

    def bundle_stats(self, broker_id: str, now: float,
                     bundles: Mapping[str, Mapping[str, TopicLoad]]) -> dict[str, NamespaceBundleStats]:
        f = self.factor(now)
        out = self.flat.bundle_stats(broker_id, now, bundles)
        for bundle, s in out.items():  # the stats are frozen: scaled copies
            out[bundle] = NamespaceBundleStats(
                s.msg_rate_in * f, s.msg_rate_out * f, s.msg_throughput_in * f, s.msg_throughput_out * f,
                s.consumer_count, s.producer_count, s.topics, s.cache_size)
        return out

    def system_usage(self, broker_id: str, now: float,
                     stats: Mapping[str, NamespaceBundleStats]) -> SystemUsage:
        return self.flat.system_usage(broker_id, now, stats)


def topic_names(namespaces: list[str], topics: int) -> list[str]:
    return [f"persistent://{namespaces[i % len(namespaces)]}/topic-{i}" for i in range(topics)]


def zipf_rates(names: list[str], seed: int, mean: float = 20.0, s: float = 1.1) -> dict[str, float]:
    """Rates whose ranks follow a Zipf law (a few hot topics), in a seeded random order."""
    rng = random.Random(seed)
    weights = [1.0 / (k + 1) ** s for k in range(len(names))]
    scale = mean * len(names) / sum(weights)
    order = list(names)
    rng.shuffle(order)
    return {t: w * scale for t, w in zip(order, weights)}


async def day_run(*, brokers: int, topics: int, namespaces: int, bundles: int, clients: int,
                  duration: float, seed: int, check_interval: float = 60.0) -> dict[str, Any]:
    """Boot, connect every producer and consumer, then let `duration` emulated seconds pass."""
    ns = [f"public/ns-{i}" for i in range(namespaces)]
    names = topic_names(ns, topics)
    load = DiurnalLoad(FlatLoad(rate=20.0, cores=1, topic_rates=zipf_rates(names, seed)))
    async with emulated_cluster(brokers, seed=seed, namespaces={n: bundles for n in ns},
                                load_source=load, check_interval=check_interval) as cluster:
        cs = [cluster.add_client() for _ in range(clients)]
        await anyio.lowlevel.checkpoint()
        t0 = cluster.system.clock.now()
        for i, c in enumerate(cs):
            mine = names[i::clients]
            c.create_handles(mine, HandleKind.PRODUCER)
            c.create_handles(mine, HandleKind.CONSUMER)
        await anyio.sleep(duration)
        log = cluster.decision_log
        return {
            "emulated_s": cluster.system.clock.now() - t0,
            "handles_connected": sum(c.connected_count() for c in cs),
            "handles": 2 * topics,
            "unloads": len(log.of("unload")) if log is not None else None,
            "splits": len(log.of("bundle_split")) if log is not None else None,
            "bundles_owned": len(cluster.ownership()),
            "invariant_checks": cluster.invariants.checks if cluster.invariants else 0,
            "violations": len(cluster.invariants.violations) if cluster.invariants else 0,
        }
