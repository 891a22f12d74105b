"""ServiceUnitStateChannelImpl's decisions, with vectors from Pulsar's ServiceUnitStateChannelTest.

ServiceUnitStateChannelTest (apache/pulsar master after PIP-378) runs two real brokers; what of it is
a pure function of the table is ported here: each handler per state and broker role, the lookup
answers (testGetOwnerAsync, testActiveGetOwner, testIsOwner), the handler counters of the assign,
transfer, unload and split flows, the metadata-state rule of handleBrokerDeletionEventTest and the
monitor/clean-up outcomes of testOverrideOrphanStateData and testOverrideInactiveBrokerStateData. The
flows run on `Channel` below: a sequential stand-in for the table view that applies each write with
the conflict resolver and lets every broker react with `handle_event`, as the table view's listeners do.
"""

from __future__ import annotations

from collections import Counter, deque

import pytest

from emulator.model.config import ServiceConfig
from emulator.loadmanagers.extensible.model.channel_cleanup import (
    CleanupDecision,
    MetadataState,
    broker_deletion_decision,
    cleanup_overrides,
    metadata_state,
    monitor_ownerships,
    monitor_skip_reason,
    orphans_of,
    override_excluded_brokers,
    override_ownership,
    records_session_event,
)
from emulator.loadmanagers.extensible.model.channel_rules import (
    BUNDLE_SPLIT_RETRY_LIMIT,
    MAX_CLEAN_UP_DELAY_TIME_IN_SECS,
    ChannelAction,
    ChannelTiming,
    LookupCompletion,
    OwnerAnswer,
    assign_data,
    assigned_broker,
    channel_timing,
    handle_event,
    health_check_retry_delay_ms,
    is_owner,
    owner_after_wait,
    owner_lookup,
    skipped_event_owner,
    split_data,
    split_retry,
    split_writes,
    storage_type_of,
    unload_data,
)
from emulator.loadmanagers.extensible.model.state import (
    ServiceUnitState,
    ServiceUnitStateData,
    StorageType,
    resolve,
)

Init, Free, Owned = ServiceUnitState.INIT, ServiceUnitState.FREE, ServiceUnitState.OWNED
Assigning, Releasing = ServiceUnitState.ASSIGNING, ServiceUnitState.RELEASING
Splitting, Deleted = ServiceUnitState.SPLITTING, ServiceUnitState.DELETED
HANDLER_ORDER = (Assigning, Owned, Releasing, Splitting, Free, Deleted, Init)  # validateHandlerCounters

b1, b2, b3 = "broker-1:8080", "broker-2:8080", "broker-3"
BUNDLE = "my-tenant/my-ns/0x00000000_0xffffffff"
CHILD1_RANGE, CHILD2_RANGE = "0x7fffffff_0xffffffff", "0x00000000_0x7fffffff"
NOW = 1_000_000


def sud(state, dst=None, src=None, version=1, *, force=False, ts=NOW, split=None) -> ServiceUnitStateData:
    return ServiceUnitStateData(state=state, dst_broker=dst, source_broker=src,
                                split_service_unit_to_dest_broker=split, force=force, timestamp=ts,
                                version_id=version)


