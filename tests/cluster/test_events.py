"""The cluster's events: one Struct per kind, nothing else can be emitted, and each one's recorded JSON
is the shape recordings have always had (and reads back into its type)."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest

from emulator.cluster import events as ev
from emulator.cluster.events import (
    AdminAction,
    ClusterEvents,
    Decision,
    Event,
    LeaderDecision,
    event_types,
    from_record,
    to_record,
)
from emulator.cluster.messages import AdminResult


class _Clock:
    t = 7.25

    def now(self) -> float:
        return self.t


def _sample(t: mi.Type) -> Any:
    """A value of type `t` that survives JSON (finite floats, no sets)."""
    if isinstance(t, mi.UnionType):
        return _sample(next(x for x in t.types if not isinstance(x, mi.NoneType)))
    if isinstance(t, mi.StrType):
        return "s"
    if isinstance(t, mi.BoolType):
        return True
    if isinstance(t, mi.IntType):
        return 3
    if isinstance(t, mi.FloatType):
        return 1.5
    if isinstance(t, mi.AnyType):
        return {"any": [1, "x"]}
    if isinstance(t, mi.ListType):
        return [_sample(t.item_type)]
    if isinstance(t, mi.TupleType):
        return tuple(_sample(x) for x in t.item_types)
    if isinstance(t, mi.DictType):
        return {"k": _sample(t.value_type)}
    if isinstance(t, mi.EnumType):
        return list(t.cls)[-1]
    if isinstance(t, mi.StructType):
        return t.cls(**{f.name: _sample(f.type) for f in t.fields if f.required or f.name == "bundle"})
    raise AssertionError(f"no sample for {t}")


def sample(cls: type[Event], t: float = 12.5) -> Event:
    """An instance of `cls` with every field set (to a non-default value) and `t`."""
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    fields = {f.name: _sample(f.type) for f in info.fields if f.name != "t"}
    return cls(t=t, **fields)


ALL = event_types()


def test_every_kind_the_cluster_reports_is_a_registered_struct():
    assert len(ALL) >= 40
    for cls in ALL:
        assert issubclass(cls, Event) and issubclass(cls, msgspec.Struct)
        assert isinstance(cls.kind, str) and cls.kind
    names = {c.__name__ for c in ALL}
    assert names <= set(ev.__all__)
    # the abstract bases group, they are not emitted
    for base in (Event, Decision, LeaderDecision, AdminAction, ev.HandleEvent):
        assert base not in ALL


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_every_event_type_round_trips_through_its_recorded_json(cls: type[Event]):
    event = sample(cls)
    record = to_record(event)
    keys = list(record)
    assert keys[:2] == ["kind", "t"] and record["kind"] == cls.kind and record["t"] == 12.5
    if issubclass(cls, Decision):
        assert keys[-1] == "decision" and record["decision"] == cls.decision
    else:
        assert "decision" not in record
    if issubclass(cls, AdminAction):
        assert record["op"] == cls.op
    line = msgspec.json.encode(record)
    back = from_record(msgspec.json.decode(line))
    assert type(back) is cls and back == event
    assert msgspec.json.encode(to_record(back)) == line


RECORDED = Path(__file__).with_name("recorded_events.jsonl")
"""One line of each kind (the shortest) from the recordings of seed 1 of the built-in scenarios, taken
before events were typed: decisions.jsonl lines end with `decision`, events.jsonl lines have their keys
sorted."""


@pytest.mark.parametrize("line", RECORDED.read_bytes().splitlines(), ids=lambda b: b[:40].decode())
def test_recorded_lines_read_back_into_their_type_and_write_the_same_bytes(line: bytes):
    event = from_record(msgspec.json.decode(line))
    record = to_record(event)
    if isinstance(event, Decision):
        assert msgspec.json.encode(record) == line                       # decisions.jsonl
    else:
        assert msgspec.json.encode(ev.to_builtins(record)) == line       # events.jsonl


def test_the_recorded_lines_cover_the_decisions():
    kinds = {(r["kind"], r.get("decision")) for r in map(msgspec.json.decode, RECORDED.read_bytes().splitlines())}
    decisions = {(c.kind, c.decision) for c in ALL if issubclass(c, Decision)}
    # no run of the built-in scenarios skips shedding (one broker) or a planned unload; none was
    # recorded under the Extensible load manager
    assert decisions - kinds == {("decision", "shedding_skipped"), ("decision", "unload_skipped"),
                                 ("split_skipped", "split_skipped"), ("decision", "extensible_unload"),
                                 ("extensible_split", "extensible_split"),
                                 ("extensible_assignment", "extensible_assignment")}


def test_an_unknown_recorded_kind_is_an_error_that_lists_the_known_ones():
    with pytest.raises(ValueError, match="known kinds: .*assignment"):
        from_record({"kind": "nonsense", "t": 0.0})
    with pytest.raises(ValueError, match="decision = 'nonsense'"):
        from_record({"kind": "decision", "t": 0.0, "decision": "nonsense"})


@pytest.mark.parametrize("bad", ["assignment", {"kind": "assignment"}, AdminResult(True), None])
def test_emit_takes_only_an_event_struct(bad: Any):
    events = ClusterEvents(_Clock())  # type: ignore[arg-type]
    events.subscribe(lambda e: pytest.fail("nothing should reach a listener"))
    with pytest.raises(TypeError, match="emit takes an event of emulator.cluster.events"):
        events.emit(bad)
    with pytest.raises(TypeError):
        events.emit("broker_started", broker="b1")  # type: ignore[call-arg]
    assert not events.counts


def test_an_event_type_needs_a_kind_and_a_unique_record_name():
    with pytest.raises(TypeError, match="has no `kind`"):
        class NoKind(Event):
            x: int
    with pytest.raises(TypeError, match="both record as kind='broker_started'"):
        class Twin(Event):
            kind = "broker_started"
    with pytest.raises(TypeError, match="has no `decision`"):
        class Nameless(LeaderDecision):
            x: int
    assert all(c.__name__ not in ("NoKind", "Twin", "Nameless") for c in event_types())


def test_emit_counts_by_kind_and_stamps_time_only_for_listeners():
    events = ClusterEvents(_Clock())  # type: ignore[arg-type]
    quiet = ev.BrokerStarted(broker="b1")
    events.emit(quiet)
    assert quiet.t == 0.0 and events.counts == {"broker_started": 1}
    seen: list[Event] = []
    unsubscribe = events.subscribe(seen.append)
    plan = ev.SheddingPlan(shedder="S", plan=[("b1", "x")], explanation=None)
    events.emit(plan)
    events.emit(ev.SplitSkipped(bundle="x", reason="r"))
    assert seen == [plan, ev.SplitSkipped(t=7.25, bundle="x", reason="r")] and plan.t == 7.25
    assert events.counts["decision"] == 2     # the leader's decisions count under their kind
    unsubscribe()
    events.emit(ev.BrokerStarted(broker="b2"))
    assert len(seen) == 2 and events.counts["broker_started"] == 2


def test_event_fields_are_typed():
    """Each type is the documentation of what the cluster reports: fields are typed (no bare Any
    except a config value and free-form explanations)."""
    for cls in ALL:
        hints = typing.get_type_hints(cls)
        loose = [name for name, hint in hints.items() if hint is Any]
        assert loose in ([], ["value"]), (cls.__name__, loose)
