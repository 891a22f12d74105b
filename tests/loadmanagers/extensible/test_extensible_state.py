"""Service-unit states, their records and the conflict resolver, with Pulsar's test vectors.

Ported from apache/pulsar master (after PIP-378) `pulsar-broker/src/test/java/org/apache/pulsar/broker/
loadbalance/extensions/channel/`: ServiceUnitStateTest (every pair of states, both storage types) and
ServiceUnitStateDataConflictResolverTest (every assertion, in order).
"""

from __future__ import annotations

import itertools

import msgspec
import pytest

from emulator.loadmanagers.extensible.model.state import (
    LONG_MAX,
    LONG_MIN,
    ServiceUnitState,
    ServiceUnitStateData,
    StorageType,
    decode_state_data,
    encode_state_data,
    is_active_state,
    is_in_flight_state,
    is_valid_transition,
    java_long,
    next_version_id,
    resolve,
    should_keep_left,
    state_of,
)

Init, Free, Owned = ServiceUnitState.INIT, ServiceUnitState.FREE, ServiceUnitState.OWNED
Assigning, Releasing = ServiceUnitState.ASSIGNING, ServiceUnitState.RELEASING
Splitting, Deleted = ServiceUnitState.SPLITTING, ServiceUnitState.DELETED
ALL = list(ServiceUnitState)
SystemTopic, MetadataStore = StorageType.SYSTEM_TOPIC, StorageType.METADATA_STORE


def sud(state, dst=None, src=None, version=1, *, force=False, ts=0, split=None) -> ServiceUnitStateData:
    """Java's `new ServiceUnitStateData(state, dst, src, [force,] versionId)`."""
    return ServiceUnitStateData(state=state, dst_broker=dst, source_broker=src,
                                split_service_unit_to_dest_broker=split, force=force, timestamp=ts,
                                version_id=version)


# --- ServiceUnitStateTest ----------------------------------------------------------------------------


def test_in_flights() -> None:
    assert [s for s in ALL if is_in_flight_state(s)] == [Assigning, Releasing, Splitting]


def test_active() -> None:
    assert [s for s in ALL if is_active_state(s)] == [Owned, Assigning, Releasing, Splitting]


# The assertTrue lines of testTransitionsOverSystemTopic / testTransitionsOverMetadataStore; every
# other of the 49 pairs is an assertFalse there.
VALID_OVER_SYSTEM_TOPIC = {
    (Init, Free), (Init, Owned), (Init, Assigning), (Init, Releasing), (Init, Splitting), (Init, Deleted),
    (Free, Init), (Free, Assigning),
    (Assigning, Owned),
    (Owned, Releasing), (Owned, Splitting),
    (Releasing, Free), (Releasing, Assigning),
    (Splitting, Deleted),
    (Deleted, Init),
}
VALID_OVER_METADATA_STORE = {
    (Init, Assigning),
    (Free, Assigning),
    (Assigning, Owned),
    (Owned, Releasing), (Owned, Splitting),
    (Releasing, Free), (Releasing, Assigning),
    (Splitting, Deleted),
    (Deleted, Init),
}


@pytest.mark.parametrize(("storage", "valid"), [(SystemTopic, VALID_OVER_SYSTEM_TOPIC),
                                                (MetadataStore, VALID_OVER_METADATA_STORE)])
@pytest.mark.parametrize(("from_state", "to_state"), list(itertools.product(ALL, ALL)),
                         ids=[f"{a.value}->{b.value}" for a, b in itertools.product(ALL, ALL)])
def test_transitions(storage, valid, from_state, to_state) -> None:
    assert is_valid_transition(from_state, to_state, storage) == ((from_state, to_state) in valid)


def test_system_topic_is_the_default_storage() -> None:
    assert is_valid_transition(Init, Owned) and not is_valid_transition(Init, Owned, MetadataStore)


# --- ServiceUnitStateData --------------------------------------------------------------------------


