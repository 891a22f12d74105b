"""Every built-in scenario runs under the Extensible load manager (`--load-manager
ExtensibleLoadManagerImpl`): cut to a short emulated time past its event, invariant checker on, no actor
fault, every handle attached at the end, and the Extensible machinery at work (assignments through the
channel, no ownership node, TransferShedder as the unload strategy). Plus what switching a scenario does to
its configuration and a sweep's `load_manager` grid key."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from emulator.cluster import load_manager as lm
from emulator.cluster.events import ExtensibleAssignment
from emulator.loadmanagers.extensible.actors.extensible_wrapper import TRANSFER_SHEDDER, ExtensibleLoadManagerWrapper
from emulator.model.errors import UsageError
from emulator.pipeline.options import parse_grid
from emulator.runtime import VirtualClock
from emulator.runtime import run as run_on
from emulator.workload import library
from emulator.workload.build import service_config

from tests.workload.harness import observed

MIN = 60.0
CUT = {"pulsar3-restart": None, "pulsar-large": None, "default": 20 * MIN, "pulsar3-split": 10 * MIN}
"""Emulated seconds each scenario runs here (the default: 5 min past its last event, at most 25 min);
None: too big for the fast suite (the restart case runs in bench.pulsar3; pulsar-large's 1/100 runs under
the Extensible load manager in test_pulsar_large.py)."""


def extensible(scenario: Any) -> Any:
    settings = {**scenario.settings, "loadManagerClassName": lm.EXTENSIBLE,
                "loadBalancerLoadSheddingStrategy": TRANSFER_SHEDDER}
    cluster = msgspec.structs.replace(scenario.cluster, shedder=None)   # [cluster] shedder outranks [settings]
    return msgspec.structs.replace(scenario, settings=settings, cluster=cluster)


def duration_of(scenario: Any) -> float:
    name = scenario.name
    if name in CUT and CUT[name] is not None:
        return float(CUT[name])
    last = max((float(e.at) for e in scenario.events), default=0.0)
    return min(last + 5 * MIN, 25 * MIN, float(scenario.duration))


async def _run(name: str) -> dict[str, Any]:
    scenario = extensible(library.load(name))
    assignments: list[ExtensibleAssignment] = []
    async with observed(scenario, seed=1, check_interval=5.0) as o:
        cluster = o.run.cluster
        cluster.events.subscribe(lambda e: assignments.append(e) if isinstance(e, ExtensibleAssignment) else None)
        await o.run.sleep_until(duration_of(scenario))
        managers = [b.load_manager for b in cluster.brokers.values() if b.alive]
        clients = list(cluster.clients.values())
        handles = [h for c in clients for h in c.handles.values()]
        return {
            "extensible": all(isinstance(m, ExtensibleLoadManagerWrapper) for m in managers),
            "shedder": {type(m.unload_strategy).__name__ for m in managers},
            "assignments": len(assignments),
            "stated": scenario.initial is not None,
            "ownership_nodes": [p for p, _ in cluster.store.peek_prefix("/namespace/") if p.count("/") >= 4],
            "owned": len(cluster.ownership()),
            "failures": list(cluster.system.failures),
            "violations": len(cluster.invariants.violations) if cluster.invariants else 0,
            "handles": len(handles),
            "attached": sum(1 for h in handles if h.state == "connected"),
            "closed_or_failed": sum(1 for h in handles if h.state in ("closed", "failed")),
        }


@pytest.mark.parametrize("name", [n for n in library.names() if CUT.get(n, 0) is not None])
def test_every_builtin_scenario_runs_under_the_extensible_load_manager(name: str):
    got = run_on(_run, name, clock=VirtualClock())
    assert got["extensible"] and got["shedder"] == {"TransferShedder"}
    assert got["failures"] == [] and got["violations"] == 0
    assert got["owned"] >= 1
    assert got["assignments"] >= 1 or got["stated"]       # a stated cluster's owners are written at t = 0
    assert got["ownership_nodes"] == []                   # ownership lives in the channel only
    assert got["attached"] + got["closed_or_failed"] == got["handles"], got


def test_switching_a_scenario_to_extensible_configures_transfer_shedder_unless_a_shedder_is_named():
    default = library.load("default")
    conf = service_config(default, None, {"load_manager": "ExtensibleLoadManagerImpl"})
    assert conf.load_manager_class_name == lm.EXTENSIBLE
    assert conf.load_balancer_load_shedding_strategy == TRANSFER_SHEDDER
    named = service_config(default, None, {"load_manager": "ExtensibleLoadManagerImpl",
                                           "shedder": "ThresholdShedder"})
    assert named.load_balancer_load_shedding_strategy == "ThresholdShedder"   # Pulsar's own fallback then
    modular = service_config(default, None, {"load_manager": "ModularLoadManagerImpl"})
    assert modular.load_balancer_load_shedding_strategy == "ThresholdShedder"


def test_a_sweep_grid_takes_load_manager_by_short_or_full_class_name():
    grid = parse_grid([f"load_manager=ModularLoadManagerImpl,{lm.EXTENSIBLE}"])
    assert grid == {"load_manager": ["ModularLoadManagerImpl", lm.EXTENSIBLE]}
    with pytest.raises(UsageError, match="load_manager = 'Foo': unknown load manager"):
        parse_grid(["load_manager=Foo"])
