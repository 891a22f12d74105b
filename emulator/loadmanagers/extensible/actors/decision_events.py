"""One broker's Extensible decisions as the cluster's events: each assignment, each unload and split
scheduler run's decisions (ExtensibleAssignment, ExtensibleUnloadDecision, ExtensibleSplitDecision),
with the numbers behind them, and the counter snapshots `getMetrics()` renders; a part of
ExtensibleLoadManagerWrapper (extensible_wrapper.py).

Pulsar logs these decisions (`UnloadScheduler.execute`, `SplitScheduler.execute`) and counts them
(`UnloadCounter`, `SplitCounter`, `AssignCounter`); the emulator also emits them, so that the decision log,
the recorder and the summary see them (emulator/cluster/events.py). A mixin of the wrapper; the fields
it reads are declared here and set by the wrapper's constructor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emulator.cluster.events import ExtensibleAssignment, ExtensibleSplitDecision, ExtensibleUnloadDecision

from ..model.context import LoadManagerContext
from ..model.counters import SplitCounter, UnloadCounter
from ..model.decisions import SplitDecision, SplitLabel, SplitReason, UnloadDecision, UnloadLabel, UnloadReason
from .metrics_source import CounterSnapshot

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.broker import Broker

__all__ = ["ExtensibleDecisionEvents"]


class ExtensibleDecisionEvents:
    """The decisions as events (see the module docstring)."""

    broker: "Broker"
    unload_strategy: Any
    unload_counter: UnloadCounter
    split_counter: SplitCounter
    _last_selection: tuple[int, bool]
    _unload_snapshot: CounterSnapshot[UnloadCounter]
    _split_snapshot: CounterSnapshot[SplitCounter]

    def _assigned(self, bundle: str, selected: str | None, owner: str | None) -> None:
        """After a lookup's selection: an ExtensibleAssignment when it took effect (the channel's
        owner is the selected broker) or found no broker; a write another broker's beat is none."""
        if selected is None or owner == selected:
            self.report_assignment(bundle, selected)

    def report_assignment(self, bundle: str, selected: str | None) -> None:
        candidates, fallback = self._last_selection
        b = self.broker
        b.events.emit(ExtensibleAssignment(decider=b.broker_id, bundle=bundle, broker=selected,
                                           candidates=candidates if selected is not None else 0,
                                           fallback=fallback and selected is not None))

    def _unload_run(self, decisions: list[UnloadDecision], outcomes: dict[str, bool],
                    context: LoadManagerContext) -> None:
        """The end of an UnloadScheduler run: each decision as an event (a published unload that did
        not complete is the Failure/Unknown its counter counted), then the metrics' snapshot."""
        b = self.broker
        counter = self.unload_counter
        loads = context.broker_load_data
        target = b.conf.load_balancer_broker_load_target_std
        explanation = getattr(self.unload_strategy, "last_explanation", None) or {}
        result = explanation.get("result")
        if not decisions and result:   # a cycle that planned nothing: why (TransferShedder's _skip)
            b.events.emit(ExtensibleUnloadDecision(
                leader=b.broker_id, label=UnloadLabel(result[0]), reason=UnloadReason(result[1]),
                load_avg=explanation.get("avg"), load_std=explanation.get("std"), target_std=target))
        for d in decisions:
            u = d.unload
            label, reason = d.label, d.reason
            if u is not None and label is UnloadLabel.SUCCESS and not outcomes.get(u.service_unit, False):
                label, reason = UnloadLabel.FAILURE, UnloadReason.UNKNOWN
            src = loads.get(u.source_broker) if u is not None else None
            dst = loads.get(u.dest_broker) if u is not None and u.dest_broker else None
            b.events.emit(ExtensibleUnloadDecision(
                leader=b.broker_id, label=label, reason=reason,
                bundle=u.service_unit if u else None, broker=u.source_broker if u else None,
                destination=u.dest_broker if u else None, transfer=bool(u and u.dest_broker),
                load_avg=counter.load_avg, load_std=counter.load_std, target_std=target,
                max_load=src.weighted_max_ema if src is not None else None,
                min_load=dst.weighted_max_ema if dst is not None else None))
        self._unload_snapshot.refresh(counter)

    def _split_run(self, decisions: list[SplitDecision], outcomes: dict[str, bool],
                   stats: Any) -> None:
        """The end of a SplitScheduler run: each decision as an event, with the bundle's numbers the
        strategy compared, then the metrics' snapshot."""
        b = self.broker
        conf = b.conf
        limits = {SplitReason.TOPICS: conf.load_balancer_namespace_bundle_max_topics,
                  SplitReason.SESSIONS: conf.load_balancer_namespace_bundle_max_sessions,
                  SplitReason.MSG_RATE: conf.load_balancer_namespace_bundle_max_msg_rate,
                  SplitReason.BANDWIDTH: conf.load_balancer_namespace_bundle_max_bandwidth_mbytes * 1024 * 1024}
        for d in decisions:
            s = d.split
            label, reason = d.label, d.reason
            if s is not None and label is SplitLabel.SUCCESS and not outcomes.get(s.service_unit, False):
                label, reason = SplitLabel.FAILURE, SplitReason.UNKNOWN
            st = stats.get(s.service_unit) if s is not None else None
            namespace = s.service_unit.rsplit("/", 1)[0] if s is not None else ""
            b.events.emit(ExtensibleSplitDecision(
                broker=b.broker_id, label=label, reason=reason, bundle=s.service_unit if s else None,
                children=[f"{namespace}/{r}" for r in s.split_service_unit_to_dest_broker]
                if s is not None and label is SplitLabel.SUCCESS else None,
                topics=st.topics if st else None,
                sessions=st.producer_count + st.consumer_count if st else None,
                msg_rate=st.msg_rate_in + st.msg_rate_out if st else None,
                throughput=st.msg_throughput_in + st.msg_throughput_out if st else None,
                threshold=float(limits[reason]) if reason in limits else None))
        self._split_snapshot.refresh(self.split_counter)
