"""PolicyCache.refresh: one reader at a time, and no caller gets a view older than its call."""

from __future__ import annotations

from types import SimpleNamespace

import anyio
import msgspec
import pytest

from emulator.cluster import paths
from emulator.cluster.metadata_messages import Notification
from emulator.cluster.policy_cache import PolicyCache
from emulator.model.config import ServiceConfig
from emulator.model.policies import NamespaceIsolationPolicy

CLUSTER = "c1"
POLICY = {"iso": NamespaceIsolationPolicy(namespaces=["t/iso.*"], primary=["broker-1"])}


class GatedStore:
    """The part of MetadataClient that PolicyCache reads; a read of the isolation node waits for
    `gate` when one is set (a slow store)."""

    def __init__(self) -> None:
        self.isolation: bytes = b"{}"
        self.gate: anyio.Event | None = None
        self.reads = 0
        self.owner = SimpleNamespace(log=SimpleNamespace(warning=lambda *a, **k: None))

    async def get(self, path: str):
        assert path == paths.isolation_policies_path(CLUSTER)
        self.reads += 1
        if self.gate is not None:
            await self.gate.wait()
        return SimpleNamespace(data=self.isolation)

    async def children(self, path: str) -> list[str]:
        return []


@pytest.mark.asyncio
async def test_a_caller_arriving_during_a_refresh_gets_the_new_view_not_the_old_one():
    md = GatedStore()
    cache = PolicyCache(md, CLUSTER, ServiceConfig())  # type: ignore[arg-type]
    assert (await cache.refresh()).isolation_policies == ()
    # a new isolation policy is written; the next read of it is slow
    md.isolation = msgspec.json.encode(POLICY)
    cache.on_notification(Notification("NodeDataChanged", paths.isolation_policies_path(CLUSTER)))
    md.gate = anyio.Event()
    views = {}

    async def decide(name: str) -> None:
        views[name] = await cache.refresh()

    async with anyio.create_task_group() as tg:
        tg.start_soon(decide, "first")          # reads the node, waits on the store
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(decide, "second")         # arrives while the read is in flight
        await anyio.wait_all_tasks_blocked()
        assert "second" not in views, "a caller during a refresh waits for it"
        md.gate.set()
    assert views["first"].isolation_policies == tuple(POLICY.values())
    assert views["second"] is views["first"]
    assert md.reads == 2                         # the second caller did not read again
