"""The cluster's outward voice: every thing the cluster can report, one msgspec Struct per kind.

`cluster/` imports no observer (metrics, recorder, decision log, invariant checks, summary). Every
actor holds the cluster's `ClusterEvents` and calls `emit(SomeEvent(...))`; listeners are plain
callables registered by whoever wants to watch, and they dispatch on the event's type. This module
is the one list of what can be reported: `emit` takes nothing else (a string, a dict or a Struct of
another module is a TypeError), and each event carries the numbers behind it (an assignment its
candidate sets and scores, a shedding plan the shedder's explanation, an unload its bundle's rates).

Each type has a `kind` (the name `ClusterEvents.counts` and the recording use). Decisions
(`Decision` and below) go to the decision log; those the leader takes have kind "decision" and a
`decision` name of their own. Operator actions (`AdminAction`) have kind "admin" and an `op`.
`emit` stamps `t` (emulated seconds) only when someone listens, so an event nobody watches costs
its construction and one counter increment.

`to_record` gives the JSON object a recording holds (`{"kind", "t", fields..., "decision"}` for
decisions, `{"kind", "t", fields...}` otherwise; fields at their default are left out where a type
has defaults), and `from_record` reads one back into its type.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any, ClassVar

import msgspec

from emulator.runtime import Clock

__all__ = [
    "ActorFailed", "AdminAction", "AdminSplit", "AdminUnload", "AntiAffinityGroupSet", "Assignment",
    "AssignmentRepeated",
    "BrokerCrashed", "BrokerStartFailed", "BrokerStarted", "BrokerStopped", "BrokerStopping",
    "BundleNumbers", "BundleOwned", "BundleSplit", "BundleSplitSkipped", "BundleUnloaded",
    "ClusterEvents", "ConfigChanged", "Decision", "Event", "FailureDomainDeleted", "FailureDomainSet",
    "HandleClosed", "HandleConnected", "HandleDisconnected", "HandleEvent", "HandleFailed",
    "HandleReconnected", "InitialState", "IsolationPolicyDeleted", "IsolationPolicySet",
    "LeaderDecision", "LeaderElected", "LeaderStarted", "Listener", "LoadReportWritten",
    "PlacementFailed", "ScenarioEvent", "ScenarioEventFailed", "SelectionTrace", "SessionLost",
    "SessionReestablished", "ShedderWarmed", "SheddingFailed", "SheddingPlan", "SheddingSkipped",
    "Split", "SplitSkipped", "Unload", "UnloadSkipped", "WarmBundleData", "WarmStarted",
    "assignment_event", "event_types", "from_record", "to_builtins", "to_record",
]

Listener = Callable[["Event"], None]


def to_builtins(value: Any) -> Any:
    """Structs and sets to plain JSON-able values, dict keys sorted; +inf stays a float (JSON null)."""
    return msgspec.to_builtins(value, builtin_types=(float,), str_keys=True, order="deterministic")


# ================================================================================== the base types

_KINDS: dict[type[Event], str] = {}
"""Concrete event type -> its kind: what `emit` accepts, and the name it counts under."""
_BY_RECORD: dict[tuple[str, str | None], type[Event]] = {}
"""(kind, decision or op) -> type, for `from_record`."""
_SUBKIND_FIELD: dict[str, str | None] = {}
"""kind -> the record field that tells its types apart ("decision", "op"), or None."""


class Event(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One thing the cluster reports. `t` is stamped by `ClusterEvents.emit` (emulated seconds).

    Concrete types set `kind`; bases that only group types set `abstract = True` in their body."""

    kind: ClassVar[str]
    subkind_field: ClassVar[str | None] = None
    abstract: ClassVar[bool] = True
    t: float = 0.0

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("abstract", False):
            return
        cls.abstract = False
        if not isinstance(getattr(cls, "kind", None), str):
            raise TypeError(f"event type {cls.__name__} has no `kind`; give it `kind = \"...\"` "
                            "(or `abstract = True` if it only groups other types)")
        field = cls.subkind_field
        sub = getattr(cls, field, None) if field is not None else None
        if field is not None and not isinstance(sub, str):
            raise TypeError(f"event type {cls.__name__} (kind {cls.kind!r}) has no `{field}`; "
                            f"give it `{field} = \"...\"`")
        key = (cls.kind, sub)
        if key in _BY_RECORD:
            raise TypeError(f"event types {_BY_RECORD[key].__name__} and {cls.__name__} both record "
                            f"as kind={cls.kind!r}" + (f", {field}={sub!r}" if field else ""))
        if _SUBKIND_FIELD.setdefault(cls.kind, field) != field:
            raise TypeError(f"event type {cls.__name__}: kind {cls.kind!r} is told apart by "
                            f"{_SUBKIND_FIELD[cls.kind]!r} elsewhere, not {field!r}")
        _KINDS[cls] = cls.kind
        _BY_RECORD[key] = cls

    def record(self) -> dict[str, Any]:
        """This event as its recorded JSON object (see the module docstring)."""
        out: dict[str, Any] = {"kind": self.kind, "t": self.t}
        fields = to_builtins(self)
        fields.pop("t", None)
        out.update(fields)
        return out

    @classmethod
    def from_fields(cls, fields: dict[str, Any]) -> Event:
        """The inverse of `record` (without `kind` and `decision`)."""
        return msgspec.convert(fields, cls)