class Channel:
    """Every broker tails one table; writes are applied in order; each broker's `handle_event`
    decides its reaction, whose writes join the queue (closes complete at once)."""

    def __init__(self, brokers, *, multi_phase=True, broken=()):
        self.brokers = list(brokers)
        self.table: dict[str, ServiceUnitStateData] = {}
        self.queue: deque = deque()
        self.handled = {b: Counter() for b in self.brokers}
        self.actions: list[tuple[str, str, ChannelAction]] = []
        self.skipped: list[tuple[str, str | None]] = []
        self.multi_phase = multi_phase
        self.broken = set(broken)  # brokers whose writes fail (tableview.put fails)
        self.now = NOW

    def publish(self, writer, service_unit, value):
        if writer not in self.broken:
            self.queue.append((service_unit, value))

    def run(self):
        while self.queue:
            service_unit, value = self.queue.popleft()
            current = self.table.get(service_unit)
            new = resolve(current, value)
            if value is not None and new is current:
                self.skipped.append((service_unit, skipped_event_owner(current)))
                continue
            if new is None:
                self.table.pop(service_unit, None)
            else:
                self.table[service_unit] = new
            for broker in self.brokers:
                action = handle_event(new, broker, self.now, multi_phase_bundle_unload=self.multi_phase)
                self.handled[broker][action.handler] += 1
                self.actions.append((broker, service_unit, action))
                if action.publish is not None:
                    self.publish(broker, service_unit, action.publish)
                if action.tombstone:
                    self.publish(broker, service_unit, None)
                if action.split:
                    children, (parent, deleted) = split_writes(service_unit, new, self.table, self.now)
                    for child, owned in children:
                        self.publish(broker, child, owned)
                    self.publish(broker, parent, deleted)
        return self

    def counters(self, broker):
        return tuple(self.handled[broker][s] for s in HANDLER_ORDER)

    def owner(self, service_unit, at=b2):
        return owner_lookup(self.table.get(service_unit), at)


# --- handlers per state and role ------------------------------------------------------------------


def test_assign_event_only_the_dst_acts() -> None:
    data = sud(Assigning, b1, version=4)
    mine = handle_event(data, b1, NOW + 5)
    assert mine.publish == sud(Owned, b1, None, 5, ts=NOW + 5) and mine.notify and not mine.close
    assert handle_event(data, b2, NOW) == ChannelAction(handler=Assigning)  # not even notified
    transfer = handle_event(sud(Assigning, b2, b1, 7), b2, NOW)
    assert transfer.publish == sud(Owned, b2, b1, 8)


@pytest.mark.parametrize("multi_phase", [True, False])
def test_release_event_transfer_source_closes_then_assigns(multi_phase) -> None:
    data = sud(Releasing, b2, b1, 3)
    action = handle_event(data, b1, NOW, multi_phase_bundle_unload=multi_phase)
    assert action.close and action.publish == sud(Assigning, b2, b1, 4)
    # PIP-307: with multi-phase unload the clients stay connected until the dst owns the bundle
    assert action.disconnect_clients is (not multi_phase)
    assert handle_event(data, b2, NOW) == ChannelAction(handler=Releasing)


def test_release_event_unload_source_closes_then_frees() -> None:
    action = handle_event(sud(Releasing, None, b1, 3), b1, NOW)
    assert action.close and action.disconnect_clients and action.publish == sud(Free, None, b1, 4)


@pytest.mark.parametrize(("multi_phase", "source_closes"), [(True, True), (False, False)])
def test_own_event(multi_phase, source_closes) -> None:
    data = sud(Owned, b2, b1, 5)
    dst = handle_event(data, b2, NOW, multi_phase_bundle_unload=multi_phase)
    assert dst.owned_here and dst.lookups is LookupCompletion.OWNER and dst.lookup_owner == b2
    src = handle_event(data, b1, NOW, multi_phase_bundle_unload=multi_phase)
    assert (src.close, src.disconnect_clients, src.owned_here) == (source_closes, source_closes, False)
    other = handle_event(data, b3, NOW)
    assert other.notify and not other.close and other.lookup_owner == b2
    # an orphan clean-up names the dead owner as source: it closes if still alive, transfer or not
    forced = handle_event(sud(Owned, b2, b1, 6, force=True), b1, NOW, multi_phase_bundle_unload=False)
    assert forced.close and forced.disconnect_clients


