"""What each broker decides on the service-unit state channel, as pure functions.

Follows `ServiceUnitStateChannelImpl.java` of apache/pulsar master after PIP-378 (Pulsar 4.0: the
pluggable `ServiceUnitStateTableView`, `ChannelState.Disabled`, health-checked clean-up; the revision
whose `tableview.start` takes `handleEvent` and `handleExisting`). The broker-side channel (layer 4)
owns the table, the clock, the waiting lookups and the timers; it asks these functions:

- `handle_event`: `handleEvent` and its `handle*Event` per state: every broker sees every value and
  acts only when it is the named one (Assigning: the dst broker writes Owned; Releasing: the source
  closes the bundle and writes Assigning (transfer) or Free (unload); Splitting: the source splits;
  Owned: the dst owns it, the source of a transfer closes its topics; Free with `force`: the source
  closes and tombstones; Deleted: the source tombstones);
- the records a broker publishes: `assign_data`, `unload_data`, `split_data`, `split_writes`;
- `owner_lookup`, `owner_after_wait`, `assigned_broker`, `is_owner`: `getOwnerAsync` and friends;
- the constants and timings the channel reads (`channel_timing`).

The leader's housekeeping (monitorOwnerships, the clean-up of a dead broker's bundles) is
channel_cleanup.py.

Where Java iterates a HashMap or a HashSet, these functions keep the table's own order, so a seed
decides the run.
"""

from __future__ import annotations

import enum
import types
from collections.abc import Mapping
from typing import Literal

import msgspec

from emulator.model.config import ServiceConfig
from .state import (
    VERSION_ID_INIT,
    ServiceUnitState,
    ServiceUnitStateData,
    StorageType,
    next_version_id,
)

__all__ = [
    "BUNDLE_SPLIT_RETRY_LIMIT",
    "BUNDLE_SPLIT_RETRY_DELAY_MS",
    "MAX_BROKER_HEALTH_CHECK_DELAY_IN_MILLIS",
    "MAX_BROKER_HEALTH_CHECK_RETRY",
    "MAX_CHANNEL_OWNER_ELECTION_WAITING_TIME_IN_SECS",
    "MAX_CLEAN_UP_DELAY_TIME_IN_SECS",
    "MAX_OWNED_BUNDLE_COUNT_DELAY_TIME_IN_MILLIS",
    "MIN_CLEAN_UP_DELAY_TIME_IN_SECS",
    "OWNERSHIP_CLEAN_UP_MAX_WAIT_TIME_IN_MILLIS",
    "OWNERSHIP_CLEAN_UP_WAIT_RETRY_DELAY_IN_MILLIS",
    "SERVICE_UNIT_STATE_TOPIC",
    "SERVICE_UNIT_STATE_PATH_PREFIX",
    "SYSTEM_NAMESPACE",
    "TABLE_VIEW_CLASSES",
    "ChannelAction",
    "ChannelTiming",
    "LookupCompletion",
    "OwnerAnswer",
    "assign_data",
    "assigned_broker",
    "channel_timing",
    "handle_event",
    "health_check_retry_delay_ms",
    "is_owner",
    "is_transfer",
    "owner_after_wait",
    "owner_lookup",
    "skipped_event_owner",
    "split_retry",
    "split_data",
    "split_writes",
    "storage_type_of",
    "unload_data",
]

_S = ServiceUnitState

# --- Constants (ServiceUnitStateChannelImpl, NamespaceService, the table views) ---------------------

