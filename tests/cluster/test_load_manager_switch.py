"""Changing the load manager as Pulsar does: a live switch between Modular and Extensible (accepted by
Pulsar's admin API, not supported by its docs) warns; the documented migration, a rolling restart
with the new class in broker.conf, redirects lookups to the newest-started broker's load manager
(RedirectManager) while the cluster is mixed, and ends with every producer connected."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest

from emulator.cluster import load_manager as lm
from emulator.cluster.events import LoadManagerSwitchUnsupported
from emulator.cluster.load_manager_switch import MIGRATION_DOCS, switch_supported
from emulator.cluster.messages import HandleKind
from emulator.cluster.redirect_manager import RedirectView
from emulator.observe.load_manager_warnings import LoadManagerWarnings
from emulator.observe.summary import format_summary, summarize
from emulator.testing import emulated_cluster

NS = "public/default"
TRANSFER_SHEDDER = "org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder"
TO_EXTENSIBLE = {"loadManagerClassName": lm.EXTENSIBLE, "loadBalancerLoadSheddingStrategy": TRANSFER_SHEDDER}


def topics(n: int, ns: str = NS) -> list[str]:
    return [f"persistent://{ns}/t-{i}" for i in range(n)]


def registration(cls: str, start: int) -> bytes:
    return msgspec.json.encode({"loadManagerClassName": cls, "startTimestamp": start, "cpu": {}})


def test_only_a_change_across_the_extensible_line_is_unsupported():
    assert switch_supported(lm.SIMPLE, lm.MODULAR) and switch_supported(lm.MODULAR, lm.NOOP)
    assert not switch_supported(lm.MODULAR, lm.EXTENSIBLE) and not switch_supported(lm.EXTENSIBLE, lm.SIMPLE)


def test_the_newest_registration_names_the_class_lookups_go_to():
    """RedirectManager.findRedirectLookupResultAsync: the latest startTimestamp wins; a broker of that
    class answers; one of another class redirects to a random broker of that class."""
    view = RedirectView()
    rng = random.Random(1)
    view.put("a:8080", registration(lm.MODULAR, 100))
    view.put("b:8080", registration(lm.MODULAR, 100))
    assert view.target(lm.MODULAR, rng) is None                   # homogeneous: never a redirect
    view.put("c:8080", registration(lm.EXTENSIBLE, 200))          # c restarted with Extensible
    assert view.target(lm.EXTENSIBLE, rng) is None
    assert {view.target(lm.MODULAR, rng) for _ in range(10)} == {"c:8080"}
    view.put("a:8080", registration(lm.EXTENSIBLE, 300))
    assert {view.target(lm.MODULAR, rng) for _ in range(50)} == {"a:8080", "c:8080"}
    view.put("b:8080", registration(lm.MODULAR, 400))             # a rollback: b restarted Modular
    assert view.target(lm.MODULAR, rng) is None and view.target(lm.EXTENSIBLE, rng) == "b:8080"
    view.keep_only(frozenset({"a:8080", "c:8080"}))               # b gone: Extensible is newest again
    assert view.target(lm.EXTENSIBLE, rng) is None
    view.put("n:8080", msgspec.json.encode({"startTimestamp": 999}))   # Noop: no class, left out
    assert view.newest_class == lm.EXTENSIBLE


@pytest.mark.asyncio
async def test_a_live_switch_to_extensible_warns_in_the_log_the_events_and_the_summary(capsys: Any):
    seen: list[LoadManagerSwitchUnsupported] = []
    async with emulated_cluster(3, seed=4, namespaces={NS: 8}, strict=False) as cluster:
        cluster.events.subscribe(lambda e: seen.append(e) if isinstance(e, LoadManagerSwitchUnsupported) else None)
        warnings = LoadManagerWarnings(cluster.events)
        client = cluster.add_client()
        client.create_handles(topics(40), HandleKind.PRODUCER)
        await cluster.wait_until(lambda: client.connected_count() == 40, timeout=120)
        cluster.set_config("loadManagerClassName", lm.EXTENSIBLE)   # Pulsar's admin API accepts it
        await cluster.wait_until(lambda: len(seen) == 3, timeout=60)
        assert all(type(b.load_manager).__name__ == "ExtensibleLoadManagerWrapper" for b in cluster.brokers.values())
        summary = summarize(cluster, load_manager_warnings=warnings)
    assert {e.broker for e in seen} == set(cluster.brokers)
    assert all((e.previous, e.current, e.how, e.docs) == (lm.MODULAR, lm.EXTENSIBLE, "live", MIGRATION_DOCS)
               for e in seen)
    assert "does not support it" in capsys.readouterr().out       # the structlog warning
    assert len(summary.load_manager_warnings) == 3
    assert all("ModularLoadManagerImpl to ExtensibleLoadManagerImpl" in line and MIGRATION_DOCS in line
               for line in summary.load_manager_warnings)
    assert format_summary(summary).count("UNSUPPORTED:") == 3
    assert msgspec.to_builtins(summary)["load_manager_warnings"] == summary.load_manager_warnings  # run.json


@pytest.mark.asyncio
async def test_a_live_switch_from_simple_to_modular_is_supported_and_silent():
    seen: list[LoadManagerSwitchUnsupported] = []
    from emulator.model.config import ServiceConfig
    async with emulated_cluster(2, seed=4, namespaces={NS: 4}, conf=ServiceConfig(load_manager_class_name=lm.SIMPLE),
                                strict=False) as cluster:
        cluster.events.subscribe(lambda e: seen.append(e) if isinstance(e, LoadManagerSwitchUnsupported) else None)
        cluster.set_config("loadManagerClassName", lm.MODULAR)
        await cluster.wait_until(lambda: all(b.load_manager.class_name == lm.MODULAR
                                             for b in cluster.brokers.values()), timeout=60)
    assert seen == []


@pytest.mark.asyncio
async def test_a_rolling_restart_to_extensible_redirects_lookups_and_reconnects_every_producer():
    """The documented migration: each broker restarted with ExtensibleLoadManagerImpl in its broker.conf.
    While the cluster is mixed, a Modular broker answers every lookup with an authoritative Redirect to
    an Extensible one (the newest-started registration's class), which assigns through its channel.
    The invariant checker is off: a bundle a Modular broker still holds gets a second owner, which is
    Pulsar's behaviour in the mixed phase (asserted below), not an emulator bug."""
    async with emulated_cluster(3, seed=3, namespaces={NS: 8}, check_invariants=False) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(60), HandleKind.PRODUCER)
        await cluster.wait_until(lambda: client.connected_count() == 60, timeout=120)

        await cluster.stop_broker("broker-1:8080")
        await cluster.add_broker("broker-1:8080", settings=TO_EXTENSIBLE)
        first = cluster.brokers["broker-1:8080"]
        assert first.conf is not cluster.conf and first.conf.load_manager_class_name == lm.EXTENSIBLE
        assert cluster.conf.load_manager_class_name == lm.MODULAR     # the others keep their broker.conf
        await cluster.wait_until(lambda: client.connected_count() == 60, timeout=300)
        # mixed: a new topic looked up at a Modular broker is redirected to the Extensible one
        for b in ("broker-2:8080", "broker-3:8080"):
            view = cluster.brokers[b].redirect_view
            assert view.newest_class == lm.EXTENSIBLE
            assert view.target(lm.MODULAR, random.Random(0)) == "broker-1:8080"
        assert cluster.brokers["broker-1:8080"].redirect_view.target(lm.EXTENSIBLE, random.Random(0)) is None
        modular = [cluster.brokers[b] for b in ("broker-2:8080", "broker-3:8080")]
        before = sum(b.stats.redirects for b in modular)
        more = cluster.add_client()
        await cluster.create_namespace("public/more", 4)
        more.create_handles(topics(20, "public/more"), HandleKind.PRODUCER)
        await cluster.wait_until(lambda: more.connected_count() == 20, timeout=300)
        # every first hop at a Modular broker was redirected (the service URL list has all three)
        assert sum(b.stats.redirects for b in modular) > before and more.stats.lookup_redirects > 0
        owners = cluster.ownership()
        assert {owners[b] for b in owners if b.startswith("public/more/")} == {"broker-1:8080"}
        # split brain, as in Pulsar: a new topic of a bundle a Modular broker still holds in
        # /namespace/<bundle> is assigned again in the Extensible channel and served there too
        b2 = cluster.brokers["broker-2:8080"]
        held = next(b for b, o in b2.owned.items() if o.active and b.startswith(NS + "/"))
        nb = await cluster.namespace_bundles(NS)
        topic = next(t for t in (f"persistent://{NS}/new-{i}" for i in range(10_000)) if nb.find_bundle(t) == held)
        late = cluster.add_client()
        late.create_handles([topic], HandleKind.PRODUCER)
        await cluster.wait_until(lambda: late.connected_count() == 1, timeout=120)
        assert b2.owned[held].active and cluster.brokers["broker-1:8080"].owned[held].active
        assert cluster.store.peek(f"/namespace/{held}") is not None   # the Modular owner's lock stays

        for b in ("broker-2:8080", "broker-3:8080"):
            await cluster.stop_broker(b)
            await cluster.add_broker(b, settings=TO_EXTENSIBLE)
            await cluster.wait_until(lambda: client.connected_count() == 60, timeout=300)
        assert {type(b.load_manager).__name__ for b in cluster.brokers.values()} == {"ExtensibleLoadManagerWrapper"}
        assert all(b.redirect_view.target(lm.EXTENSIBLE, random.Random(0)) is None for b in cluster.brokers.values())
        await cluster.wait_until(lambda: client.connected_count() == 60 and more.connected_count() == 20
                                 and late.connected_count() == 1, timeout=300)
        assert not cluster.system.failures


