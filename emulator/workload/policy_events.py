"""Placement policies from a scenario: `[[isolation_policies]]` and `[[failure_domains]]` written before
the traffic starts, and the policy events (set/delete isolation policy, set/delete failure domain, set
anti-affinity group) applied through the cluster's admin operations (emulator/cluster/policy_admin.py),
so a scenario changes policies exactly as pulsar-admin would.

Broker names in a failure domain take `:8080` when given without a port, as everywhere in scenarios.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from emulator.cluster.policy_admin import isolation_policy_from

from .build import broker_id
from .schema import (
    DeleteFailureDomain,
    DeleteIsolationPolicy,
    Scenario,
    SetAntiAffinityGroup,
    SetFailureDomain,
    SetIsolationPolicy,
)

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster

    from .build import Workload

__all__ = ["POLICY_APPLY", "write_policies"]


async def write_policies(cluster: "Cluster", scenario: Scenario, *, settle_timeout: float = 60.0) -> None:
    """The scenario's isolation policies and failure domains, in file order (nothing to unload yet).

    They are the cluster's state at the run start, so the first lookups must see them: the traffic
    waits until the running leader's view holds them (its watch-driven re-read takes a few metadata
    round trips), at most `settle_timeout` emulated seconds."""
    admin = cluster.policies
    domains = {broker_id(b): d.name for d in scenario.failure_domains for b in d.brokers}
    for d in scenario.failure_domains:
        await admin.set_failure_domain(d.name, [broker_id(b) for b in d.brokers])
    wanted = []
    for p in scenario.isolation_policies:
        await admin.set_isolation_policy(p.name, p.data(), unload=False)
        wanted.append(isolation_policy_from(p.data()))
    if not wanted and not domains:
        return
    if not cluster.conf.failure_domains_enabled:
        domains = {}

    def applied() -> bool:
        view = cluster.leader_policies()
        if view is None:
            return cluster.leader() is None  # no leader yet: it reads them when it starts
        return (all(p in view.isolation_policies for p in wanted)
                and all(view.failure_domain(b) == d for b, d in domains.items()))

    try:
        await cluster.wait_until(applied, timeout=settle_timeout, poll=0.01, what="the policies at the leader")
    except TimeoutError:
        pass  # the leader is changing hands: its successor reads the policies when it starts


def _emit(cluster: "Cluster", ev: Any, **fields: Any) -> None:
    from .events import _emit as emit_event

    emit_event(cluster, ev, **fields)


async def set_isolation_policy(cluster: "Cluster", w: "Workload", ev: SetIsolationPolicy) -> None:
    _emit(cluster, ev)
    await cluster.policies.set_isolation_policy(ev.name, ev.data(), unload=ev.unload)


async def delete_isolation_policy(cluster: "Cluster", w: "Workload", ev: DeleteIsolationPolicy) -> None:
    _emit(cluster, ev)
    await cluster.policies.delete_isolation_policy(ev.name)


async def set_failure_domain(cluster: "Cluster", w: "Workload", ev: SetFailureDomain) -> None:
    brokers = [broker_id(b) for b in ev.brokers]
    _emit(cluster, ev, brokers=brokers)
    await cluster.policies.set_failure_domain(ev.name, brokers)


async def delete_failure_domain(cluster: "Cluster", w: "Workload", ev: DeleteFailureDomain) -> None:
    _emit(cluster, ev)
    await cluster.policies.delete_failure_domain(ev.name)


async def set_anti_affinity_group(cluster: "Cluster", w: "Workload", ev: SetAntiAffinityGroup) -> None:
    _emit(cluster, ev)
    await cluster.policies.set_anti_affinity_group(ev.namespace, ev.group)


POLICY_APPLY: dict[type, Callable[..., Awaitable[None]]] = {
    SetIsolationPolicy: set_isolation_policy,
    DeleteIsolationPolicy: delete_isolation_policy,
    SetFailureDomain: set_failure_domain,
    DeleteFailureDomain: delete_failure_domain,
    SetAntiAffinityGroup: set_anti_affinity_group,
}