MAX_CLEAN_UP_DELAY_TIME_IN_SECS = 3 * 60
"""Clean-up delay of a dead broker's bundles when the metadata session is Jittery; also how long a
re-established session must last to count as Stable."""
MIN_CLEAN_UP_DELAY_TIME_IN_SECS = 0
"""Clean-up delay when the metadata session is Stable: at once."""
OWNERSHIP_CLEAN_UP_MAX_WAIT_TIME_IN_MILLIS = 5000
"""`doCleanup`: the longest wait for each table flush and for the non-system bundles to leave."""
OWNERSHIP_CLEAN_UP_WAIT_RETRY_DELAY_IN_MILLIS = 100
MAX_CHANNEL_OWNER_ELECTION_WAITING_TIME_IN_SECS = 10
MAX_OWNED_BUNDLE_COUNT_DELAY_TIME_IN_MILLIS = 10 * 60 * 1000
"""`getTotalOwnedServiceUnitCnt`: the owned-bundle gauge is recounted at most this stale."""
MAX_BROKER_HEALTH_CHECK_RETRY = 3
MAX_BROKER_HEALTH_CHECK_DELAY_IN_MILLIS = 1000
BUNDLE_SPLIT_RETRY_LIMIT = 7
"""`NamespaceService.BUNDLE_SPLIT_RETRY_LIMIT`: attempts of `splitServiceUnitOnceAndRetry` on BadVersion."""
BUNDLE_SPLIT_RETRY_DELAY_MS = 100
SYSTEM_NAMESPACE = "pulsar/system"
SERVICE_UNIT_STATE_TOPIC = "persistent://pulsar/system/loadbalancer-service-unit-state"
"""`ServiceUnitStateTableViewImpl.TOPIC`: the compacted system topic behind the default table view."""
SERVICE_UNIT_STATE_PATH_PREFIX = "/service_unit_state"
"""`ServiceUnitStateMetadataStoreTableViewImpl.PATH_PREFIX`: one znode per bundle below it."""

_CHANNEL = "org.apache.pulsar.broker.loadbalance.extensions.channel."
TABLE_VIEW_CLASSES: Mapping[str, StorageType] = types.MappingProxyType({
    _CHANNEL + "ServiceUnitStateTableViewImpl": StorageType.SYSTEM_TOPIC,
    _CHANNEL + "ServiceUnitStateMetadataStoreTableViewImpl": StorageType.METADATA_STORE,
})
"""`loadManagerServiceUnitStateTableViewClassName` values and the storage each table view uses."""


def storage_type_of(table_view_class_name: str) -> StorageType:
    """The storage behind a table-view class (the conflict resolver's `storageType`)."""
    try:
        return TABLE_VIEW_CLASSES[table_view_class_name]
    except KeyError:
        raise ValueError(
            f"loadManagerServiceUnitStateTableViewClassName = {table_view_class_name!r}: unknown; "
            f"known: {', '.join(TABLE_VIEW_CLASSES)}"
        ) from None


def health_check_retry_delay_ms(retry: int) -> int:
    """`doHealthCheckBrokerAsyncWithRetries`: delay before health-check retry number `retry` + 1."""
    return min(MAX_BROKER_HEALTH_CHECK_DELAY_IN_MILLIS, retry * retry * 50)


def split_retry(failed_attempts: int) -> bool:
    """`splitServiceUnitOnceAndRetry`: after a BadVersion, retry (100 ms later) while the failure
    count is below `BUNDLE_SPLIT_RETRY_LIMIT`, so at most 7 attempts in all."""
    return failed_attempts < BUNDLE_SPLIT_RETRY_LIMIT


class ChannelTiming(msgspec.Struct, frozen=True, kw_only=True):
    """The channel's timing, read once in the constructor of ServiceUnitStateChannelImpl."""

    in_flight_state_waiting_time_ms: int
    state_tombstone_delay_ms: int
    ownership_monitor_delay_s: int
    max_cleanup_delay_s: int = MAX_CLEAN_UP_DELAY_TIME_IN_SECS
    min_cleanup_delay_s: int = MIN_CLEAN_UP_DELAY_TIME_IN_SECS


def channel_timing(conf: ServiceConfig) -> ChannelTiming:
    """The constructor's reading of the config, with its check: the tombstone delay (s) must not be
    shorter than the in-flight wait (ms), else the broker does not start."""
    tombstone_ms = conf.load_balancer_service_unit_state_tombstone_delay_time_in_seconds * 1000
    in_flight_ms = conf.load_balancer_in_flight_service_unit_state_waiting_time_in_millis
    if tombstone_ms < in_flight_ms:
        raise ValueError(
            "Invalid Config: loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds "
            f"{tombstone_ms // 1000} secs < loadBalancerInFlightServiceUnitStateWaitingTimeInMillis "
            f"{in_flight_ms} millis; raise the tombstone delay or lower the in-flight wait"
        )
    return ChannelTiming(
        in_flight_state_waiting_time_ms=in_flight_ms,
        state_tombstone_delay_ms=tombstone_ms,
        ownership_monitor_delay_s=conf.load_balancer_service_unit_state_monitor_interval_in_seconds,
    )


