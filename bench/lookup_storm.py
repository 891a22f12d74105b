"""Lookup storm: N distinct topics looked up by clients on a B-broker cluster, virtual clock, zero latency.

Every lookup takes the full path (client -> broker -> leader -> owner, ownership node created, attach),
all of them at once as after a cluster-wide restart. The figure is client lookups per wall second
(retries included; the cluster's boot is not timed). The baseline is bare asyncio request/reply
(an `asyncio.Queue` to a server task, an `asyncio.Future` back) measured in the same run: the cheapest
round trip the loop can do, so the ratio says how many round trips' worth of work one lookup costs.
Target: ratio >= 0.15.

    python -m bench.lookup_storm --brokers 10 --topics 10000     # one storm, all its numbers
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from emulator.cluster.messages import HandleKind
from emulator.runtime import VirtualClock, run
from emulator.testing import emulated_cluster

from .harness import Options, Row, Target, interleaved, quiet_logs


async def storm(brokers: int, topics: int, bundles: int, clients: int, seed: int) -> dict[str, Any]:
    ns = "public/default"
    async with emulated_cluster(brokers, seed=seed, namespaces={ns: bundles}) as cluster:
        cs = [cluster.add_client() for _ in range(clients)]
        names = [f"persistent://{ns}/storm-{i}" for i in range(topics)]
        t_emul = cluster.system.clock.now()
        wall = time.perf_counter()
        for i, c in enumerate(cs):
            c.create_handles(names[i::clients], HandleKind.PRODUCER)
        await cluster.wait_until(lambda: sum(c.connected_count() for c in cs) == topics,
                                 timeout=3600, poll=0.01)
        wall = time.perf_counter() - wall
        emulated = cluster.system.clock.now() - t_emul
        lookups = sum(c.stats.lookups for c in cs)
        failed = sum(c.stats.lookups_failed for c in cs)
        checker = cluster.invariants
        checker.check_now()
        return {"brokers": brokers, "topics": topics, "bundles": bundles, "wall_s": wall,
                "emulated_s": emulated, "client_lookups": lookups, "failed_lookups": failed,
                "lookups_per_s": lookups / wall, "topics_per_s": topics / wall,
                "broker_requests": cluster.lookup_counts(),
                "invariant_checks": checker.checks, "violations": len(checker.violations)}


async def round_trips(n: int) -> float:
    """Bare asyncio request/reply: one client, one server task, n sequential round trips; per s."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[int, asyncio.Future[int]]] = asyncio.Queue()

    async def server() -> None:
        while True:
            msg, fut = await queue.get()
            fut.set_result(msg)

    task = loop.create_task(server())
    t = time.perf_counter()
    for i in range(n):
        fut = loop.create_future()
        queue.put_nowait((i, fut))
        await fut
    rate = n / (time.perf_counter() - t)
    task.cancel()
    return rate


def run_bench(opts: Options) -> list[Row]:
    quiet_logs()
    topics = 5_000 if opts.quick else 100_000
    brokers, bundles, clients = 10, 64, 10
    reps = opts.repetitions(3, 1)
    clock = VirtualClock()
    last: dict[str, Any] = {}

    def measured() -> float:
        last.update(run(storm, brokers, topics, bundles, clients, opts.seed, clock=clock))
        return last["lookups_per_s"]

    base, base_values, figure, values = interleaved(
        lambda: run(round_trips, 20_000 if opts.quick else 200_000, clock=clock), measured, reps)
    details = {k: v for k, v in last.items() if k not in ("lookups_per_s",)}
    details["baseline_samples"] = base_values
    note = ""
    if last.get("violations"):
        note = f"{last['violations']} invariant violations"
    return [Row(name="lookup_storm", figure=figure, unit="lookups/s", baseline=base,
                baseline_unit="rt/s asyncio", ratio=figure / base,
                target=Target("ratio", ">=", 0.15), reps=reps, samples=values, note=note,
                details=details)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--brokers", type=int, default=10)
    p.add_argument("--topics", type=int, default=10000)
    p.add_argument("--bundles", type=int, default=64)
    p.add_argument("--clients", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    quiet_logs()
    result = run(storm, a.brokers, a.topics, a.bundles, a.clients, a.seed, clock=VirtualClock())
    for k, v in result.items():
        print(f"{k:>18}: {v:,.2f}" if isinstance(v, float) else f"{k:>18}: {v}")


if __name__ == "__main__":
    main()