def test_json_is_pulsars_record_without_nulls() -> None:
    data = sud(Releasing, "b2", "b1", 7, ts=1700000000000)
    assert encode_state_data(data) == (
        b'{"state":"Releasing","dstBroker":"b2","sourceBroker":"b1","force":false,'
        b'"timestamp":1700000000000,"versionId":7}'
    )
    assert decode_state_data(encode_state_data(data)) == data
    split = sud(Splitting, src="b1", split={"0x00000000_0x7fffffff": None, "0x7fffffff_0xffffffff": "b2"})
    assert encode_state_data(split) == (
        b'{"state":"Splitting","sourceBroker":"b1","splitServiceUnitToDestBroker":'
        b'{"0x00000000_0x7fffffff":null,"0x7fffffff_0xffffffff":"b2"},"force":false,"timestamp":0,'
        b'"versionId":1}'
    )
    # a reader ignores fields it does not know, as Pulsar's (FAIL_ON_UNKNOWN_PROPERTIES off)
    raw = b'{"state":"Owned","dstBroker":"b1","force":true,"timestamp":5,"versionId":3,"x":1}'
    assert decode_state_data(raw) == sud(Owned, "b1", version=3, force=True, ts=5)


def test_empty_broker_is_refused_except_for_free() -> None:
    with pytest.raises(ValueError, match="Empty broker"):
        sud(Owned)
    with pytest.raises(ValueError, match="Empty broker"):
        sud(Releasing, " ", "")
    with pytest.raises(msgspec.ValidationError, match="Empty broker"):
        decode_state_data(b'{"state":"Owned","force":false,"timestamp":0,"versionId":1}')
    assert sud(Free).source_broker is None  # (Free, null, null): overrideOwnership's "nobody left"


def test_state_and_version_helpers() -> None:
    assert state_of(None) is Init and state_of(sud(Owned, "b")) is Owned
    assert next_version_id(None) == 1
    assert next_version_id(sud(Owned, "b", version=41)) == 42
    assert next_version_id(sud(Owned, "b", version=LONG_MAX)) == LONG_MIN  # Java long overflow
    assert java_long(LONG_MAX + 2) == LONG_MIN + 1
    with pytest.raises(ValueError, match="not a Java long"):
        sud(Owned, "b", version=LONG_MAX + 1)


# --- ServiceUnitStateDataConflictResolverTest ---------------------------------------------------------

dst, src = "dst", "src"


def data(state, *brokers):
    """The test's data(state) / data(state, dst) / data(state, src, dst), versionId 1."""
    return _data(state, brokers, 1)


def data2(state, *brokers):
    return _data(state, brokers, 2)


def _data(state, brokers, version):
    if not brokers:
        return sud(state, "broker", version=version)
    if len(brokers) == 1:
        return sud(state, brokers[0], version=version)
    source, destination = brokers
    return sud(state, destination, source, version)


def keep(left, right, **kw) -> bool:
    return should_keep_left(left, right, **kw)


def test_version_id() -> None:
    assert keep(sud(Assigning, dst, version=1), sud(Assigning, dst, version=1))
    assert keep(sud(Assigning, dst, version=1), sud(Assigning, dst, version=2))
    assert not keep(sud(Owned, dst, src, 10), sud(Releasing, "broker2", dst, 11))
    assert not keep(sud(Owned, dst, src, LONG_MAX), sud(Releasing, "broker2", dst, java_long(LONG_MAX + 1)))
    assert not keep(sud(Owned, dst, src, java_long(LONG_MAX + 1)),
                    sud(Releasing, "broker2", dst, java_long(LONG_MAX + 2)))
    assert keep(sud(Owned, dst, src, 10), sud(Releasing, "broker2", dst, 5))
    assert not keep(sud(Owned, dst, src, 10), sud(Owned, "broker2", dst, 12))