# --- Records a broker publishes ---------------------------------------------------------------------


def is_transfer(data: ServiceUnitStateData | None) -> bool:
    """`isTransferCommand(data)`: both brokers named (an unload with a destination)."""
    return data is not None and bool(data.dst_broker) and bool(data.source_broker)


def assign_data(current: ServiceUnitStateData | None, broker: str, now_ms: int) -> ServiceUnitStateData:
    """`publishAssignEventAsync`: (Assigning, dst=broker), version = the local value's + 1."""
    return ServiceUnitStateData(state=_S.ASSIGNING, dst_broker=broker, force=False, timestamp=now_ms,
                                version_id=next_version_id(current))


def unload_data(
    current: ServiceUnitStateData | None,
    source_broker: str,
    dest_broker: str | None,
    now_ms: int,
    *,
    force: bool = False,
) -> ServiceUnitStateData:
    """`publishUnloadEventAsync(Unload)`: (Releasing, dst=dest or null, src=source)."""
    return ServiceUnitStateData(state=_S.RELEASING, dst_broker=dest_broker or None,
                                source_broker=source_broker, force=force, timestamp=now_ms,
                                version_id=next_version_id(current))


def split_data(
    current: ServiceUnitStateData | None,
    source_broker: str,
    children: Mapping[str, str | None],
    now_ms: int,
) -> ServiceUnitStateData:
    """`publishSplitEventAsync(Split)`: (Splitting, src=owner, child range -> destination or null)."""
    return ServiceUnitStateData(state=_S.SPLITTING, source_broker=source_broker,
                                split_service_unit_to_dest_broker=dict(children), force=False,
                                timestamp=now_ms, version_id=next_version_id(current))


def split_writes(
    parent: str,
    data: ServiceUnitStateData,
    table: Mapping[str, ServiceUnitStateData],
    now_ms: int,
) -> tuple[list[tuple[str, ServiceUnitStateData]], tuple[str, ServiceUnitStateData]]:
    """`splitServiceUnit` on the source broker: `ownChildBundles` writes (Owned, dst=source,
    version 1) for each child the table does not hold yet; after the namespace's bundles are updated
    (`updateSplitNamespaceBundlesAsync`, retried by `split_retry`) it writes (Deleted, src=source)
    for the parent. Children are named `<tenant>/<namespace>/<range>` after the parent."""
    namespace = parent.rsplit("/", 1)[0]
    children = [f"{namespace}/{rng}" for rng in (data.split_service_unit_to_dest_broker or {})]
    owned = [
        (child, ServiceUnitStateData(state=_S.OWNED, dst_broker=data.source_broker, force=False,
                                     timestamp=now_ms, version_id=VERSION_ID_INIT))
        for child in children
        if child not in table
    ]
    deleted = ServiceUnitStateData(state=_S.DELETED, source_broker=data.source_broker, force=False,
                                   timestamp=now_ms, version_id=next_version_id(data))
    return owned, (parent, deleted)


# --- Event handling (every broker, every value) ------------------------------------------------------


class LookupCompletion(enum.Enum):
    """What happens to this broker's waiting `getOwnerAsync` requests for the bundle."""

    NONE = "none"  # they keep waiting
    OWNER = "owner"  # complete with ChannelAction.lookup_owner
    EMPTY = "empty"  # complete with no owner (the caller assigns)
    DELETED = "deleted"  # fail: IllegalStateException("<bundle>has been deleted.")
    NOT_READY = "not_ready"  # fail: ServiceUnitNotReadyException (the channel is disabled)


