"""What the channel owner (the leader) decides to keep the service-unit state channel clean, as pure
functions: `ServiceUnitStateChannelImpl`'s housekeeping, apart from the per-value rules of
channel_rules.py.

Follows `ServiceUnitStateChannelImpl.java` of apache/pulsar master after PIP-378 (the revision
channel_rules.py restates):

- `monitor_skip_reason`, `monitor_ownerships` (`monitorOwnerships`: inactive owners, stuck in-flight
  states, tombstones);
- `records_session_event`, `metadata_state` (`handleMetadataSessionEvent`, `getMetadataState`) and
  `broker_deletion_decision` (`handleBrokerDeletionEvent`: clean up at once, after
  `MAX_CLEAN_UP_DELAY_TIME_IN_SECS`, or not at all);
- `orphans_of`, `override_ownership` and `cleanup_overrides` (`doCleanup`, `overrideOwnership`).

Where Java iterates a HashMap or a HashSet, these functions keep the table's own order, so a seed
decides the run.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Literal

import msgspec

from .channel_rules import (
    MAX_CLEAN_UP_DELAY_TIME_IN_SECS,
    MIN_CLEAN_UP_DELAY_TIME_IN_SECS,
    SYSTEM_NAMESPACE,
    ChannelTiming,
)
from .state import (
    ServiceUnitState,
    ServiceUnitStateData,
    is_active_state,
    is_in_flight_state,
    next_version_id,
)

__all__ = [
    "SESSION_LOST",
    "SESSION_REESTABLISHED",
    "CleanupDecision",
    "MetadataState",
    "MonitorPlan",
    "broker_deletion_decision",
    "cleanup_overrides",
    "metadata_state",
    "monitor_ownerships",
    "monitor_skip_reason",
    "orphans_of",
    "override_excluded_brokers",
    "override_ownership",
    "records_session_event",
]

_S = ServiceUnitState

class MetadataState(enum.Enum):
    """`MetadataState`, from the last metadata-session event."""

    STABLE = "Stable"
    JITTERY = "Jittery"
    UNSTABLE = "Unstable"


SESSION_REESTABLISHED, SESSION_LOST = "SessionReestablished", "SessionLost"


def records_session_event(event: str) -> bool:
    """`handleMetadataSessionEvent`: only SessionReestablished and SessionLost (with their time)
    are remembered; ConnectionLost and Reconnected leave the metadata state as it was."""
    return event in (SESSION_REESTABLISHED, SESSION_LOST)


def metadata_state(
    last_event: str,
    last_event_ms: int | None,
    now_ms: int,
    *,
    max_cleanup_delay_s: int = MAX_CLEAN_UP_DELAY_TIME_IN_SECS,
) -> MetadataState:
    """`getMetadataState`: Stable once a re-established session has lasted more than
    `max_cleanup_delay_s`; Jittery before; Unstable while the session is lost. `last_event_ms` None
    = no event since the broker started (Pulsar's initial timestamp 0 against the wall clock: Stable)."""
    if last_event != SESSION_REESTABLISHED:
        return MetadataState.UNSTABLE
    if last_event_ms is None or now_ms - last_event_ms > 1000 * max_cleanup_delay_s:
        return MetadataState.STABLE
    return MetadataState.JITTERY


class CleanupDecision(msgspec.Struct, frozen=True):
    """`handleBrokerDeletionEvent`'s outcome: `schedule` a clean-up job after `delay_s` (unless one
    is already pending for that broker, `cleanupJobs.computeIfAbsent`), `ignore` it (Unstable
    metadata: counted as Skip), or `not_leader` (only the channel owner cleans up)."""

    action: Literal["schedule", "ignore", "not_leader"]
    delay_s: int = 0


def broker_deletion_decision(
    is_channel_owner: bool,
    state: MetadataState,
    *,
    max_cleanup_delay_s: int = MAX_CLEAN_UP_DELAY_TIME_IN_SECS,
    min_cleanup_delay_s: int = MIN_CLEAN_UP_DELAY_TIME_IN_SECS,
) -> CleanupDecision:
    """What the channel owner does when a broker's registry node goes away. A clean-up that fires
    first health-checks the broker (`MAX_BROKER_HEALTH_CHECK_RETRY` retries) and does nothing if it
    answers; a broker that registers again before it fires cancels it (after a health check)."""
    if not is_channel_owner:
        return CleanupDecision("not_leader")
    if state is MetadataState.STABLE:
        return CleanupDecision("schedule", min_cleanup_delay_s)
    if state is MetadataState.JITTERY:
        return CleanupDecision("schedule", max_cleanup_delay_s)
    return CleanupDecision("ignore")


class MonitorPlan(msgspec.Struct, frozen=True):
    """One `monitorOwnerships` run: brokers to treat as deleted (`handleBrokerDeletionEvent`, in
    first-seen order; a blank Owned dst shows up as None, as Pulsar adds it), in-flight bundles to
    override (`overrideOwnership(su, data, null, false)`: a new broker is selected, none excluded)
    and semi-terminal bundles to tombstone."""

    inactive_brokers: tuple[str | None, ...]
    timed_out: tuple[str, ...]
    tombstones: tuple[str, ...]


def monitor_skip_reason(
    is_channel_owner: bool, active_brokers: Collection[str], state: MetadataState
) -> str | None:
    """Why `monitorOwnerships` does nothing this time, or None: it runs on the channel owner only,
    with at least one available broker, and only while the metadata session is Stable."""
    if not is_channel_owner:
        return "This broker is not the leader now. Skipping ownership monitor."
    if not active_brokers:
        return "no active brokers found. Skipping ownership monitor."
    if state is not MetadataState.STABLE:
        return f"metadata state:{state.value} is not Stable. Skipping ownership monitor."
    return None


def monitor_ownerships(
    table: Mapping[str, ServiceUnitStateData],
    active_brokers: Collection[str],
    now_ms: int,
    timing: ChannelTiming,
) -> MonitorPlan:
    """`monitorOwnerships` once its guards pass (`monitor_skip_reason`), every
    `loadBalancerServiceUnitStateMonitorIntervalInSeconds` on the leader. Per value, first match:
    an Owned bundle whose dst is blank or not available -> its dst is inactive; an in-flight one
    whose source, then dst, is named and not available -> that broker is inactive; an in-flight one
    older than the in-flight wait -> timed out; a non-active one (Free, Deleted, a forced Init)
    older than the tombstone delay -> tombstone."""
    active = set(active_brokers)
    inactive: dict[str | None, None] = {}
    timed_out: list[str] = []
    tombstones: list[str] = []
    for service_unit, data in table.items():
        dst, src, state = data.dst_broker, data.source_broker, data.state
        if state is _S.OWNED and (not dst or not dst.strip() or dst not in active):
            inactive.setdefault(dst)
            continue
        in_flight = is_in_flight_state(state)
        if in_flight and src and src.strip() and src not in active:
            inactive.setdefault(src)
            continue
        if in_flight and dst and dst.strip() and dst not in active:
            inactive.setdefault(dst)
            continue
        if in_flight and now_ms - data.timestamp > timing.in_flight_state_waiting_time_ms:
            timed_out.append(service_unit)
            continue
        if not is_active_state(state) and now_ms - data.timestamp > timing.state_tombstone_delay_ms:
            tombstones.append(service_unit)
    return MonitorPlan(tuple(inactive), tuple(timed_out), tuple(tombstones))


def orphans_of(
    table: Mapping[str, ServiceUnitStateData], broker: str | None
) -> tuple[list[tuple[str, ServiceUnitStateData]], list[tuple[str, ServiceUnitStateData]]]:
    """`doCleanup`'s selection for a dead (or, `cleanOwnerships`, a departing) broker: values that
    name it as dst in an active state or as source in an in-flight state. Returns (non-system,
    system): Pulsar overrides the non-system bundles first, waits up to
    `OWNERSHIP_CLEAN_UP_MAX_WAIT_TIME_IN_MILLIS` for them to leave the broker, then the
    `pulsar/system` ones (which hold the channel's own topic)."""
    regular: list[tuple[str, ServiceUnitStateData]] = []
    system: list[tuple[str, ServiceUnitStateData]] = []
    for service_unit, data in table.items():
        if (broker == data.dst_broker and is_active_state(data.state)) or (
            broker == data.source_broker and is_in_flight_state(data.state)
        ):
            (system if service_unit.startswith(SYSTEM_NAMESPACE) else regular).append((service_unit, data))
    return regular, system


def override_excluded_brokers(inactive_broker: str | None) -> frozenset[str]:
    """`selectBroker(serviceUnit, inactiveBroker)`: the dead broker is excluded from the selection."""
    return frozenset() if inactive_broker is None else frozenset({inactive_broker})


def override_ownership(
    orphan: ServiceUnitStateData,
    selected_broker: str | None,
    now_ms: int,
    *,
    gracefully: bool = False,
) -> ServiceUnitStateData:
    """`overrideOwnership`: the forced value that replaces an orphan (`force` wins any conflict).

    With a selected broker: Splitting -> (Splitting, dst=orphan's dst, src=selected): the selected
    broker redoes the split; Owned -> (Owned, dst=selected, src=old owner unless it was selected),
    or (Releasing, ...) when `gracefully` (a broker handing its bundles over as it shuts down) and the
    owner changes; Assigning/Releasing -> (Owned, dst=selected, src=orphan's source unless selected).
    The named source closes its topics if it is still alive. No broker available -> (Free,
    src=owner or source): the next lookup assigns it."""
    version = next_version_id(orphan)
    if selected_broker is None:
        src = orphan.dst_broker if orphan.state is _S.OWNED else orphan.source_broker
        return ServiceUnitStateData(state=_S.FREE, source_broker=src, force=True, timestamp=now_ms,
                                    version_id=version)
    if orphan.state is _S.SPLITTING:
        return ServiceUnitStateData(
            state=_S.SPLITTING, dst_broker=orphan.dst_broker, source_broker=selected_broker,
            split_service_unit_to_dest_broker=dict(orphan.split_service_unit_to_dest_broker or {}),
            force=True, timestamp=now_ms, version_id=version)
    if orphan.state is _S.OWNED:
        src = None if selected_broker == orphan.dst_broker else orphan.dst_broker
        state = _S.RELEASING if gracefully and src is not None else _S.OWNED
        return ServiceUnitStateData(state=state, dst_broker=selected_broker, source_broker=src, force=True,
                                    timestamp=now_ms, version_id=version)
    src = None if selected_broker == orphan.source_broker else orphan.source_broker
    return ServiceUnitStateData(state=_S.OWNED, dst_broker=selected_broker, source_broker=src, force=True,
                                timestamp=now_ms, version_id=version)


def cleanup_overrides(
    table: Mapping[str, ServiceUnitStateData],
    broker: str | None,
    select: Callable[[str, frozenset[str]], str | None],
    now_ms: int,
    *,
    gracefully: bool = False,
) -> Iterable[tuple[str, ServiceUnitStateData]]:
    """`doCleanup`'s writes in Pulsar's order (non-system bundles, then system ones), with
    `select(service_unit, excluded)` standing for the load manager's `selectAsync`. The actor still
    waits between the two groups and runs the health check first when not `gracefully`."""
    regular, system = orphans_of(table, broker)
    excluded = override_excluded_brokers(broker)
    for service_unit, data in (*regular, *system):
        yield service_unit, override_ownership(data, select(service_unit, excluded), now_ms,
                                               gracefully=gracefully)
