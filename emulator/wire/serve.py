"""The binary protocol in a run: the CLI's `--pulsar-port` and a scenario's `[serve] pulsar_port`.

Wall clock only: a real client's timeouts and keep-alives run in real seconds, which the virtual clock
does not keep (options.py's `check_pulsar_port` words that as bad input). `metered` wraps the run's load source
before the brokers start, so they report the real clients' measured traffic; `wire_protocol` opens the
listeners once the cluster is up and closes them (and every connection) when the run ends. A run
without the option calls neither, so its outputs are what they were.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any, TextIO

from .meter import MeteredLoadSource, RateMeter
from .server import WireServer

__all__ = ["RateMeter", "metered", "partitioned_topics", "wire_protocol"]


def metered(load_source: Any, meter: RateMeter) -> MeteredLoadSource:
    return MeteredLoadSource(load_source, meter)


def partitioned_topics(scenario: Any) -> dict[str, int]:
    """Partitioned topic name -> partitions, from the scenario's [[topics]] groups (PARTITIONED_METADATA)."""
    out: dict[str, int] = {}
    for group in getattr(scenario, "topics", ()) or ():
        if group.partitions:
            for i in range(group.size):
                out[f"persistent://{group.namespace}/{group.local_name(i)}"] = group.partitions
    return out


@contextlib.asynccontextmanager
async def wire_protocol(cluster: Any, port: int, host: str, meter: RateMeter,
                        partitions: dict[str, int] | None = None,
                        out: TextIO | None = None) -> AsyncIterator[WireServer]:
    """Listeners for every broker while the block runs; `out` gets one line with the service URL."""
    server = WireServer(cluster, port, host, meter=meter, partitions=partitions,
                        keep_alive=float(cluster.conf.keep_alive_interval_seconds))
    await server.start()
    if out is not None:
        out.write("PULSAR serviceUrl=pulsar://" + ",".join(
            f"{host}:{p}" for p in sorted(server.port_of(b) for b in cluster.live_brokers())) + "\n")
        for error in server.errors:
            out.write(f"warning: {error}\n")
        out.flush()
    try:
        yield server
    finally:
        await server.close()