@pytest.mark.asyncio
async def test_a_dynamic_class_overrides_the_restarted_brokers_file_and_says_so():
    """BrokerService.updateDynamicServiceConfiguration at start: /admin/configuration wins over broker.conf."""
    seen: list[LoadManagerSwitchUnsupported] = []
    async with emulated_cluster(2, seed=5, namespaces={NS: 4}, strict=False) as cluster:
        cluster.events.subscribe(lambda e: seen.append(e) if isinstance(e, LoadManagerSwitchUnsupported) else None)
        cluster.set_config("loadManagerClassName", lm.SIMPLE)
        await cluster.dynamic_configuration_written()
        await cluster.stop_broker("broker-2:8080")
        await cluster.add_broker("broker-2:8080", settings=TO_EXTENSIBLE)
        assert cluster.brokers["broker-2:8080"].conf.load_manager_class_name == lm.SIMPLE
        cluster.delete_config("loadManagerClassName")   # back to each broker's own file
        assert cluster.brokers["broker-2:8080"].conf.load_manager_class_name == lm.EXTENSIBLE
        assert cluster.conf.load_manager_class_name == lm.MODULAR
    overridden = [e for e in seen if e.how == "overridden"]
    assert [(e.broker, e.requested, e.current) for e in overridden] == [("broker-2:8080", lm.EXTENSIBLE, lm.SIMPLE)]
