"""A wall-clock cluster with the binary protocol on, for tests with the real `pulsar-client`.

The real client is blocking (the C++ client under Python), so its calls run in worker threads
(`in_thread`) while the cluster runs on the test's own wall-clock loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from emulator.cluster.cluster import Cluster, ClusterSettings
from emulator.cluster.load_source import FlatLoad
from emulator.model.config import ServiceConfig
from emulator.runtime import WallClock, run
from emulator.wire.meter import MeteredLoadSource, RateMeter
from emulator.wire.options import free_base_port
from emulator.wire.server import WireServer


async def in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    return await anyio.to_thread.run_sync(fn, *args)


def with_cluster(body: Callable[[Cluster, WireServer], Awaitable[Any]], *, brokers: int = 4,
                 conf: ServiceConfig | None = None, settings: ClusterSettings | None = None,
                 keep_alive: float = 30.0, speed: float = 1.0,
                 namespaces: dict[str, int] | None = None) -> Any:
    """Run `body(cluster, server)` on a wall-clock cluster whose brokers speak the binary protocol
    (`speed`: emulated seconds per real second, as `--speed`)."""
    clock = WallClock(speed)

    async def main() -> Any:
        meter = RateMeter()
        async with Cluster.start(brokers, conf=conf, settings=settings, clock=clock, namespaces=namespaces,
                                 load_source=MeteredLoadSource(FlatLoad(), meter)) as cluster:
            await cluster.wait_for_leader()
            server = WireServer(cluster, free_base_port(), meter=meter, keep_alive=keep_alive)
            await server.start()
            try:
                return await body(cluster, server)
            finally:
                await server.close()

    return run(main, clock=clock)


async def wait_for(predicate: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    """Poll `predicate` (it reads state of other threads: the client's, which no event signals)."""
    with anyio.fail_after(timeout):
        while not predicate():  # noqa: ASYNC110
            await anyio.sleep(0.05)
