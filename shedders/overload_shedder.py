"""OverloadShedder (§8.1): unload enough from every broker at or above the overload threshold.

For each broker whose usage is **≥** `loadBalancerBrokerOverloadedThresholdPercentage` (the skip is
`usage < threshold`, while placement treats only `>` as overloaded), shed its biggest bundles by
short-term throughput until `(throughput in+out) × (usage − threshold + 0.05)` is covered, at least
one. A broker with a single bundle (or none) only gets a warning in Pulsar; here a skip reason.

Usage is the PIP-358 weighted max (4 weights); `emulator_unweighted_max_usage` selects the
pre-PIP-358 unweighted max. `atLeastOneBundleSelected` is not read (spec §10.3: Pulsar's consumer
of that key is unidentified; its default, true, is what this class does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emulator.model.selection import placement_usage
from shedders.base import (
    ADDITIONAL_THRESHOLD_PERCENT_MARGIN,
    BaseShedder,
    UnloadPlan,
    broker_throughput,
    candidates_explained,
    select_until_offloaded,
    shedding_candidates,
)

if TYPE_CHECKING:
    from emulator.model.config import ServiceConfig
    from emulator.model.loaddata import LoadData

__all__ = ["OverloadShedder"]


class OverloadShedder(BaseShedder):
    """Stateless: every call looks only at the last reports."""

    def find_bundles_for_unloading(
        self, load_data: LoadData, conf: ServiceConfig
    ) -> list[tuple[str, str]]:
        return self.find_bundles_for_unloading_explained(load_data, conf).bundles

    def find_bundles_for_unloading_explained(
        self, load_data: LoadData, conf: ServiceConfig
    ) -> UnloadPlan:
        """The pairs and, per broker, its usage, offload minimum and candidates."""
        threshold = conf.load_balancer_broker_overloaded_threshold_percentage / 100.0
        recently_unloaded = load_data.recently_unloaded_bundles
        shedding_view = None
        selected: list[tuple[str, str]] = []
        brokers: dict[str, dict[str, Any]] = {}

        for broker, broker_data in load_data.broker_data.items():
            local = broker_data.local_data
            usage = placement_usage(local, conf)
            info: dict[str, Any] = {"usage": usage, "bundles": len(local.bundles)}
            brokers[broker] = info
            if usage < threshold:
                info["skip"] = "not_overloaded"
                continue
            throughput = broker_throughput(local)
            min_offload = throughput * (usage - threshold + ADDITIONAL_THRESHOLD_PERCENT_MARGIN)
            info.update(throughput=throughput, min_offload=min_offload)
            if len(local.bundles) > 1:
                if shedding_view is None:
                    shedding_view = load_data.bundle_data_for_load_shedding()
                candidates = shedding_candidates(shedding_view, local, recently_unloaded, "throughput")
                chosen = select_until_offloaded(candidates, min_offload)
                info["candidates"] = candidates_explained(candidates, chosen, "throughput")
                info["selected"] = chosen
                selected.extend((broker, bundle) for bundle in chosen)
            elif len(local.bundles) == 1:
                info["skip"] = "sole_bundle"
            else:
                info["skip"] = "no_bundles"

        return UnloadPlan(selected, {
            "shedder": "OverloadShedder",
            "threshold": threshold,
            "brokers": brokers,
            "selected": [list(p) for p in selected],
        })