def test_store_type() -> None:
    assert not keep(None, sud(Owned, dst, version=1), storage_type=SystemTopic)
    assert not keep(None, sud(Owned, dst, version=2), storage_type=SystemTopic)
    assert not keep(sud(Owned, dst, version=1), sud(Owned, dst, version=3), storage_type=SystemTopic)

    assert not keep(None, sud(Owned, dst, version=1), storage_type=MetadataStore)
    assert keep(None, sud(Owned, dst, version=2), storage_type=MetadataStore)
    assert keep(sud(Owned, dst, version=1), sud(Owned, dst, version=3), storage_type=MetadataStore)


def test_force() -> None:
    assert not keep(sud(Init, dst, version=1), sud(Init, dst, version=2, force=True))
    assert keep(sud(Init, dst, version=1), sud(Init, dst, version=1, force=True))


@pytest.mark.parametrize("state", ALL)
def test_tombstone(state) -> None:
    assert not keep(data(state), None)


# testTransitionsAndBrokers, assertion by assertion: (left, right, keep left?)
TRANSITIONS_AND_BROKERS = [
    (data(Init), data2(Init), True),
    (data(Init), data2(Free), False),
    (data(Init), data2(Assigning), False),
    (data(Init), data2(Owned), False),
    (data(Init), data2(Releasing), False),
    (data(Init), data2(Splitting), False),
    (data(Init), data2(Deleted), False),

    (data(Assigning), data2(Init), True),
    (data(Assigning), data2(Free), True),
    (data(Assigning), data2(Assigning), True),
    (data(Assigning, "dst1"), data2(Owned, "dst2"), True),
    (data(Assigning, dst), data2(Owned, src, dst), True),
    (data(Assigning, dst), data2(Owned, dst), False),
    (data(Assigning, src, dst), data2(Owned, src, dst), False),
    (data(Assigning, src, dst), data2(Releasing, dst), True),
    (data(Assigning, src, dst), data2(Releasing, src, dst), True),
    (data(Assigning), data2(Splitting, dst), True),
    (data(Assigning), data2(Deleted, dst), True),

    (data(Owned), data2(Init), True),
    (data(Owned), data2(Free), True),
    (data(Owned), data2(Assigning), True),
    (data(Owned), data2(Owned), True),
    (data(Owned), data2(Releasing, dst), True),
    (data(Owned, src, "dst1"), data2(Releasing, src, "dst2"), True),
    (data(Owned, "dst1"), data2(Releasing, "dst2"), True),
    (data(Owned, dst), data2(Releasing, dst), True),
    (data(Owned, src, dst), data2(Releasing, None, dst), True),
    (data(Owned, src, dst), data2(Releasing, src, None), True),
    (data(Owned, src, dst), data2(Releasing, dst, None), False),
    (data(Owned, src, "dst1"), data2(Releasing, src, "dst2"), True),
    (data(Owned, "src1", dst), data2(Releasing, "src2", dst), True),
    (data(Owned, src, dst), data2(Releasing, src, dst), True),
    (data(Owned, src, dst), data2(Releasing, dst, "dst2"), False),
    (data(Owned, src, "dst1"), data2(Splitting, src, "dst2"), True),
    (data(Owned, "dst1"), data2(Splitting, "dst2"), True),
    (data(Owned, dst), data2(Splitting, dst, None), False),
    (data(Owned, src, dst), data2(Splitting, dst, None), False),
    (data(Owned), data2(Deleted, dst), True),

    (data(Releasing), data2(Init), True),
    (data(Releasing), data2(Free), False),
    (data(Releasing, "dst1"), data2(Free, "dst2"), True),
    (data(Releasing, "src1", dst), data2(Free, "src2", dst), True),
    (data(Releasing, src, "dst1"), data2(Assigning, src, "dst2"), True),
    (data(Releasing, src, "dst1"), data2(Assigning, src, "dst2"), True),
    (data(Releasing, "src1", dst), data2(Assigning, "src2", dst), True),
    (data(Releasing, src, dst), data2(Assigning, src, dst), False),
    (data(Releasing), data2(Owned), True),
    (data(Releasing), data2(Releasing), True),
    (data(Releasing), data2(Splitting), True),
    (data(Releasing), data2(Deleted, dst), True),

    (data(Splitting), data2(Init), True),
    (data(Splitting), data2(Free), True),
    (data(Splitting), data2(Assigning), True),
    (data(Splitting), data2(Owned), True),
    (data(Splitting), data2(Releasing), True),
    (data(Splitting), data2(Splitting), True),
    (data(Splitting, src, "dst1"), data2(Deleted, src, "dst2"), True),
    (data(Splitting, "dst1"), data2(Deleted, "dst2"), True),
    (data(Splitting, "src1", dst), data2(Deleted, "src2", dst), True),
    (data(Splitting, dst), data2(Deleted, dst), False),
    (data(Splitting, src, dst), data2(Deleted, src, dst), False),

    (data(Deleted), data2(Init), False),
    (data(Deleted), data2(Free), True),
    (data(Deleted), data2(Assigning), True),
    (data(Deleted), data2(Owned), True),
    (data(Deleted), data2(Releasing), True),
    (data(Deleted), data2(Splitting), True),
    (data(Deleted), data2(Deleted), True),

    (data(Free), data2(Init), False),
    (data(Free), data2(Free), True),
    (data(Free), data2(Assigning), False),
    (data(Free), data2(Assigning, src, dst), True),
    (data(Free), data2(Owned), True),
    (data(Free), data2(Releasing), True),
    (data(Free), data2(Splitting), True),
    (data(Free), data2(Deleted), True),
]