def test_split_free_delete_init_events() -> None:
    split = sud(Splitting, None, b1, 3, split={CHILD1_RANGE: None, CHILD2_RANGE: None})
    assert handle_event(split, b1, NOW).split and not handle_event(split, b2, NOW).split
    free = handle_event(sud(Free, None, b1), b1, NOW)
    assert free.lookups is LookupCompletion.EMPTY and not free.close and not free.tombstone
    forced_free = handle_event(sud(Free, None, b1, force=True), b1, NOW)
    assert forced_free.close and forced_free.tombstone
    assert not handle_event(sud(Free, None, b1, force=True), b2, NOW).tombstone
    deleted = sud(Deleted, None, b1)
    assert handle_event(deleted, b1, NOW).tombstone and not handle_event(deleted, b2, NOW).tombstone
    assert handle_event(deleted, b2, NOW).lookups is LookupCompletion.DELETED
    assert handle_event(None, b1, NOW) == ChannelAction(handler=Init, lookups=LookupCompletion.EMPTY,
                                                        notify=True)


def test_disabled_channel_cancels_lookups_and_ignores_all_but_forced_values() -> None:
    assert handle_event(sud(Assigning, b1), b1, NOW, channel_disabled=True) == ChannelAction(
        handler=Assigning, lookups=LookupCompletion.NOT_READY)
    assert handle_event(None, b1, NOW, channel_disabled=True).lookups is LookupCompletion.NOT_READY
    forced = handle_event(sud(Owned, b2, b1, force=True), b1, NOW, channel_disabled=True)
    assert forced.close


# --- flows (assignmentTest, transferTest, unloadTest, splitAndRetryTest, conflictAndCompactionTest) ----


def test_assignment_two_brokers_race_one_wins() -> None:
    ch = Channel([b1, b2])
    ch.publish(b1, BUNDLE, assign_data(None, b1, NOW))
    ch.publish(b2, BUNDLE, assign_data(None, b2, NOW))  # the same version: dropped
    ch.run()
    assert ch.table[BUNDLE] == sud(Owned, b1, None, 2)
    assert ch.skipped == [(BUNDLE, None)]  # skipped while still Assigning: b2's lookup keeps waiting
    for broker in (b1, b2):
        assert ch.counters(broker) == (1, 1, 0, 0, 0, 0, 0)  # validateHandlerCounters(1,0,1,0,...)


def test_transfer() -> None:
    ch = Channel([b1, b2])
    ch.publish(b1, BUNDLE, assign_data(None, b1, NOW))
    ch.run()
    ch.publish(b1, BUNDLE, unload_data(ch.table[BUNDLE], b1, b2, NOW))
    ch.run()
    assert ch.owner(BUNDLE) == OwnerAnswer("owner", b2, check_active=True)
    assert ch.table[BUNDLE] == sud(Owned, b2, b1, 5)
    assert ch.counters(b1) == ch.counters(b2) == (2, 2, 1, 0, 0, 0, 0)
    # the old owner closes (and disconnects, with the new owner's URL) once b2 owns it
    closes = [(b, a.disconnect_clients, a.handler) for b, _, a in ch.actions if a.close]
    assert closes == [(b1, False, Releasing), (b1, True, Owned)]


def test_unload_then_assign_then_tombstone() -> None:
    ch = Channel([b1, b2])
    ch.publish(b1, BUNDLE, assign_data(None, b1, NOW))
    ch.run()
    ch.publish(b1, BUNDLE, unload_data(ch.table[BUNDLE], b1, None, NOW))
    ch.run()
    assert ch.table[BUNDLE].state is Free and ch.owner(BUNDLE) == OwnerAnswer("empty")
    ch.publish(b2, BUNDLE, assign_data(ch.table[BUNDLE], b2, NOW))
    ch.run()
    assert ch.table[BUNDLE] == sud(Owned, b2, None, 6)
    ch.publish(b2, BUNDLE, unload_data(ch.table[BUNDLE], b2, None, NOW))
    ch.run()
    # the monitor tombstones the Free bundle once the tombstone delay has passed: Free -> Init
    timing = ChannelTiming(in_flight_state_waiting_time_ms=1, state_tombstone_delay_ms=1,
                           ownership_monitor_delay_s=60)
    plan = monitor_ownerships(ch.table, [b1, b2], NOW + 2, timing)
    assert (plan.inactive_brokers, plan.timed_out, plan.tombstones) == ((), (), (BUNDLE,))
    ch.publish(b1, BUNDLE, None)
    ch.run()
    assert BUNDLE not in ch.table and ch.handled[b1][Init] == 1


