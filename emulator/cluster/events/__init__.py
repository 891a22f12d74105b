"""The cluster's outward voice: every thing the cluster can report, one msgspec Struct per kind.

`cluster/` imports no observer (metrics, recorder, decision log, invariant checks, summary). Every
actor holds the cluster's `ClusterEvents` and calls `emit(SomeEvent(...))`; listeners are plain
callables registered by whoever wants to watch, and they dispatch on the event's type. This package
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

The types live in one module per family (base.py: `Event`, its abstract groups, records and the bus
`ClusterEvents`; decisions.py; lifecycle.py: brokers and leader; admin.py: operator actions;
clients.py; scenario.py), imported here in that order: each concrete type registers its kind as it
is defined, so this order is `event_types()`'s. Import every name from this package.
"""

from __future__ import annotations

from .base import (
    AdminAction,
    ClusterEvents,
    Decision,
    Event,
    LeaderDecision,
    Listener,
    event_types,
    from_record,
    to_builtins,
    to_record,
)
from .decisions import (
    Assignment,
    AssignmentRepeated,
    BundleNumbers,
    BundleSplit,
    BundleSplitSkipped,
    BundleUnloaded,
    ExtensibleAssignment,
    ExtensibleSplitDecision,
    ExtensibleUnloadDecision,
    SelectionTrace,
    SheddingPlan,
    SheddingSkipped,
    Split,
    SplitSkipped,
    Unload,
    UnloadSkipped,
    assignment_event,
)
from .lifecycle import (
    ActorFailed,
    BrokerCrashed,
    BrokerStartFailed,
    BrokerStarted,
    BrokerStopped,
    BrokerStopping,
    BundleOwned,
    ConfigChanged,
    LeaderElected,
    LeaderStarted,
    LoadManagerChanged,
    LoadManagerCreateFailed,
    LoadManagerSwitchUnsupported,
    LoadReportWritten,
    PlacementFailed,
    SessionLost,
    SessionReestablished,
    ShedderWarmed,
    SheddingFailed,
)
from .admin import (
    AdminSplit,
    AdminUnload,
    AntiAffinityGroupSet,
    FailureDomainDeleted,
    FailureDomainSet,
    IsolationPolicyDeleted,
    IsolationPolicySet,
)
from .clients import (
    HandleClosed,
    HandleConnected,
    HandleDisconnected,
    HandleEvent,
    HandleFailed,
    HandleReconnected,
)
from .scenario import (
    InitialState,
    ScenarioEvent,
    ScenarioEventFailed,
    WarmBundleData,
    WarmStarted,
)

__all__ = [
    "ActorFailed", "AdminAction", "AdminSplit", "AdminUnload", "AntiAffinityGroupSet", "Assignment",
    "AssignmentRepeated",
    "BrokerCrashed", "BrokerStartFailed", "BrokerStarted", "BrokerStopped", "BrokerStopping",
    "BundleNumbers", "BundleOwned", "BundleSplit", "BundleSplitSkipped", "BundleUnloaded",
    "ClusterEvents", "ConfigChanged", "Decision", "Event", "ExtensibleAssignment", "ExtensibleSplitDecision",
    "ExtensibleUnloadDecision", "FailureDomainDeleted", "FailureDomainSet",
    "HandleClosed", "HandleConnected", "HandleDisconnected", "HandleEvent", "HandleFailed",
    "HandleReconnected", "InitialState", "IsolationPolicyDeleted", "IsolationPolicySet",
    "LeaderDecision", "LeaderElected", "LeaderStarted", "Listener", "LoadManagerChanged",
    "LoadManagerCreateFailed", "LoadManagerSwitchUnsupported", "LoadReportWritten",
    "PlacementFailed", "ScenarioEvent", "ScenarioEventFailed", "SelectionTrace", "SessionLost",
    "SessionReestablished", "ShedderWarmed", "SheddingFailed", "SheddingPlan", "SheddingSkipped",
    "Split", "SplitSkipped", "Unload", "UnloadSkipped", "WarmBundleData", "WarmStarted",
    "assignment_event", "event_types", "from_record", "to_builtins", "to_record",
]
