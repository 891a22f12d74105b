"""Dynamic configuration rules (emulator.model.config): which keys Pulsar changes at runtime, the
checks and 412 answers of BrokersBase, the loadManagerClassName validator, the runtime view."""

from __future__ import annotations

import pytest

from emulator.model.service_config import SETTINGS
from emulator.model.config import (
    DYNAMIC_KEYS,
    LOAD_MANAGER_CLASSES,
    DynamicConfigError,
    ServiceConfig,
    check_dynamic_delete,
    check_dynamic_update,
    dynamic_configuration_names,
    is_dynamic_configuration,
    runtime_configuration,
    validate_dynamic_configuration,
)

# A sample of ServiceConfiguration.java @0023b937, read field by field: dynamic = true ...
DYNAMIC = ["loadManagerClassName", "loadBalancerLoadSheddingStrategy", "loadBalancerSheddingEnabled",
           "loadBalancerSheddingIntervalMinutes", "loadBalancerBrokerOverloadedThresholdPercentage",
           "loadBalancerAutoBundleSplitEnabled", "maxConcurrentLookupRequest",
           "exposeBundlesMetricsInPrometheus", "loadBalancerBandwithInResourceWeight",
           "defaultNumberOfNamespaceBundles", "failureDomainsEnabled", "namespaceBundleUnloadingTimeoutMs",
           "brokerShutdownTimeoutMs", "loadBalancerSheddingExcludedNamespaces",
           "loadBalancerServiceUnitTableViewSyncer"]  # pulsar-site reference configuration: Dynamic true
# ... and without it (a broker restart is needed)
STATIC = ["loadBalancerEnabled", "loadBalancerLoadPlacementStrategy", "lowerBoundarySheddingEnabled",
          "loadBalancerPlacementStrategy", "statsUpdateFrequencyInSecs", "topicBundleAssignmentStrategy",
          "loadBalancerResourceQuotaUpdateIntervalMinutes", "loadBalancerOverrideBrokerNicSpeedGbps",
          "loadBalancerBrokerUnderloadedThresholdPercentage", "loadBalancerBrokerComfortLoadLevelPercentage",
          "loadBalancerSplitIntervalMinutes", "metadataStoreSessionTimeoutMillis", "keepAliveIntervalSeconds",
          "zookeeperSessionExpiredPolicy", "enablePersistentTopics",
          # the service-unit state channel's other keys (reference configuration: Dynamic false)
          "loadBalancerInFlightServiceUnitStateWaitingTimeInMillis",
          "loadBalancerServiceUnitStateMonitorIntervalInSeconds",
          "loadManagerServiceUnitStateTableViewClassName", "loadBalancerMultiPhaseBundleUnload"]


@pytest.mark.parametrize("key", DYNAMIC)
def test_pulsar_dynamic_keys_are_dynamic(key: str) -> None:
    assert is_dynamic_configuration(key)
    value = LOAD_MANAGER_CLASSES[1] if key == "loadManagerClassName" else "1"  # the one validator
    check_dynamic_update(key, value)


@pytest.mark.parametrize("key", STATIC)
def test_other_keys_are_412_cant_update_non_dynamic(key: str) -> None:
    assert not is_dynamic_configuration(key)
    with pytest.raises(DynamicConfigError) as info:
        check_dynamic_update(key, "1")
    assert (info.value.status, info.value.reason) == (412, "Can't update non-dynamic configuration")
    assert key in str(info.value) and "--set" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(DynamicConfigError) as info:
        check_dynamic_delete(key)
    assert (info.value.status, info.value.reason) == (412, "Can't delete non-dynamic configuration")


def test_dynamic_keys_are_serviceconfig_keys_and_listed_in_field_order() -> None:
    keys = list(ServiceConfig().to_properties())
    assert DYNAMIC_KEYS <= set(keys)
    names = dynamic_configuration_names()
    assert sorted(names) == sorted(DYNAMIC_KEYS) and names == [k for k in keys if k in DYNAMIC_KEYS]


def test_unknown_and_snake_case_keys_are_not_dynamic_in_pulsar() -> None:
    for key in ("noSuchKey", "load_balancer_shedding_enabled", "emulator_instant_stats"):
        with pytest.raises(DynamicConfigError, match="Can't update non-dynamic configuration"):
            check_dynamic_update(key, "true")
    with pytest.raises(DynamicConfigError, match="loadBalancerSheddingEnabled"):   # the hint names it
        check_dynamic_update("load_balancer_shedding_enabled", "true")


def test_load_manager_class_name_validator_accepts_pulsar_load_managers_only() -> None:
    for cls in LOAD_MANAGER_CLASSES:
        assert validate_dynamic_configuration("loadManagerClassName", cls)
        check_dynamic_update("loadManagerClassName", cls)
    assert "org.apache.pulsar.broker.loadbalance.NoopLoadManager" in LOAD_MANAGER_CLASSES
    for bad in ("org.example.MyLoadManager", "ModularLoadManagerImpl", ""):
        assert not validate_dynamic_configuration("loadManagerClassName", bad)
        with pytest.raises(DynamicConfigError) as info:
            check_dynamic_update("loadManagerClassName", bad)
        assert (info.value.status, info.value.reason) == (412, " Invalid dynamic-config value")  # sic
        assert "ExtensibleLoadManagerImpl" in str(info.value)
    assert validate_dynamic_configuration("loadBalancerSheddingEnabled", "anything")  # no validator


def test_runtime_view_renders_every_pulsar_key_as_java_does() -> None:
    conf = ServiceConfig().with_overrides({
        "loadBalancerHistoryResourcePercentage": 0.5, "loadBalancerBundleUnloadMinThroughputThreshold": 1e-5,
        "loadBalancerOverrideBrokerNicSpeedGbps": 25, "loadBalancerSheddingExcludedNamespaces": "b/ns,a/ns",
    }, source="test")
    runtime = runtime_configuration(conf)
    # every Pulsar key, those run.json leaves out at their default (`quiet_default`) too
    assert set(runtime) == {d.key for d in SETTINGS if d.is_pulsar}
    assert "brokerDeduplicationEnabled" in runtime and "brokerDeduplicationEnabled" not in conf.to_properties()
    assert all(isinstance(v, str) for v in runtime.values())
    assert runtime["loadBalancerSheddingEnabled"] == "true"
    assert runtime["loadBalancerBrokerOverloadedThresholdPercentage"] == "85"
    assert runtime["loadBalancerCPUResourceWeight"] == "1.0"                     # Double.toString
    assert runtime["loadBalancerHistoryResourcePercentage"] == "0.5"
    assert runtime["loadBalancerBundleUnloadMinThroughputThreshold"] == "1.0E-5"
    assert runtime["loadBalancerOverrideBrokerNicSpeedGbps"] == "Optional[25.0]"
    empty = runtime_configuration(ServiceConfig())["loadBalancerOverrideBrokerNicSpeedGbps"]
    assert empty == "Optional.empty"
    assert runtime["loadBalancerSheddingExcludedNamespaces"] == "[a/ns, b/ns]"  # a TreeSet
    assert runtime["supportedNamespaceBundleSplitAlgorithms"] == (
        "[range_equally_divide, topic_count_equally_divide, specified_positions_divide, "
        "flow_or_qps_equally_divide]")
