"""`ServiceConfig`: the broker.conf keys the load managers and the emulated protocol read, each declared
once, with Pulsar's defaults.

One field per key of `spec/pulsar-algorithms.md` §9 and `spec/pulsar-protocol.md` §3.4, named as the
snake_case of the Pulsar key, defaulting to ServiceConfiguration @0023b937 (baseline "B"). Each field's
`Setting` (emulator/model/setting.py) carries the rest of what Pulsar's `@FieldContext` says: the
camelCase key, `dynamic`, the checks, the doc line; `SETTINGS` derives every table from them (names both
ways, types, the dynamic keys, the reference table). Emulator-only switches (named deviations from
Pulsar) are kept apart at the end of the class with the prefix `emulator_`, as asim keeps its simulation
controls apart from the real cluster settings.

Parsing follows Pulsar's `PulsarConfigurationLoader`: a blank value keeps the default, booleans are
`true`/`false` in any case, lists are comma separated, and a value that does not parse is an error
naming the key and the value.

Treat an instance as immutable: derive a changed copy with `with_overrides` (a process may run many
clusters, each with its own config).
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Mapping
from typing import Annotated

import msgspec

from .errors import ConfigError
from .properties import parse_properties, property_text
from .setting import Bad, Range, Setting, Settings, Value, shown, switch
from .suggest import did_you_mean

__all__ = ["LOAD_MANAGER_CLASSES", "PROFILES", "SETTINGS", "SPLIT_ALGORITHMS", "ServiceConfig", "mistyped_keys",
           "suggest_key"]

_IMPL = "org.apache.pulsar.broker.loadbalance.impl."

LOAD_MANAGER_CLASSES: tuple[str, ...] = (
    _IMPL + "ModularLoadManagerImpl",
    _IMPL + "SimpleLoadManagerImpl",
    "org.apache.pulsar.broker.loadbalance.NoopLoadManager",
    "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl",
)
"""The load managers of Pulsar, by class name: what `loadManagerClassName`'s dynamic-config validator
accepts here. BrokerService.updateConfigurationAndRegisterListeners registers `Class.forName(className)`
as that validator, so Pulsar accepts any class of its classpath and leaves a class that is no load
manager to LoadManager.create (which falls back to SimpleLoadManagerImpl); the emulator knows only these."""

SPLIT_ALGORITHMS: tuple[str, ...] = (
    "range_equally_divide",
    "topic_count_equally_divide",
    "specified_positions_divide",
    "flow_or_qps_equally_divide",
)
"""NamespaceBundleSplitAlgorithm's names, in Pulsar's order."""


class ServiceConfig(msgspec.Struct, kw_only=True):
    """Pulsar's ServiceConfiguration, restricted to what load balancing and the emulated protocol use.

    `dynamic=True` is Pulsar's `@FieldContext(dynamic = true)` @0023b937 (the pulsar-site reference
    configuration for the service-unit state channel's keys; PIP-380 for the excluded namespaces).
    Checks: numbers are >= 0 unless `bound` says otherwise, integers within their Java type."""

    # --- Load manager and strategies -------------------------------------------------------------
    load_balancer_enabled: Annotated[bool, Setting(
        "loadBalancerEnabled", doc="master switch (shedding requires it)")] = True
    load_manager_class_name: Annotated[str, Setting(
        "loadManagerClassName", dynamic=True, accepts=LOAD_MANAGER_CLASSES,
        doc="the load manager; also BrokerLoadManagerClassFilter")] = _IMPL + "ModularLoadManagerImpl"
    # Extensible load manager: service-unit state channel (ServiceUnitStateChannelImpl, see
    # loadmanagers/extensible/model/channel_rules.py). Its tombstone delay is in the "Extensible load
    # manager only" block below.
    load_balancer_in_flight_service_unit_state_waiting_time_in_millis: Annotated[int, Setting(
        "loadBalancerInFlightServiceUnitStateWaitingTimeInMillis", long=True,
        doc="The leader overrides an Assigning/Releasing/Splitting bundle stuck longer than this; lookups "
            "waiting on an in-flight bundle give up after it.")] = 30000
    load_balancer_service_unit_state_monitor_interval_in_seconds: Annotated[int, Setting(
        "loadBalancerServiceUnitStateMonitorIntervalInSeconds", long=True, bound="positive",
        doc="Period of the leader's ownership monitor (orphans, stuck in-flight states, tombstones).")] = 60
    load_manager_service_unit_state_table_view_class_name: Annotated[str, Setting(
        "loadManagerServiceUnitStateTableViewClassName",
        doc="Where the channel's table lives: the compacted system topic (default) or, with "
            "ServiceUnitStateMetadataStoreTableViewImpl, the metadata store (stricter version checks).")] = (
        "org.apache.pulsar.broker.loadbalance.extensions.channel.ServiceUnitStateTableViewImpl")
    load_balancer_service_unit_table_view_syncer: Annotated[str, Setting(
        "loadBalancerServiceUnitTableViewSyncer", dynamic=True,
        choices=("None", "MetadataStoreToSystemTopicSyncer", "SystemTopicToMetadataStoreSyncer"),
        doc="ServiceUnitTableViewSyncerType (Enum.valueOf: case-sensitive): syncs the two table views "
            "during a migration.")] = "None"
    load_balancer_multi_phase_bundle_unload: Annotated[bool, Setting(
        "loadBalancerMultiPhaseBundleUnload",
        doc="PIP-307: a transfer assigns the destination before the source disconnects the clients, which "
            "are told the new owner's URL and reconnect without a lookup.")] = True
    load_balancer_load_shedding_strategy: Annotated[str, Setting(
        "loadBalancerLoadSheddingStrategy", dynamic=True, doc="the shedder class")] = _IMPL + "ThresholdShedder"
    load_balancer_load_placement_strategy: Annotated[str, Setting(
        "loadBalancerLoadPlacementStrategy", doc="the placement strategy class")] = (
        _IMPL + "LeastLongTermMessageRate")
    load_balancer_placement_strategy: Annotated[str, Setting(
        "loadBalancerPlacementStrategy", deprecated="SimpleLoadManager only",
        doc="SimpleLoadManager's placement")] = "leastLoadedServer"
    lower_boundary_shedding_enabled: Annotated[bool, Setting(
        "lowerBoundarySheddingEnabled", doc="ThresholdShedder's lower-boundary pass")] = False

    # --- Load reports ----------------------------------------------------------------------------
    load_balancer_report_update_threshold_percentage: Annotated[int, Setting(
        "loadBalancerReportUpdateThresholdPercentage", dynamic=True,
        doc="% change that forces a report write")] = 10
    load_balancer_report_update_min_interval_millis: Annotated[int, Setting(
        "loadBalancerReportUpdateMinIntervalMillis", dynamic=True, bound="positive",
        doc="report check period")] = 5000
    load_balancer_report_update_max_interval_minutes: Annotated[int, Setting(
        "loadBalancerReportUpdateMaxIntervalMinutes", dynamic=True, doc="max age before a forced report")] = 15
    load_balancer_host_usage_check_interval_minutes: Annotated[int, Setting(
        "loadBalancerHostUsageCheckIntervalMinutes", dynamic=True, bound="positive",
        doc="host usage sampling period")] = 1
    stats_update_frequency_in_secs: Annotated[int, Setting(
        "statsUpdateFrequencyInSecs", bound="positive",
        doc="BrokerService.startStatsUpdater: topic and bundle rates are recomputed at this fixed rate.")] = 60
    stats_update_initial_delay_in_secs: Annotated[int, Setting(
        "statsUpdateInitialDelayInSecs",
        doc="First scheduled stats update after broker start (one more runs at start itself).")] = 60

    # --- Shedding --------------------------------------------------------------------------------
    load_balancer_shedding_enabled: Annotated[bool, Setting(
        "loadBalancerSheddingEnabled", dynamic=True, doc="shedding switch")] = True
    load_balancer_shedding_interval_minutes: Annotated[int, Setting(
        "loadBalancerSheddingIntervalMinutes", dynamic=True, bound="positive", doc="shedding period")] = 1
    load_balancer_distribute_bundles_evenly_enabled: Annotated[bool, Setting(
        "loadBalancerDistributeBundlesEvenlyEnabled", dynamic=True,
        doc="placement keeps a namespace's bundles even across brokers (spec §4.4)")] = True
    load_balancer_shedding_grace_period_minutes: Annotated[int, Setting(
        "loadBalancerSheddingGracePeriodMinutes", dynamic=True, long=True,
        doc="a recently unloaded bundle is not shed again within this window")] = 30
    load_balancer_shedding_excluded_namespaces: Annotated[list[str], Setting(
        "loadBalancerSheddingExcludedNamespaces", dynamic=True, sorted_set=True,
        source="ServiceConfiguration (PIP-380, newer than @0023b937)",
        doc="never shed; placed round-robin")] = msgspec.field(default_factory=list)
    load_balancer_broker_max_topics: Annotated[int, Setting(
        "loadBalancerBrokerMaxTopics", dynamic=True, doc="max-topics candidate filter (spec §4.2)")] = 50000
    load_balancer_broker_overloaded_threshold_percentage: Annotated[int, Setting(
        "loadBalancerBrokerOverloadedThresholdPercentage", dynamic=True,
        doc="overload: placement avoids brokers above it, OverloadShedder sheds at or above it")] = 85
    load_balancer_broker_threshold_shedder_percentage: Annotated[int, Setting(
        "loadBalancerBrokerThresholdShedderPercentage", dynamic=True,
        doc="ThresholdShedder's band around the average usage")] = 10
    load_balancer_average_resource_usage_difference_threshold_percentage: Annotated[int, Setting(
        "loadBalancerAverageResourceUsageDifferenceThresholdPercentage", dynamic=True,
        doc="LeastResourceUsageWithWeight's band")] = 10
    load_balancer_history_resource_percentage: Annotated[float, Setting(
        "loadBalancerHistoryResourcePercentage", dynamic=True,
        within=Range(0.0, 1.0, "the weight of history in the moving average"),
        doc="history weight of the usage's moving average (ThresholdShedder, LeastResourceUsageWithWeight)")] = 0.9
    load_balancer_cpu_resource_weight: Annotated[float, Setting(
        "loadBalancerCPUResourceWeight", dynamic=True, doc="weight of CPU in the weighted usage")] = 1.0
    load_balancer_direct_memory_resource_weight: Annotated[float, Setting(
        "loadBalancerDirectMemoryResourceWeight", dynamic=True,
        doc="weight of direct memory in the weighted usage (1.0 before #21168)")] = 0.0
    load_balancer_memory_resource_weight: Annotated[float, Setting(
        "loadBalancerMemoryResourceWeight", dynamic=True, deprecated="read only by the 5-argument usage form",
        doc="weight of heap memory")] = 0.0
    load_balancer_bandwidth_in_resource_weight: Annotated[float, Setting(
        "loadBalancerBandwidthInResourceWeight", dynamic=True,
        doc="weight of inbound bandwidth in the weighted usage (see effective_bandwidth_in_resource_weight)")] = 1.0
    load_balancer_bandwidth_out_resource_weight: Annotated[float, Setting(
        "loadBalancerBandwidthOutResourceWeight", dynamic=True,
        doc="weight of outbound bandwidth in the weighted usage")] = 1.0
    load_balancer_bandwith_in_resource_weight: Annotated[float, Setting(
        "loadBalancerBandwithInResourceWeight", dynamic=True,
        deprecated="typo of loadBalancerBandwidthInResourceWeight, read when that one is 1.0",
        doc="(sic) the old name of the inbound bandwidth weight")] = 1.0
    load_balancer_bandwith_out_resource_weight: Annotated[float, Setting(
        "loadBalancerBandwithOutResourceWeight", dynamic=True,
        deprecated="typo of loadBalancerBandwidthOutResourceWeight, read when that one is 1.0",
        doc="(sic) the old name of the outbound bandwidth weight")] = 1.0
    load_balancer_bundle_unload_min_throughput_threshold: Annotated[float, Setting(
        "loadBalancerBundleUnloadMinThroughputThreshold", dynamic=True,
        doc="ThresholdShedder's minimum throughput to offload, in MB (x 1048576)")] = 10.0
    min_unload_message: Annotated[int, Setting(
        "minUnloadMessage", dynamic=True, doc="Uniform/AvgShedder: minimum msg rate to unload")] = 1000
    min_unload_message_throughput: Annotated[int, Setting(
        "minUnloadMessageThroughput", dynamic=True,
        doc="Uniform/AvgShedder: minimum throughput to unload (bytes/s)")] = 1048576
    max_unload_percentage: Annotated[float, Setting(
        "maxUnloadPercentage", dynamic=True, doc="Uniform/AvgShedder: share of the difference to move")] = 0.2
    max_unload_bundle_num_per_shedding: Annotated[int, Setting(
        "maxUnloadBundleNumPerShedding", dynamic=True, bound="any",
        doc="UniformLoadShedder's cap of bundles per cycle (-1 = none)")] = -1
    at_least_one_bundle_selected: Annotated[bool, Setting(
        "atLeastOneBundleSelected", dynamic=True,
        doc='Threshold/OverloadShedder "at least one bundle" (consuming code not identified, spec §10)')] = True
    load_balancer_msg_rate_difference_shedder_threshold: Annotated[float, Setting(
        "loadBalancerMsgRateDifferenceShedderThreshold", dynamic=True,
        doc="UniformLoadShedder: msg rate difference, percent")] = 50.0
    load_balancer_msg_throughput_multiplier_difference_shedder_threshold: Annotated[float, Setting(
        "loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold", dynamic=True,
        doc="UniformLoadShedder: throughput ratio")] = 4.0
    load_balancer_avg_shedder_low_threshold: Annotated[int, Setting(
        "loadBalancerAvgShedderLowThreshold", dynamic=True, doc="AvgShedder: low score gap (points)")] = 15
    load_balancer_avg_shedder_high_threshold: Annotated[int, Setting(
        "loadBalancerAvgShedderHighThreshold", dynamic=True, doc="AvgShedder: high score gap (points)")] = 40
    load_balancer_avg_shedder_hit_count_low_threshold: Annotated[int, Setting(
        "loadBalancerAvgShedderHitCountLowThreshold", dynamic=True,
        doc="AvgShedder: hits needed above the low gap")] = 8
    load_balancer_avg_shedder_hit_count_high_threshold: Annotated[int, Setting(
        "loadBalancerAvgShedderHitCountHighThreshold", dynamic=True,
        doc="AvgShedder: hits needed above the high gap")] = 2

    # --- Bundle split ----------------------------------------------------------------------------
    load_balancer_auto_bundle_split_enabled: Annotated[bool, Setting(
        "loadBalancerAutoBundleSplitEnabled", dynamic=True, doc="automatic bundle split (spec §6)")] = True
    load_balancer_auto_unload_split_bundles_enabled: Annotated[bool, Setting(
        "loadBalancerAutoUnloadSplitBundlesEnabled", dynamic=True, doc="unload the children after a split")] = True
    load_balancer_namespace_bundle_max_topics: Annotated[int, Setting(
        "loadBalancerNamespaceBundleMaxTopics", dynamic=True, doc="split trigger")] = 1000
    load_balancer_namespace_bundle_max_sessions: Annotated[int, Setting(
        "loadBalancerNamespaceBundleMaxSessions", dynamic=True, bound="any",
        doc="split trigger (<= 0 disables)")] = 1000
    load_balancer_namespace_bundle_max_msg_rate: Annotated[int, Setting(
        "loadBalancerNamespaceBundleMaxMsgRate", dynamic=True, doc="split trigger; flow_or_qps")] = 30000
    load_balancer_namespace_bundle_max_bandwidth_mbytes: Annotated[int, Setting(
        "loadBalancerNamespaceBundleMaxBandwidthMbytes", dynamic=True,
        doc="split trigger (x 1048576); flow_or_qps")] = 100
    load_balancer_namespace_maximum_bundles: Annotated[int, Setting(
        "loadBalancerNamespaceMaximumBundles", dynamic=True, bound="positive",
        doc="split cap per namespace")] = 128
    flow_or_qps_difference_threshold_percentage: Annotated[int, Setting(
        "flowOrQpsDifferenceThresholdPercentage", dynamic=True, doc="flow_or_qps_equally_divide")] = 10
    supported_namespace_bundle_split_algorithms: Annotated[list[str], Setting(
        "supportedNamespaceBundleSplitAlgorithms", dynamic=True,
        doc="what the admin API accepts")] = msgspec.field(default_factory=lambda: list(SPLIT_ALGORITHMS))
    default_namespace_bundle_split_algorithm: Annotated[str, Setting(
        "defaultNamespaceBundleSplitAlgorithm", dynamic=True, choices=SPLIT_ALGORITHMS,
        doc="the automatic split's algorithm")] = "range_equally_divide"
    default_number_of_namespace_bundles: Annotated[int, Setting(
        "defaultNumberOfNamespaceBundles", dynamic=True, bound="positive", doc="bundles of a new namespace")] = 4
    topic_bundle_assignment_strategy: Annotated[str, Setting(
        "topicBundleAssignmentStrategy", doc="topic -> bundle hashing (spec §7)")] = (
        "org.apache.pulsar.common.naming.ConsistentHashingTopicBundleAssigner")

    # --- Bundle data, host usage, misc. load-manager keys -----------------------------------------
    load_balancer_resource_quota_update_interval_minutes: Annotated[int, Setting(
        "loadBalancerResourceQuotaUpdateIntervalMinutes", bound="positive",
        doc="bundle-data write period (an extra updateBundleData)")] = 15
    load_balancer_max_number_of_bundles_in_bundle_load_report: Annotated[int, Setting(
        "loadBalancerMaxNumberOfBundlesInBundleLoadReport", dynamic=True, bound="any",
        doc="top-k bundle data persisted per broker (<= 0 = all); persistence only")] = 10
    load_balancer_override_broker_nic_speed_gbps: Annotated[float | None, Setting(
        "loadBalancerOverrideBrokerNicSpeedGbps", doc="NIC limit override (Optional<Double>, empty)")] = None
    namespace_bundle_unloading_timeout_ms: Annotated[int, Setting(
        "namespaceBundleUnloadingTimeoutMs", dynamic=True, long=True, doc="unload timeout")] = 60000
    failure_domains_enabled: Annotated[bool, Setting(
        "failureDomainsEnabled", dynamic=True, doc="anti-affinity's failure-domain step")] = False
    prefer_later_versions: Annotated[bool, Setting(
        "preferLaterVersions", dynamic=True, doc="BrokerVersionFilter")] = False
    enable_persistent_topics: Annotated[bool, Setting(
        "enablePersistentTopics", doc="brokers serve persistent topics (candidate filter)")] = True
    enable_non_persistent_topics: Annotated[bool, Setting(
        "enableNonPersistentTopics", doc="brokers serve non-persistent topics (candidate filter)")] = True
    load_balancer_broker_underloaded_threshold_percentage: Annotated[int, Setting(
        "loadBalancerBrokerUnderloadedThresholdPercentage", deprecated="SimpleLoadManager only",
        doc="SimpleLoadManager's underloaded level")] = 50
    load_balancer_broker_comfort_load_level_percentage: Annotated[int, Setting(
        "loadBalancerBrokerComfortLoadLevelPercentage", deprecated="SimpleLoadManager only",
        doc="SimpleLoadManager's comfort level")] = 65

    # --- Extensible load manager only: kept so broker.conf files parse; ignored by MLMI ------------
    load_balancer_debug_mode_enabled: Annotated[bool, Setting(
        "loadBalancerDebugModeEnabled", dynamic=True, doc="Extensible: debug logs of its decisions")] = False
    load_balancer_broker_load_target_std: Annotated[float, Setting(
        "loadBalancerBrokerLoadTargetStd", dynamic=True,
        doc="TransferShedder: target standard deviation of broker load")] = 0.25
    load_balancer_shedding_condition_hit_count_threshold: Annotated[int, Setting(
        "loadBalancerSheddingConditionHitCountThreshold", dynamic=True,
        doc="TransferShedder: cycles the condition must hold")] = 3
    load_balancer_transfer_enabled: Annotated[bool, Setting(
        "loadBalancerTransferEnabled", dynamic=True, doc="TransferShedder transfers (else unloads)")] = True
    load_balancer_max_number_of_broker_shedding_per_cycle: Annotated[int, Setting(
        "loadBalancerMaxNumberOfBrokerSheddingPerCycle", dynamic=True,
        doc="TransferShedder: brokers shed per cycle")] = 3
    load_balance_shedding_delay_in_seconds: Annotated[int, Setting(
        "loadBalanceSheddingDelayInSeconds", dynamic=True, long=True,
        doc="Extensible: delay of shedding after a leader change")] = 180
    load_balancer_broker_load_data_ttl_in_seconds: Annotated[int, Setting(
        "loadBalancerBrokerLoadDataTTLInSeconds", dynamic=True, long=True,
        doc="Extensible: broker load data older than this is stale")] = 1800
    load_balancer_split_interval_minutes: Annotated[int, Setting(
        "loadBalancerSplitIntervalMinutes", bound="positive", doc="Extensible: split scheduler period")] = 1
    load_balancer_max_number_of_bundles_to_split_per_cycle: Annotated[int, Setting(
        "loadBalancerMaxNumberOfBundlesToSplitPerCycle", dynamic=True,
        doc="Extensible: bundles split per cycle")] = 10
    load_balancer_namespace_bundle_split_condition_hit_count_threshold: Annotated[int, Setting(
        "loadBalancerNamespaceBundleSplitConditionHitCountThreshold", dynamic=True,
        doc="Extensible: cycles a split condition must hold")] = 3
    load_balancer_service_unit_state_tombstone_delay_time_in_seconds: Annotated[int, Setting(
        "loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds", long=True,
        doc="Extensible: how long a Free/Deleted bundle state stays before it is tombstoned")] = 3600
    load_balancer_shedding_bundles_with_policies_enabled: Annotated[bool, Setting(
        "loadBalancerSheddingBundlesWithPoliciesEnabled", dynamic=True,
        doc="TransferShedder may shed bundles with isolation/affinity policies")] = False

    # --- Protocol: lookups, unload, shutdown, metadata sessions (protocol §3.4) --------------------
    max_concurrent_lookup_request: Annotated[int, Setting(
        "maxConcurrentLookupRequest", dynamic=True, bound="positive",
        doc="the broker's lookup semaphore")] = 50000
    max_concurrent_topic_load_request: Annotated[int, Setting(
        "maxConcurrentTopicLoadRequest", dynamic=True, bound="positive",
        doc="the broker's topic-load semaphore")] = 5000
    num_io_threads: Annotated[int, Setting(
        "numIOThreads", doc="netty I/O threads of the binary protocol (ServerCnx); 0 = Netty's default, "
        "2 x Runtime.availableProcessors(), as Pulsar's own default")] = 0
    num_http_server_threads: Annotated[int, Setting(
        "numHttpServerThreads", doc="Jetty threads of the web service (admin REST calls); 0 = Pulsar's "
        "default, max(8, 2 x Runtime.availableProcessors())")] = 0
    broker_deduplication_enabled: Annotated[bool, Setting(
        "brokerDeduplicationEnabled", quiet_default=True,
        doc="message deduplication by producer name and sequence id (MessageDeduplication): the binary "
        "protocol's topic logs (emulator/wire/topic_log.py); the emulated clients' traffic has no messages")] = False
    broker_shutdown_timeout_ms: Annotated[int, Setting(
        "brokerShutdownTimeoutMs", dynamic=True, long=True, doc="graceful shutdown's time limit")] = 60000
    metadata_store_session_timeout_millis: Annotated[int, Setting(
        "metadataStoreSessionTimeoutMillis", long=True, bound="positive",
        doc="metadata session timeout (ephemeral nodes)")] = 30000
    # Deprecated, long, default -1 in Pulsar 3.x: ServiceConfiguration.getMetadataStoreSessionTimeoutMillis
    # uses it only when > 0, so conf/broker.conf ships `zooKeeperSessionTimeoutMillis=-1` = unset.
    zoo_keeper_session_timeout_millis: Annotated[int, Setting(
        "zooKeeperSessionTimeoutMillis", long=True, bound="any",
        deprecated="replaced by metadataStoreSessionTimeoutMillis",
        doc="the old name of the metadata session timeout; used when > 0 (metadata_session_timeout_seconds)")] = -1
    # AbstractBatchedMetadataStore (pulsar-metadata): each broker's store queues its reads and writes and
    # flushes them every metadataStoreBatchingMaxDelayMillis (or at once past MaxOperations) as ZooKeeper
    # multi requests (ZKMetadataStore.batchOperation); write batches are also cut at MaxSizeKb.
    metadata_store_batching_enabled: Annotated[bool, Setting(
        "metadataStoreBatchingEnabled", doc="batch metadata operations into one ZooKeeper multi")] = True
    metadata_store_batching_max_delay_millis: Annotated[int, Setting(
        "metadataStoreBatchingMaxDelayMillis", bound="positive",
        doc="period of the batch flush (an operation waits up to this)")] = 5
    metadata_store_batching_max_operations: Annotated[int, Setting(
        "metadataStoreBatchingMaxOperations", bound="positive", doc="operations in one batch")] = 1000
    metadata_store_batching_max_size_kb: Annotated[int, Setting(
        "metadataStoreBatchingMaxSizeKb", bound="positive",
        doc="a write batch's size limit (paths + data), KB")] = 128
    metadata_store_operation_timeout_seconds: Annotated[int, Setting(
        "metadataStoreOperationTimeoutSeconds", bound="positive", doc="metadata operation timeout")] = 30
    zookeeper_session_expired_policy: Annotated[str, Setting(
        "zookeeperSessionExpiredPolicy", choices=("reconnect", "shutdown"),
        doc="what a broker does when its metadata session expires")] = "reconnect"
    keep_alive_interval_seconds: Annotated[int, Setting(
        "keepAliveIntervalSeconds", bound="positive", doc="client connection keep-alive period")] = 30
    expose_bundles_metrics_in_prometheus: Annotated[bool, Setting(
        "exposeBundlesMetricsInPrometheus", dynamic=True, doc="opt-in `pulsar_bundle_*` metrics")] = False

    # --- Emulator-only switches (no Pulsar key; each names a deviation, default = Pulsar) -----------
    emulator_preallocation_enabled: Annotated[bool, switch(
        "§3: `selectBrokerForAssignment` preallocates the chosen broker. False = no preallocation.")] = True
    emulator_preallocation_literal_cleanup: Annotated[bool, switch(
        "§10.4: True = MLMI's literal cleanup in updateBundleData; False = clear at the next cycle.")] = True
    emulator_unweighted_max_usage: Annotated[bool, switch(
        "Pre-PIP-358: placement/OverloadShedder use the unweighted max usage instead of the 4 weights.")] = False
    emulator_uniform_skip_zero_traffic_bundles: Annotated[bool, switch(
        "Unmerged PR #21214: UniformLoadShedder never selects bundles with zero traffic.")] = False
    emulator_threshold_shedder_clamp_usage: Annotated[bool, switch(
        "Reverted #16937: ThresholdShedder ignores weighted usages above 100 %.")] = False
    emulator_avg_shedder_int_comparator: Annotated[bool, switch(
        "Older AvgShedder: sort scores with `(int)(s1 - s2)`, so differences < 1 point tie.")] = False
    emulator_unload_destination_affinity: Annotated[bool, switch(
        "Shedding unloads with a destination (bundleBrokerAffinityMap); True = the next assignment of "
        "that bundle range goes there (where Pulsar consumes it is unconfirmed); False = ignored.")] = True
    emulator_lookup_failures_as_service_not_ready: Annotated[bool, switch(
        "Pulsar before 3.0.2 (the release the published Pulsar 3.0.0 table ran): TopicLookupBase answered "
        "every failed lookup, a bundle being unloaded, a busy ownership lock, a metadata error, with "
        "ServiceNotReady, and the client closes its connection to that broker on ServiceNotReady "
        "(ClientCnx.checkServerError), so every producer and consumer attached there reconnects. PR #21211 "
        "(3.0.2) and PR #21993 (3.0.3) answer MetadataError instead, which closes nothing: the default.")] = False
    emulator_instant_stats: Annotated[bool, switch(
        "True = every load report carries the traffic and host usage of its own instant (the emulator's "
        "old behaviour), with no stats period or host-usage sampling interval between traffic and the "
        "report. Pulsar: False (see emulator/cluster/stats_window.py).")] = False
    emulator_first_leader: Annotated[str, switch(
        "A broker id (`broker-3:8080`) that wins the cluster's first leader election: the other brokers "
        "wait at start until some broker leads (at most 60 s) before they elect (a snapshot's replay: "
        "the exported leader, which `snapshot to-scenario` writes). Pulsar: the first broker to create "
        "/loadbalance/leader wins (\"\", the default).", quiet_default=True)] = ""

    def __post_init__(self) -> None:
        problems = [(d, d.problem(getattr(self, d.field))) for d in SETTINGS]
        for declared, problem in problems:
            if problem:
                raise ConfigError(
                    f"ServiceConfig: {declared.field} = {getattr(self, declared.field)!r}: {problem}"
                )

    # --- Derived values ---------------------------------------------------------------------------

    @property
    def effective_bandwidth_in_resource_weight(self) -> float:
        """Pulsar's getter: the new key if ≠ 1.0, else the deprecated typo key if ≠ 1.0, else 1.0."""
        return _effective_weight(
            self.load_balancer_bandwidth_in_resource_weight,
            self.load_balancer_bandwith_in_resource_weight,
        )

    @property
    def effective_bandwidth_out_resource_weight(self) -> float:
        """As `effective_bandwidth_in_resource_weight`, for the outbound weight."""
        return _effective_weight(
            self.load_balancer_bandwidth_out_resource_weight,
            self.load_balancer_bandwith_out_resource_weight,
        )

    @property
    def resource_weights(self) -> tuple[float, float, float, float]:
        """(cpu, direct memory, bandwidth in, bandwidth out): the 4 weights of PIP-358's usage."""
        return (
            self.load_balancer_cpu_resource_weight,
            self.load_balancer_direct_memory_resource_weight,
            self.effective_bandwidth_in_resource_weight,
            self.effective_bandwidth_out_resource_weight,
        )

    # --- Names ------------------------------------------------------------------------------------

    @staticmethod
    def pulsar_name(field: str) -> str:
        """camelCase broker.conf key of a field; emulator-only fields keep their own name."""
        try:
            return SETTINGS.by_field[field].key
        except KeyError:
            raise ValueError(f"field = {field!r}: not a ServiceConfig field") from None

    @staticmethod
    def field_name(pulsar_key: str) -> str:
        """Field of a camelCase broker.conf key (a snake_case field name is accepted as is)."""
        declared = SETTINGS.lookup(pulsar_key)
        if declared is None:
            raise ValueError(f"pulsar_key = {pulsar_key!r}: not a known broker.conf key")
        return declared.field

    # --- Parsing ----------------------------------------------------------------------------------

    @classmethod
    def from_properties(cls, text: str, *, source: str = "<broker.conf>") -> ServiceConfig:
        """Parse broker.conf text; unknown keys are ignored with one warning listing them."""
        conf, unknown = cls.from_properties_with_unknown(text, source=source)
        if unknown:
            warnings.warn(
                f"{source}: ignoring {len(unknown)} key(s) the emulator does not use: "
                + ", ".join(unknown) + mistyped_keys(unknown),
                stacklevel=2,
            )
        return conf

    @classmethod
    def from_properties_with_unknown(
        cls, text: str, source: str = "<broker.conf>"
    ) -> tuple[ServiceConfig, list[str]]:
        """Parse broker.conf text; return the config and the unknown keys (file order, deduplicated)."""
        if not isinstance(text, str):
            raise TypeError(f"text = {text!r}: expected the broker.conf contents as a str")
        known: dict[str, str] = {}
        unknown: list[str] = []
        for key, value in parse_properties(text):
            if SETTINGS.lookup(key) is not None:
                known[key] = value
            elif key not in unknown:
                unknown.append(key)
        return cls().with_overrides(known, source=source), unknown

    def with_overrides(self, mapping: Mapping[str, object], *, source: str) -> ServiceConfig:
        """A copy with keys (camelCase or snake_case) replaced; strings parse like broker.conf."""
        if not isinstance(mapping, Mapping):
            raise TypeError(f"mapping = {mapping!r}: expected a mapping of key -> value")
        changes: dict[str, Value] = {}
        for key, raw in mapping.items():
            declared = SETTINGS.lookup(key)
            if declared is None:
                raise ConfigError(f"{source}: {key} = {shown(raw)}: unknown key{suggest_key(key)}")
            if isinstance(raw, str):
                if raw.strip() == "":
                    continue  # Pulsar keeps the default for a blank value
                value = declared.parse_text(raw)
            else:
                value = declared.coerce(raw)
            if isinstance(value, Bad):
                raise ConfigError(f"{source}: {key} = {shown(raw)}: {value.reason}")
            problem = declared.problem(value)
            if problem:
                raise ConfigError(f"{source}: {key} = {shown(raw)}: {problem}")
            changes[declared.field] = value
        return msgspec.structs.replace(self, **changes)

    def to_properties(self) -> dict[str, str]:
        """Every key as broker.conf text (camelCase key -> value), parseable by `from_properties`."""
        return {d.key: property_text(getattr(self, d.field)) for d in SETTINGS
                if not (d.setting.quiet_default and getattr(self, d.field) == d.default_value())}

    @classmethod
    def for_profile(cls, name: str) -> ServiceConfig:
        """Defaults of a named baseline: "B" (ServiceConfiguration @0023b937) or "B+26609"."""
        try:
            overrides = PROFILES[name]
        except KeyError:
            raise ValueError(
                f"name = {name!r}: unknown profile; known: {', '.join(PROFILES)}"
            ) from None
        return cls().with_overrides(overrides, source=f"profile {name}")


