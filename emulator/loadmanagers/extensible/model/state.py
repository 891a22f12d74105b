"""The service-unit state channel's data: bundle states, their records and the conflict resolver.

Follows `pulsar-broker/.../loadbalance/extensions/channel/` of apache/pulsar master after PIP-378
(Pulsar 4.0: `ServiceUnitState.StorageType`, the pluggable `ServiceUnitStateTableView`):

- `ServiceUnitState.java`: the seven states, the two transition tables (system topic, metadata
  store), `isInFlightState`, `isActiveState`;
- `ServiceUnitStateData.java`: the record every broker publishes for a bundle, `state(data)`;
- `ServiceUnitStateDataConflictResolver.java`: `shouldKeepLeft`, the rule a table view applies to
  every write (and the system topic's compaction strategy): a write that loses is dropped silently.

Every broker tails one table `bundle -> ServiceUnitStateData`; `channel_rules` says what each broker
does on each value. Older Pulsar (3.0) had other states (Assigned, Released) and fewer fields: not
modelled.
"""

from __future__ import annotations

import enum
import types
from collections.abc import Callable, Mapping

import msgspec

__all__ = [
    "IN_FLIGHT_STATES",
    "LONG_MAX",
    "LONG_MIN",
    "SEMI_TERMINAL_STATES",
    "VERSION_ID_INIT",
    "ServiceUnitState",
    "ServiceUnitStateData",
    "StorageType",
    "decode_state_data",
    "encode_state_data",
    "is_active_state",
    "is_in_flight_state",
    "is_valid_transition",
    "java_long",
    "next_version_id",
    "resolve",
    "should_keep_left",
    "state_of",
]

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
VERSION_ID_INIT = 1
"""ServiceUnitStateChannelImpl.VERSION_ID_INIT: the versionId of a bundle's first record."""


class ServiceUnitState(enum.Enum):
    """`ServiceUnitState`: the value is Pulsar's name, as the JSON carries it."""

    INIT = "Init"  # no record (a tombstoned key reads as Init): terminal
    FREE = "Free"  # owned by no broker: semi-terminal
    OWNED = "Owned"  # owned by dstBroker: terminal
    ASSIGNING = "Assigning"  # dstBroker is being told to own it
    RELEASING = "Releasing"  # sourceBroker is closing its topics
    SPLITTING = "Splitting"  # sourceBroker is splitting it
    DELETED = "Deleted"  # the parent of a finished split: semi-terminal


class StorageType(enum.Enum):
    """`ServiceUnitState.StorageType`: where the table lives, chosen by
    `loadManagerServiceUnitStateTableViewClassName` (see `channel_rules.storage_type_of`)."""

    SYSTEM_TOPIC = "SystemTopic"
    METADATA_STORE = "MetadataStore"


_S = ServiceUnitState

# `validTransitionsOverSystemTopic`: Init -> anything, because compaction can drop the steps of an
# assignment, transfer or split that was under way; Free -> Init is a tombstone.
_OVER_SYSTEM_TOPIC: Mapping[ServiceUnitState, frozenset[ServiceUnitState]] = types.MappingProxyType({
    _S.INIT: frozenset({_S.FREE, _S.OWNED, _S.ASSIGNING, _S.RELEASING, _S.SPLITTING, _S.DELETED}),
    _S.FREE: frozenset({_S.ASSIGNING, _S.INIT}),
    _S.OWNED: frozenset({_S.SPLITTING, _S.RELEASING}),
    _S.ASSIGNING: frozenset({_S.OWNED}),
    _S.RELEASING: frozenset({_S.ASSIGNING, _S.FREE}),
    _S.SPLITTING: frozenset({_S.DELETED}),
    _S.DELETED: frozenset({_S.INIT}),
})
# `validTransitionsOverMetadataStore`: no compaction, so every step is seen.
_OVER_METADATA_STORE: Mapping[ServiceUnitState, frozenset[ServiceUnitState]] = types.MappingProxyType({
    _S.INIT: frozenset({_S.ASSIGNING}),
    _S.FREE: frozenset({_S.ASSIGNING}),
    _S.OWNED: frozenset({_S.SPLITTING, _S.RELEASING}),
    _S.ASSIGNING: frozenset({_S.OWNED}),
    _S.RELEASING: frozenset({_S.ASSIGNING, _S.FREE}),
    _S.SPLITTING: frozenset({_S.DELETED}),
    _S.DELETED: frozenset({_S.INIT}),
})

