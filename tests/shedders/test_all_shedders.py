"""One suite over every built-in shedder (as anyio's suite runs over every backend)."""

from __future__ import annotations

import json
import random

import msgspec
import pytest

import shedders
from emulator.model.config import ServiceConfig
from emulator.model.loaddata import LoadData
from tests.shedders.builders import MIB, broker, bundle

CONF = ServiceConfig()


def hot_and_cold() -> LoadData:
    """hot:1 at 95 % with 8 bundles and lots of traffic, warm:1 at 50 %, cold:1 at 10 %.
    Every built-in shedder moves something off hot:1 within a few calls."""
    ld = LoadData()
    specs = {"hot:1": (95, 8, 40.0), "warm:1": (50, 3, 5.0), "cold:1": (10, 2, 0.5)}
    for name, (pct, n, mib) in specs.items():
        b = broker(cpu=(pct, 100), thr_in=n * mib * MIB, rate_in=n * mib * 1000)
        for j in range(n):
            bundle_name = f"t/n{name[0]}/0x{j:08x}_0x{j + 1:08x}"
            b.local_data.bundles.add(bundle_name)
            ld.bundle_data[bundle_name] = bundle(thr_in=(mib - j * 0.1) * MIB, rate_in=(mib - j * 0.1) * 1000)
        ld.broker_data[name] = b
    return ld


@pytest.fixture(params=shedders.names())
def name(request: pytest.FixtureRequest) -> str:
    return request.param


def run(name: str, seed: int, calls: int = 3) -> list[list[tuple[str, str]]]:
    h = shedders.create(name, random.Random(seed))
    ld = hot_and_cold()
    h.on_active_brokers_change(set(ld.broker_data))
    outs = []
    for _ in range(calls):
        out = h.find_bundles_for_unloading(ld, CONF)
        h.on_unload_attempt_completed(out)
        outs.append(out)
    return outs


def test_sheds_owned_bundles_from_the_hot_broker(name: str) -> None:
    ld = hot_and_cold()
    outs = run(name, 1)
    flat = [pair for out in outs for pair in out]
    assert flat, f"{name} shed nothing in 3 calls"
    for broker_id, bundle_name in flat:
        assert isinstance(broker_id, str) and isinstance(bundle_name, str)
        assert bundle_name in ld.broker_data[broker_id].local_data.bundles
    assert {b for b, _ in flat} == {"hot:1"}
    for out in outs:
        assert len(out) == len(set(out))


def test_empty_load_data_gives_nothing(name: str) -> None:
    h = shedders.create(name, random.Random(1))
    for _ in range(3):
        assert h.find_bundles_for_unloading(LoadData(), CONF) == []
        assert isinstance(h.find_bundles_for_unloading_explained(LoadData(), CONF).explanation, dict)


def test_deterministic_for_a_seeded_rng(name: str) -> None:
    assert run(name, 11, calls=5) == run(name, 11, calls=5)


def test_explanation_is_json_and_lists_the_selection(name: str) -> None:
    h = shedders.create(name, random.Random(2))
    ld = hot_and_cold()
    for _ in range(3):
        plan = shedders.find_bundles_for_unloading_explained(h, ld, CONF)
        out, e = plan.bundles, plan.explanation
        assert isinstance(e, dict) and e["shedder"] == name
        assert e["selected"] == [list(p) for p in out]
        json.dumps(e)  # plain dicts, lists, floats, str
        msgspec.json.encode(e)


def test_satisfies_the_protocol(name: str) -> None:
    h = shedders.create(name, random.Random(0))
    assert isinstance(h, shedders.LoadSheddingStrategy)
    h.on_active_brokers_change(set())
    h.on_unload_attempt_completed([])


def test_does_not_mutate_the_load_data(name: str) -> None:
    ld = hot_and_cold()
    before = msgspec.json.encode(ld, order="deterministic")
    h = shedders.create(name, random.Random(0))
    for _ in range(3):
        h.find_bundles_for_unloading(ld, CONF)
    assert msgspec.json.encode(ld, order="deterministic") == before


def test_the_explained_plan_is_the_plain_one(name: str) -> None:
    plain, explained = shedders.create(name, random.Random(3)), shedders.create(name, random.Random(3))
    ld = hot_and_cold()
    for _ in range(3):
        out = plain.find_bundles_for_unloading(ld, CONF)
        plan = shedders.find_bundles_for_unloading_explained(explained, ld, CONF)
        assert plan.bundles == out and plan.explanation is not None
        plain.on_unload_attempt_completed(out)
        explained.on_unload_attempt_completed(plan.bundles)


def test_a_subclass_that_overrides_the_plain_method_is_called_through_it() -> None:
    from shedders.threshold_shedder import ThresholdShedder

    class Nothing(ThresholdShedder):
        def find_bundles_for_unloading(self, load_data, conf):  # type: ignore[no-untyped-def]
            return []

    assert shedders.find_bundles_for_unloading_explained(
        Nothing(random.Random(0)), hot_and_cold(), CONF) == shedders.UnloadPlan([])


# --- each plain method written once, in the base -----------------------------------------------------

PLAIN = ("__init__", "find_bundles_for_unloading", "on_active_brokers_change", "on_unload_attempt_completed",
         "warm_up", "select_broker", "select_broker_for_bundle")
OWN = {"AvgShedder": {"__init__", "on_unload_attempt_completed"},   # hit counters and the plan of #26246
       "ThresholdShedder": {"warm_up"}}                                # its EMA warm start


def test_a_builtin_writes_its_explained_method_and_only_the_hooks_it_needs() -> None:
    """SimPy-style: `find_bundles_for_unloading` comes from `BaseShedder`, the constructor and the broker
    hook from `DecisionBase` (or `UsageHistory`), AvgShedder's plain placement from BasePlacementStrategy."""
    for name in shedders.names():
        cls = type(shedders.create(name, random.Random(1)))
        assert "find_bundles_for_unloading_explained" in vars(cls), name
        assert set(vars(cls)) & set(PLAIN) == OWN.get(name, set()), name


class _OnlyExplained(shedders.BaseShedder):
    def find_bundles_for_unloading_explained(self, load_data, conf):  # type: ignore[no-untyped-def]
        return shedders.UnloadPlan([("b:1", "t/n/0x0_0x1")], {"why": "test"})


def test_a_new_shedder_writes_only_its_explained_method() -> None:
    h = _OnlyExplained(random.Random(1))
    assert h.find_bundles_for_unloading(LoadData(), CONF) == [("b:1", "t/n/0x0_0x1")]
    assert shedders.find_bundles_for_unloading_explained(h, LoadData(), CONF).explanation == {"why": "test"}
    assert h.on_active_brokers_change({"b:1"}) is None and h.on_unload_attempt_completed([]) is None
