"""The leader's split check counts each reported namespace's bundles from the broker's factory cache,
and reuses the counts while the namespaces and the cache are unchanged (LoadManagerLeader._bundle_counts)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from emulator.cluster.bundle_factory import NamespaceBundleFactory
from emulator.loadmanagers.modular.actors.leader import LoadManagerLeader


class _Factory(NamespaceBundleFactory):
    """The factory's cache alone: a read of a namespace not cached answers 4 bundles."""

    def __init__(self) -> None:
        self._init_bundle_factory()
        self.log = SimpleNamespace(debug=lambda *a, **k: None)
        self.reads: list[str] = []

    async def _load_namespace_bundles(self, namespace: str):  # type: ignore[override]
        self.reads.append(namespace)
        bundles = [f"{namespace}/{i}" for i in range(4)]
        self._ns_bundles[namespace] = bundles   # type: ignore[assignment]
        self.namespace_bundles_version += 1
        return bundles


def test_counts_are_reused_until_the_cache_or_the_namespaces_change() -> None:
    factory = _Factory()
    leader = SimpleNamespace(broker=factory, _split_counts=None)
    count = lambda names: asyncio.run(LoadManagerLeader._bundle_counts(leader, names))  # noqa: E731
    factory._ns_bundles.update({"t/a": ["x", "y"], "t/b": ["z"]})
    assert count(["t/a", "t/b"]) == {"t/a": 2, "t/b": 1}
    kept = leader._split_counts
    assert kept is not None and count(["t/a", "t/b"]) is kept[2]   # reused, no step per namespace
    factory._ns_bundles["t/a"] = ["x"]   # behind the version's back: still the kept answer
    assert count(["t/a", "t/b"]) == {"t/a": 2, "t/b": 1}
    factory._invalidate_namespace("t/a")   # the watch saw t/a's policies change: counted afresh
    assert count(["t/a", "t/b"]) == {"t/a": 4, "t/b": 1} and factory.reads == ["t/a"]
    assert leader._split_counts is None   # made with a read: not kept
    assert count(["t/a", "t/b"]) == {"t/a": 4, "t/b": 1} and leader._split_counts is not None
    assert count(["t/b"]) == {"t/b": 1}   # other namespaces: counted again
