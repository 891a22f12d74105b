"""TransferShedder (PIP-220), the Extensible load manager's shedder: move load from the most loaded
brokers to the least loaded ones until the spread of load is small.

Follows apache/pulsar `extensions/scheduler/TransferShedder.java` (`findBundlesForUnloading`,
`LoadStats`, `isUnderLoaded`, `isOverLoaded`, `isTransferable`,
`isLoadBalancerSheddingBundlesWithPoliciesEnabled`) in the newest version the search index holds (its
deduplicated copy, 39,301 chars: @028ed629 plus the skips of zero-throughput bundles in both loops)
and TransferShedderTest @0524997, which needs those skips (testZeroBundleThroughput).

A broker's load is the `weightedMaxEMA` of its BrokerLoadData. Each cycle:

1. Load stats over the broker load-data store: a broker whose data is older than
   `loadBalancerBrokerLoadDataTTLInSeconds` is left out (OutDatedData if nobody is left); a broker
   unloaded less than `loadBalanceSheddingDelayInSeconds` before its last report stops the cycle
   (CoolDown); a registered broker without load data stops it too (NoLoadData). Then the mean and the
   population standard deviation (`sqrt(sqSum/n − avg²)`) of the loads.
2. The condition: std > `loadBalancerBrokerLoadTargetStd`, or the least loaded broker is underloaded
   (load < avg·m, or its `msgThroughputEMA` < the most loaded one's ·m, m = min(0.5, max(0, std
   target/2))), or the most loaded is overloaded (load > `loadBalancerBrokerOverloadedThresholdPercentage`
   and > avg + target). It must hold in more than `loadBalancerSheddingConditionHitCountThreshold`
   consecutive cycles (Skip/HitCount until then).
3. Brokers sorted by load (stable, in the store's order); the most loaded is paired with the least
   loaded, at most `loadBalancerMaxNumberOfBrokerSheddingPerCycle` pairs. The pair moves half the load
   gap: `offloadThroughput = (in+out of the max broker) · (max − min)/2 / max`. Its top bundles (least
   loaded of the top k first) are taken while the moved throughput stays within that, skipping bundles
   it does not own, of excluded namespaces, recently unloaded, with zero throughput, or not
   transferable (the broker filter pipeline must leave the destination; bundles with isolation or
   anti-affinity policies only with `loadBalancerSheddingBundlesWithPoliciesEnabled`), and always
   leaving one. A bundle that overshoots ends the broker unless, with transfer on, some of the min
   broker's top bundles can be swapped back so both end below the max broker's throughput and the
   max below 75 % of it.
4. With `loadBalancerTransferEnabled` each decision is a transfer (destination = the min broker),
   otherwise a plain unload. After a pair the std is re-estimated as if the load had moved.

Kept as Pulsar has it: the throughput gained by a swap is subtracted from the moved traffic only when
`loadBalancerDebugModeEnabled` is on (the `trafficMarkedToGain +=` sits inside the debug block); the
swap's bundles are checked for transferability only; a broker polled as the max is not reconsidered
as a min. Skip and Failure outcomes are counted in `counter`; a Success is counted by the caller when
the unload completes (UnloadManager). Java returns a HashSet; decisions come here in the order they
were made, each once.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, MutableMapping
from typing import Any

from emulator.model.class_registry import DecisionBase
from emulator.model.config import ServiceConfig
from emulator.loadmanagers.extensible.model.context import LoadManagerContext
from emulator.loadmanagers.extensible.model.counters import UnloadCounter
from emulator.loadmanagers.extensible.model.decisions import (
    Unload,
    UnloadDecision,
    UnloadLabel,
    UnloadReason,
)
from emulator.loadmanagers.extensible.model.filters import BrokerFilterException, apply_filters
from emulator.loadmanagers.extensible.model.load_data import BrokerLoadData, BrokerLookupData
from emulator.model.filters import namespace_of_bundle
from emulator.model.loaddata import java_div
from shedders.base import java_double_key

__all__ = ["LoadStats", "TransferShedder"]

SWAP_MAX_THROUGHPUT_RATIO = 0.75

_R = UnloadReason


def _java_sqrt(x: float) -> float:
    """`Math.sqrt`: NaN for a negative argument (Python raises)."""
    return math.sqrt(x) if x >= 0 else math.nan


class LoadStats:
    """`TransferShedder.LoadStats`: the cycle's load mean and std and the brokers sorted by load."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.sum = 0.0
        self.sq_sum = 0.0
        self.total_brokers = 0
        self.avg = 0.0
        self.std = 0.0
        self.brokers_sorted_by_load: list[tuple[str, BrokerLoadData]] = []
        self.max_broker_index = 0
        self.min_broker_index = 0
        self.number_of_broker_shedding_per_cycle = 0
        self.max_number_of_broker_shedding_per_cycle = 0

    def _set(self, total: float, sq_sum: float, brokers: int) -> None:
        self.sum, self.sq_sum, self.total_brokers = total, sq_sum, brokers
        if brokers == 0:
            self.avg = self.std = 0.0
        else:
            self.avg = total / brokers
            self.std = _java_sqrt(sq_sum / brokers - self.avg * self.avg)

    def offload(self, max_load: float, min_load: float, offload: float) -> None:
        """Re-estimate the std as if `offload` moved from the max to the min broker; next pair."""
        self.sq_sum -= max_load * max_load + min_load * min_load
        maxd = max(0.0, max_load - offload)
        mind = min_load + offload
        self.sq_sum += maxd * maxd + mind * mind
        self.std = _java_sqrt(abs(self.sq_sum / self.total_brokers - self.avg * self.avg))
        self.number_of_broker_shedding_per_cycle += 1
        self.min_broker_index += 1

    def update(
        self,
        store: Mapping[str, BrokerLoadData],
        available_brokers: Mapping[str, BrokerLookupData],
        recently_unloaded_brokers: MutableMapping[str, int],
        conf: ServiceConfig,
        now_ms: int,
    ) -> UnloadReason | None:
        """`LoadStats.update`: the stats, or why this cycle cannot go on."""
        self.max_number_of_broker_shedding_per_cycle = conf.load_balancer_max_number_of_broker_shedding_per_cycle
        ttl_ms = conf.load_balancer_broker_load_data_ttl_in_seconds * 1000
        delay_ms = conf.load_balance_shedding_delay_in_seconds * 1000
        reason: UnloadReason | None = None
        total = sq_sum = 0.0
        brokers = 0
        missing = set(available_brokers)
        for broker, data in store.items():
            missing.discard(broker)
            if now_ms - data.updated_at > ttl_ms:
                reason = _R.OUT_DATED_DATA
                continue
            if broker in recently_unloaded_brokers:
                if data.updated_at - recently_unloaded_brokers[broker] < delay_ms:
                    self._set(0.0, 0.0, 0)
                    return _R.COOL_DOWN
                del recently_unloaded_brokers[broker]
            load = data.weighted_max_ema
            total += load
            sq_sum += load * load
            brokers += 1
        if brokers == 0:
            self._set(0.0, 0.0, 0)
            return reason if reason is not None else _R.NO_BROKERS
        if missing:
            self._set(0.0, 0.0, 0)
            return _R.NO_LOAD_DATA
        self._set(total, sq_sum, brokers)
        return None

    def set_load_data_store(self, store: Mapping[str, BrokerLoadData]) -> None:
        """Every broker of the store (outdated ones too), by load, stable in the store's order."""
        self.brokers_sorted_by_load = sorted(store.items(), key=lambda e: java_double_key(e[1].weighted_max_ema))
        self.max_broker_index = len(self.brokers_sorted_by_load) - 1
        self.min_broker_index = 0

    def peek_min_broker(self) -> str:
        return self.brokers_sorted_by_load[self.min_broker_index][0]

    def peek_max_broker(self) -> str:
        return self.brokers_sorted_by_load[self.max_broker_index][0]

    def poll_max_broker(self) -> str:
        broker = self.brokers_sorted_by_load[self.max_broker_index][0]
        self.max_broker_index -= 1
        return broker

    def has_transferable_brokers(self) -> bool:
        return (self.number_of_broker_shedding_per_cycle < self.max_number_of_broker_shedding_per_cycle
                and self.min_broker_index < self.max_broker_index)


