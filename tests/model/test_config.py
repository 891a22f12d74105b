"""ServiceConfig: Pulsar defaults for every key, broker.conf parsing, overrides and errors."""

from __future__ import annotations

import warnings

import msgspec
import pytest

from emulator.model.config import ConfigError, ServiceConfig

IMPL = "org.apache.pulsar.broker.loadbalance.impl."

# spec pulsar-algorithms.md §9 and pulsar-protocol.md §3.4: (Pulsar key, default, Python type)
DEFAULTS = [
    ("loadBalancerEnabled", True, bool),
    ("loadManagerClassName", IMPL + "ModularLoadManagerImpl", str),
    # Extensible load manager: service-unit state channel (pulsar-site reference configuration)
    ("loadBalancerInFlightServiceUnitStateWaitingTimeInMillis", 30000, int),
    ("loadBalancerServiceUnitStateMonitorIntervalInSeconds", 60, int),
    (
        "loadManagerServiceUnitStateTableViewClassName",
        "org.apache.pulsar.broker.loadbalance.extensions.channel.ServiceUnitStateTableViewImpl",
        str,
    ),
    ("loadBalancerServiceUnitTableViewSyncer", "None", str),
    ("loadBalancerMultiPhaseBundleUnload", True, bool),
    ("loadBalancerLoadSheddingStrategy", IMPL + "ThresholdShedder", str),
    ("loadBalancerLoadPlacementStrategy", IMPL + "LeastLongTermMessageRate", str),
    ("loadBalancerPlacementStrategy", "leastLoadedServer", str),
    ("lowerBoundarySheddingEnabled", False, bool),
    ("loadBalancerReportUpdateThresholdPercentage", 10, int),
    ("loadBalancerReportUpdateMinIntervalMillis", 5000, int),
    ("loadBalancerReportUpdateMaxIntervalMinutes", 15, int),
    ("loadBalancerHostUsageCheckIntervalMinutes", 1, int),
    ("loadBalancerSheddingEnabled", True, bool),
    ("loadBalancerSheddingIntervalMinutes", 1, int),
    ("loadBalancerDistributeBundlesEvenlyEnabled", True, bool),
    ("loadBalancerSheddingGracePeriodMinutes", 30, int),
    ("loadBalancerSheddingExcludedNamespaces", [], list),
    ("loadBalancerBrokerMaxTopics", 50000, int),
    ("loadBalancerBrokerOverloadedThresholdPercentage", 85, int),
    ("loadBalancerBrokerThresholdShedderPercentage", 10, int),
    ("loadBalancerAverageResourceUsageDifferenceThresholdPercentage", 10, int),
    ("loadBalancerHistoryResourcePercentage", 0.9, float),
    ("loadBalancerCPUResourceWeight", 1.0, float),
    ("loadBalancerDirectMemoryResourceWeight", 0.0, float),
    ("loadBalancerMemoryResourceWeight", 0.0, float),
    ("loadBalancerBandwidthInResourceWeight", 1.0, float),
    ("loadBalancerBandwidthOutResourceWeight", 1.0, float),
    ("loadBalancerBandwithInResourceWeight", 1.0, float),
    ("loadBalancerBandwithOutResourceWeight", 1.0, float),
    ("loadBalancerBundleUnloadMinThroughputThreshold", 10.0, float),
    ("minUnloadMessage", 1000, int),
    ("minUnloadMessageThroughput", 1048576, int),
    ("maxUnloadPercentage", 0.2, float),
    ("maxUnloadBundleNumPerShedding", -1, int),
    ("atLeastOneBundleSelected", True, bool),
    ("loadBalancerMsgRateDifferenceShedderThreshold", 50.0, float),
    ("loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold", 4.0, float),
    ("loadBalancerAvgShedderLowThreshold", 15, int),
    ("loadBalancerAvgShedderHighThreshold", 40, int),
    ("loadBalancerAvgShedderHitCountLowThreshold", 8, int),
    ("loadBalancerAvgShedderHitCountHighThreshold", 2, int),
    ("loadBalancerAutoBundleSplitEnabled", True, bool),
    ("loadBalancerAutoUnloadSplitBundlesEnabled", True, bool),
    ("loadBalancerNamespaceBundleMaxTopics", 1000, int),
    ("loadBalancerNamespaceBundleMaxSessions", 1000, int),
    ("loadBalancerNamespaceBundleMaxMsgRate", 30000, int),
    ("loadBalancerNamespaceBundleMaxBandwidthMbytes", 100, int),
    ("loadBalancerNamespaceMaximumBundles", 128, int),
    ("flowOrQpsDifferenceThresholdPercentage", 10, int),
    (
        "supportedNamespaceBundleSplitAlgorithms",
        [
            "range_equally_divide",
            "topic_count_equally_divide",
            "specified_positions_divide",
            "flow_or_qps_equally_divide",
        ],
        list,
    ),
    ("defaultNamespaceBundleSplitAlgorithm", "range_equally_divide", str),
    ("defaultNumberOfNamespaceBundles", 4, int),
    (
        "topicBundleAssignmentStrategy",
        "org.apache.pulsar.common.naming.ConsistentHashingTopicBundleAssigner",
        str,
    ),
    ("loadBalancerResourceQuotaUpdateIntervalMinutes", 15, int),
    ("loadBalancerMaxNumberOfBundlesInBundleLoadReport", 10, int),
    ("loadBalancerOverrideBrokerNicSpeedGbps", None, type(None)),
    ("namespaceBundleUnloadingTimeoutMs", 60000, int),
    ("failureDomainsEnabled", False, bool),
    ("preferLaterVersions", False, bool),
    ("enablePersistentTopics", True, bool),
    ("enableNonPersistentTopics", True, bool),
    ("loadBalancerBrokerUnderloadedThresholdPercentage", 50, int),
    ("loadBalancerBrokerComfortLoadLevelPercentage", 65, int),
    # Extensible load manager only (kept, ignored)
    ("loadBalancerDebugModeEnabled", False, bool),
    ("loadBalancerBrokerLoadTargetStd", 0.25, float),
    ("loadBalancerSheddingConditionHitCountThreshold", 3, int),
    ("loadBalancerTransferEnabled", True, bool),
    ("loadBalancerMaxNumberOfBrokerSheddingPerCycle", 3, int),
    ("loadBalanceSheddingDelayInSeconds", 180, int),
    ("loadBalancerBrokerLoadDataTTLInSeconds", 1800, int),
    ("loadBalancerSplitIntervalMinutes", 1, int),
    ("loadBalancerMaxNumberOfBundlesToSplitPerCycle", 10, int),
    ("loadBalancerNamespaceBundleSplitConditionHitCountThreshold", 3, int),
    ("loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds", 3600, int),
    ("loadBalancerSheddingBundlesWithPoliciesEnabled", False, bool),
    # protocol §3.4
    ("maxConcurrentLookupRequest", 50000, int),
    ("maxConcurrentTopicLoadRequest", 5000, int),
    ("brokerShutdownTimeoutMs", 60000, int),
    ("metadataStoreSessionTimeoutMillis", 30000, int),
    ("zooKeeperSessionTimeoutMillis", -1, int),
    ("metadataStoreBatchingEnabled", True, bool),
    ("metadataStoreBatchingMaxDelayMillis", 5, int),
    ("metadataStoreBatchingMaxOperations", 1000, int),
    ("metadataStoreBatchingMaxSizeKb", 128, int),
    ("metadataStoreOperationTimeoutSeconds", 30, int),
    ("zookeeperSessionExpiredPolicy", "reconnect", str),
    ("keepAliveIntervalSeconds", 30, int),
]