def test_split() -> None:
    ch = Channel([b1, b2])
    ch.publish(b1, BUNDLE, assign_data(None, b1, NOW))
    ch.run()
    ch.publish(b1, BUNDLE, split_data(ch.table[BUNDLE], b1, {CHILD1_RANGE: None, CHILD2_RANGE: None}, NOW))
    ch.run()
    assert BUNDLE not in ch.table  # Deleted, then tombstoned by the source: Init
    for child in ("my-tenant/my-ns/" + CHILD1_RANGE, "my-tenant/my-ns/" + CHILD2_RANGE):
        assert ch.table[child] == sud(Owned, b1, None, 1)
    # splitAndRetryTest: validateHandlerCounters(channel, 1, 0, 3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 0)
    assert ch.counters(b1) == ch.counters(b2) == (1, 3, 0, 1, 0, 1, 1)


def test_split_writes_skip_children_already_in_the_table() -> None:
    data = sud(Splitting, None, b1, 3, split={CHILD1_RANGE: b2, CHILD2_RANGE: None})
    existing = {"my-tenant/my-ns/" + CHILD1_RANGE: sud(Owned, b2, None, 4)}
    owned, (parent, deleted) = split_writes(BUNDLE, data, existing, NOW)
    assert owned == [("my-tenant/my-ns/" + CHILD2_RANGE, sud(Owned, b1, None, 1))]  # children stay on b1
    assert (parent, deleted) == (BUNDLE, sud(Deleted, None, b1, 4))


def test_split_retries_at_most_seven_attempts() -> None:
    # splitAndRetryFailureTest: 10 BadVersions make 7 attempts, then the split fails
    assert [split_retry(n) for n in range(1, 9)] == [True] * 6 + [False] * 2
    assert BUNDLE_SPLIT_RETRY_LIMIT == 7


def test_conflicting_assignment_returns_the_current_owner() -> None:
    ch = Channel([b1, b2])
    ch.publish(b1, BUNDLE, assign_data(None, b1, NOW))
    ch.run()
    ch.publish(b2, BUNDLE, assign_data(ch.table[BUNDLE], b2, NOW))  # Owned -> Assigning: invalid
    ch.run()
    assert ch.table[BUNDLE].dst_broker == b1
    assert ch.skipped == [(BUNDLE, b1)]  # handleSkippedEvent completes b2's lookup with b1


# --- lookups --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "answer"), [
    # testGetOwnerAsync on channel1 (broker b1)
    (sud(Owned, b1), OwnerAnswer("owner", b1, check_active=True)),
    (sud(Owned, b2), OwnerAnswer("owner", b2, check_active=True)),
    (sud(Assigning, b1), OwnerAnswer("wait", b1)),
    (sud(Assigning, b2), OwnerAnswer("owner", b2)),
    (sud(Releasing, b1), OwnerAnswer("wait", b1)),
    (sud(Releasing, b2), OwnerAnswer("owner", b2)),
    (sud(Releasing, None, b1), OwnerAnswer("empty")),
    (sud(Splitting, None, b1), OwnerAnswer("owner", b1, check_active=True)),
    (sud(Splitting, None, b2), OwnerAnswer("owner", b2, check_active=True)),
    (sud(Free, None, b1), OwnerAnswer("empty")),
    (None, OwnerAnswer("empty")),
    (sud(Deleted, None, b1), OwnerAnswer("fail")),
    # testActiveGetOwner cases 2 and 3
    (sud(Releasing, b2, b1), OwnerAnswer("owner", b2)),
    (sud(Assigning, b1, b2), OwnerAnswer("wait", b1)),
])
def test_get_owner_async(data, answer) -> None:
    assert owner_lookup(data, b1) == answer


