"""The leader's UnloadScheduler and every broker's SplitScheduler, publishing into the channel.

Follow apache/pulsar `extensions/scheduler/UnloadScheduler.java` (@040a3bcc: `execute`, `start`,
`close`) and `SplitScheduler.java` (@1a5df8f3: `execute`, `start`, `close`).

- UnloadScheduler runs every `loadBalancerSheddingIntervalMinutes` (fixed rate, first run one
  interval after `start`, which the leader calls in `playLeader`; `close` in `playFollower`). A run
  does nothing unless `loadBalancerEnabled` and `loadBalancerSheddingEnabled`, this broker is the
  channel owner and more than one broker is available. It forgets bundles unloaded more than
  `loadBalancerSheddingGracePeriodMinutes` ago, asks the shedder (TransferShedder, made with
  `shedders.create_extensible`), publishes each Success as an unload or transfer and waits for it
  (`namespaceBundleUnloadingTimeoutMs`) through UnloadManager; each completed one marks its bundle
  and source broker as recently unloaded; then `updateUnloadBrokerCount(#sources)`.
- SplitScheduler runs on every broker, for the bundles it owns (Pulsar's `SplitScheduler.start` is
  called in `ExtensibleLoadManagerImpl.start`, not by the leader), every
  `loadBalancerSplitIntervalMinutes` when `loadBalancerEnabled` and
  `loadBalancerAutoBundleSplitEnabled`: the split strategy's Success decisions are published as
  Split events and waited for through SplitManager.

A shedder or split strategy that raises fails that run only (logged, counted Failure/Unknown), as
the Java `catch (Exception)` does. The decisions of the last run are kept in `last_decisions`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from types import MappingProxyType
from typing import Any, Protocol

import structlog

from emulator.model.config import ServiceConfig
from ..model.context import LoadManagerContext
from ..model.counters import UnloadCounter
from ..model.decisions import (
    SplitDecision,
    SplitLabel,
    UnloadDecision,
    UnloadLabel,
)
from ..model.split_strategy import DefaultNamespaceBundleSplitStrategy, TopicStats
from emulator.model.loaddata import NamespaceBundleStats
from emulator.runtime import Actor

from .channel import ServiceUnitStateChannel
from .managers import SplitManager, UnloadManager
from .periodic import at_fixed_rate

__all__ = ["NamespaceUnloadStrategy", "SplitScheduler", "UnloadScheduler", "channel_ownership"]

_log = structlog.get_logger(component="extensible-scheduler")


class NamespaceUnloadStrategy(Protocol):
    """`NamespaceUnloadStrategy.findBundlesForUnloading` (TransferShedder's signature)."""

    def find_bundles_for_unloading(
        self,
        context: LoadManagerContext,
        recently_unloaded_bundles: Mapping[str, int],
        recently_unloaded_brokers: MutableMapping[str, int],
    ) -> list[UnloadDecision]: ...


def channel_ownership(channel: ServiceUnitStateChannel) -> tuple[Mapping[str, str], frozenset[str]]:
    """What a LoadManagerContext reads of the channel: Owned bundle -> owner (a read-only view of the
    channel's index, live: a decision runs without awaiting once its context is made), and the
    Splitting ones."""
    return MappingProxyType(channel.owners), frozenset(channel.splitting_units)


class UnloadScheduler:
    """`UnloadScheduler` of one broker; `context()` builds the LoadManagerContext of a run."""

    def __init__(
        self,
        channel: ServiceUnitStateChannel,
        unload_manager: UnloadManager,
        strategy: NamespaceUnloadStrategy,
        conf: ServiceConfig,
        context: Callable[[], Awaitable[LoadManagerContext]],
        counter: UnloadCounter,
        on_run: Callable[[list[UnloadDecision], dict[str, bool], LoadManagerContext], None] | None = None,
    ) -> None:
        self.on_run = on_run
        """Told, at the end of each run that decided, the decisions, whether each published unload
        completed (by bundle) and the context they were made on (events, metrics)."""
        self.channel = channel
        self.unload_manager = unload_manager
        self.strategy = strategy
        self.conf = conf
        self.context = context
        self.counter = counter
        self.recently_unloaded_bundles: dict[str, int] = {}
        self.recently_unloaded_brokers: dict[str, int] = {}
        self.last_decisions: list[UnloadDecision] = []
        self.runs = 0
        self._generation = 0
        self._running = False

    def start(self, actor: Actor) -> None:
        """`start()`: the fixed-rate job, as a task of `actor` (the broker's load-manager actor)."""
        if self._running:
            return
        self._running = True
        self._generation += 1
        generation = self._generation
        interval = self.conf.load_balancer_shedding_interval_minutes * 60.0
        actor.start_soon(at_fixed_rate, lambda: actor.now, interval, interval, self.execute,
                         lambda: self._generation == generation)

    def close(self) -> None:
        """`close()`: stop the job; forget the recently unloaded bundles and brokers."""
        self._running = False
        self._generation += 1
        self.recently_unloaded_bundles.clear()
        self.recently_unloaded_brokers.clear()

    async def execute(self) -> None:
        """`execute()`: one shedding run."""
        conf = self.conf
        if not (conf.load_balancer_enabled and conf.load_balancer_shedding_enabled):
            return
        self.runs += 1
        now = self.channel.now_ms
        grace_ms = conf.load_balancer_shedding_grace_period_minutes * 60_000
        for bundle in [b for b, t in self.recently_unloaded_bundles.items() if t < now - grace_ms]:
            del self.recently_unloaded_bundles[bundle]
        timeout = conf.namespace_bundle_unloading_timeout_ms / 1000
        try:
            if not await self.channel.is_channel_owner():
                return
            context = await self.context()
            if len(context.available_brokers or {}) <= 1:
                return
            decisions = self.strategy.find_bundles_for_unloading(
                context, self.recently_unloaded_bundles, self.recently_unloaded_brokers)
        except Exception as exc:
            _log.error("Namespace unload has exception.", broker=self.channel.broker_id, error=repr(exc))
            return
        self.last_decisions = list(decisions)
        sources: set[str] = set()
        outcomes: dict[str, bool] = {}
        waits = [self._unload(d, timeout, sources, outcomes) for d in decisions
                 if d.label is UnloadLabel.SUCCESS and d.unload is not None]
        if waits:
            await asyncio.gather(*waits)
            self.counter.update_unload_broker_count(len(sources), self.channel.now_ms)
        if self.on_run is not None:
            self.on_run(self.last_decisions, outcomes, context)

    async def _unload(self, decision: UnloadDecision, timeout: float, sources: set[str],
                      outcomes: dict[str, bool]) -> None:
        unload = decision.unload
        assert unload is not None
        done = await self.unload_manager.wait(self.channel.publish_unload(unload), unload.service_unit,
                                              decision, timeout)
        outcomes[unload.service_unit] = done
        if done:
            now = self.channel.now_ms
            sources.add(unload.source_broker)
            self.recently_unloaded_bundles[unload.service_unit] = now
            self.recently_unloaded_brokers[unload.source_broker] = now


class SplitScheduler:
    """`SplitScheduler` of one broker: splits the hot bundles it owns."""

    def __init__(
        self,
        channel: ServiceUnitStateChannel,
        split_manager: SplitManager,
        strategy: DefaultNamespaceBundleSplitStrategy,
        conf: ServiceConfig,
        context: Callable[[], Awaitable[LoadManagerContext]],
        bundle_stats: Callable[[], Mapping[str, NamespaceBundleStats]],
        bundle_counts: Callable[[], Mapping[str, int]],
        topics: Callable[[], Mapping[str, TopicStats]] | None = None,
        on_run: Callable[[list[SplitDecision], dict[str, bool], Mapping[str, NamespaceBundleStats]], None]
        | None = None,
    ) -> None:
        self.on_run = on_run
        """Told, at the end of each run, the decisions, whether each published split completed (by
        bundle) and the bundle stats they were made on."""
        self.channel = channel
        self.split_manager = split_manager
        self.strategy = strategy
        self.conf = conf
        self.context = context
        self.bundle_stats = bundle_stats
        self.bundle_counts = bundle_counts
        self.topics = topics
        self.last_decisions: list[SplitDecision] = []
        self.runs = 0
        self._generation = 0

    def start(self, actor: Actor) -> None:
        self._generation += 1
        generation = self._generation
        interval = self.conf.load_balancer_split_interval_minutes * 60.0
        actor.start_soon(at_fixed_rate, lambda: actor.now, interval, interval, self.execute,
                         lambda: self._generation == generation)

    def close(self) -> None:
        self._generation += 1

    async def execute(self) -> None:
        """`execute()`: one split run over this broker's bundles."""
        conf = self.conf
        if not (conf.load_balancer_enabled and conf.load_balancer_auto_bundle_split_enabled):
            return
        self.runs += 1
        try:
            context = await self.context()
            stats = self.bundle_stats()
            decisions = self.strategy.find_bundles_to_split(
                self.channel.broker_id, stats, self.bundle_counts(), context,
                self.topics() if self.topics is not None else None)
        except Exception as exc:
            _log.error("Failed to run the split job.", broker=self.channel.broker_id, error=repr(exc))
            return
        self.last_decisions = list(decisions)
        timeout = conf.namespace_bundle_unloading_timeout_ms / 1000
        outcomes: dict[str, bool] = {}

        async def split(d: SplitDecision) -> None:
            assert d.split is not None
            outcomes[d.split.service_unit] = await self.split_manager.wait(
                self.channel.publish_split(d.split), d.split.service_unit, d, timeout)

        waits: list[Awaitable[Any]] = [split(d) for d in decisions
                                       if d.label is SplitLabel.SUCCESS and d.split is not None]
        if waits:
            await asyncio.gather(*waits)
        if self.on_run is not None:
            self.on_run(self.last_decisions, outcomes, stats)