class TransferShedder(DecisionBase):
    """Keeps `unload_condition_hit_count` and `counter` across cycles, as Pulsar's instance does.

    `stats` holds the last cycle's LoadStats (for tests and the decision log).
    """

    last_explanation: dict[str, Any] | None

    def __init__(self, rng: random.Random, counter: UnloadCounter | None = None) -> None:
        super().__init__(rng)  # TransferShedder picks nothing at random; the constructor every built-in shares
        self.counter = counter if counter is not None else UnloadCounter()
        self.stats = LoadStats()
        self.unload_condition_hit_count = 0
        self.last_explanation = None

    def find_bundles_for_unloading(
        self,
        context: LoadManagerContext,
        recently_unloaded_bundles: Mapping[str, int],
        recently_unloaded_brokers: MutableMapping[str, int],
    ) -> list[UnloadDecision]:
        conf = context.conf
        now = context.now_ms
        stats = self.stats
        stats.clear()
        decisions: list[UnloadDecision] = []
        pairs: list[dict[str, Any]] = []
        explanation: dict[str, Any] = {"shedder": "TransferShedder", "pairs": pairs}
        self.last_explanation = explanation

        available = context.available_brokers
        if available is None:  # the registry read failed
            return self._skip(UnloadLabel.FAILURE, _R.UNKNOWN, now, explanation)

        store = context.broker_load_data
        stats.set_load_data_store(store)
        skip = stats.update(store, available, recently_unloaded_brokers, conf, now)
        if skip is not None:
            return self._skip(UnloadLabel.SKIP, skip, now, explanation)
        self.counter.update_load_data(stats.avg, stats.std, now)
        explanation.update(avg=stats.avg, std=stats.std)

        debug = conf.load_balancer_debug_mode_enabled
        target_std = conf.load_balancer_broker_load_target_std
        transfer = conf.load_balancer_transfer_enabled
        if (stats.std > target_std or self._is_under_loaded(context, stats.peek_min_broker())
                or self._is_over_loaded(context, stats.peek_max_broker())):
            self.unload_condition_hit_count += 1
        else:
            self.unload_condition_hit_count = 0
        explanation["hit_count"] = self.unload_condition_hit_count
        if self.unload_condition_hit_count <= conf.load_balancer_shedding_condition_hit_count_threshold:
            return self._skip(UnloadLabel.SKIP, _R.HIT_COUNT, now, explanation)

        empty_load_data = 0
        few_bundles = 0
        excluded = set(conf.load_balancer_shedding_excluded_namespaces)
        while stats.has_transferable_brokers():
            if stats.std > target_std:
                reason = _R.OVERLOADED
            elif self._is_under_loaded(context, stats.peek_min_broker()):
                reason = _R.UNDERLOADED
            elif self._is_over_loaded(context, stats.peek_max_broker()):
                reason = _R.OVERLOADED
            else:
                explanation["stop"] = "balanced"
                break

            max_broker = stats.poll_max_broker()
            min_broker = stats.peek_min_broker()
            pair: dict[str, Any] = {"max_broker": max_broker, "min_broker": min_broker, "reason": reason.value}
            pairs.append(pair)
            max_data = store.get(max_broker)
            min_data = store.get(min_broker)
            if max_data is None or min_data is None:
                empty_load_data += 1
                pair["skip"] = "no_broker_load_data"
                continue
            max_load, min_load = max_data.weighted_max_ema, min_data.weighted_max_ema
            offload = (max_load - min_load) / 2
            max_throughput = max_data.msg_throughput_in + max_data.msg_throughput_out
            min_throughput = min_data.msg_throughput_in + min_data.msg_throughput_out
            offload_throughput = java_div(max_throughput * offload, max_load)
            pair.update(max_load=max_load, min_load=min_load, offload=offload,
                        offload_throughput=offload_throughput)

            top = context.top_bundles_load_data.get(max_broker)
            if top is None or not top.top_bundles_load_data:
                empty_load_data += 1
                pair["skip"] = "no_top_bundles"
                continue
            top_bundles = top.top_bundles_load_data
            if len(top_bundles) == 1:
                few_bundles += 1
                pair["skip"] = "sole_bundle"
                continue
            min_top = context.top_bundles_load_data.get(min_broker)
            min_top_iter = iter(min_top.top_bundles_load_data) if min_top is not None else None

            marked_offload = 0.0
            marked_gain = 0.0
            remaining = len(top_bundles)
            considered: list[dict[str, Any]] = []
            pair["bundles"] = considered
            for entry in top_bundles:
                bundle = entry.bundle_name
                note: dict[str, Any] = {"bundle": bundle}
                considered.append(note)
                if context.owners is not None and not context.is_owner(bundle, max_broker):
                    note["skip"] = "not_owner"
                    continue
                if namespace_of_bundle(bundle) in excluded:
                    note["skip"] = "excluded_namespace"
                    continue
                if bundle in recently_unloaded_bundles:
                    note["skip"] = "recently_unloaded"
                    continue
                if not self._is_transferable(context, available, bundle, max_broker, min_broker):
                    note["skip"] = "not_transferable"
                    continue
                if remaining <= 1:
                    note["skip"] = "last_bundle"
                    break
                throughput = entry.stats.msg_throughput_in + entry.stats.msg_throughput_out
                note["throughput"] = throughput
                if throughput == 0:
                    note["skip"] = "zero_throughput"
                    continue
                swap = False
                min_to_max: list[Unload] = []
                swap_throughput = 0.0
                if marked_offload - marked_gain + throughput > offload_throughput:
                    if transfer and min_top_iter is not None:
                        max_new = max_throughput - marked_offload + marked_gain - throughput
                        min_new = min_throughput + marked_offload - marked_gain + throughput
                        for candidate in min_top_iter:  # shared: resumes where the last try stopped
                            if not self._is_transferable(
                                    context, available, candidate.bundle_name, min_broker, max_broker):
                                continue
                            gain = candidate.stats.msg_throughput_in + candidate.stats.msg_throughput_out
                            if gain == 0:
                                continue
                            max_tmp, min_tmp = max_new + gain, min_new - gain
                            if max_tmp < max_throughput and min_tmp < max_throughput:
                                min_to_max.append(Unload(source_broker=min_broker,
                                                         service_unit=candidate.bundle_name,
                                                         dest_broker=max_broker))
                                max_new, min_new = max_tmp, min_tmp
                                swap_throughput += gain
                                if min_new <= max_new and max_new < max_throughput * SWAP_MAX_THROUGHPUT_RATIO:
                                    swap = True
                                    break
                    if not swap:
                        note["skip"] = "over_target"
                        break
                if transfer:
                    if swap:
                        for unload in min_to_max:
                            _add(decisions, UnloadDecision(unload=unload, label=UnloadLabel.SUCCESS, reason=reason))
                        note["swapped"] = [u.service_unit for u in min_to_max]
                        if debug:
                            marked_gain += swap_throughput
                    unload = Unload(source_broker=max_broker, service_unit=bundle, dest_broker=min_broker)
                else:
                    unload = Unload(source_broker=max_broker, service_unit=bundle)
                _add(decisions, UnloadDecision(unload=unload, label=UnloadLabel.SUCCESS, reason=reason))
                note["selected"] = True
                marked_offload += throughput
                remaining -= 1

            pair.update(marked_offload=marked_offload, marked_gain=marked_gain)
            if marked_offload > 0:
                adjusted = java_div((marked_offload - marked_gain) * max_load, max_throughput)
                stats.offload(max_load, min_load, adjusted)
                pair["std_after"] = stats.std
            else:
                few_bundles += 1

        if not decisions:
            if empty_load_data > 0:
                skip = _R.NO_LOAD_DATA
            elif few_bundles > 0:
                skip = _R.NO_BUNDLES
            else:
                skip = _R.HIT_COUNT
            return self._skip(UnloadLabel.SKIP, skip, now, explanation)
        self.unload_condition_hit_count = 0
        explanation["decisions"] = [_explain(d) for d in decisions]
        return decisions

    # --- conditions ------------------------------------------------------------------------------

    def _is_under_loaded(self, context: LoadManagerContext, broker: str) -> bool:
        data = context.broker_load_data.get(broker)
        if data is None:
            return False
        multiplier = min(0.5, max(0.0, context.conf.load_balancer_broker_load_target_std / 2.0))
        if data.weighted_max_ema < self.stats.avg * multiplier:
            return True
        max_data = context.broker_load_data.get(self.stats.peek_max_broker())
        if max_data is None:
            return False
        return data.msg_throughput_ema < max_data.msg_throughput_ema * multiplier

    def _is_over_loaded(self, context: LoadManagerContext, broker: str) -> bool:
        data = context.broker_load_data.get(broker)
        if data is None:
            return False
        conf = context.conf
        threshold = conf.load_balancer_broker_overloaded_threshold_percentage / 100.0
        load = data.weighted_max_ema
        return load > threshold and load > self.stats.avg + conf.load_balancer_broker_load_target_std

    def _is_transferable(
        self,
        context: LoadManagerContext,
        available: Mapping[str, BrokerLookupData],
        bundle: str,
        src: str,
        dst: str | None,
    ) -> bool:
        """`isTransferable`: the policies allow shedding the bundle, and after the filter pipeline some
        broker other than `src` is left (an unload) or `dst` is (a transfer)."""
        if not is_shedding_allowed_by_policies(context, bundle):
            return False
        try:
            candidates = apply_filters(context.filter_pipeline, available, bundle, context)
        except BrokerFilterException:
            return False
        if dst is not None and dst not in candidates:
            return False
        candidates.pop(src, None)
        if dst is None or not context.conf.load_balancer_transfer_enabled:
            return bool(candidates)
        return dst in candidates

    def _skip(
        self, label: UnloadLabel, reason: UnloadReason, now: int, explanation: dict[str, Any]
    ) -> list[UnloadDecision]:
        self.counter.update(label, reason, now)
        explanation["result"] = [label.value, reason.value]
        return []


def is_shedding_allowed_by_policies(context: LoadManagerContext, bundle: str) -> bool:
    """`isLoadBalancerSheddingBundlesWithPoliciesEnabled`: a bundle whose namespace has an isolation
    policy or an anti-affinity group may be shed only with `loadBalancerSheddingBundlesWithPoliciesEnabled`."""
    namespace = namespace_of_bundle(bundle)
    policies = context.policies
    if policies.are_isolation_policies_present(namespace) or policies.anti_affinity_group(namespace) is not None:
        return context.conf.load_balancer_shedding_bundles_with_policies_enabled
    return True


def _add(decisions: list[UnloadDecision], decision: UnloadDecision) -> None:
    """`decisionCache.add`: a set, so an equal decision is kept once."""
    if decision not in decisions:
        decisions.append(decision)


def _explain(decision: UnloadDecision) -> dict[str, Any]:
    unload = decision.unload
    assert unload is not None
    return {"source": unload.source_broker, "bundle": unload.service_unit, "destination": unload.dest_broker,
            "label": decision.label.value, "reason": decision.reason.value}