class ChannelAction(msgspec.Struct, frozen=True, kw_only=True):
    """A broker's reaction to one channel value, in Pulsar's order: complete the lookups, then
    close the bundle's topics (if `close`), then publish `publish` or tombstone the key.

    `handler` is the state whose handler ran (Pulsar's handler counters are per state); `notify`
    tells whether the StateChangeListeners (unload/split managers) hear of it, at once or when the
    close/publish completes."""

    handler: ServiceUnitState
    lookups: LookupCompletion = LookupCompletion.NONE
    lookup_owner: str | None = None
    owned_here: bool = False
    close: bool = False
    disconnect_clients: bool = False
    publish: ServiceUnitStateData | None = None
    tombstone: bool = False
    split: bool = False
    notify: bool = False


def handle_event(
    data: ServiceUnitStateData | None,
    broker_id: str,
    now_ms: int,
    *,
    multi_phase_bundle_unload: bool = True,
    channel_disabled: bool = False,
) -> ChannelAction:
    """`handleEvent` on broker `broker_id` for a bundle's new value (None = tombstoned = Init).

    `multi_phase_bundle_unload` is `loadBalancerMultiPhaseBundleUnload` (PIP-307): a transfer's
    source closes its topics without disconnecting the clients at Releasing and disconnects them
    (telling them the new owner) once the destination owns the bundle; off, it disconnects them at
    Releasing. `channel_disabled`: the broker is shutting down (`cleanOwnerships`) and ignores every
    value but a forced one.
    """
    state = ServiceUnitState.INIT if data is None else data.state
    if channel_disabled and (data is None or not data.force):
        return ChannelAction(handler=state, lookups=LookupCompletion.NOT_READY)
    if data is None:  # handleInitEvent
        return ChannelAction(handler=state, lookups=LookupCompletion.EMPTY, notify=True)
    dst, src = data.dst_broker, data.source_broker
    is_dst, is_src = dst is not None and dst == broker_id, src is not None and src == broker_id
    if state is _S.OWNED:  # handleOwnEvent
        if is_dst:
            return ChannelAction(handler=state, lookups=LookupCompletion.OWNER, lookup_owner=dst,
                                 owned_here=True, notify=True)
        if is_src:
            close = data.force or (is_transfer(data) and multi_phase_bundle_unload)
            return ChannelAction(handler=state, lookups=LookupCompletion.OWNER, lookup_owner=dst,
                                 close=close, disconnect_clients=close, notify=True)
        return ChannelAction(handler=state, lookups=LookupCompletion.OWNER, lookup_owner=dst, notify=True)
    if state is _S.ASSIGNING:  # handleAssignEvent: others do nothing, not even notify
        if not is_dst:
            return ChannelAction(handler=state)
        owned = ServiceUnitStateData(state=_S.OWNED, dst_broker=dst, source_broker=src, force=False,
                                     timestamp=now_ms, version_id=next_version_id(data))
        return ChannelAction(handler=state, publish=owned, notify=True)
    if state is _S.RELEASING:  # handleReleaseEvent
        if not is_src:
            return ChannelAction(handler=state)
        if is_transfer(data):
            nxt = ServiceUnitStateData(state=_S.ASSIGNING, dst_broker=dst, source_broker=src,
                                       force=False, timestamp=now_ms, version_id=next_version_id(data))
            return ChannelAction(handler=state, close=True, disconnect_clients=not multi_phase_bundle_unload,
                                 publish=nxt, notify=True)
        nxt = ServiceUnitStateData(state=_S.FREE, source_broker=src, force=False, timestamp=now_ms,
                                   version_id=next_version_id(data))
        return ChannelAction(handler=state, close=True, disconnect_clients=True, publish=nxt, notify=True)
    if state is _S.SPLITTING:  # handleSplitEvent
        return ChannelAction(handler=state, split=is_src, notify=is_src)
    if state is _S.FREE:  # handleFreeEvent
        forced = is_src and data.force
        return ChannelAction(handler=state, lookups=LookupCompletion.EMPTY, close=forced,
                             disconnect_clients=forced, tombstone=forced, notify=True)
    if state is _S.DELETED:  # handleDeleteEvent
        return ChannelAction(handler=state, lookups=LookupCompletion.DELETED, tombstone=is_src, notify=True)
    # Init is never a stored value's state except through a forced write; Pulsar runs
    # handleInitEvent for state(data) == Init whatever the record.
    return ChannelAction(handler=state, lookups=LookupCompletion.EMPTY, notify=True)