class Decision(Event):
    """A load-balancing decision: what the decision log keeps (decisions.jsonl). Its record ends with
    `decision`: the leader's own name for it, or its kind."""

    abstract = True
    decision: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        if cls.subkind_field is None and isinstance(cls.__dict__.get("kind"), str):
            cls.decision = cls.kind   # assignment, bundle_unloaded, ...: the decision is the kind
        super().__init_subclass__(**kwargs)

    def record(self) -> dict[str, Any]:
        out = super().record()
        out["decision"] = self.decision
        return out


class LeaderDecision(Decision):
    """One step of the leader's shedding or split cycle: kind "decision", told apart by `decision`."""

    abstract = True
    kind = "decision"
    subkind_field = "decision"


class AdminAction(Event):
    """An operator's admin call (Cluster's operator API, policy_admin.py): kind "admin" and an `op`."""

    abstract = True
    kind = "admin"
    subkind_field = "op"
    op: ClassVar[str]

    def record(self) -> dict[str, Any]:
        out = super().record()
        out["op"] = self.op
        return out


def to_record(event: Event) -> dict[str, Any]:
    """The JSON object a recording holds for `event` (decisions.jsonl / events.jsonl line)."""
    return event.record()


def from_record(record: dict[str, Any]) -> Event:
    """A recorded JSON object read back into its event type (ValueError for an unknown kind)."""
    kind = record.get("kind")
    if kind not in _SUBKIND_FIELD:
        raise ValueError(f"recorded event kind = {kind!r}; known kinds: {', '.join(sorted(_SUBKIND_FIELD))}")
    field = _SUBKIND_FIELD[kind]
    sub = record.get(field) if field is not None else None
    cls = _BY_RECORD.get((kind, sub))
    if cls is None:
        raise ValueError(f"recorded event kind = {kind!r}, {field} = {sub!r}: no such event type")
    drop = {"kind", field, "decision" if issubclass(cls, Decision) else None}
    return cls.from_fields({k: v for k, v in record.items() if k not in drop})


def event_types() -> list[type[Event]]:
    """Every concrete event type, in definition order."""
    return list(_KINDS)


# ================================================================================== decisions


class SelectionTrace(msgspec.Struct, omit_defaults=True):
    """How one `select_broker` decision was reached: the numbers an assignment or unload carries.

    Candidate lists are sorted broker ids after each step of §3; None means the step did not run.
    """

    bundle: str
    non_persistent: bool = False
    preallocated: bool = False
    """True when an existing preallocation answered (no new decision was made)."""
    available: list[str] = []
    policies: list[str] = []
    max_topics: list[str] = []
    anti_affinity: list[str] = []
    even_distribution: list[str] | None = None
    filters: list[str] | None = None
    filter_exception: str | None = None
    fallback: str | None = None
    """"filter_exception" or "empty" when the candidates were reset to the policy-allowed set."""
    candidates: list[str] = []
    """What the selector finally saw."""
    selector: str = ""
    scores: dict[str, float | None] | None = None
    """The selector's scores when it gives them (`strategies.base.Selection`); +∞ is JSON `null`."""
    selector_fallback: str | None = None
    """The selector's own last resort when it took one (`Selection.fallback`, e.g.
    "all_overloaded_random": no candidate qualified, the pick was random among them all)."""
    chosen: str | None = None
    overload_retry: bool = False
    """The chosen broker was overloaded: the strategy was asked again over the policy-allowed set,
    without the filters (selectBroker's retry)."""
    overload_candidates: list[str] | None = None
    overload_scores: dict[str, float | None] | None = None
    overload_selector_fallback: str | None = None
    explanation: dict[str, Any] | None = None
    """The selector's explanation when it gives one (no built-in strategy does)."""
    overload_explanation: dict[str, Any] | None = None


