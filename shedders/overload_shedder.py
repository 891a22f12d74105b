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
    offload_from_broker,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from emulator.model.config import ServiceConfig
    from emulator.model.loaddata import BundleData, LoadData

__all__ = ["OverloadShedder"]


class OverloadShedder(BaseShedder):
    """Stateless: every call looks only at the last reports."""

    def find_bundles_for_unloading_explained(
        self, load_data: LoadData, conf: ServiceConfig
    ) -> UnloadPlan:
        """The pairs and, per broker, its usage, offload minimum and candidates."""
        threshold = conf.load_balancer_broker_overloaded_threshold_percentage / 100.0
        shedding_view: list[Mapping[str, BundleData]] = []
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
            offload_from_broker(broker, local, min_offload, load_data, shedding_view, info, selected)

        return UnloadPlan(selected, {
            "shedder": "OverloadShedder",
            "threshold": threshold,
            "brokers": brokers,
            "selected": [list(p) for p in selected],
        })