@pytest.mark.parametrize(("key", "default", "kind"), DEFAULTS, ids=[d[0] for d in DEFAULTS])
def test_default_of_every_key(key: str, default: object, kind: type) -> None:
    conf = ServiceConfig()
    value = getattr(conf, ServiceConfig.field_name(key))
    assert value == default
    assert type(value) is kind
    assert ServiceConfig.pulsar_name(ServiceConfig.field_name(key)) == key


def test_snake_case_names_follow_pulsar_keys() -> None:
    assert ServiceConfig.field_name("loadBalancerBrokerOverloadedThresholdPercentage") == (
        "load_balancer_broker_overloaded_threshold_percentage"
    )
    assert ServiceConfig.field_name("loadBalancerCPUResourceWeight") == "load_balancer_cpu_resource_weight"
    assert ServiceConfig.field_name("loadBalancerBrokerLoadDataTTLInSeconds") == (
        "load_balancer_broker_load_data_ttl_in_seconds"
    )
    assert ServiceConfig().load_balancer_broker_overloaded_threshold_percentage == 85


def test_every_non_emulator_field_has_a_pulsar_key() -> None:
    for f in msgspec.structs.fields(ServiceConfig):
        key = ServiceConfig.pulsar_name(f.name)
        if f.name.startswith("emulator_"):
            assert key == f.name
        else:
            assert key != f.name or "_" not in f.name
            assert ServiceConfig.field_name(key) == f.name