def test_unregistered_broker_answers_without_the_active_check() -> None:
    assert owner_lookup(sud(Owned, b2), b1, registered=False) == OwnerAnswer("owner", b2)
    assert owner_lookup(sud(Assigning, b1), b1, registered=False) == OwnerAnswer("owner", b1)


def test_owner_after_the_in_flight_wait() -> None:
    assert owner_after_wait(sud(Assigning, b1)) == OwnerAnswer("fail")
    assert owner_after_wait(sud(Owned, b2)) == OwnerAnswer("owner", b2, check_active=True)
    assert owner_after_wait(sud(Free, None, b1)) == OwnerAnswer("empty")
    assert owner_after_wait(sud(Deleted, None, b1)) == OwnerAnswer("fail")


@pytest.mark.parametrize(("data", "owner"), [
    # testIsOwner on channel1 (broker b1)
    (sud(Assigning, b1), False),
    (sud(Owned, b1), True),
    (sud(Releasing, None, b1), False),
    (sud(Splitting, None, b1), True),
    (sud(Free, None, b1), False),
    (sud(Deleted, None, b1), False),
    (None, False),
])
def test_is_owner(data, owner) -> None:
    assert is_owner(data, b1) is owner


def test_is_owner_of_another_broker() -> None:
    owned = sud(Owned, b1)
    assert is_owner(owned, b2, b1) and not is_owner(owned, b1, b2) and not is_owner(owned, b2)


def test_get_assigned() -> None:
    assert [assigned_broker(d) for d in (sud(Owned, b1), sud(Assigning, b2), sud(Releasing, None, b1),
                                         sud(Splitting, None, b1), sud(Free, None, b1), None)] == [
        b1, b2, None, b1, None, None]


# --- metadata state and broker deletion (handleBrokerDeletionEventTest) ------------------------------


def test_metadata_state() -> None:
    stable_since = NOW - (MAX_CLEAN_UP_DELAY_TIME_IN_SECS * 1000 + 1000)
    assert metadata_state("SessionReestablished", stable_since, NOW) is MetadataState.STABLE
    assert metadata_state("SessionReestablished", NOW, NOW) is MetadataState.JITTERY
    assert metadata_state("SessionReestablished", NOW - 180_000, NOW) is MetadataState.JITTERY  # not >
    assert metadata_state("SessionLost", stable_since, NOW) is MetadataState.UNSTABLE
    assert metadata_state("SessionReestablished", None, 0) is MetadataState.STABLE  # no event yet
    assert metadata_state("SessionReestablished", NOW - 4000, NOW, max_cleanup_delay_s=3) is (
        MetadataState.STABLE)
    assert [records_session_event(e) for e in ("SessionReestablished", "SessionLost", "ConnectionLost",
                                               "Reconnected")] == [True, True, False, False]


def test_broker_deletion_decision() -> None:
    assert broker_deletion_decision(True, MetadataState.STABLE) == CleanupDecision("schedule", 0)
    assert broker_deletion_decision(True, MetadataState.JITTERY) == CleanupDecision("schedule", 180)
    assert broker_deletion_decision(True, MetadataState.JITTERY, max_cleanup_delay_s=3) == (
        CleanupDecision("schedule", 3))  # the test's maxCleanupDelayTimeInSecs = 3
    assert broker_deletion_decision(True, MetadataState.UNSTABLE) == CleanupDecision("ignore")
    assert broker_deletion_decision(False, MetadataState.STABLE) == CleanupDecision("not_leader")


def test_monitor_skip_reasons() -> None:
    assert monitor_skip_reason(True, [b1], MetadataState.STABLE) is None
    assert "not the leader" in monitor_skip_reason(False, [b1], MetadataState.STABLE)
    assert "no active brokers" in monitor_skip_reason(True, [], MetadataState.STABLE)
    assert "Jittery is not Stable" in monitor_skip_reason(True, [b1], MetadataState.JITTERY)


