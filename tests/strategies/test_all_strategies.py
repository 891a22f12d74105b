"""One suite over every built-in placement strategy (as anyio's suite runs over every backend)."""

from __future__ import annotations

import random

import pytest

import strategies
from emulator.model.config import ServiceConfig
from emulator.model.loaddata import (
    BrokerData,
    BundleData,
    LoadData,
    LocalBrokerData,
    ResourceUsage,
    TimeAverageBrokerData,
)

CONF = ServiceConfig()


def load_data() -> LoadData:
    def broker(cpu: float, rate: float) -> BrokerData:
        return BrokerData(
            local_data=LocalBrokerData(
                cpu=ResourceUsage(usage=cpu, limit=100.0),
                bundles={"t/n/0x00000000_0xffffffff"},
                msg_rate_in=rate,
            ),
            time_average_data=TimeAverageBrokerData(long_term_msg_rate_in=rate),
        )

    return LoadData(broker_data={f"b{i}:8080": broker(10.0 * i, 100.0 * i) for i in range(1, 6)})


@pytest.fixture(params=strategies.names())
def name(request: pytest.FixtureRequest) -> str:
    return request.param


def test_returns_a_candidate(name: str) -> None:
    s = strategies.create(name, random.Random(5))
    cands = {"b2:8080", "b4:8080", "b5:8080"}
    for _ in range(5):
        assert s.select_broker(cands, BundleData.default(), load_data(), CONF) in cands


def test_empty_candidates_give_none(name: str) -> None:
    s = strategies.create(name, random.Random(5))
    assert s.select_broker(set(), BundleData.default(), load_data(), CONF) is None


def test_deterministic_for_a_seeded_rng(name: str) -> None:
    def run(seed: int) -> list[str | None]:
        s = strategies.create(name, random.Random(seed))
        ld = load_data()
        s.on_active_brokers_change(set(ld.broker_data))
        out = []
        for i in range(20):
            cands = {b for j, b in enumerate(sorted(ld.broker_data)) if (i + j) % 3}
            out.append(s.select_broker(cands, BundleData.default(), ld, CONF))
        return out

    assert run(11) == run(11)


def test_select_broker_for_bundle_defaults_to_select_broker(name: str) -> None:
    a = strategies.create(name, random.Random(9))
    b = strategies.create(name, random.Random(9))
    cands = {"b1:8080", "b3:8080"}
    direct = a.select_broker(cands, BundleData.default(), load_data(), CONF)
    via_hook = strategies.select_broker_for_bundle(b, cands, "t/n/0x0_0x1", BundleData.default(), load_data(), CONF)
    assert direct == via_hook


def test_satisfies_the_protocol(name: str) -> None:
    assert isinstance(strategies.create(name, random.Random(0)), strategies.PlacementStrategy)


def test_the_explained_selection_is_the_plain_one_with_its_scores(name: str) -> None:
    plain, explained = strategies.create(name, random.Random(4)), strategies.create(name, random.Random(4))
    ld = load_data()
    for i in range(10):
        cands = {b for j, b in enumerate(sorted(ld.broker_data)) if (i + j) % 3}
        chosen = plain.select_broker_for_bundle(cands, "t/n/0x0_0x1", BundleData.default(), ld, CONF)
        selection = strategies.select_broker_explained(explained, cands, "t/n/0x0_0x1",
                                                       BundleData.default(), ld, CONF)
        assert selection.broker == chosen
        assert selection.scores is None or set(selection.scores) <= cands


class _Pinned(strategies.BasePlacementStrategy):
    """A user's strategy: no scores."""

    def select_broker(self, candidates, bundle_to_assign, load_data, conf):  # type: ignore[no-untyped-def]
        return min(candidates, default=None)


def test_a_user_strategy_is_called_through_select_broker_and_gives_no_scores() -> None:
    selection = strategies.select_broker_explained(_Pinned(random.Random(0)), {"b3:8080", "b2:8080"},
                                                   "t/n/0x0_0x1", BundleData.default(), load_data(), CONF)
    assert selection == strategies.Selection("b2:8080")


def test_a_subclass_that_overrides_select_broker_is_not_bypassed_by_the_explained_method() -> None:
    from strategies.least_long_term_message_rate import LeastLongTermMessageRate

    class Busiest(LeastLongTermMessageRate):
        def select_broker(self, candidates, bundle_to_assign, load_data, conf):  # type: ignore[no-untyped-def]
            return max(candidates, default=None)

    cands = {"b1:8080", "b5:8080"}
    base = strategies.select_broker_explained(LeastLongTermMessageRate(random.Random(0)), cands,
                                              "t/n/0x0_0x1", BundleData.default(), load_data(), CONF)
    assert base.broker == "b1:8080" and base.scores == {"b1:8080": 100.0, "b5:8080": 500.0}
    mine = strategies.select_broker_explained(Busiest(random.Random(0)), cands, "t/n/0x0_0x1",
                                              BundleData.default(), load_data(), CONF)
    assert mine == strategies.Selection("b5:8080")


# --- each plain method written once, in the base -----------------------------------------------------

PLAIN = ("__init__", "select_broker", "select_broker_for_bundle", "on_active_brokers_change")


def test_a_builtin_that_explains_writes_no_plain_method() -> None:
    """SimPy-style: a built-in writes `select_broker_explained` (or, without scores, `select_broker`) and
    its own state; `select_broker`, `select_broker_for_bundle`, the constructor and the broker hook come
    from `BasePlacementStrategy` (and `UsageHistory` for the EMA two of them keep)."""
    for name in strategies.names():
        cls = type(strategies.create(name, random.Random(1)))
        assert issubclass(cls, strategies.BasePlacementStrategy), name
        written = set(vars(cls)) & set(PLAIN)
        if "select_broker_explained" in vars(cls):   # AvgShedder's constructor: its hit counters and plan
            assert written == ({"__init__"} if name == "AvgShedder" else set()), (name, written)
        else:   # RoundRobinBrokerSelector: a plain select_broker, and its counter and cache
            assert written == {"__init__", "select_broker"}, (name, written)


class _OnlyExplained(strategies.BasePlacementStrategy):
    """A new strategy: one method."""

    def select_broker_explained(self, candidates, bundle_name, bundle_to_assign, load_data, conf):  # type: ignore[no-untyped-def]
        pick = max(sorted(candidates), default=None)
        return strategies.Selection(pick, {"named": 1.0} if bundle_name else None)


def test_a_new_strategy_writes_only_its_explained_method() -> None:
    s = _OnlyExplained(random.Random(1))
    args = (BundleData.default(), load_data(), CONF)
    assert s.select_broker({"a", "b"}, *args) == "b"
    assert s.select_broker_for_bundle({"a", "b"}, "t/n/0x0_0x1", *args) == "b"
    assert strategies.select_broker_explained(s, {"a", "b"}, "t/n/0x0_0x1", *args).scores == {"named": 1.0}
    assert s.on_active_brokers_change({"a"}) is None
    with pytest.raises(TypeError, match="rng must be a random.Random"):
        _OnlyExplained(7)  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError, match="defines neither select_broker_explained nor select_broker"):
        strategies.BasePlacementStrategy(random.Random(1)).select_broker({"a"}, *args)
