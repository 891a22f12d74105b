"""Every metric family the emulator exports, collected from short runs under each load manager; the
table of docs/metrics.md ("Every metric") lists each of them (tests/test_docs.py checks it).

    python3 -m tests.metric_reference        # print the table from the running code
"""

from __future__ import annotations

import anyio

from emulator.cluster.capacity import Capacity
from emulator.cluster.cluster import ClusterSettings
from emulator.model.config import ServiceConfig
from emulator.observe.metrics import ClusterMetrics
from emulator.runtime import VirtualEventLoop
from emulator.testing import emulated_cluster

LOAD_MANAGERS = {
    "Modular": "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl",
    "Simple": "org.apache.pulsar.broker.loadbalance.impl.SimpleLoadManagerImpl",
    "Extensible": "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl",
}
SUFFIX = {"counter": "_total"}


async def _families(load_manager: str) -> dict[str, tuple[str, frozenset[str], str]]:
    """Exposed name -> (type, label names, help) of every family one short run exports."""
    conf = ServiceConfig(expose_bundles_metrics_in_prometheus=True, load_manager_class_name=load_manager)
    settings = ClusterSettings(capacity=Capacity())   # the shared capacities' queues export too
    async with emulated_cluster(2, seed=41, namespaces={"public/default": 2}, conf=conf,
                                settings=settings) as cluster:
        metrics = ClusterMetrics(cluster)
        client = cluster.add_client()
        client.create_handles([f"persistent://public/default/t-{i}" for i in range(4)])
        await cluster.wait_until(lambda: client.connected_count() == 4)
        await anyio.sleep(120)                   # a few report, stats and shedding cycles
        out = {}
        for f in metrics.registry.collect():
            labels = frozenset(k for s in f.samples for k in s.labels if k not in ("le", "quantile"))
            out[f.name + SUFFIX.get(f.type, "")] = (f.type, labels, f.documentation)
        return out


def exported() -> dict[str, dict[str, tuple[str, frozenset[str], str]]]:
    """Load manager -> its run's families, each run on its own virtual-time loop."""
    result = {}
    for short, cls in LOAD_MANAGERS.items():
        loop = VirtualEventLoop()
        try:
            result[short] = loop.run_until_complete(_families(cls))
        finally:
            loop.close()
    return result


def render(runs: dict[str, dict[str, tuple[str, frozenset[str], str]]]) -> str:
    rows: dict[tuple[str, str], list[str]] = {}
    for short, families in runs.items():
        for name, (typ, labels, doc) in families.items():
            rows.setdefault((name, doc), [typ, ", ".join(sorted(labels))]).append(short)
    lines = ["| metric | type | labels | load managers | what |", "|---|---|---|---|---|"]
    for (name, doc), (typ, labels, *managers) in sorted(rows.items()):
        which = "all" if len(managers) == len(LOAD_MANAGERS) else ", ".join(managers)
        lines.append(f"| `{name}` | {typ} | {labels} | {which} | {doc} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(exported()), end="")