@pytest.mark.parametrize(("left", "right", "expected"), TRANSITIONS_AND_BROKERS,
                         ids=[f"{i}:{a.state.value}->{b.state.value}"
                              for i, (a, b, _) in enumerate(TRANSITIONS_AND_BROKERS)])
def test_transitions_and_brokers(left, right, expected) -> None:
    assert keep(left, right) is expected


def test_check_brokers_off_only_checks_versions_and_transitions() -> None:
    # ServiceUnitStateDataConflictResolver.checkBrokers(false), Pulsar's test hook
    assert keep(data(Assigning, "dst1"), data2(Owned, "dst2"))
    assert not keep(data(Assigning, "dst1"), data2(Owned, "dst2"), check_brokers=False)
    assert keep(data(Owned), data2(Assigning), check_brokers=False)  # still an invalid transition


def test_resolve_keeps_the_winner_silently() -> None:
    owned = sud(Owned, "b1", version=2)
    late = sud(Assigning, "b2", version=3)  # conflictAndCompactionTest: a second assignment
    assert resolve(owned, late) is owned
    assert resolve(owned, None) is None  # tombstone
    assert resolve(None, sud(Owned, "b1", version=5)).version_id == 5
    assert resolve(None, sud(Owned, "b1", version=5), storage_type=MetadataStore) is None
    forced = sud(Owned, "b3", "b1", 3, force=True)  # overrideOwnership
    assert resolve(owned, forced) is forced


def test_owner_rules_beyond_pulsars_vectors() -> None:
    # invalidUnload's third clause: a transfer may not name the owner as its destination
    assert keep(data(Owned, "b1"), data2(Releasing, "b1", "b1"))
    assert not keep(data(Owned, "b1"), data2(Releasing, "b1", "b2"))
    # Owned -> Splitting must come from the owner, without a destination
    assert keep(data(Owned, "b1"), data2(Splitting, "b2", None))
    # Free -> Assigning: a fresh assignment names no source
    assert not keep(data(Free, "b1"), data2(Assigning, None, "b2"))
    assert keep(data(Free, "b1"), data2(Assigning, "b1", "b2"))