def skipped_event_owner(current: ServiceUnitStateData | None) -> str | None:
    """`handleSkippedEvent`: when the table view drops a write, this broker's waiting lookup for
    the bundle completes with the current owner if the bundle is Owned (else it keeps waiting)."""
    if current is not None and current.state is _S.OWNED:
        return current.dst_broker
    return None


# --- Lookups ------------------------------------------------------------------------------------


class OwnerAnswer(msgspec.Struct, frozen=True):
    """An owner lookup's outcome: `owner` (broker; if `check_active`, only once the broker registry
    knows it, else the request waits as `wait` does), `empty` (no owner: the caller assigns one),
    `wait` (until an Owned/Free/Init value completes it or the in-flight wait ends, then
    `owner_after_wait`), `fail` (Deleted, or still in flight after the wait)."""

    kind: Literal["owner", "empty", "wait", "fail"]
    broker: str | None = None
    check_active: bool = False


def owner_lookup(
    data: ServiceUnitStateData | None, broker_id: str, *, registered: bool = True
) -> OwnerAnswer:
    """`getOwnerAsync` on `broker_id`. Owned answers dst, Splitting the source (both after the
    active check); an Assigning/Releasing value answers its dst at once to any other broker (the
    client goes there and waits) while the dst itself waits for Owned; Init/Free: empty; Deleted: fail.
    `registered` False (this broker lost its registry node): the owner is answered unchecked."""
    state = ServiceUnitState.INIT if data is None else data.state
    if data is None or state in (_S.INIT, _S.FREE):
        return OwnerAnswer("empty")
    if state is _S.DELETED:
        return OwnerAnswer("fail")
    if state in (_S.OWNED, _S.SPLITTING):
        owner = data.dst_broker if state is _S.OWNED else data.source_broker
        return OwnerAnswer("owner", owner, check_active=registered)
    # Assigning, Releasing
    if data.dst_broker is not None and data.dst_broker == broker_id:
        return OwnerAnswer("wait", data.dst_broker) if registered else OwnerAnswer("owner", data.dst_broker)
    return OwnerAnswer("owner", data.dst_broker) if data.dst_broker else OwnerAnswer("empty")


def owner_after_wait(data: ServiceUnitStateData | None) -> OwnerAnswer:
    """`deferGetOwner`'s timeout: `getOwnerNow` decides; still in flight or Deleted fails, an Owned
    owner must still pass the active check (an inactive one fails: "The new owner ... is inactive")."""
    state = ServiceUnitState.INIT if data is None else data.state
    if data is None or state in (_S.INIT, _S.FREE):
        return OwnerAnswer("empty")
    if state is _S.OWNED:
        return OwnerAnswer("owner", data.dst_broker, check_active=True)
    if state is _S.SPLITTING:
        return OwnerAnswer("owner", data.source_broker, check_active=True)
    return OwnerAnswer("fail")


def assigned_broker(data: ServiceUnitStateData | None) -> str | None:
    """`getAssigned`: Owned/Assigning/Releasing -> dst (may be null), Splitting -> source, else null."""
    if data is None:
        return None
    if data.state in (_S.OWNED, _S.ASSIGNING, _S.RELEASING):
        return data.dst_broker
    if data.state is _S.SPLITTING:
        return data.source_broker
    return None


def is_owner(data: ServiceUnitStateData | None, broker_id: str, target_broker: str | None = None) -> bool:
    """`isOwner(serviceUnit, target)` on `broker_id` (target defaults to itself): the lookup must
    answer at once with that owner; assumes the active check passes at once."""
    answer = owner_lookup(data, broker_id)
    target = broker_id if target_broker is None else target_broker
    return answer.kind == "owner" and answer.broker == target
