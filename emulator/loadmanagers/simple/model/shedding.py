"""SimpleLoadManagerImpl's load shedding: which bundle leaves each overloaded broker.

Follows `SimpleLoadManagerImpl.doLoadShedding`, `isBrokerAvailableForRebalancing` and
`unloadNamespacesFromOverLoadedBrokers` (leader, every `loadBalancerSheddingIntervalMinutes`).

For each broker above the overload threshold (bandwidth in/out, CPU or direct memory), Pulsar looks
at its bundles sorted by the bottleneck resource (`bundle_order.sorted_bundle_stats`) and considers
only the first: it is unloaded if some candidate broker for its namespace is below the comfort level
on all four resources (the overloaded broker itself is among the candidates, but it is not below),
otherwise nothing leaves that broker. A broker with a single bundle sheds nothing. A bundle unloaded
(or, with shedding disabled, "dry-run" unloaded) less than `loadBalancerSheddingGracePeriodMinutes`
ago is skipped (Guava's `expireAfterWrite` cache, keyed by bundle).

Choice: Pulsar walks the reports in HashMap order; the plan here lists brokers sorted by id.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from emulator.model.config import ServiceConfig
from emulator.model.filters import BundleRangeCache, namespace_of_bundle
from emulator.model.policies import PolicyView
from emulator.model.bundle_order import sorted_bundle_stats
from .placement import final_candidates
from .report import (
    LoadReport,
    bottleneck_resource_type,
    is_above_load_level,
    is_below_load_level,
)
from .settings import SimpleSettings

__all__ = ["SheddingPlan", "do_load_shedding", "is_broker_available_for_rebalancing"]


class SheddingPlan(msgspec.Struct, kw_only=True):
    """One shedding cycle's decisions, (broker, bundle) pairs sorted by broker.

    `unloads`: unload now. `dry_run`: would unload, but shedding is disabled (Pulsar logs "DRY RUN").
    Both go into the recently-unloaded cache at `now_ms` (the caller records them).
    `recently_unloaded`: chosen but skipped, unloaded within the grace period.
    `no_capacity`: chosen, but no candidate broker is below the comfort level.
    `sole_bundle`: overloaded brokers with a single bundle ("HIGH USAGE WARNING")."""

    overload_threshold: int
    comfort_load_threshold: int
    unloads: list[tuple[str, str]] = []
    dry_run: list[tuple[str, str]] = []
    recently_unloaded: list[tuple[str, str]] = []
    no_capacity: list[tuple[str, str]] = []
    sole_bundle: list[str] = []


def is_broker_available_for_rebalancing(
    bundle: str,
    max_load_level: float,
    sorted_rankings: Mapping[int, set[str]],
    reports: Mapping[str, LoadReport],
    policies: PolicyView,
    bundle_ranges: BundleRangeCache,
) -> bool:
    """`isBrokerAvailableForRebalancing`: some final candidate for the bundle's *namespace* is below
    `max_load_level` on bandwidth in/out, CPU and direct memory."""
    available = {rank: sorted(b) for rank, b in sorted(sorted_rankings.items())}
    for _rank, broker in final_candidates(namespace_of_bundle(bundle), available, reports, policies, bundle_ranges):
        report = reports.get(broker)
        if report is not None and is_below_load_level(report.system_resource_usage, max_load_level):
            return True
    return False


def do_load_shedding(
    reports: Mapping[str, LoadReport],
    sorted_rankings: Mapping[int, set[str]],
    policies: PolicyView,
    bundle_ranges: BundleRangeCache,
    settings: SimpleSettings,
    conf: ServiceConfig,
    recently_unloaded: Mapping[str, int],
    now_ms: int,
) -> SheddingPlan:
    """`doLoadShedding` + `unloadNamespacesFromOverLoadedBrokers`, as a plan.

    `recently_unloaded` is the bundle -> time (ms) of the cache entries written so far; an entry
    counts while `now_ms - time < grace period`."""
    plan = SheddingPlan(overload_threshold=settings.overload_threshold,
                        comfort_load_threshold=settings.comfort_load_threshold)
    grace_ms = conf.load_balancer_shedding_grace_period_minutes * 60_000
    shedding_enabled = conf.load_balancer_enabled and conf.load_balancer_shedding_enabled
    for broker in sorted(reports):
        report = reports[broker]
        usage = report.system_resource_usage
        if not is_above_load_level(usage, settings.overload_threshold):
            continue
        if len(report.bundle_stats) == 1:
            plan.sole_bundle.append(broker)
            continue
        ordered = sorted_bundle_stats(report.bundle_stats, bottleneck_resource_type(usage))
        if not ordered:
            continue
        bundle = ordered[0]
        if not is_broker_available_for_rebalancing(bundle, settings.comfort_load_threshold, sorted_rankings,
                                                   reports, policies, bundle_ranges):
            plan.no_capacity.append((broker, bundle))
            continue
        written = recently_unloaded.get(bundle)
        if written is not None and now_ms - written < grace_ms:
            plan.recently_unloaded.append((broker, bundle))
        elif shedding_enabled:
            plan.unloads.append((broker, bundle))
        else:
            plan.dry_run.append((broker, bundle))
    return plan