def test_emulator_switches_default_to_pulsar_behaviour() -> None:
    conf = ServiceConfig()
    assert conf.emulator_preallocation_enabled is True
    assert conf.emulator_unweighted_max_usage is False


def test_unknown_names_raise() -> None:
    with pytest.raises(ValueError, match="nope"):
        ServiceConfig.field_name("nope")
    with pytest.raises(ValueError, match="nope"):
        ServiceConfig.pulsar_name("nope")


# --- deprecated bandwidth weight keys -------------------------------------------------------------


@pytest.mark.parametrize(
    ("new", "old", "effective"),
    [(1.0, 1.0, 1.0), (2.0, 1.0, 2.0), (1.0, 3.0, 3.0), (2.0, 3.0, 2.0), (0.0, 3.0, 0.0)],
)
def test_effective_bandwidth_weights(new: float, old: float, effective: float) -> None:
    conf = ServiceConfig(
        load_balancer_bandwidth_in_resource_weight=new,
        load_balancer_bandwith_in_resource_weight=old,
        load_balancer_bandwidth_out_resource_weight=new,
        load_balancer_bandwith_out_resource_weight=old,
    )
    assert conf.effective_bandwidth_in_resource_weight == effective
    assert conf.effective_bandwidth_out_resource_weight == effective
    assert conf.resource_weights == (1.0, 0.0, effective, effective)


# --- broker.conf parsing ---------------------------------------------------------------------------

BROKER_CONF = """\
# Load balancer
! also a comment
   loadBalancerSheddingIntervalMinutes=5
loadBalancerBrokerOverloadedThresholdPercentage : 90
loadBalancerHistoryResourcePercentage 0.5
loadBalancerSheddingEnabled = FALSE
loadBalancerSheddingExcludedNamespaces=public/a, public/b ,
loadBalancerBrokerMaxTopics=
loadBalancerOverrideBrokerNicSpeedGbps=10
loadBalancerLoadSheddingStrategy=org.apache.pulsar.broker.loadbalance.impl.\\
    UniformLoadShedder

zookeeperServers=zk:2181
clusterName=standalone
zookeeperServers=zk2:2181
"""


def test_from_properties_parses_pulsar_syntax() -> None:
    conf, unknown = ServiceConfig.from_properties_with_unknown(BROKER_CONF, "broker.conf")
    assert conf.load_balancer_shedding_interval_minutes == 5
    assert conf.load_balancer_broker_overloaded_threshold_percentage == 90
    assert conf.load_balancer_history_resource_percentage == 0.5
    assert conf.load_balancer_shedding_enabled is False
    assert conf.load_balancer_shedding_excluded_namespaces == ["public/a", "public/b"]
    assert conf.load_balancer_broker_max_topics == 50000  # empty value keeps the default
    assert conf.load_balancer_override_broker_nic_speed_gbps == 10.0
    assert conf.load_balancer_load_shedding_strategy == IMPL + "UniformLoadShedder"
    assert unknown == ["zookeeperServers", "clusterName"]