IN_FLIGHT_STATES = frozenset({_S.ASSIGNING, _S.RELEASING, _S.SPLITTING})
"""`inFlightStates`: a broker is expected to write the next step; the leader's monitor overrides
one that stays longer than `loadBalancerInFlightServiceUnitStateWaitingTimeInMillis`."""
SEMI_TERMINAL_STATES = frozenset({_S.FREE, _S.DELETED})
"""The enum's comments: kept for `loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds`, then
tombstoned by the monitor (which in fact tombstones every non-active record, see `is_active_state`)."""


def is_valid_transition(
    from_state: ServiceUnitState,
    to_state: ServiceUnitState,
    storage_type: StorageType = StorageType.SYSTEM_TOPIC,
) -> bool:
    """`ServiceUnitState.isValidTransition(from, to, storageType)`."""
    table = _OVER_SYSTEM_TOPIC if storage_type is StorageType.SYSTEM_TOPIC else _OVER_METADATA_STORE
    return to_state in table[from_state]


def is_in_flight_state(state: ServiceUnitState) -> bool:
    """`ServiceUnitState.isInFlightState`: Assigning, Releasing, Splitting."""
    return state in IN_FLIGHT_STATES


def is_active_state(state: ServiceUnitState) -> bool:
    """`ServiceUnitState.isActiveState`: in flight or Owned (a broker holds or is taking the bundle)."""
    return state in IN_FLIGHT_STATES or state is _S.OWNED


def java_long(value: int) -> int:
    """`value` wrapped to a Java long, as `versionId + 1` overflows in Java."""
    return (value - LONG_MIN) % 2**64 + LONG_MIN


def _blank(text: str | None) -> bool:
    """`StringUtils.isBlank`."""
    return text is None or text.strip() == ""


class ServiceUnitStateData(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True
):
    """`ServiceUnitStateData` (a Java record), one bundle's value in the channel.

    JSON as Pulsar's `Schema.JSON` writes it (Jackson, `NON_NULL`): `state`, `dstBroker`,
    `sourceBroker`, `splitServiceUnitToDestBroker`, `force`, `timestamp`, `versionId`, the null ones
    left out. `force`, `timestamp` and `versionId` have no default here because Java's convenience
    constructors take the wall clock; callers pass the emulated time. `splitServiceUnitToDestBroker`
    is Java's `Map<String, Optional<String>>` (child range -> destination broker), an empty Optional
    written as null (unverified: Jackson needs its jdk8 module for Optional).

    Java's `equals` compares only `versionId`; this Struct compares every field.
    """

    state: ServiceUnitState
    dst_broker: str | None = None
    source_broker: str | None = None
    split_service_unit_to_dest_broker: dict[str, str | None] | None = None
    force: bool
    timestamp: int
    version_id: int

    def __post_init__(self) -> None:
        if self.state is not _S.FREE and _blank(self.dst_broker) and _blank(self.source_broker):
            # The record's compact constructor: IllegalArgumentException("Empty broker").
            raise ValueError(
                f"ServiceUnitStateData(state={self.state.value}): Empty broker; every state but "
                "Free names dstBroker or sourceBroker"
            )
        if not LONG_MIN <= self.version_id <= LONG_MAX:
            raise ValueError(
                f"ServiceUnitStateData: versionId = {self.version_id} is not a Java long; "
                "use java_long(v) to wrap it as Java does"
            )


def state_of(data: ServiceUnitStateData | None) -> ServiceUnitState:
    """`ServiceUnitStateData.state(data)`: a missing (tombstoned) record is Init."""
    return _S.INIT if data is None else data.state


def next_version_id(data: ServiceUnitStateData | None) -> int:
    """`ServiceUnitStateChannelImpl.getNextVersionId`: 1 for a new key, else versionId + 1 (wraps)."""
    return VERSION_ID_INIT if data is None else java_long(data.version_id + 1)


def encode_state_data(data: ServiceUnitStateData) -> bytes:
    """The JSON bytes Pulsar's producer writes for `data`."""
    return msgspec.json.encode(data)


def decode_state_data(raw: bytes | str) -> ServiceUnitStateData:
    """Read one value; unknown fields are ignored, as Pulsar's reader does."""
    return msgspec.json.decode(raw, type=ServiceUnitStateData)