class BundleNumbers(msgspec.Struct):
    """A bundle's time-averaged traffic as the leader saw it when it decided (in+out sums).

    Fields in name order: the recording has always listed them so."""

    long_msg_rate: float
    long_throughput: float
    short_msg_rate: float
    short_throughput: float
    topics: int


class Assignment(Decision, kw_only=True):
    """selectBrokerForAssignment answered: by the leader's load manager (`local` False) or by a
    follower's own while no leader is active (`local`; `leader` is then that follower). `affinity`:
    the unload's chosen destination answered, no selection ran (`trace` is None)."""

    kind = "assignment"
    bundle: str
    broker: str | None
    leader: str
    local: bool
    affinity: bool = False
    trace: SelectionTrace | None


class AssignmentRepeated(Event, kw_only=True):
    """selectBrokerForAssignment answered from the bundle's preallocation: a second lookup of a bundle
    already assigned (to `broker`) and not yet owned. No new decision, so not a decision-log record
    (the `Assignment` before it is the one); Pulsar's assignment metric counts the call."""

    kind = "assignment_repeated"
    bundle: str
    broker: str | None
    leader: str
    local: bool


def assignment_event(*, bundle: str, broker: str | None, leader: str, local: bool,
                     trace: SelectionTrace) -> Event:
    """What a `selectBrokerForAssignment` answer reports: an `Assignment` when it decided, an
    `AssignmentRepeated` when an existing preallocation answered (one record per assignment)."""
    if trace.preallocated:
        return AssignmentRepeated(bundle=bundle, broker=broker, leader=leader, local=local)
    return Assignment(bundle=bundle, broker=broker, leader=leader, local=local, trace=trace)


class BundleUnloaded(Decision, kw_only=True):
    """The owner closed a bundle's topics and released its ownership (unloadNamespaceBundle)."""

    kind = "bundle_unloaded"
    bundle: str
    broker: str
    topics: int
    duration: float
    timed_out: bool


class BundleSplit(Decision, kw_only=True):
    """The owner split a bundle and owns its children (splitAndOwnBundle); `attempt` counts from 1."""

    kind = "bundle_split"
    bundle: str
    broker: str
    children: list[str]
    algorithm: str
    boundaries: list[int]
    unload: bool
    attempt: int


class BundleSplitSkipped(Decision, kw_only=True):
    """The owner found no boundary to split at ("No valid boundary to split bundle")."""

    kind = "split_skipped"
    bundle: str
    broker: str
    algorithm: str
    reason: str


class SheddingSkipped(LeaderDecision, kw_only=True):
    """doLoadShedding did not run its shedder (one broker or less)."""

    decision = "shedding_skipped"
    reason: str
    brokers: list[str]


class SheddingPlan(LeaderDecision, kw_only=True):
    """The shedder's answer: (broker, bundle) pairs to unload, in order, and its numbers."""

    decision = "shedding_plan"
    shedder: str
    plan: list[tuple[str, str]]
    explanation: dict[str, Any] | None


class Unload(LeaderDecision, kw_only=True):
    """One planned bundle unloaded to `destination` (the owner's answer in `result`)."""

    decision = "unload"
    broker: str
    bundle: str
    destination: str
    shedder: str
    bundle_data: BundleNumbers | None
    trace: SelectionTrace | None
    result: dict[str, Any]