def test_health_check_retry_delays() -> None:
    assert [health_check_retry_delay_ms(r) for r in range(6)] == [0, 50, 200, 450, 800, 1000]


# --- monitor and orphan clean-up ----------------------------------------------------------------------

INACTIVE = "broker-inactive-1"
SPLIT_MAP = {CHILD1_RANGE: None, CHILD2_RANGE: None}


def orphan_table():
    """testOverrideOrphanStateData's table (broker = b1)."""
    return {
        "public/releasing1/0xfffffff0_0xffffffff": sud(Releasing, b1, b2),
        "public/releasing2/0xfffffff0_0xffffffff": sud(Releasing, b2, b3),
        BUNDLE: sud(Splitting, None, b1, split=SPLIT_MAP),
        "public/assigning1/0xfffffff0_0xffffffff": sud(Assigning, b1, None),
        "public/assigning2/0xfffffff0_0xffffffff": sud(Assigning, b1, b2),
        "public/free/0xfffffff0_0xffffffff": sud(Free, None, b1),
        "public/deleted/0xfffffff0_0xffffffff": sud(Deleted, None, b1),
        "public/owned1/0xfffffff0_0xffffffff": sud(Owned, b1, None),
        "public/owned2SourceBundle/0xfffffff0_0xffffffff": sud(Owned, b1, INACTIVE),
        "public/owned3/0xfffffff0_0xffffffff": sud(Owned, INACTIVE, b1),
    }


def test_override_orphan_state_data() -> None:
    ch = Channel([b1, b2, b3])
    ch.table.update(orphan_table())
    timing = ChannelTiming(in_flight_state_waiting_time_ms=-1, state_tombstone_delay_ms=3_600_000,
                           ownership_monitor_delay_s=60)
    plan = monitor_ownerships(ch.table, [b1, b2, b3], NOW, timing)
    assert plan.inactive_brokers == (INACTIVE,)
    assert plan.timed_out == ("public/releasing1/0xfffffff0_0xffffffff",
                              "public/releasing2/0xfffffff0_0xffffffff", BUNDLE,
                              "public/assigning1/0xfffffff0_0xffffffff",
                              "public/assigning2/0xfffffff0_0xffffffff")
    assert plan.tombstones == ()
    select = lambda service_unit, excluded: b2  # noqa: E731 (loadManager.selectAsync mocked to broker 2)
    for service_unit in plan.timed_out:  # overrideOwnership(su, data, null, false)
        ch.publish(b2, service_unit, override_ownership(ch.table[service_unit], select(service_unit, set()),
                                                         NOW))
    overrides = list(cleanup_overrides(ch.table, INACTIVE, select, NOW))  # the scheduled clean-up
    ch.queue.extend(overrides)
    ch.run()
    assert len(plan.timed_out) + len(overrides) == 6  # totalOrphanServiceUnitCleanupCnt
    expected = {
        "public/releasing1/0xfffffff0_0xffffffff": b2,
        "public/releasing2/0xfffffff0_0xffffffff": b2,
        "my-tenant/my-ns/" + CHILD1_RANGE: b2,
        "my-tenant/my-ns/" + CHILD2_RANGE: b2,
        "public/assigning1/0xfffffff0_0xffffffff": b2,
        "public/assigning2/0xfffffff0_0xffffffff": b2,
        "public/owned1/0xfffffff0_0xffffffff": b1,
        "public/owned2SourceBundle/0xfffffff0_0xffffffff": b1,
        "public/owned3/0xfffffff0_0xffffffff": b2,
    }
    for service_unit, owner in expected.items():
        assert ch.owner(service_unit).broker == owner, service_unit
    assert ch.owner(BUNDLE) == OwnerAnswer("empty")  # the parent was split again, then tombstoned
    assert ch.owner("public/free/0xfffffff0_0xffffffff") == OwnerAnswer("empty")
    assert ch.owner("public/deleted/0xfffffff0_0xffffffff") == OwnerAnswer("fail")


