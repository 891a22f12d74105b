"""Lookup storm: N distinct topics looked up by clients on a B-broker cluster, virtual clock, zero latency.

Every lookup takes the full path (client -> broker -> leader -> owner, ownership node created, attach).
Prints wall time, lookups per wall second and the invariant checker's verdict.

    python -m bench.lookup_storm --brokers 10 --topics 10000
"""

from __future__ import annotations

import argparse
import time

import anyio

from emulator.cluster.messages import HandleKind
from emulator.runtime import VirtualClock, run
from emulator.testing import emulated_cluster


async def storm(brokers: int, topics: int, bundles: int, clients: int, seed: int) -> dict:
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
                "lookups_per_s": lookups / wall, "broker_requests": cluster.lookup_counts(),
                "invariant_checks": checker.checks, "violations": len(checker.violations)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--brokers", type=int, default=10)
    p.add_argument("--topics", type=int, default=10000)
    p.add_argument("--bundles", type=int, default=64)
    p.add_argument("--clients", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    result = run(storm, a.brokers, a.topics, a.bundles, a.clients, a.seed, clock=VirtualClock())
    for k, v in result.items():
        print(f"{k:>18}: {v:,.2f}" if isinstance(v, float) else f"{k:>18}: {v}")


if __name__ == "__main__":
    main()
