"""One broker's service-unit state channel: the actor that reads, writes and acts on the bundle table.

Follows apache/pulsar `extensions/channel/ServiceUnitStateChannelImpl.java` of master after PIP-378
(the revision `channel_rules` restates): `start` (`tableview.start(handleEvent, handleExisting)`),
`getOwnerAsync` / `getActiveOwnerAsync` / `dedupeGetOwnerRequest` / `deferGetOwner`,
`publishAssignEventAsync`, `publishUnloadEventAsync`, `publishSplitEventAsync`,
`publishOverrideEventAsync`, `handleEvent` and its `handle*Event`, `handleSkippedEvent`,
`closeServiceUnit`, `splitServiceUnit` / `splitServiceUnitOnceAndRetry` / `ownChildBundles`. The
channel owner's housekeeping (`scheduleOwnershipMonitor`, `doCleanup`, ...) is the base class
`ChannelOwnerRole` (`channel_owner.py`); the types are in `channel_types.py`, re-exported here.

What to do on each value, and what to write, is decided by the pure functions of
`emulator.loadmanagers.extensible.model.channel_rules`; this actor holds the table view, the waiting lookups and
the timers, and has its broker act through the `ChannelHost` protocol. Every broker runs one; the
one on the channel owner (the load-manager leader) also runs the ownership monitor and the orphan
clean-up (`play_leader` / `play_follower`, called by whoever follows the leader election).

Lookups wait on the channel: a lookup of a bundle that is being assigned to this broker (or whose
owner is not registered) waits for the Owned, Free or Init value, at most
`loadBalancerInFlightServiceUnitStateWaitingTimeInMillis`, then answers what the table says
(`owner_after_wait`). One wait per bundle is shared by every lookup of it (`dedupeGetOwnerRequest`).

Every broker's view reads every value in Pulsar; here the views read the channel topic's shared
copy, and a broker's channel handles (`handleEvent`, `handleSkippedEvent`, the listeners) only the
values that concern it: those naming it as destination or source, and those of bundles it watches
(a waiting lookup; a listener's in-flight unload or split, `TracksBundles`). For any other value
`handleEvent` does nothing but complete lookups and notify listeners, which on this broker wait for
nothing of that bundle, so leaving it out changes nothing but the per-state handler counts, which
are counted in bulk from the shared copy (`ChannelCounters.handler`: every value the shared copy
applied since this channel started). See `system_topic` for what the shared copy approximates.

Deviation: Pulsar's `UnloadManager` / `SplitManager` register their wait after the publish is
acknowledged; with the emulator's zero-latency tests the result can arrive in the same instant, so
`managers.py` registers first (the same outcome whenever Pulsar's ordering holds).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import anyio

from emulator.model.config import ServiceConfig
from ..model.channel_rules import (
    BUNDLE_SPLIT_RETRY_DELAY_MS,
    ChannelAction,
    LookupCompletion,
    assign_data,
    assigned_broker,
    channel_timing,
    handle_event,
    owner_after_wait,
    owner_lookup,
    skipped_event_owner,
    split_data,
    split_retry,
    split_writes,
    unload_data,
)
from ..model.decisions import Split, Unload
from ..model.state import (
    ServiceUnitState,
    ServiceUnitStateData,
    should_keep_left,
    state_of,
)
from emulator.runtime import ActorSystem

from .channel_owner import ChannelOwnerRole
from .channel_types import (
    BundleDeletedError,
    TracksBundles,
    ChannelCounters,
    ChannelNotReadyError,
    ChannelOwnerUnknownError,
    ChannelState,
    EventType,
    InFlightTimeoutError,
    OwnerInactiveError,
    StateChangeListener,
)
from .host import BundleSplitConflict, ChannelHost
from .load_data_store import LoadDataStore
from .system_topic import SystemTopic
from .table_view import TableView

__all__ = [
    "BundleDeletedError",
    "ChannelCounters",
    "ChannelNotReadyError",
    "ChannelOwnerUnknownError",
    "ChannelState",
    "EventType",
    "InFlightTimeoutError",
    "OwnerInactiveError",
    "ServiceUnitStateChannel",
    "StateChangeListener",
]

_S = ServiceUnitState


def brokers_named(data: ServiceUnitStateData) -> tuple[str | None, str | None]:
    """The brokers a value concerns: its destination and its source."""
    return data.dst_broker, data.source_broker


class OwnershipIndex:
    """The shared copy's Owned bundles (-> owner) and Splitting ones, kept as it changes, and how many
    values of each state it applied (a channel's handler counts). One per channel topic."""

    __slots__ = ("applied", "owners", "splitting")

    def __init__(self) -> None:
        self.owners: dict[str, str] = {}
        self.splitting: set[str] = set()
        self.applied: dict[ServiceUnitState, int] = dict.fromkeys(ServiceUnitState, 0)

    def change(self, key: str, value: ServiceUnitStateData | None) -> None:
        state = _S.INIT if value is None else value.state
        self.applied[state] += 1
        if state is _S.OWNED and value is not None and value.dst_broker:
            self.owners[key] = value.dst_broker
        elif self.owners:
            self.owners.pop(key, None)
        if state is _S.SPLITTING:
            self.splitting.add(key)
        elif self.splitting:
            self.splitting.discard(key)


class _Owners(Mapping[str, str]):
    """A channel's Owned bundle -> owner: the shared index, with the view's own values in front."""

    __slots__ = ("index", "view")

    def __init__(self, index: OwnershipIndex, view: TableView[ServiceUnitStateData]) -> None:
        self.index = index
        self.view = view

    @staticmethod
    def _owner(data: ServiceUnitStateData | None) -> str | None:
        return data.dst_broker if data is not None and data.state is _S.OWNED and data.dst_broker else None

    def get(self, key: str, default: Any = None) -> Any:
        if not self.view.started:
            return default
        private = self.view._private
        if private and key in private:
            owner = self._owner(self.view.get(key))
            return default if owner is None else owner
        return self.index.owners.get(key, default)

    def __getitem__(self, key: str) -> str:
        owner = self.get(key)
        if owner is None:
            raise KeyError(key)
        return owner

    def __contains__(self, key: object) -> bool:
        return self.get(key) is not None  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[str]:
        if not self.view.started:
            return
        private = self.view._private
        if not private:
            yield from self.index.owners
            return
        for key in self.index.owners:
            if key not in private or self.get(key) is not None:
                yield key
        for key in private:
            if key not in self.index.owners and self.get(key) is not None:
                yield key

    def __len__(self) -> int:
        if self.view.started and not self.view._private:
            return len(self.index.owners)
        return sum(1 for _ in self)


class ServiceUnitStateChannel(ChannelOwnerRole):
    """The channel of broker `host.broker_id`; `start()` it from a task of any actor, then use it."""

    def __init__(
        self,
        name: str,
        system: ActorSystem,
        *,
        host: ChannelHost,
        topic: SystemTopic,
        conf: ServiceConfig,
        load_data_stores: Sequence[LoadDataStore[Any]] = (),
    ) -> None:
        super().__init__(name, system)
        self.host = host
        self.broker_id = host.broker_id
        self.conf = conf
        self.timing = channel_timing(conf)
        self.multi_phase_unload = conf.load_balancer_multi_phase_bundle_unload
        self.load_data_stores = tuple(load_data_stores)
        self.view: TableView[ServiceUnitStateData] = TableView(
            topic, self, strategy=should_keep_left, tag=self.broker_id, names=brokers_named)
        # the table's Owned bundles (-> owner) and Splitting ones, kept as the shared copy changes: a
        # decision's context reads them without a walk over every bundle (65,000 per select)
        self._index = topic.index(OwnershipIndex)
        self.owners: Mapping[str, str] = _Owners(self._index, self.view)
        self.channel_state = ChannelState.CONSTRUCTED
        self._counters = ChannelCounters()
        self._handled_base: dict[ServiceUnitState, int] | None = None
        self._listeners: list[StateChangeListener] = []
        self._owner_requests: dict[str, asyncio.Future[str | None]] = {}
        self._acting = 0                      # handlers' asynchronous parts under way (_act)
        self._idle: asyncio.Event | None = None

    @property
    def now_ms(self) -> int:
        return int(round(self.now * 1000))

    # ================================================================== lifecycle

    async def start(self) -> None:
        """`start()`: read the table (compacted values, then the tail); own the bundles it says this
        broker owns (`handleExisting`); from then on handle every new value (`handleEvent`)."""
        if self.channel_state is not ChannelState.CONSTRUCTED:
            raise RuntimeError(f"{self.name}: start() on a channel in state {self.channel_state.value}")
        self.view.listen(self._handle_event)
        self.view.listen_skipped(self._handle_skipped_event)
        await self.view.start(existing=self._handle_existing)
        self._handled_base = dict(self._index.applied)
        self.channel_state = ChannelState.STARTED

    def close(self) -> None:
        """`close()`: stop reading the table and the monitor."""
        self._count_handled()
        self._handled_base = None
        self.channel_state = ChannelState.CLOSED
        self.play_follower()
        self.view.close()

    @property
    def counters(self) -> ChannelCounters:
        """The channel's counters, the handler counts brought up to date (see the module docstring)."""
        self._count_handled()
        return self._counters

    def _count_handled(self) -> None:
        base = self._handled_base
        if base is not None and self.alive:
            handler = self._counters.handler
            for state, applied in self._index.applied.items():
                handler[state].total = applied - base[state]

    def listen(self, listener: StateChangeListener) -> None:
        """`listen(StateChangeListener)`. A listener hears the values this channel handles (see the
        module docstring): one that acts on bundles named by neither side of a value (an unload or
        split it waits for) is `TracksBundles` and watches them through the channel."""
        self._listeners.append(listener)
        tracker = getattr(listener, "__self__", None)
        if isinstance(tracker, TracksBundles):
            tracker.track_with(self.view.watch, self.view.unwatch)

    def _ready(self) -> bool:
        """`validateChannelState(Started, true)`: Started or Disabled."""
        return self.channel_state in (ChannelState.STARTED, ChannelState.DISABLED)

    def _check_ready(self) -> None:
        if not self._ready():
            raise ChannelNotReadyError(f"Invalid channel state:{self.channel_state.value}")

    # ================================================================== reading the table

    @property
    def splitting_units(self) -> frozenset[str]:
        """The table's bundles in state Splitting."""
        if not self.view.started:
            return frozenset()
        private = self.view._private
        shared = self._index.splitting
        if not private:
            return frozenset(shared)
        get = self.view.get
        return frozenset({su for su in shared if su not in private}
                         | {su for su in private if (d := get(su)) is not None and d.state is _S.SPLITTING})

    def owned_service_units(self) -> list[str]:
        """`getOwnedServiceUnits` of this broker: Owned with dst = this broker, in table order."""
        me = self.broker_id
        return [su for su, d in self.view.items() if d.state is _S.OWNED and d.dst_broker == me]

    def ownership_entries(self) -> dict[str, ServiceUnitStateData]:
        """`getOwnershipEntrySet()`: a copy of the table."""
        return dict(self.view.data)

    def get_assigned(self, service_unit: str) -> str | None:
        """`getAssigned`: where the bundle is (being) assigned, for redirects (PIP-307)."""
        return assigned_broker(self.view.get(service_unit)) if self._ready() else None

    # ================================================================== lookups

    async def get_owner(self, service_unit: str) -> str | None:
        """`getOwnerAsync`: the owner, None (no owner: the caller assigns one), or an error
        (BundleDeletedError, InFlightTimeoutError, OwnerInactiveError). May wait on the channel."""
        self._check_ready()
        data = self.view.get(service_unit)
        state = state_of(data)
        self._counters.owner_lookup[state].total += 1
        registered = self.broker_id in await self.host.available_brokers()
        answer = owner_lookup(data, self.broker_id, registered=registered)
        if answer.kind == "empty":
            return None
        if answer.kind == "fail":
            self._counters.owner_lookup[state].failure += 1
            raise BundleDeletedError(f"{service_unit} is deleted.")
        if answer.kind == "owner" and not answer.check_active:
            return answer.broker
        try:
            owner = await self._dedupe_get_owner(service_unit)
            if owner is not None and owner not in await self.host.available_brokers():
                raise OwnerInactiveError(f"The new owner {owner} is inactive.")
            return owner
        except Exception:
            self._counters.owner_lookup[state].failure += 1
            raise

    def is_owner(self, service_unit: str, target_broker: str | None = None) -> bool:
        """`isOwner`: the table says, without waiting, that `target_broker` (default: this broker)
        owns the bundle (the active check is assumed to pass)."""
        if not self._ready():
            return False
        target = self.broker_id if target_broker is None else target_broker
        answer = owner_lookup(self.view.get(service_unit), self.broker_id)
        return answer.kind == "owner" and answer.broker == target

    def _dedupe_get_owner(self, service_unit: str) -> asyncio.Future[str | None]:
        """`dedupeGetOwnerRequest`: the one pending request for the bundle; a new one answers the
        current owner if it is registered, else waits (`deferGetOwner`)."""
        future = self._owner_requests.get(service_unit)
        if future is not None:
            return future
        future = asyncio.get_running_loop().create_future()
        self._owner_requests[service_unit] = future
        self.view.watch(service_unit)
        future.add_done_callback(lambda f: self._forget_request(service_unit, f))
        before = owner_after_wait(self.view.get(service_unit))  # getOwnerNow
        if before.kind == "owner" and before.broker:
            self.start_soon(self._answer_if_active, service_unit, future, before.broker)
        else:
            self._defer(service_unit, future)
        return future

    def _forget_request(self, service_unit: str, future: asyncio.Future[str | None]) -> None:
        if self._owner_requests.get(service_unit) is future:
            del self._owner_requests[service_unit]
        self.view.unwatch(service_unit)
        if not future.cancelled():
            future.exception()  # retrieved: a request nobody awaits any more is not an error

    async def _answer_if_active(self, service_unit: str, future: asyncio.Future[str | None],
                                owner: str) -> None:
        if owner in await self.host.available_brokers():
            if not future.done():
                future.set_result(owner)
        else:  # the leader should be cleaning up its orphans: wait for the new owner
            self._defer(service_unit, future)

    def _defer(self, service_unit: str, future: asyncio.Future[str | None]) -> None:
        """`deferGetOwner`: wait for a value that completes it, at most the in-flight wait."""
        self.call_later(self.timing.in_flight_state_waiting_time_ms / 1000, self._deferred_timeout,
                        service_unit, future)

    def _deferred_timeout(self, service_unit: str, future: asyncio.Future[str | None]) -> None:
        if future.done():
            return
        after = owner_after_wait(self.view.get(service_unit))
        if after.kind == "fail":
            future.set_exception(InFlightTimeoutError(
                f"{self.broker_id} failed to wait for owner for serviceUnit:{service_unit}"))
        else:
            future.set_result(after.broker)

    def _complete_request(self, service_unit: str, owner: str | None) -> None:
        future = self._owner_requests.pop(service_unit, None)
        if future is not None and not future.done():
            future.set_result(owner)

    def _fail_request(self, service_unit: str, error: Exception) -> None:
        future = self._owner_requests.pop(service_unit, None)
        if future is not None and not future.done():
            future.set_exception(error)

    # ================================================================== publishing

    def _pub(self, service_unit: str, data: ServiceUnitStateData | None) -> asyncio.Future[int]:
        """`pubAsync` / `tombstoneAsync` (None): the table view's `put` / `delete`."""
        return self.view.topic.publish(self, service_unit, data)

    async def publish_assign(self, service_unit: str, broker: str) -> str | None:
        """`publishAssignEventAsync`: write (Assigning, dst=broker) and wait for the owner."""
        self._check_ready()
        self._counters.event_publish[EventType.ASSIGN].total += 1
        future = self._dedupe_get_owner(service_unit)
        self._pub(service_unit, assign_data(self.view.get(service_unit), broker, self.now_ms))
        return await future

    async def publish_unload(self, unload: Unload, *, force: bool = False) -> None:
        """`publishUnloadEventAsync`: (Releasing, dst=destination or none, src=source); returns at
        the acknowledgement (the unload itself is watched by `UnloadManager`)."""
        self._check_ready()
        self._counters.event_publish[EventType.UNLOAD].total += 1
        data = unload_data(self.view.get(unload.service_unit), unload.source_broker, unload.dest_broker,
                           self.now_ms, force=force)
        await self._pub(unload.service_unit, data)

    async def publish_split(self, split: Split) -> None:
        """`publishSplitEventAsync`: (Splitting, src=owner, children); returns at the acknowledgement."""
        self._check_ready()
        self._counters.event_publish[EventType.SPLIT].total += 1
        data = split_data(self.view.get(split.service_unit), split.source_broker,
                          split.split_service_unit_to_dest_broker, self.now_ms)
        await self._pub(split.service_unit, data)

    async def publish_override(self, service_unit: str, data: ServiceUnitStateData) -> None:
        """`publishOverrideEventAsync`: a forced value (`override_ownership`)."""
        self._check_ready()
        self._counters.event_publish[EventType.OVERRIDE].total += 1
        await self._pub(service_unit, data)

    # ================================================================== handling values

    def _handle_existing(self, service_unit: str, data: ServiceUnitStateData | None) -> None:
        """`handleExisting`: a bundle the table already says this broker owns is served again."""
        if data is not None and data.state is _S.OWNED and data.dst_broker == self.broker_id:
            self.start_soon(self.host.own, service_unit)

    def _handle_event(self, service_unit: str, data: ServiceUnitStateData | None) -> None:
        """`handleEvent`: this broker's reaction to a value the table view applied.

        Only the values that concern this broker come here (see the module docstring; they are
        counted in bulk). One naming neither this broker as destination nor as source (a watched
        bundle's) takes a shortcut with the same effect as `handle_event`'s answer for it (Owned:
        complete the lookups with the owner and notify; Assigning, Releasing, Splitting: nothing;
        Free / Deleted fall through)."""
        state = state_of(data)
        if service_unit in self.host.splits_underway() and not (
                state is _S.SPLITTING and data is not None and data.source_broker == self.broker_id):
            self.host.split_underway(service_unit, False)   # a split that gave up, now superseded
        if data is not None and self.channel_state is ChannelState.STARTED:
            me = self.broker_id
            if data.dst_broker != me and data.source_broker != me:
                if state is _S.OWNED:
                    if self._owner_requests:
                        self._complete_request(service_unit, data.dst_broker)
                    self._notify(service_unit, data, None)
                    return
                if state is _S.ASSIGNING or state is _S.RELEASING or state is _S.SPLITTING:
                    return
        action = handle_event(data, self.broker_id, self.now_ms,
                              multi_phase_bundle_unload=self.multi_phase_unload,
                              channel_disabled=self.channel_state is ChannelState.DISABLED)
        lookups = action.lookups
        if lookups is LookupCompletion.OWNER:
            self._complete_request(service_unit, action.lookup_owner)
        elif lookups is LookupCompletion.EMPTY:
            self._complete_request(service_unit, None)
        elif lookups is LookupCompletion.DELETED:
            self._fail_request(service_unit, BundleDeletedError(f"{service_unit}has been deleted."))
        elif lookups is LookupCompletion.NOT_READY:
            self._fail_request(service_unit, ChannelNotReadyError(
                f"cancel the lookup request for {service_unit} when receiving {state.value}"))
            return
        if action.owned_here:
            self.start_soon(self.host.own, service_unit)
        if action.close or action.split or action.publish is not None or action.tombstone:
            self.start_soon(self._act, service_unit, data, action)
        elif action.notify:
            self._notify(service_unit, data, None)

    async def _act(self, service_unit: str, data: ServiceUnitStateData | None, action: ChannelAction) -> None:
        """The asynchronous part of a handler, in Pulsar's order: close the bundle (`closeServiceUnit`)
        or split it (`splitServiceUnit`), then publish the next value or the tombstone; then notify
        (`notifyOnCompletion`)."""
        error: BaseException | None = None
        self._acting += 1
        try:
            if action.close:
                await self.host.close(service_unit, action.disconnect_clients,
                                      assigned_broker(self.view.get(service_unit)))
            if action.split and data is not None:
                await self._split_service_unit(service_unit, data)
            if action.publish is not None:
                await self._pub(service_unit, action.publish)
            if action.tombstone:
                await self._pub(service_unit, None)
        except Exception as exc:
            error = exc
            self._counters.handler[action.handler].failure += 1
            self.log.warning("failed to handle channel event", service_unit=service_unit,
                             state=action.handler.value, error=repr(exc))
        finally:
            self._acting -= 1
            if self._acting == 0 and self._idle is not None:
                self._idle.set()
        if action.notify:
            self._notify(service_unit, data, error)

    async def wait_idle(self, timeout: float) -> bool:
        """Until no handler's close / split / publish is under way (at most `timeout` s): a broker
        shutting down lets its channel finish what it started, as Pulsar's keeps running until the
        load manager is closed. True if it got idle."""
        with anyio.move_on_after(timeout):
            while self._acting:
                self._idle = asyncio.Event()
                await self._idle.wait()
            return True
        return False

    def _handle_skipped_event(self, service_unit: str, data: ServiceUnitStateData | None) -> None:
        """`handleSkippedEvent`: a dropped write completes a waiting lookup if the bundle is Owned."""
        if service_unit not in self._owner_requests:
            return
        current = self.view.get(service_unit)
        owner = skipped_event_owner(current)
        if owner is not None:
            self._complete_request(service_unit, owner)
            self._notify(service_unit, current, None)

    def _notify(self, service_unit: str, data: ServiceUnitStateData | None, error: BaseException | None) -> None:
        for listener in list(self._listeners):
            try:
                listener(service_unit, data, error)
            except Exception as exc:  # StateChangeListeners.notify logs and goes on
                self.log.error("state change listener failed", service_unit=service_unit, error=repr(exc))

    async def _split_service_unit(self, parent: str, data: ServiceUnitStateData) -> None:
        """`splitServiceUnit` / `splitServiceUnitOnceAndRetry`: own the children (write Owned, dst =
        this broker, for each child the table lacks), update the namespace's bundles (retried on a
        conflict, `split_retry`, 100 ms apart), then write Deleted for the parent without waiting."""
        failures = 0
        self.host.split_underway(parent, True)
        done = False
        try:
            while True:
                owned, (_, deleted) = split_writes(parent, data, self.view.data, self.now_ms)
                try:
                    if owned:
                        await asyncio.gather(*(self._pub(child, value) for child, value in owned))
                    await self.host.split(parent, dict(data.split_service_unit_to_dest_broker or {}))
                    done = True
                    break
                except BundleSplitConflict:
                    failures += 1
                    if not split_retry(failures):
                        raise ChannelNotReadyError(
                            f"Failed to split bundle {parent}, Retried {failures} th") from None
                    await anyio.sleep(BUNDLE_SPLIT_RETRY_DELAY_MS / 1000)
        finally:
            # a split that gave up leaves what Pulsar's leaves: the children Owned (ownChildBundles ran
            # first) and the parent Splitting with its topics here, until monitorOwnerships has the
            # split redone; the parent stays "underway" on this broker until its next value arrives
            # (`_handle_event`), so the two ranges on this one broker read as the split in flight
            if done or not self.alive:
                self.host.split_underway(parent, False)
        self._pub(parent, deleted)  # thenAccept(pubAsync(...)): not waited for
