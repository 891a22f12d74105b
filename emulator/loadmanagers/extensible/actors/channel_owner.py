"""The channel owner's housekeeping: what the channel of the load-manager leader does on top of
serving lookups.

Follows apache/pulsar `extensions/channel/ServiceUnitStateChannelImpl.java`:
`scheduleOwnershipMonitor` / `monitorOwnerships`, `handleBrokerRegistrationEvent`
(`handleBrokerCreationEvent`, `handleBrokerDeletionEvent`, `scheduleCleanup`),
`handleMetadataSessionEvent`, `doCleanup`, `overrideOwnership`, `waitForCleanups`,
`healthCheckBrokerAsync`. A base class of `ServiceUnitStateChannel` (one object in Pulsar, one
here), kept apart so the channel module stays about the table and its lookups; the decisions are
the pure functions of `emulator.loadmanagers.extensible.model.channel_cleanup` (and the constants of
`channel_rules`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio

from ..model.channel_cleanup import (
    SESSION_REESTABLISHED,
    MetadataState,
    broker_deletion_decision,
    metadata_state,
    monitor_ownerships,
    monitor_skip_reason,
    orphans_of,
    override_excluded_brokers,
    override_ownership,
    records_session_event,
)
from ..model.channel_rules import (
    MAX_BROKER_HEALTH_CHECK_RETRY,
    MAX_CHANNEL_OWNER_ELECTION_WAITING_TIME_IN_SECS,
    OWNERSHIP_CLEAN_UP_MAX_WAIT_TIME_IN_MILLIS,
    OWNERSHIP_CLEAN_UP_WAIT_RETRY_DELAY_IN_MILLIS,
    SYSTEM_NAMESPACE,
    health_check_retry_delay_ms,
)
from ..model.state import ServiceUnitState, ServiceUnitStateData
from emulator.runtime import Actor, ActorSystem

from .channel_types import ChannelOwnerUnknownError, ChannelState

if TYPE_CHECKING:
    import asyncio

    from emulator.model.config import ServiceConfig
    from ..model.channel_rules import ChannelTiming

    from .channel_types import ChannelCounters
    from .host import ChannelHost
    from .load_data_store import LoadDataStore
    from .table_view import TableView

__all__ = ["ChannelOwnerRole"]

_S = ServiceUnitState


class _CleanupJob:
    """A scheduled `doCleanup` (`cleanupJobs` entry); `cancelled` before it fires = `future.cancel`."""

    __slots__ = ("broker", "cancelled")

    def __init__(self, broker: str | None) -> None:
        self.broker = broker
        self.cancelled = False


class ChannelOwnerRole(Actor):
    """The channel owner's part of `ServiceUnitStateChannel`: session and registry events, orphan
    clean-up and the ownership monitor (`play_leader` / `play_follower`)."""

    if TYPE_CHECKING:  # set up and defined by ServiceUnitStateChannel
        host: ChannelHost
        broker_id: str
        conf: ServiceConfig
        timing: ChannelTiming
        load_data_stores: tuple[LoadDataStore[Any], ...]
        view: TableView[ServiceUnitStateData]
        channel_state: ChannelState

        @property
        def counters(self) -> ChannelCounters: ...

        @property
        def now_ms(self) -> int: ...

        def _pub(self, service_unit: str, data: ServiceUnitStateData | None) -> asyncio.Future[int]: ...

        async def publish_override(self, service_unit: str, data: ServiceUnitStateData) -> None: ...

    def __init__(self, name: str, system: ActorSystem) -> None:
        super().__init__(name, system)
        self.last_session_event = SESSION_REESTABLISHED
        self.last_session_event_ms: int | None = None
        self._cleanup_jobs: dict[str | None, _CleanupJob] = {}
        self._monitor_generation = 0
        self._monitoring = False

    async def is_channel_owner(self) -> bool:
        """`isChannelOwnerAsync`: this broker is the elected leader (ChannelOwnerUnknownError if none)."""
        with anyio.fail_after(MAX_CHANNEL_OWNER_ELECTION_WAITING_TIME_IN_SECS):
            owner = await self.host.channel_owner()
        if owner is None:
            raise ChannelOwnerUnknownError("There is no channel owner now.")
        return owner == self.broker_id

    def on_metadata_session_event(self, event: str) -> None:
        """`handleMetadataSessionEvent`: remember SessionReestablished / SessionLost and when."""
        if records_session_event(event):
            self.last_session_event = event
            self.last_session_event_ms = self.now_ms

    def metadata_state(self) -> MetadataState:
        """`getMetadataState`."""
        return metadata_state(self.last_session_event, self.last_session_event_ms, self.now_ms,
                              max_cleanup_delay_s=self.timing.max_cleanup_delay_s)

    def on_broker_registry_event(self, broker: str, created: bool) -> None:
        """`handleBrokerRegistrationEvent`: the broker registry saw `broker`'s node created or deleted."""
        if created:
            if broker in self._cleanup_jobs:
                self.start_soon(self._cancel_cleanup_if_healthy, broker)
        else:
            self.start_soon(self.handle_broker_deletion, broker)

    async def _cancel_cleanup_if_healthy(self, broker: str) -> None:
        """`handleBrokerCreationEvent`: a broker back before its clean-up ran keeps its bundles."""
        if await self._health_check(broker):
            job = self._cleanup_jobs.pop(broker, None)
            if job is not None:
                job.cancelled = True
                self.counters.inactive_broker_cleanup_cancelled += 1

    async def handle_broker_deletion(self, broker: str | None) -> None:
        """`handleBrokerDeletionEvent`: the channel owner schedules the clean-up of a gone broker, at
        once (Stable), after `MAX_CLEAN_UP_DELAY_TIME_IN_SECS` (Jittery), or not at all (Unstable)."""
        try:
            is_owner = await self.is_channel_owner()
        except (ChannelOwnerUnknownError, TimeoutError) as exc:
            self.log.warning("Failed to handle broker deletion event", error=repr(exc))
            return
        decision = broker_deletion_decision(is_owner, self.metadata_state(),
                                            max_cleanup_delay_s=self.timing.max_cleanup_delay_s,
                                            min_cleanup_delay_s=self.timing.min_cleanup_delay_s)
        if decision.action == "schedule":
            self._schedule_cleanup(broker, decision.delay_s)
        elif decision.action == "ignore":
            self.counters.inactive_broker_cleanup_ignored += 1

    def _schedule_cleanup(self, broker: str | None, delay_s: int) -> None:
        """`scheduleCleanup`: at most one pending clean-up per broker (`cleanupJobs.computeIfAbsent`)."""
        if self.channel_state in (ChannelState.DISABLED, ChannelState.CLOSED) or broker in self._cleanup_jobs:
            return
        job = _CleanupJob(broker)
        self._cleanup_jobs[broker] = job
        self.counters.inactive_broker_cleanup_scheduled += 1
        self.call_later(delay_s, self._fire_cleanup, job)

    def _fire_cleanup(self, job: _CleanupJob) -> None:
        if not job.cancelled:
            self.start_soon(self._run_cleanup, job)

    async def _run_cleanup(self, job: _CleanupJob) -> None:
        try:
            await self.do_cleanup(job.broker, gracefully=False)
        except Exception as exc:
            self.counters.cleanup_errors += 1
            self.log.error("Failed to run the cleanup job", broker=job.broker, error=repr(exc))
        finally:
            if self._cleanup_jobs.get(job.broker) is job:
                del self._cleanup_jobs[job.broker]

    async def _health_check(self, broker: str | None) -> bool:
        """`healthCheckBrokerAsync` with `doHealthCheckBrokerAsyncWithRetries`: True if it answers
        within `MAX_BROKER_HEALTH_CHECK_RETRY` retries (a disabled channel counts as healthy)."""
        retry = 0
        while True:
            if self.channel_state in (ChannelState.DISABLED, ChannelState.CLOSED):
                return True
            if broker is not None and await self.host.is_healthy(broker):
                return True
            if retry == MAX_BROKER_HEALTH_CHECK_RETRY:
                return False
            await anyio.sleep(health_check_retry_delay_ms(retry) / 1000)
            retry += 1

    async def do_cleanup(self, broker: str | None, *, gracefully: bool) -> None:
        """`doCleanup`: give every bundle `broker` owned or had in flight a new owner (forced
        overrides), non-system bundles first, then the `pulsar/system` ones; then remove the broker
        from the load-data stores. Unless `gracefully`, a broker that passes a health check is
        left alone."""
        try:
            with anyio.fail_after(MAX_CHANNEL_OWNER_ELECTION_WAITING_TIME_IN_SECS):
                owner = await self.host.channel_owner()
        except TimeoutError:
            owner = None
        if owner is None:
            self.log.error("Found the channel owner is empty. Skip the orphan bundle cleanup", broker=broker)
            return
        if not gracefully:
            healthy = False
            with anyio.move_on_after(self.conf.metadata_store_operation_timeout_seconds):
                healthy = await self._health_check(broker)
            if healthy:
                self.log.warning("Found that the broker to clean is healthy. Skip the orphan bundle cleanup",
                                 broker=broker)
                return
        flush = OWNERSHIP_CLEAN_UP_MAX_WAIT_TIME_IN_MILLIS / 1000
        await self.view.refresh(flush)
        regular, system = orphans_of(self.view.data, broker)
        for service_unit, data in regular:
            await self._override_ownership(service_unit, data, broker, gracefully)
        await self.view.refresh(flush)
        if regular or system:
            await self._wait_for_cleanups(broker, exclude_system=True)
            self.counters.orphan_service_unit_cleanup += len(regular) + len(system)
            self.counters.inactive_broker_cleanup += 1
        for service_unit, data in system:
            await self._override_ownership(service_unit, data, broker, gracefully)
        await self.view.refresh(flush)
        if broker is not None:
            for store in self.load_data_stores:
                store.remove(broker)

    async def _override_ownership(self, service_unit: str, orphan: ServiceUnitStateData,
                                  inactive_broker: str | None, gracefully: bool) -> None:
        """`overrideOwnership`: select a new owner (the inactive broker excluded) and force it."""
        try:
            with anyio.fail_after(self.conf.metadata_store_operation_timeout_seconds):
                selected = await self.host.select(service_unit, override_excluded_brokers(inactive_broker))
                override = override_ownership(orphan, selected, self.now_ms, gracefully=gracefully)
                await self.publish_override(service_unit, override)
        except Exception as exc:
            self.counters.cleanup_errors += 1
            self.log.error("Failed to override ownership", service_unit=service_unit,
                           inactive_broker=inactive_broker, error=repr(exc))

    async def _wait_for_cleanups(self, broker: str | None, *, exclude_system: bool) -> None:
        """`waitForCleanups`: until no (non-system) bundle is Owned by `broker`, at most
        `OWNERSHIP_CLEAN_UP_MAX_WAIT_TIME_IN_MILLIS`, checking every half of it."""
        started = self.now
        while self.now - started < OWNERSHIP_CLEAN_UP_MAX_WAIT_TIME_IN_MILLIS / 1000:
            if not any(
                data.state is _S.OWNED and data.dst_broker == broker
                and not (exclude_system and service_unit.startswith(SYSTEM_NAMESPACE))
                for service_unit, data in self.view.items()
            ):
                return
            await self.view.refresh(OWNERSHIP_CLEAN_UP_WAIT_RETRY_DELAY_IN_MILLIS / 2 / 1000)
            await anyio.sleep(OWNERSHIP_CLEAN_UP_MAX_WAIT_TIME_IN_MILLIS / 2 / 1000)

    def play_leader(self) -> None:
        """`scheduleOwnershipMonitor`: run `monitor_ownerships` now and then every
        `loadBalancerServiceUnitStateMonitorIntervalInSeconds` after each run ends (fixed delay)."""
        if self._monitoring:
            return
        self._monitoring = True
        self._monitor_generation += 1
        self.start_soon(self._monitor_loop, self._monitor_generation)

    def play_follower(self) -> None:
        """`cancelOwnershipMonitor`."""
        self._monitoring = False
        self._monitor_generation += 1

    async def _monitor_loop(self, generation: int) -> None:
        while generation == self._monitor_generation:
            try:
                with anyio.fail_after(self.timing.in_flight_state_waiting_time_ms / 1000):
                    brokers = await self.host.available_brokers()
                await self.monitor_ownerships(brokers)
            except Exception as exc:
                self.log.info("Failed to monitor the ownerships. will retry..", error=repr(exc))
            await anyio.sleep(self.timing.ownership_monitor_delay_s)

    async def monitor_ownerships(self, brokers: Sequence[str]) -> None:
        """`monitorOwnerships`: tombstone old non-active values, schedule the clean-up of brokers that
        still hold bundles but are gone, override in-flight values stuck past the in-flight wait."""
        try:
            is_owner = await self.is_channel_owner()
        except (ChannelOwnerUnknownError, TimeoutError):
            return
        skip = monitor_skip_reason(is_owner, brokers, self.metadata_state())
        if skip is not None:
            return
        table = dict(self.view.data)
        plan = monitor_ownerships(table, brokers, self.now_ms, self.timing)
        for service_unit in plan.tombstones:
            self._pub(service_unit, None)
            self.counters.service_unit_tombstone_cleanup += 1
        for broker in plan.inactive_brokers:
            await self.handle_broker_deletion(broker)
        for service_unit in plan.timed_out:
            await self._override_ownership(service_unit, table[service_unit], None, False)
            self.counters.orphan_service_unit_cleanup += 1
        await self.view.refresh(OWNERSHIP_CLEAN_UP_MAX_WAIT_TIME_IN_MILLIS / 1000)
