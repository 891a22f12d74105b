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
