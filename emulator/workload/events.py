"""Scenario events: one function per verb, applied to a running cluster at the event's time.

Each function resolves its targets (which brokers, which bundle, which topics), announces itself with
`cluster.events.emit(ScenarioEvent(event=<verb>, arguments=...))` so recorders and logs see what the
scenario did and when, then acts through the cluster's operator API (add/stop brokers, admin unload and
split, dynamic config) or on the workload's models (capacity, background load, traffic).

Choices where Pulsar has no single answer:
* `remove_brokers` with `count` picks the highest-numbered live brokers by default (a StatefulSet
  scale-down), or the first, random, most- or least-loaded (by owned bundles) ones.
* `restart_rolling` restarts brokers in name order; the leader takes its turn like any other broker.
  With `every`, on a fixed cadence: a batch that fails (its broker is gone) fails the event, but the
  other batches still run at their times.
* `add_brokers` with `brokers` names brings those brokers back (a removed broker, same id and host).
* a restarted broker keeps its capacity and its noise stream (same host); `restart_rolling`'s
  `settings` are its own broker.conf keys from then on (a load-manager migration), over the
  cluster's start-up values and under /admin/configuration (Cluster.add_broker).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from emulator.cluster.events import (
    ActorFailed,
    BrokerCrashed,
    BrokerStartFailed,
    BrokerStopped,
    BrokerStopping,
    Event,
    ScenarioEvent,
)
from emulator.cluster.network import host_of
from emulator.model.bundles import topic_namespace

from .build import broker_id
from .loader import broker_settings
from .schema import (
    AddBrokers,
    BackgroundLoad,
    LeaderFailover,
    RampEvent,
    RemoveBrokers,
    RestartRolling,
    ScaleRate,
    SessionExpire,
    SetCapacity,
    SetConfig,
    SetRate,
    SpikeEvent,
    Split,
    Unload,
    verb_of,
)

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster

    from .build import Workload

__all__ = ["APPLY"]

_NUM = re.compile(r"(\d+)")


def _natural(name: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in _NUM.split(name))


def _emit(cluster: "Cluster", ev: Any, **resolved: Any) -> None:
    args = {k: v for k, v in msgspec.to_builtins(ev, enc_hook=_plain).items() if v not in (None, [], {})}
    args.pop("do", None)
    args.update(resolved)
    cluster.events.emit(ScenarioEvent(event=verb_of(ev), arguments=args))


def _plain(obj: Any) -> Any:
    """Duration/Offset (float subclasses) -> float, for event fields observers serialise."""
    if isinstance(obj, float):
        return float(obj)
    raise NotImplementedError(type(obj))


def _live_or_all(cluster: "Cluster", names: list[str]) -> list[str]:
    return [broker_id(n) for n in names] if names else cluster.live_brokers()


async def _start_broker(cluster: "Cluster", host: str, settings: dict[str, Any] | None = None) -> None:
    bid = host if ":" in host else broker_id(host)
    seen: list[Event] = []   # what happened to this broker while it started: the timeout's reason

    def on_event(e: Event) -> None:
        if getattr(e, "broker", None) == bid or str(getattr(e, "actor", "")).startswith(bid):
            seen.append(e)

    unsubscribe = cluster.events.subscribe(on_event)
    try:
        await cluster.add_broker(host, settings=broker_settings(settings) if settings else None)
    except TimeoutError:
        raise ValueError(f"broker {host} did not start within {cluster.settings.broker_start_timeout:g} "
                         f"emulated seconds: {_what_stopped(seen)}") from None
    finally:
        unsubscribe()


def _what_stopped(seen: list[Event]) -> str:
    """Why a broker did not start, from the events about it during its start."""
    for e in seen:
        if isinstance(e, BrokerStartFailed):
            return f"it failed to start at t={e.t:.1f} s ({e.error})"
        if isinstance(e, ActorFailed):
            return f"its actor {e.actor} raised at t={e.t:.1f} s ({e.error})"
        if isinstance(e, (BrokerCrashed, BrokerStopping, BrokerStopped)):
            return f"it was stopped at t={e.t:.1f} s while starting ({e.kind}, by an overlapping event)"
    return "it was still starting (no error; its start waits on the metadata store or the election)"


def _next_hosts(cluster: "Cluster", count: int) -> list[str]:
    """Names for new brokers: broker-<k> above every broker the cluster has ever had."""
    top = max((int(m.group(1)) for b in cluster.brokers
               if (m := re.match(r"^broker-(\d+)$", host_of(b)))), default=0)
    return [f"broker-{top + i + 1}" for i in range(count)]


# ---------------------------------------------------------------------------------- brokers


async def add_brokers(cluster: "Cluster", w: "Workload", ev: AddBrokers) -> None:
    """New brokers, or named ones brought back: a named broker that was removed starts again under
    its id on the same host (its capacity and noise stream kept), as a restarted pod does; it owns
    nothing until the leader assigns it bundles (Pulsar: a registering broker acquires no bundle by
    itself, ModularLoadManagerImpl only places bundles on lookups and after unloads)."""
    if ev.brokers:
        ids = [broker_id(b) for b in ev.brokers]
        running = [b for b in ids if b in cluster.live_brokers()]
        if running:
            raise ValueError(f"add_brokers: broker {running[0]} is running; only a stopped or new "
                             "broker can be added")
        hosts = [host_of(b) for b in ids]
    else:
        hosts = _next_hosts(cluster, ev.count or 1)
        ids = [broker_id(h) for h in hosts]
    _emit(cluster, ev, brokers=ids)
    changes = {k: getattr(ev, k) for k in ("cores", "nic_gbps", "heap_mb", "direct_mb")}
    if any(v is not None for v in changes.values()):
        for b in ids:
            w.resources.set_capacity(b, **changes)
    async with anyio.create_task_group() as tg:
        for h in hosts:
            tg.start_soon(_start_broker, cluster, h)


def _pick(cluster: "Cluster", w: "Workload", ev: RemoveBrokers) -> list[str]:
    if ev.brokers:
        return [broker_id(b) for b in ev.brokers]
    live = sorted(cluster.live_brokers(), key=_natural)
    n = min(ev.count or 0, len(live))
    if ev.pick == "last":
        return live[len(live) - n:]
    if ev.pick == "first":
        return live[:n]
    if ev.pick == "random":
        return sorted((live[i] for i in w.rng.choice(len(live), size=n, replace=False)), key=_natural)
    owned = {b: len(cluster.brokers[b].owned_bundle_names()) for b in live}
    ranked = sorted(live, key=lambda b: (-owned[b] if ev.pick == "most_bundles" else owned[b], _natural(b)))
    return sorted(ranked[:n], key=_natural)


async def remove_brokers(cluster: "Cluster", w: "Workload", ev: RemoveBrokers) -> None:
    targets = _pick(cluster, w, ev)
    _emit(cluster, ev, brokers=targets)
    if ev.concurrent:
        async with anyio.create_task_group() as tg:
            for b in targets:
                tg.start_soon(cluster.stop_broker, b, ev.mode)
    else:
        for b in targets:
            await cluster.stop_broker(b, ev.mode)


async def restart_rolling(cluster: "Cluster", w: "Workload", ev: RestartRolling) -> None:
    targets = sorted(_live_or_all(cluster, ev.brokers), key=_natural)
    _emit(cluster, ev, brokers=targets)
    batches = [targets[i:i + ev.batch] for i in range(0, len(targets), ev.batch)]
    if ev.every is not None:
        # fixed cadence: batch k goes down at at + k * every, each restart in its own task
        start = cluster.system.clock.now()
        errors: list[Exception] = []

        async def one(batch: list[str]) -> None:
            try:
                await _restart_batch(cluster, batch, ev)
            except Exception as e:  # noqa: BLE001 - the others go on; the first error fails the event
                errors.append(e)

        async with anyio.create_task_group() as tg:
            for k, batch in enumerate(batches):
                delay = start + k * ev.every - cluster.system.clock.now()
                if delay > 0:
                    await anyio.sleep(delay)
                tg.start_soon(one, batch)
        if errors:
            raise errors[0]
        return
    for k, batch in enumerate(batches):
        if k:
            await anyio.sleep(ev.wait)
        await _restart_batch(cluster, batch, ev)


async def _restart_batch(cluster: "Cluster", batch: list[str], ev: RestartRolling) -> None:
    """Stop the batch, stay down `down`, start it again on the same hosts (with the event's
    `settings` in their broker.conf, when it has some)."""
    async with anyio.create_task_group() as tg:
        for b in batch:
            tg.start_soon(cluster.stop_broker, b, ev.mode)
    if ev.down:
        await anyio.sleep(ev.down)
    async with anyio.create_task_group() as tg:
        for b in batch:
            tg.start_soon(_start_broker, cluster, host_of(b), ev.settings)


async def leader_failover(cluster: "Cluster", w: "Workload", ev: LeaderFailover) -> None:
    leader = cluster.leader()
    if leader is None:
        raise ValueError("leader_failover: there is no leader right now")
    _emit(cluster, ev, broker=leader)
    if ev.mode == "session_expire":
        await _expire(cluster, leader)
        return
    await cluster.stop_broker(leader, ev.mode)
    if ev.restart_after is not None:
        await anyio.sleep(ev.restart_after)
        if leader not in cluster.live_brokers():
            await _start_broker(cluster, host_of(leader))


async def session_expire(cluster: "Cluster", w: "Workload", ev: SessionExpire) -> None:
    target = cluster.leader() if ev.broker == "leader" else broker_id(ev.broker)
    if target is None:
        raise ValueError("session_expire: broker = leader, but there is no leader right now")
    _emit(cluster, ev, broker=target)
    await _expire(cluster, target)


async def _expire(cluster: "Cluster", broker: str) -> None:
    expire = getattr(cluster, "expire_session", None)
    if expire is None:
        raise ValueError("session_expire: this cluster has no expire_session(broker_id)")
    result = expire(broker)
    if inspect.isawaitable(result):
        await result


async def set_capacity(cluster: "Cluster", w: "Workload", ev: SetCapacity) -> None:
    targets = _live_or_all(cluster, ev.brokers)
    _emit(cluster, ev, brokers=targets)
    for b in targets:
        w.resources.set_capacity(b, cores=ev.cores, nic_gbps=ev.nic_gbps, heap_mb=ev.heap_mb,
                                 direct_mb=ev.direct_mb)


async def background_load(cluster: "Cluster", w: "Workload", ev: BackgroundLoad) -> None:
    targets = _live_or_all(cluster, ev.brokers)
    _emit(cluster, ev, brokers=targets)
    before = {b: w.resources.capacity(b).background_cores for b in targets}
    for b in targets:
        w.resources.set_capacity(b, background_cores=ev.cores)
    if ev.duration is not None:
        await anyio.sleep(ev.duration)
        for b in targets:
            w.resources.set_capacity(b, background_cores=before[b])


# ---------------------------------------------------------------------------------- admin


async def set_config(cluster: "Cluster", w: "Workload", ev: SetConfig) -> None:
    _emit(cluster, ev)
    cluster.set_config(ev.key, ev.value)


async def _bundle_of(cluster: "Cluster", topic: str) -> str:
    full = topic if "://" in topic else f"persistent://{topic}"
    bundles = await cluster.namespace_bundles(topic_namespace(full))
    return bundles.find_bundle(full)


async def unload(cluster: "Cluster", w: "Workload", ev: Unload) -> None:
    destination = broker_id(ev.destination) if ev.destination else None
    if ev.namespace is not None:
        _emit(cluster, ev)
        results = await cluster.unload_namespace(ev.namespace)
    else:
        bundle = ev.bundle if ev.bundle is not None else await _bundle_of(cluster, ev.topic or "")
        _emit(cluster, ev, bundle=bundle, destination=destination)
        results = [await cluster.unload_bundle(bundle, destination)]
    failed = [r.message for r in results if not r.ok]
    if failed:
        raise ValueError(f"unload: {failed[0]}")


async def split(cluster: "Cluster", w: "Workload", ev: Split) -> None:
    bundle = ev.bundle if ev.bundle is not None else await _bundle_of(cluster, ev.topic or "")
    _emit(cluster, ev, bundle=bundle)
    result = await cluster.split_bundle(bundle, ev.algorithm, unload=ev.unload)
    if not result.ok:
        raise ValueError(f"split: {result.message}")


# ---------------------------------------------------------------------------------- traffic


def _selected(w: "Workload", ev: Any) -> Any:
    return w.traffic.select(ev.select, w.rng)


def _count(w: "Workload", indices: Any) -> int:
    return len(w.traffic.names) if indices is None else len(indices)


async def spike(cluster: "Cluster", w: "Workload", ev: SpikeEvent) -> None:
    idx = _selected(w, ev)
    _emit(cluster, ev, topics=_count(w, idx))
    w.traffic.spike(idx, ev.factor, w.offset(cluster.system.clock.now()), ev.duration)


async def ramp(cluster: "Cluster", w: "Workload", ev: RampEvent) -> None:
    idx = _selected(w, ev)
    _emit(cluster, ev, topics=_count(w, idx))
    w.traffic.ramp(idx, ev.factor, w.offset(cluster.system.clock.now()), ev.over)


async def set_rate(cluster: "Cluster", w: "Workload", ev: SetRate) -> None:
    idx = _selected(w, ev)
    _emit(cluster, ev, topics=_count(w, idx))
    w.traffic.set_rate(idx, ev.rate)


async def scale_rate(cluster: "Cluster", w: "Workload", ev: ScaleRate) -> None:
    idx = _selected(w, ev)
    _emit(cluster, ev, topics=_count(w, idx))
    w.traffic.scale(idx, ev.factor)


APPLY: dict[type, Callable[..., Awaitable[None]]] = {
    AddBrokers: add_brokers,
    RemoveBrokers: remove_brokers,
    RestartRolling: restart_rolling,
    LeaderFailover: leader_failover,
    SessionExpire: session_expire,
    SetCapacity: set_capacity,
    BackgroundLoad: background_load,
    SetConfig: set_config,
    Unload: unload,
    Split: split,
    SpikeEvent: spike,
    RampEvent: ramp,
    SetRate: set_rate,
    ScaleRate: scale_rate,
}