# --- Conflict resolution --------------------------------------------------------------------------


def _differs(left: ServiceUnitStateData, right: ServiceUnitStateData) -> bool:
    """`notEquals`: another dstBroker or another sourceBroker (null-safe, as StringUtils.equals)."""
    return left.dst_broker != right.dst_broker or left.source_broker != right.source_broker


def _invalid_unload(left: ServiceUnitStateData, right: ServiceUnitStateData) -> bool:
    """`invalidUnload`: Owned -> Releasing must come from the owner and must not name it as the
    destination. (Java throws NullPointerException on an Owned record without dstBroker, which no
    Pulsar code writes; here that write is refused.)"""
    return (
        _blank(right.source_broker)
        or left.dst_broker != right.source_broker
        or left.dst_broker == right.dst_broker
    )


_Rule = Callable[[ServiceUnitStateData, ServiceUnitStateData], bool]

# shouldKeepLeft's `switch (prevState)` in source order. Its outer cases have no `break`, so a
# transition without a rule under its own case falls through to the next cases' rules; with the
# current transition tables every valid transition is decided under its own case (or by none).
_BROKER_RULES: tuple[tuple[ServiceUnitState, Mapping[ServiceUnitState, _Rule]], ...] = (
    (_S.OWNED, {
        _S.SPLITTING: lambda cur, new: not _blank(new.dst_broker) or cur.dst_broker != new.source_broker,
        _S.RELEASING: _invalid_unload,
    }),
    (_S.ASSIGNING, {_S.OWNED: _differs}),
    (_S.RELEASING, {
        _S.ASSIGNING: lambda cur, new: _blank(new.dst_broker) or _differs(cur, new),
        _S.FREE: _differs,
    }),
    (_S.SPLITTING, {_S.DELETED: _differs}),
    (_S.FREE, {_S.ASSIGNING: lambda cur, new: not _blank(new.source_broker) or _blank(new.dst_broker)}),
)
_RULE_START = {state: i for i, (state, _) in enumerate(_BROKER_RULES)}


def should_keep_left(
    current: ServiceUnitStateData | None,
    incoming: ServiceUnitStateData | None,
    *,
    storage_type: StorageType = StorageType.SYSTEM_TOPIC,
    check_brokers: bool = True,
) -> bool:
    """`ServiceUnitStateDataConflictResolver.shouldKeepLeft(from, to)`: True = drop `incoming`.

    In order: a tombstone (`incoming` None) always wins; versionId must grow (Long.MAX -> Long.MIN
    counts as growth), by exactly 1 on the metadata store (a system topic may have compacted the
    steps between), and a first record on the metadata store must be version 1; a `force` record
    then wins; otherwise the transition must be valid and, unless `check_brokers` is off (a test
    hook in Pulsar), written by the broker that may write it.
    """
    if incoming is None:
        return False
    if current is not None:
        if current.version_id == LONG_MAX and incoming.version_id == LONG_MIN:
            pass  # overflow
        elif current.version_id >= incoming.version_id:
            return True
        elif current.version_id < incoming.version_id - 1:
            return storage_type is not StorageType.SYSTEM_TOPIC  # compacted: gaps on a topic only
    elif storage_type is StorageType.METADATA_STORE:
        return incoming.version_id != 1
    if incoming.force:
        return False
    previous, state = state_of(current), incoming.state
    if not is_valid_transition(previous, state, storage_type):
        return True
    if check_brokers and current is not None and previous in _RULE_START:
        for _, rules in _BROKER_RULES[_RULE_START[previous]:]:
            rule = rules.get(state)
            if rule is not None:
                return rule(current, incoming)
    return False


def resolve(
    current: ServiceUnitStateData | None,
    incoming: ServiceUnitStateData | None,
    *,
    storage_type: StorageType = StorageType.SYSTEM_TOPIC,
) -> ServiceUnitStateData | None:
    """The value a table view holds after `incoming` is written over `current` (None = no key).

    The writer is not told when it loses: the system-topic producer's send succeeds and the table
    view drops the message (then calls `handleSkippedEvent`); the metadata-store table view swallows
    its ConflictException (`ServiceUnitStateMetadataStoreTableViewImpl.put`).
    """
    if should_keep_left(current, incoming, storage_type=storage_type):
        return current
    return incoming
