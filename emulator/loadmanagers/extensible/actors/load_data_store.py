"""A load-data store: a producer and (optionally) a TableView on one non-persistent system topic.

Follows apache/pulsar `extensions/store/TableViewLoadDataStoreImpl.java` (`pushAsync`, `removeAsync`,
`get`, `entrySet`, `init`, `startProducer`, `startTableView`, `closeTableView`): `push` is a keyed
send, `remove` a tombstone (null value), reads go to the local TableView, so every broker holds its
own eventually consistent copy. The leader reads both stores; a follower reads the broker store but
only writes the top-bundles store (`playFollower`: `topBundlesLoadDataStore.close(); startProducer()`),
which is why the view can be absent. No compaction strategy: the last write wins. The restart of an
idle producer or view (after 2 x `loadBalancerReportUpdateMaxIntervalMinutes`) is not modelled: the
emulated client never goes stale.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from types import MappingProxyType
from typing import Generic, TypeVar

from emulator.runtime import Actor

from .system_topic import SystemTopic
from .table_view import TableView

__all__ = ["LoadDataStore"]

V = TypeVar("V")


class LoadDataStore(Generic[V]):
    """One broker's handle on a load-data topic; `owner` is the broker-side actor that reads it."""

    def __init__(self, topic: SystemTopic, owner: Actor) -> None:
        self.topic = topic
        self.owner = owner
        self.view: TableView[V] | None = None
        self._items: tuple[TableView[V] | None, int, Mapping[str, V]] = (None, -1, MappingProxyType({}))

    async def start_table_view(self) -> None:
        """`startTableView`: a new view, which on a non-persistent topic starts empty."""
        if self.view is None:
            self.view = TableView(self.topic, self.owner)
            await self.view.start()

    def close_table_view(self) -> None:
        if self.view is not None:
            self.view.close()
            self.view = None

    async def init(self) -> None:
        """`init()`: close, then start the producer and a fresh view."""
        self.close_table_view()
        await self.start_table_view()

    def push(self, key: str, value: V) -> asyncio.Future[int]:
        """`pushAsync(key, value)`: publish a value the caller will not change afterwards."""
        return self.topic.publish(self.owner, key, value)

    def remove(self, key: str) -> asyncio.Future[int]:
        """`removeAsync(key)`: a tombstone."""
        return self.topic.publish(self.owner, key, None)

    def get(self, key: str) -> V | None:
        if self.view is None:
            raise RuntimeError(f"{self.topic.topic}: this broker has no table view of it (a follower "
                               "only writes the top-bundles store)")
        return self.view.get(key)

    def items(self) -> Mapping[str, V]:
        """A read-only copy of the view's entries in its order (`entrySet()`), {} without a view.
        The same object while the view is unchanged (a decision context per lookup reads it), so a
        reader may key a cache on its identity."""
        view = self.view
        if view is None:
            return {}
        if view.tag is not None:   # reads a shared copy: no version of its own
            return MappingProxyType(dict(view.data))
        cached_view, version, items = self._items
        if cached_view is not view or version != view.version:
            items = MappingProxyType(dict(view.data))
            self._items = (view, view.version, items)
        return items
