"""The inputs the Extensible wrapper hands its schedulers and selector, as cheap views that read the
same as the plain values they replace: the split run's topics per bundle (made only for the bundle
the strategy asks for)."""

from __future__ import annotations

from typing import Any

import pytest

from emulator.cluster import load_manager as lm
from emulator.cluster.extensible_wrapper import ExtensibleLoadManagerWrapper
from emulator.cluster.messages import HandleKind
from emulator.model.config import ServiceConfig
from emulator.testing import emulated_cluster

NS = "public/default"


def conf(**kw: Any) -> ServiceConfig:
    return ServiceConfig(load_manager_class_name=lm.EXTENSIBLE, **kw)


@pytest.mark.asyncio
async def test_split_topics_are_made_only_for_the_bundle_asked_for_and_read_as_the_eager_map():
    async with emulated_cluster(2, seed=3, conf=conf(), namespaces={NS: 8}) as cluster:
        client = cluster.add_client()
        names = [f"persistent://{NS}/t-{i}" for i in range(40)]
        client.create_handles(names, HandleKind.PRODUCER)
        await cluster.wait_until(lambda: client.connected_count() == len(names), timeout=120)
        broker_id = max(cluster.live_brokers(), key=lambda b: len(cluster.brokers[b].owned))
        broker = cluster.brokers[broker_id]
        m = broker.load_manager
        assert isinstance(m, ExtensibleLoadManagerWrapper)
        eager = {bundle: broker._topic_stats(o.actor) for bundle, o in broker.owned.items()
                 if o.active and o.actor is not None}
        assert len(eager) >= 2
        calls: list[Any] = []
        real = broker._topic_stats
        broker._topic_stats = lambda owner: calls.append(owner) or real(owner)
        topics = m._split_topics()
        assert calls == []                                   # nothing made up front
        bundle = next(iter(eager))
        assert topics.get(bundle, {}) == eager[bundle] and len(calls) == 1
        assert topics.get(f"{NS}/0x00000000_0x00000001", {}) == {} and len(calls) == 1
        assert set(topics) == set(eager) and len(topics) == len(eager) and len(calls) == 1
        assert dict(topics) == eager