class UnloadSkipped(LeaderDecision, kw_only=True):
    """One planned bundle not unloaded, and why."""

    decision = "unload_skipped"
    broker: str
    bundle: str
    reason: str
    bundle_data: BundleNumbers | None
    trace: SelectionTrace | None


class SplitSkipped(LeaderDecision, kw_only=True):
    """checkNamespaceBundleSplit dropped a selected bundle ("Bundle has been removed")."""

    decision = "split_skipped"
    bundle: str
    reason: str


class Split(LeaderDecision, kw_only=True):
    """checkNamespaceBundleSplit asked the owner to split a bundle; `ok` and `message` are its answer."""

    decision = "split"
    bundle: str
    broker: str
    unload: bool
    ok: bool
    message: str
    bundle_data: BundleNumbers | None
    result: dict[str, Any]


# ================================================================================== brokers and leader


class BrokerStarted(Event, kw_only=True):
    kind = "broker_started"
    broker: str


class BrokerStartFailed(Event, kw_only=True):
    kind = "broker_start_failed"
    broker: str
    error: str


class BrokerCrashed(Event, kw_only=True):
    """A crash: the broker's actors are gone, its metadata session expires later."""

    kind = "broker_crashed"
    broker: str
    bundles: int


class BrokerStopping(Event, kw_only=True):
    """A graceful shutdown began: the broker unloads its `bundles` within `timeout` seconds."""

    kind = "broker_stopping"
    broker: str
    bundles: int
    timeout: float


class BrokerStopped(Event, kw_only=True):
    kind = "broker_stopped"
    broker: str
    graceful: bool
    duration: float
    bundles_left: int


class LeaderElected(Event, kw_only=True):
    kind = "leader_elected"
    broker: str


class LeaderStarted(Event, kw_only=True):
    """The leader's load manager rebuilt its view: `brokers` reports, `bundle_data` persisted nodes."""

    kind = "leader_started"
    broker: str
    brokers: int
    bundle_data: int


class SessionLost(Event, kw_only=True):
    """The broker's metadata session expired; `policy` is zookeeperSessionExpiredPolicy."""

    kind = "session_lost"
    broker: str
    policy: str


class SessionReestablished(Event, kw_only=True):
    kind = "session_reestablished"
    broker: str
    lost_bundles: list[str]


class LoadReportWritten(Event, kw_only=True):
    """The broker wrote its LocalBrokerData (a > 10 % change or the max interval)."""

    kind = "load_report"
    broker: str
    bundles: int


class BundleOwned(Event, kw_only=True):
    """A broker took a bundle's ownership (lookup, split child or initial placement)."""

    kind = "bundle_owned"
    bundle: str
    broker: str


class ShedderWarmed(Event, kw_only=True):
    """A warm start moved the shedder's history as `cycles` shedding cycles would have."""

    kind = "warm_shedder"
    shedder: str
    cycles: int
    brokers: int


class PlacementFailed(Event, kw_only=True):
    """A user's placement strategy raised (user_faults.py); `bundle` when a lookup asked."""

    kind = "placement_failed"
    strategy: str
    error: str
    outcome: str
    bundle: str | None = None


class SheddingFailed(Event, kw_only=True):
    """A user's shedder raised: that shedding cycle is skipped."""

    kind = "shedding_failed"
    strategy: str
    error: str
    outcome: str


class ActorFailed(Event, kw_only=True):
    """An actor raised: an emulator bug (the run exits 3)."""

    kind = "actor_failed"
    actor: str
    error: str


class ConfigChanged(Event, kw_only=True):
    """A dynamic configuration key was set (its new value)."""

    kind = "config_changed"
    key: str
    value: Any


# ================================================================================== operator actions


class AdminUnload(AdminAction, kw_only=True):
    op = "unload"
    bundle: str
    destination: str | None


class AdminSplit(AdminAction, kw_only=True):
    op = "split"
    bundle: str
    algorithm: str | None


class IsolationPolicySet(AdminAction, kw_only=True):
    op = "set_isolation_policy"
    policy: str
    data: dict[str, Any]


class IsolationPolicyDeleted(AdminAction, kw_only=True):
    op = "delete_isolation_policy"
    policy: str


class FailureDomainSet(AdminAction, kw_only=True):
    op = "set_failure_domain"
    domain: str
    brokers: list[str]