def test_override_inactive_broker_state_data() -> None:
    table = {
        "public/releasing/0xfffffff0_0xffffffff": sud(Releasing, None, b1),
        BUNDLE: sud(Splitting, None, b1, split=SPLIT_MAP),
        "public/assigning/0xfffffff0_0xffffffff": sud(Assigning, b1, None),
        "public/free/0xfffffff0_0xffffffff": sud(Free, None, b1),
        "public/deleted/0xfffffff0_0xffffffff": sud(Deleted, None, b1),
        "public/owned/0xfffffff0_0xffffffff": sud(Owned, b1, None),
    }
    excluded_seen = []

    def select(service_unit, excluded):
        excluded_seen.append(excluded)
        return b2

    ch = Channel([b1, b2])
    ch.table.update(table)
    ch.queue.extend(cleanup_overrides(ch.table, b1, select, NOW))
    assert excluded_seen == [frozenset({b1})] * 4  # the dead broker is never selected
    ch.run()
    for service_unit in ("public/releasing/0xfffffff0_0xffffffff", "public/assigning/0xfffffff0_0xffffffff",
                         "public/owned/0xfffffff0_0xffffffff", "my-tenant/my-ns/" + CHILD1_RANGE,
                         "my-tenant/my-ns/" + CHILD2_RANGE):
        assert ch.owner(service_unit).broker == b2, service_unit
    assert ch.owner("public/free/0xfffffff0_0xffffffff") == OwnerAnswer("empty")
    assert ch.owner("public/deleted/0xfffffff0_0xffffffff") == OwnerAnswer("fail")
    assert ch.owner(BUNDLE) == OwnerAnswer("empty")


def test_stuck_transfer_is_reassigned_by_the_monitor() -> None:
    # transferTestWhenDestBrokerFails: b2 cannot write, the bundle stays Assigning; the monitor
    # (in-flight wait 1 ms) overrides it with the selected broker, b1
    ch = Channel([b1, b2], broken={b2})
    ch.publish(b1, BUNDLE, assign_data(None, b1, NOW))
    ch.run()
    ch.publish(b1, BUNDLE, unload_data(ch.table[BUNDLE], b1, b2, NOW))
    ch.run()
    assert ch.table[BUNDLE].state is Assigning
    assert owner_lookup(ch.table[BUNDLE], b1) == OwnerAnswer("owner", b2)  # b1 sends clients to b2
    assert owner_lookup(ch.table[BUNDLE], b2).kind == "wait"  # b2's own lookups time out
    ch.broken.clear()
    timing = ChannelTiming(in_flight_state_waiting_time_ms=1, state_tombstone_delay_ms=1000,
                           ownership_monitor_delay_s=60)
    plan = monitor_ownerships(ch.table, [b1, b2], NOW + 2, timing)
    assert plan.timed_out == (BUNDLE,)
    ch.publish(b1, BUNDLE, override_ownership(ch.table[BUNDLE], b1, NOW + 2))
    ch.run()
    assert ch.table[BUNDLE] == sud(Owned, b1, None, 5, force=True, ts=NOW + 2)  # Assigning was v4


def test_monitor_finds_inactive_brokers_in_order() -> None:
    table = {
        "a/b/0x0_0x1": sud(Owned, b3),
        "a/b/0x1_0x2": sud(Releasing, b1, "old"),
        "a/b/0x2_0x3": sud(Assigning, "gone", None),
        "a/b/0x2_0x4": sud(Assigning, "dst-gone", "src-gone"),  # the source is checked first
        "a/b/0x3_0x4": sud(Owned, b3),
        "a/b/0x4_0x5": sud(Free, None, "gone", ts=NOW - 3_600_001),
        "a/b/0x5_0x6": sud(Deleted, None, b1, ts=NOW - 3_600_000),  # not older than the delay
        "a/b/0x6_0x7": sud(Owned, b1, ts=NOW - 9_000_000),  # active: never tombstoned
    }
    timing = channel_timing(ServiceConfig())
    plan = monitor_ownerships(table, [b1, b2], NOW, timing)
    assert plan.inactive_brokers == (b3, "old", "gone", "src-gone")
    assert plan.tombstones == ("a/b/0x4_0x5",) and plan.timed_out == ()