SETTINGS = Settings.of(ServiceConfig)
"""ServiceConfig's declared keys, in field order, and the tables derived from them."""

PROFILES: Mapping[str, Mapping[str, object]] = types.MappingProxyType(
    {
        "B": types.MappingProxyType({}),
        # PR #26609 (reported merged, absent from MLMI @009a9bf2): AvgShedder for both roles.
        "B+26609": types.MappingProxyType(
            {
                "loadBalancerLoadSheddingStrategy": _IMPL + "AvgShedder",
                "loadBalancerLoadPlacementStrategy": _IMPL + "AvgShedder",
                "maxUnloadPercentage": 0.5,
                "loadBalancerDistributeBundlesEvenlyEnabled": False,
            }
        ),
    }
)


def _effective_weight(new: float, old: float) -> float:
    if new != 1.0:
        return new
    if old != 1.0:
        return old
    return 1.0


def suggest_key(key: str) -> str:
    """`" (did you mean loadBalancerX?)"` for a key close to a declared one, else ""."""
    return did_you_mean(key, [d.key for d in SETTINGS])


def mistyped_keys(unknown: list[str]) -> str:
    """For a broker.conf's ignored keys: `"; maybe mistyped: a (did you mean b?), ..."` naming only those
    close to a declared key (a real broker.conf has hundreds of keys the emulator does not use)."""
    hints = [f"{k}{hint}" for k in unknown if (hint := suggest_key(k))]
    return "; maybe mistyped: " + ", ".join(hints) if hints else ""