class FailureDomainDeleted(AdminAction, kw_only=True):
    op = "delete_failure_domain"
    domain: str


class AntiAffinityGroupSet(AdminAction, kw_only=True):
    """`group` None: the namespace left its anti-affinity group."""

    op = "set_anti_affinity_group"
    namespace: str
    group: str | None


# ================================================================================== clients


class HandleEvent(Event, kw_only=True):
    """A producer or consumer handle of a client: `handle` is its id within `client`."""

    abstract = True
    client: str
    topic: str
    handle: int


class HandleConnected(HandleEvent, kw_only=True):
    """First attach of a handle (the lookup and the connect succeeded)."""

    kind = "handle_connected"
    broker: str


class HandleDisconnected(HandleEvent, kw_only=True):
    kind = "handle_disconnected"
    reason: str


class HandleReconnected(HandleEvent, kw_only=True):
    """Attached again after a disconnect, `unavailable` seconds later."""

    kind = "handle_reconnected"
    broker: str
    unavailable: float


class HandleFailed(HandleEvent, kw_only=True):
    """The creation gave up past the operation timeout; the handle was wanted since `since`."""

    kind = "handle_failed"
    reason: str
    since: float


class HandleClosed(HandleEvent, kw_only=True):
    """Closed by its application (the workload's consumer jitter)."""

    kind = "handle_closed"
    reason: str


# ================================================================================== the scenario


class ScenarioEvent(Event, kw_only=True):
    """A scenario event applied (workload/events.py): its verb and resolved arguments, which the
    record lists as fields of their own."""

    kind = "scenario_event"
    event: str
    arguments: dict[str, Any] = {}

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "t": self.t, "event": self.event}
        out.update(to_builtins(self.arguments))
        return out

    @classmethod
    def from_fields(cls, fields: dict[str, Any]) -> Event:
        rest = dict(fields)
        t = rest.pop("t", 0.0)
        return cls(t=t, event=rest.pop("event"), arguments=rest)


class ScenarioEventFailed(Event, kw_only=True):
    kind = "scenario_event_failed"
    event: str
    index: int
    error: str


class InitialState(Event, kw_only=True):
    """A scenario's initial owners placed; `msg_rate_max_min` is the planned max/min broker msg rate."""

    kind = "initial_state"
    bundles: int
    failed: int
    brokers: int
    warm: float
    msg_rate_max_min: float | None


class WarmBundleData(Event, kw_only=True):
    """A warm start wrote `bundles` persisted BundleData nodes of `samples` samples each."""

    kind = "warm_bundle_data"
    bundles: int
    samples: int
    warm: float


class WarmStarted(Event, kw_only=True):
    """A warm start done: reports, time averages and the shedder history as after `warm` seconds."""

    kind = "warm_start"
    brokers: int
    warm: float
    shedder_cycles: int
    leader: bool


# ================================================================================== the bus


class ClusterEvents:
    """The cluster's event bus: `emit` counts by kind and hands the event to every listener.

    `now` reads the clock faster where the caller has a faster reader of the same time (an
    entered ActorSystem's `now`, bound to the loop's own time): one event per producer
    connecting in a storm."""

    def __init__(self, clock: Clock, now: Callable[[], float] | None = None) -> None:
        self._now = now if now is not None else clock.now
        self.listeners: list[Listener] = []
        self.counts: Counter[str] = Counter()
        self._seen: set[Any] = set()

    def first(self, key: Any) -> bool:
        """True the first time `key` is given: a fault that repeats every lookup is logged once per
        distinct error (and counted every time by its event)."""
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    def emit(self, event: Event) -> None:
        """Count `event` under its kind; if anyone listens, stamp its time and hand it over."""
        try:
            self.counts[_KINDS[type(event)]] += 1
        except KeyError:
            raise TypeError(
                f"emit takes an event of emulator.cluster.events, e.g. "
                f"emit(BrokerStarted(broker=...)), not {type(event).__name__} {event!r:.60}; "
                "a new kind of report needs a Struct there") from None
        if not self.listeners:
            return
        event.t = self._now()
        for listener in tuple(self.listeners):
            listener(event)
