"""The settings SimpleLoadManagerImpl reads: deprecated broker.conf keys and `/loadbalance/settings/*`."""

from __future__ import annotations

from emulator.model.config import ServiceConfig
from emulator.loadmanagers.simple.model.settings import (
    LOAD_FACTOR_CPU_PATH,
    OVERLOAD_THRESHOLD_PATH,
    STRATEGY_PATH,
    UNDERLOAD_THRESHOLD_PATH,
    SimpleSettings,
    initial_load_factors,
    load_factor_writes,
)


def test_defaults_are_the_deprecated_keys_pulsar_defaults():
    settings = SimpleSettings.resolve(ServiceConfig())
    assert settings == SimpleSettings(strategy="leastLoadedServer", underload_threshold=50, overload_threshold=85,
                                      comfort_load_threshold=65, auto_bundle_split_enabled=True)
    assert settings.is_centralized
    props = ServiceConfig().to_properties()
    for key in ("loadBalancerPlacementStrategy", "loadBalancerBrokerUnderloadedThresholdPercentage",
                "loadBalancerBrokerOverloadedThresholdPercentage", "loadBalancerBrokerComfortLoadLevelPercentage",
                "loadBalancerResourceQuotaUpdateIntervalMinutes"):
        assert key in props


def test_broker_conf_and_stored_settings_override_in_that_order():
    conf = ServiceConfig.from_properties("loadBalancerPlacementStrategy=weightedRandomSelection\n"
                                         "loadBalancerBrokerOverloadedThresholdPercentage=80\n")
    settings = SimpleSettings.resolve(conf)
    assert (settings.strategy, settings.overload_threshold, settings.is_centralized) == ("weightedRandomSelection", 80,
                                                                                          False)
    stored = {OVERLOAD_THRESHOLD_PATH: {"overloadThreshold": "90.9"}, STRATEGY_PATH: {"loadBalancerStrategy":
                                                                                      "leastMsgPerSecond"},
              UNDERLOAD_THRESHOLD_PATH: {"underloadThreshold": "not a number"}}
    settings = SimpleSettings.resolve(conf, stored)
    assert (settings.strategy, settings.overload_threshold, settings.underload_threshold) == ("leastMsgPerSecond", 90,
                                                                                              50)
    assert settings.is_centralized


def test_an_unknown_strategy_becomes_weighted_random_selection():
    conf = ServiceConfig.from_properties("loadBalancerPlacementStrategy=roundRobin\n")
    assert SimpleSettings.resolve(conf).strategy == "weightedRandomSelection"


def test_load_factors_are_written_and_read_back_as_java_doubles():
    writes = load_factor_writes(0.025, 25.0)
    assert writes == [("/loadbalance/settings/load_factor_cpu", {"loadFactorCPU": "0.025"}),
                      ("/loadbalance/settings/load_factor_mem", {"loadFactorMemory": "25.0"})]
    assert initial_load_factors({LOAD_FACTOR_CPU_PATH: {"loadFactorCPU": "1.0E-4"}}) == (1e-4, 25.0)
    assert load_factor_writes(1e-4, 50.0)[0][1] == {"loadFactorCPU": "1.0E-4"}
