"""`drive`: play a scenario against a running cluster.

Order: namespaces (with their bundle counts or [initial] boundaries, and anti-affinity groups), the
[initial] owners (initial_state.py), clients, the producers and consumers of every topic (spread over
`[clients] connect_over`), the consumer-jitter actors and, with a warm start, the warm reports once
they are connected; then each event at its time. Events start in time order (file order among equal
times) and each runs in its own task, so a long one (a rolling restart) does not delay the next.
`drive` returns when every event has been applied; the clients and jitter actors live on in the
cluster's actor system, and the caller decides how long the run lasts.

An event that cannot be applied (a broker that is not live any more, an unload the broker refuses) does
not end the run: it is logged, emitted as `ScenarioEventFailed` and kept in `workload.errors`.
"""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING, Any

import anyio
import structlog

from emulator.cluster.events import ScenarioEventFailed

from .events import APPLY
from .initial_state import place_owners, warm_start
from .loader import iter_events
from .policy_events import POLICY_APPLY, write_policies
from .population import Population
from .schema import Scenario, verb_of

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster

    from .build import Workload

__all__ = ["create_namespaces", "drive"]

_APPLY = {**APPLY, **POLICY_APPLY}
"""Each event type's function (events.py; policy_events.py for isolation policies, domains, groups)."""


async def create_namespaces(cluster: "Cluster", scenario: Scenario) -> None:
    """Write every namespace's local policies; anti-affinity groups need the cluster's hook; [initial]
    boundaries are written as the namespace's bundles."""
    supports_group = "anti_affinity_group" in inspect.signature(cluster.create_namespace).parameters
    boundaries = {ns.name: [int(b, 16) for b in ns.boundaries]
                  for ns in (scenario.initial.namespaces if scenario.initial else []) if ns.boundaries}
    for ns in scenario.namespaces:
        if ns.name in boundaries:
            await cluster.create_namespace(ns.name, ns.bundles, anti_affinity_group=ns.anti_affinity_group,
                                           boundaries=boundaries[ns.name])
        elif ns.anti_affinity_group is not None and supports_group:
            await cluster.create_namespace(ns.name, ns.bundles,
                                           anti_affinity_group=ns.anti_affinity_group)
        else:
            if ns.anti_affinity_group is not None:
                structlog.get_logger("workload").warning(
                    "anti-affinity group ignored: the cluster cannot write it",
                    namespace=ns.name, group=ns.anti_affinity_group)
            await cluster.create_namespace(ns.name, ns.bundles)


async def drive(cluster: "Cluster", scenario: Scenario, workload: "Workload") -> None:
    clock = cluster.system.clock
    if workload.t0 is None:
        workload.t0 = clock.now()
    workload.traffic.origin = workload.t0
    await create_namespaces(cluster, scenario)
    await write_policies(cluster, scenario)
    plan = workload.initial
    if plan is not None:
        await place_owners(cluster, plan, workload)
    population = Population(cluster, scenario, workload)
    population.start_clients()
    population.start_jitter()
    async with anyio.create_task_group() as tg:
        tg.start_soon(population.connect, float(scenario.clients.connect_over))
        if plan is not None and plan.warm > 0:
            tg.start_soon(functools.partial(warm_start, cluster, plan, workload, connect_timeout=float(
                scenario.clients.connect_over) + 120.0))
        for index, event in iter_events(scenario):
            delay = workload.t0 + event.at - clock.now()
            if delay > 0:
                await anyio.sleep(delay)
            tg.start_soon(_apply, cluster, workload, event, index)


async def _apply(cluster: "Cluster", workload: "Workload", event: Any, index: int) -> None:
    try:
        await _APPLY[type(event)](cluster, workload, event)
    except Exception as e:  # noqa: BLE001 - a failed event is reported, the run goes on
        error = _reason(e)
        workload.errors.append(f"events[{index}] ({verb_of(event)}): {error}")
        cluster.events.emit(ScenarioEventFailed(event=verb_of(event), index=index, error=error))
        structlog.get_logger("workload").warning("scenario event failed", verb=verb_of(event),
                                                 index=index, error=error)


def _reason(e: BaseException) -> str:
    """The first real error inside task-group wrappers, as `Type: message`."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    text = str(e)
    if isinstance(e, ValueError):
        return text
    return f"{type(e).__name__}: {text}" if text else type(e).__name__