def test_from_properties_warns_once_listing_unknown_keys() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        conf = ServiceConfig.from_properties(BROKER_CONF, source="broker.conf")
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "zookeeperServers" in message and "clusterName" in message
    assert message.startswith("broker.conf:")
    assert conf.load_balancer_shedding_interval_minutes == 5


def test_from_properties_without_unknown_keys_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ServiceConfig.from_properties("loadBalancerEnabled=true\n")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "loadBalancerSheddingIntervalMinutes=abc",
            "broker.conf: loadBalancerSheddingIntervalMinutes = 'abc': expected an integer",
        ),
        (
            "loadBalancerSheddingIntervalMinutes=1.5",
            "broker.conf: loadBalancerSheddingIntervalMinutes = '1.5': expected an integer",
        ),
        (
            "loadBalancerHistoryResourcePercentage=x",
            "broker.conf: loadBalancerHistoryResourcePercentage = 'x': expected a number",
        ),
        (
            "loadBalancerEnabled=yes",
            "broker.conf: loadBalancerEnabled = 'yes': expected true or false",
        ),
        (
            "loadBalancerSheddingIntervalMinutes=0",
            "broker.conf: loadBalancerSheddingIntervalMinutes = '0': must be > 0",
        ),
        (
            "loadBalancerBrokerOverloadedThresholdPercentage=-5",
            "broker.conf: loadBalancerBrokerOverloadedThresholdPercentage = '-5': must be >= 0",
        ),
        (
            "loadBalancerCPUResourceWeight=-1",
            "broker.conf: loadBalancerCPUResourceWeight = '-1': must be >= 0",
        ),
        (
            "loadBalancerHistoryResourcePercentage=1.5",
            "broker.conf: loadBalancerHistoryResourcePercentage = '1.5': must be between 0 and 1",
        ),
        (
            "zookeeperSessionExpiredPolicy=restart",
            "broker.conf: zookeeperSessionExpiredPolicy = 'restart': expected one of reconnect, shutdown",
        ),
        (
            "loadBalancerServiceUnitTableViewSyncer=none",
            "broker.conf: loadBalancerServiceUnitTableViewSyncer = 'none': expected one of None, "
            "MetadataStoreToSystemTopicSyncer, SystemTopicToMetadataStoreSyncer",
        ),
        (
            "loadBalancerServiceUnitStateMonitorIntervalInSeconds=0",
            "broker.conf: loadBalancerServiceUnitStateMonitorIntervalInSeconds = '0': must be > 0",
        ),
        (
            "loadBalancerInFlightServiceUnitStateWaitingTimeInMillis=-1",
            "broker.conf: loadBalancerInFlightServiceUnitStateWaitingTimeInMillis = '-1': must be >= 0",
        ),
        (
            "defaultNamespaceBundleSplitAlgorithm=halves",
            "broker.conf: defaultNamespaceBundleSplitAlgorithm = 'halves': expected one of",
        ),
    ],
)
def test_bad_values_raise_one_line_config_error(line: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        ServiceConfig.from_properties(line + "\n", source="broker.conf")
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)


def test_negative_one_is_allowed_where_pulsar_gives_it_a_meaning() -> None:
    conf = ServiceConfig.from_properties(
        "maxUnloadBundleNumPerShedding=-1\nloadBalancerNamespaceBundleMaxSessions=-1\n"
    )
    assert conf.load_balancer_namespace_bundle_max_sessions == -1


# --- overrides -------------------------------------------------------------------------------------


