"""Load-balancing decisions (what the decision log keeps): assignments, unloads and splits by the
owners, and the leader's shedding and split cycle steps, with the numbers behind them; the
Extensible load manager's unload, split and assignment decisions at the end."""

from __future__ import annotations

from typing import Any

import msgspec

from emulator.model.decision_labels import SplitLabel, SplitReason, UnloadLabel, UnloadReason

from .base import Decision, Event, LeaderDecision

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


# ------------------------------------------------------------------ the Extensible load manager


class ExtensibleUnloadDecision(LeaderDecision, kw_only=True):
    """One UnloadDecision of the Extensible load manager's leader (UnloadScheduler running
    TransferShedder, or an admin unload), with the label and reason UnloadCounter counted for it:
    Success (the unload went through), Skip (why the cycle planned nothing) or Failure.

    `broker` is the source broker and `destination` the pre-assigned one (None: a plain unload, the
    next lookup assigns); `transfer` is True when the destination is assigned before the source
    closes the bundle (`loadBalancerTransferEnabled`). The shedder's numbers of that cycle: the mean
    and std of the brokers' weightedMaxEMA, `loadBalancerBrokerLoadTargetStd`, and the loads of the
    pair it evened out (the most loaded broker, overloaded or the std's cause; the least, underloaded);
    None where the cycle did not get that far."""

    decision = "extensible_unload"
    leader: str
    label: UnloadLabel
    reason: UnloadReason
    bundle: str | None = None
    broker: str | None = None
    destination: str | None = None
    transfer: bool = False
    load_avg: float | None = None
    load_std: float | None = None
    target_std: float | None = None
    max_load: float | None = None
    min_load: float | None = None


class ExtensibleSplitDecision(Decision, kw_only=True):
    """One SplitDecision of an owner's SplitScheduler (or an admin split), as SplitCounter counted it.

    `broker` is the owner that decided; `children` the child ranges when the split went through. The
    numbers behind the reason: the bundle's topics, sessions (producers + consumers), msg rate and
    throughput (in + out, msg/s and bytes/s) as the split strategy compared them, and the limit the
    reason's number crossed (`loadBalancerNamespaceBundleMax*`); None where not computed."""

    kind = "extensible_split"
    broker: str
    label: SplitLabel
    reason: SplitReason
    bundle: str | None = None
    children: list[str] | None = None
    topics: int | None = None
    sessions: int | None = None
    msg_rate: float | None = None
    throughput: float | None = None
    threshold: float | None = None


class ExtensibleAssignment(Decision, kw_only=True):
    """A lookup at any broker assigned a bundle through the channel (`selectAsync` then the Assign
    event: AssignCounter's Success), or found no candidate (`broker` None: Empty). `candidates` is
    how many brokers passed the filters; `fallback` is True when LeastResourceUsageWithWeight found
    no broker clearly below the average and picked among them all."""

    kind = "extensible_assignment"
    decider: str
    bundle: str
    broker: str | None
    candidates: int
    fallback: bool = False