def test_orphans_system_bundles_last() -> None:
    table = {
        "pulsar/system/0x00000000_0xffffffff": sud(Owned, b1),
        "public/default/0x00000000_0x80000000": sud(Owned, b1),
        "public/default/0x80000000_0xffffffff": sud(Releasing, b2, b1),
        "public/other/0x00000000_0xffffffff": sud(Owned, b2, b1),  # b1 is only the old owner
        "public/free/0x00000000_0xffffffff": sud(Free, None, b1),
    }
    regular, system = orphans_of(table, b1)
    assert [su for su, _ in regular] == ["public/default/0x00000000_0x80000000",
                                         "public/default/0x80000000_0xffffffff"]
    assert [su for su, _ in system] == ["pulsar/system/0x00000000_0xffffffff"]
    order = [su for su, _ in cleanup_overrides(table, b1, lambda su, ex: b2, NOW)]
    assert order[-1].startswith("pulsar/system")


@pytest.mark.parametrize(("orphan", "selected", "gracefully", "expected"), [
    (sud(Owned, b1, None, 4), b2, False, sud(Owned, b2, b1, 5, force=True)),
    (sud(Owned, b1, None, 4), b2, True, sud(Releasing, b2, b1, 5, force=True)),  # cleanOwnerships
    (sud(Owned, b1, None, 4), b1, True, sud(Owned, b1, None, 5, force=True)),
    (sud(Owned, b1, None, 4), None, False, sud(Free, None, b1, 5, force=True)),
    (sud(Assigning, b1, b2, 4), b2, False, sud(Owned, b2, None, 5, force=True)),
    (sud(Releasing, b1, b2, 4), None, False, sud(Free, None, b2, 5, force=True)),
    (sud(Splitting, None, b1, 4, split=SPLIT_MAP), b2, False,
     sud(Splitting, None, b2, 5, force=True, split=SPLIT_MAP)),
])
def test_override_ownership(orphan, selected, gracefully, expected) -> None:
    assert override_ownership(orphan, selected, NOW, gracefully=gracefully) == expected


def test_override_excludes_only_the_dead_broker() -> None:
    assert override_excluded_brokers(None) == frozenset()
    assert override_excluded_brokers(b1) == frozenset({b1})


# --- config --------------------------------------------------------------------------------------


def test_channel_timing_defaults_and_check() -> None:
    assert channel_timing(ServiceConfig()) == ChannelTiming(
        in_flight_state_waiting_time_ms=30_000, state_tombstone_delay_ms=3_600_000,
        ownership_monitor_delay_s=60, max_cleanup_delay_s=180, min_cleanup_delay_s=0)
    conf = ServiceConfig().with_overrides({
        "loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds": 10,
        "loadBalancerInFlightServiceUnitStateWaitingTimeInMillis": 30_000}, source="test")
    with pytest.raises(ValueError, match="Invalid Config: loadBalancerServiceUnitStateTombstoneDelay"):
        channel_timing(conf)


def test_storage_type_of_table_view_class() -> None:
    assert storage_type_of(ServiceConfig().load_manager_service_unit_state_table_view_class_name) is (
        StorageType.SYSTEM_TOPIC)
    assert storage_type_of("org.apache.pulsar.broker.loadbalance.extensions.channel."
                           "ServiceUnitStateMetadataStoreTableViewImpl") is StorageType.METADATA_STORE
    with pytest.raises(ValueError, match="unknown; known: org.apache"):
        storage_type_of("com.example.MyTableView")