def test_with_overrides_accepts_camel_and_snake_keys_and_typed_values() -> None:
    base = ServiceConfig()
    conf = base.with_overrides(
        {
            "loadBalancerBrokerOverloadedThresholdPercentage": "70",
            "load_balancer_cpu_resource_weight": 2,
            "loadBalancerAutoBundleSplitEnabled": False,
            "loadBalancerSheddingExcludedNamespaces": ["a/b"],
            "emulator_preallocation_enabled": "false",
        },
        source="--set",
    )
    assert conf.load_balancer_broker_overloaded_threshold_percentage == 70
    assert conf.load_balancer_cpu_resource_weight == 2.0
    assert type(conf.load_balancer_cpu_resource_weight) is float
    assert conf.load_balancer_auto_bundle_split_enabled is False
    assert conf.load_balancer_shedding_excluded_namespaces == ["a/b"]
    assert conf.emulator_preallocation_enabled is False
    assert base.load_balancer_broker_overloaded_threshold_percentage == 85  # original untouched


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        ({"loadBalancerFoo": "1"}, "scenario.toml: loadBalancerFoo = '1': unknown key"),
        ({"loadBalancerEnabled": 1}, "scenario.toml: loadBalancerEnabled = 1: expected true or false"),
        ({"loadBalancerBrokerMaxTopics": 1.5}, "scenario.toml: loadBalancerBrokerMaxTopics = 1.5: expected an integer"),
        ({"loadBalancerBrokerMaxTopics": True},
         "scenario.toml: loadBalancerBrokerMaxTopics = True: expected an integer"),
        ({"maxUnloadPercentage": "lots"}, "scenario.toml: maxUnloadPercentage = 'lots': expected a number"),
    ],
)
def test_with_overrides_errors(mapping: dict, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        ServiceConfig().with_overrides(mapping, source="scenario.toml")
    assert str(info.value) == message


def test_direct_construction_is_validated() -> None:
    with pytest.raises(ConfigError, match="load_balancer_shedding_interval_minutes = -1"):
        ServiceConfig(load_balancer_shedding_interval_minutes=-1)


def test_to_properties_round_trips() -> None:
    conf = ServiceConfig().with_overrides(
        {
            "loadBalancerSheddingExcludedNamespaces": "x/y,z/w",
            "loadBalancerHistoryResourcePercentage": 0.3,
            "loadBalancerOverrideBrokerNicSpeedGbps": 2.5,
            "lowerBoundarySheddingEnabled": True,
        },
        source="test",
    )
    props = conf.to_properties()
    assert props["loadBalancerSheddingExcludedNamespaces"] == "x/y,z/w"
    assert props["lowerBoundarySheddingEnabled"] == "true"
    text = "\n".join(f"{k}={v}" for k, v in props.items())
    assert ServiceConfig.from_properties(text) == conf
    assert ServiceConfig.from_properties(
        "\n".join(f"{k}={v}" for k, v in ServiceConfig().to_properties().items())
    ) == ServiceConfig()


def test_profiles() -> None:
    assert ServiceConfig.for_profile("B") == ServiceConfig()
    conf = ServiceConfig.for_profile("B+26609")
    assert conf.load_balancer_load_shedding_strategy == IMPL + "AvgShedder"
    assert conf.load_balancer_load_placement_strategy == IMPL + "AvgShedder"
    assert conf.max_unload_percentage == 0.5
    assert conf.load_balancer_distribute_bundles_evenly_enabled is False
    with pytest.raises(ValueError, match="known: B, B\\+26609"):
        ServiceConfig.for_profile("C")


def test_json_round_trip() -> None:
    conf = ServiceConfig(load_balancer_shedding_excluded_namespaces=["a/b"])
    assert msgspec.json.decode(msgspec.json.encode(conf), type=ServiceConfig) == conf



def test_a_mistyped_key_is_named_with_the_closest_declared_one():
    with pytest.raises(ConfigError, match=r"loadBalancerSheddingIntervalMinute = '5': unknown key "
                                          r"\(did you mean loadBalancerSheddingIntervalMinutes\?\)$"):
        ServiceConfig().with_overrides({"loadBalancerSheddingIntervalMinute": "5"}, source="--set")
    with pytest.warns(UserWarning) as caught:
        ServiceConfig.from_properties("brokerServicePort=6650\nloadBalancerSheddingEnable=false\n", source="b.conf")
    (message,) = [str(w.message) for w in caught]
    assert message == ("b.conf: ignoring 2 key(s) the emulator does not use: brokerServicePort, "
                       "loadBalancerSheddingEnable; maybe mistyped: loadBalancerSheddingEnable "
                       "(did you mean loadBalancerSheddingEnabled?)")
