"""The public API of DESIGN.md is importable from the top-level packages, each name exported once."""

import random

import emulator
import strategies
from emulator.model import bundles, loaddata


def test_top_level_exports_match_the_design_contract():
    expected = {"ServiceConfig", "ResourceUsage", "NamespaceBundleStats", "LocalBrokerData",
                "TimeAverageMessageData", "BundleData", "TimeAverageBrokerData", "BrokerData", "LoadData"}
    assert set(emulator.__all__) == expected
    for name in expected:
        assert getattr(emulator, name) is getattr(
            loaddata if name != "ServiceConfig" else emulator.model.config, name)


def test_design_contract_functions_exist_with_their_names():
    assert callable(loaddata.need_broker_data_update)
    for name in ("topic_hash", "NamespaceBundles", "split_boundaries"):
        assert hasattr(bundles, name)
    s = strategies.create("LeastLongTermMessageRate", rng=random.Random(7))
    assert callable(s.select_broker) and callable(s.on_active_brokers_change)
    assert "LeastLongTermMessageRate" in strategies.names()
