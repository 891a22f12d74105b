"""A wall-clock cluster with the binary protocol on, for tests with the real `pulsar-client`.

The real client is blocking (the C++ client under Python), so its calls run in worker threads
(`in_thread`) while the cluster runs on the test's own wall-clock loop.
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from emulator.cluster.cluster import Cluster, ClusterSettings
from emulator.cluster.load_source import FlatLoad
from emulator.model.config import ServiceConfig
from emulator.runtime import WallClock, run
from emulator.wire.meter import MeteredLoadSource, RateMeter
from emulator.wire.server import WireServer


def free_base_port(span: int = 8) -> int:
    """A port P such that P .. P + span - 1 are free on loopback now."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + span >= 65535:
            continue
        socks = []
        try:
            for p in range(base, base + span):
                t = socket.socket()
                socks.append(t)
                t.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for t in socks:
                t.close()
    raise RuntimeError("no free range of loopback ports")


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
