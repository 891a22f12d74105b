"""The inputs the Extensible wrapper hands its schedulers and selector, as cheap views that read the
same as the plain values they replace: the split run's topics per bundle (made only for the bundle
the strategy asks for)."""

from __future__ import annotations

from typing import Any

import pytest

from emulator.cluster import load_manager as lm
from emulator.loadmanagers.extensible.actors.extensible_wrapper import ExtensibleLoadManagerWrapper
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


@pytest.mark.asyncio
async def test_the_filter_pipeline_runs_again_only_when_what_it_reads_changes(monkeypatch):
    """Selections between two changes reuse the pipeline's answer; a new load-data value, another
    `excluded`, a changed configuration key or a namespace with an anti-affinity group run it again,
    and each answer is what the pipeline gives on the same context."""
    import emulator.loadmanagers.extensible.actors.selection as selection_module
    from emulator.loadmanagers.extensible.model import filters

    async with emulated_cluster(3, seed=5, conf=conf(), namespaces={NS: 4}) as cluster:
        client = cluster.add_client()
        client.create_handles([f"persistent://{NS}/t-{i}" for i in range(8)], HandleKind.PRODUCER)
        await cluster.wait_until(lambda: client.connected_count() == 8, timeout=120)
        broker = cluster.brokers[cluster.live_brokers()[0]]
        m = broker.load_manager
        assert isinstance(m, ExtensibleLoadManagerWrapper) and m.broker_store is not None
        runs: list[str] = []

        def counted(f):
            def run(brokers, bundle, context, **kw):
                runs.append(bundle)
                return f(brokers, bundle, context, **kw)
            return run

        monkeypatch.setattr(selection_module, "DEFAULT_PIPELINE", tuple(counted(f) for f in filters.DEFAULT_PIPELINE))
        n = len(filters.DEFAULT_PIPELINE)
        a, b = f"{NS}/0x00000000_0x40000000", f"{NS}/0x40000000_0x80000000"

        async def check(bundle: str, excluded: frozenset[str] = frozenset()) -> int:
            before = len(runs)
            await m.select(bundle, excluded)
            context = await m._context()
            expected = filters.apply_filters(
                filters.DEFAULT_PIPELINE,
                {x: d for x, d in (context.available_brokers or {}).items() if x not in excluded}, bundle, context)
            assert m._last_selection[0] == len(expected)
            return (len(runs) - before) // n

        assert await check(a) in (0, 1)
        assert await check(a) == 0 and await check(b) == 0          # same inputs, any bundle
        assert await check(a, frozenset(cluster.live_brokers()[:1])) == 1
        assert await check(a) == 1                                  # back to no exclusion
        store = m.broker_store
        key = next(iter(store.items()))
        await store.push(key, store.items()[key])                   # a new value of a broker's load data
        await cluster.wait_until(lambda: m._filtered is None or m._filtered[0][1] is not store.items(),
                                 timeout=10)
        assert await check(a) == 1 and await check(a) == 0
        broker.conf.load_balancer_broker_max_topics = 0             # a dynamic configuration change
        assert await check(a) == 1 and m._last_selection == (0, False)
        assert await m.select(a, frozenset()) is None


def test_no_filter_cache_where_the_answer_depends_on_the_bundle():
    """An anti-affinity group (the count of its Owned bundles per broker) or any isolation policy
    (per namespace) makes the pipeline's answer the bundle's own: no key, always run."""
    from emulator.loadmanagers.extensible.model.context import LoadManagerContext
    from emulator.model.policies import ClusterPolicies, LocalPolicies, NamespaceIsolationPolicy, PolicyView

    key = ExtensibleLoadManagerWrapper._filter_key
    plain = LoadManagerContext(conf=conf(), policies=PolicyView())
    assert key(f"{NS}/0x00000000_0xffffffff", frozenset(), plain) is not None
    grouped = LoadManagerContext(conf=conf(), policies=PolicyView(local_policies={
        NS: LocalPolicies(namespace_anti_affinity_group="g")}))
    assert key(f"{NS}/0x00000000_0xffffffff", frozenset(), grouped) is None
    assert key("public/other/0x00000000_0xffffffff", frozenset(), grouped) is not None
    isolated = LoadManagerContext(conf=conf(), policies=PolicyView(ClusterPolicies(isolation={
        "p": NamespaceIsolationPolicy(namespaces=["public/other"], primary=["host-1"])})))
    assert key(f"{NS}/0x00000000_0xffffffff", frozenset(), isolated) is None


@pytest.mark.asyncio
async def test_concurrent_misses_of_a_broker_lookup_data_share_one_read():
    """The lookup-data cache loads a missing broker's node once however many selections miss it
    meanwhile (a restart storm's lookups), and every one of them sees the loaded value."""
    import anyio

    from emulator.cluster import paths

    async with emulated_cluster(3, seed=7, conf=conf(), namespaces={NS: 4}) as cluster:
        broker = cluster.brokers[cluster.live_brokers()[0]]
        m = broker.load_manager
        assert isinstance(m, ExtensibleLoadManagerWrapper)
        await m._context()
        assert m._lookup_data.keys() >= broker.available_brokers and len(broker.available_brokers) == 3
        missing = sorted(broker.available_brokers)[1:]
        saved = {x: m._lookup_data.pop(x) for x in missing}
        reads: list[str] = []
        real_get = broker.md.get

        async def get(path, *args, **kwargs):
            reads.append(path)
            return await real_get(path, *args, **kwargs)

        broker.md.get = get
        seen: list[bool] = []

        async def select_context() -> None:
            await m._context()
            seen.append(all(m._lookup_data.get(x) == saved[x] for x in missing))

        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(select_context)
        assert sorted(p for p in reads if p.startswith(paths.BROKERS)) == sorted(
            paths.broker_path(x) for x in missing)
        assert seen == [True] * 5 and m._lookup_loads == {}
