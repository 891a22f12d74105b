"""`ServiceConfig`: the broker.conf keys the Modular Load Manager reads, with Pulsar's defaults.

One field per key of `spec/pulsar-algorithms.md` §9 and `spec/pulsar-protocol.md` §3.4, named as the
snake_case of the Pulsar key, defaulting to ServiceConfiguration @0023b937 (baseline "B"). Emulator-only
switches (named deviations from Pulsar) are kept apart at the end of the class with the prefix
`emulator_`, the way asim keeps its simulation controls apart from the real cluster settings.

Parsing follows Pulsar's `PulsarConfigurationLoader`: a blank value keeps the default, booleans are
`true`/`false` in any case, lists are comma separated, and a value that does not parse is an error
naming the key and the value.

Treat an instance as immutable: derive a changed copy with `with_overrides` (a process may run many
clusters, each with its own config).

Dynamic configuration (`pulsar-admin brokers update-dynamic-config`) is described at the end of this
module: which keys Pulsar lets an operator change at runtime (`DYNAMIC_KEYS`), the checks and answers of
its admin REST API (`check_dynamic_update`, `DynamicConfigError`) and the runtime view of the values
(`runtime_configuration`).
"""

from __future__ import annotations

import decimal
import math
import re
import types
import warnings
from collections.abc import Mapping
from typing import Any

import msgspec

from .errors import ConfigError

__all__ = [
    "ConfigError",
    "DYNAMIC_KEYS",
    "DynamicConfigError",
    "LOAD_MANAGER_CLASSES",
    "PROFILES",
    "ServiceConfig",
    "check_dynamic_delete",
    "check_dynamic_update",
    "dynamic_configuration_names",
    "is_dynamic_configuration",
    "property_text",
    "runtime_configuration",
    "validate_dynamic_configuration",
]
_IMPL = "org.apache.pulsar.broker.loadbalance.impl."


class ServiceConfig(msgspec.Struct, kw_only=True):
    """Pulsar's ServiceConfiguration, restricted to what load balancing and the emulated protocol use."""

    # --- Load manager and strategies -------------------------------------------------------------
    load_balancer_enabled: bool = True
    load_manager_class_name: str = _IMPL + "ModularLoadManagerImpl"
    # Extensible load manager: service-unit state channel
    # (ServiceConfiguration; used by ServiceUnitStateChannelImpl, see loadmanagers/extensible/model/channel_rules.py.
    # Its tombstone delay, loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds, is in the
    # "Extensible load manager only" block below, where it was first declared.)
    load_balancer_in_flight_service_unit_state_waiting_time_in_millis: int = 30000
    """The leader overrides an Assigning/Releasing/Splitting bundle stuck longer than this; lookups
    waiting on an in-flight bundle give up after it."""
    load_balancer_service_unit_state_monitor_interval_in_seconds: int = 60
    """Period of the leader's ownership monitor (orphans, stuck in-flight states, tombstones)."""
    load_manager_service_unit_state_table_view_class_name: str = (
        "org.apache.pulsar.broker.loadbalance.extensions.channel.ServiceUnitStateTableViewImpl"
    )
    """Where the channel's table lives: the compacted system topic (default) or, with
    ServiceUnitStateMetadataStoreTableViewImpl, the metadata store (stricter version checks)."""
    load_balancer_service_unit_table_view_syncer: str = "None"
    """ServiceUnitTableViewSyncerType: None, MetadataStoreToSystemTopicSyncer or
    SystemTopicToMetadataStoreSyncer (syncs the two table views during a migration)."""
    load_balancer_multi_phase_bundle_unload: bool = True
    """PIP-307: a transfer assigns the destination before the source disconnects the clients, which
    are told the new owner's URL and reconnect without a lookup."""
    load_balancer_load_shedding_strategy: str = _IMPL + "ThresholdShedder"
    load_balancer_load_placement_strategy: str = _IMPL + "LeastLongTermMessageRate"
    load_balancer_placement_strategy: str = "leastLoadedServer"  # deprecated, SimpleLoadManager only
    lower_boundary_shedding_enabled: bool = False

    # --- Load reports ----------------------------------------------------------------------------
    load_balancer_report_update_threshold_percentage: int = 10
    load_balancer_report_update_min_interval_millis: int = 5000
    load_balancer_report_update_max_interval_minutes: int = 15
    load_balancer_host_usage_check_interval_minutes: int = 1
    stats_update_frequency_in_secs: int = 60
    """BrokerService.startStatsUpdater: topic and bundle rates are recomputed at this fixed rate."""
    stats_update_initial_delay_in_secs: int = 60
    """First scheduled stats update after broker start (one more runs at start itself)."""

    # --- Shedding --------------------------------------------------------------------------------
    load_balancer_shedding_enabled: bool = True
    load_balancer_shedding_interval_minutes: int = 1
    load_balancer_distribute_bundles_evenly_enabled: bool = True
    load_balancer_shedding_grace_period_minutes: int = 30
    load_balancer_shedding_excluded_namespaces: list[str] = msgspec.field(default_factory=list)
    load_balancer_broker_max_topics: int = 50000
    load_balancer_broker_overloaded_threshold_percentage: int = 85
    load_balancer_broker_threshold_shedder_percentage: int = 10
    load_balancer_average_resource_usage_difference_threshold_percentage: int = 10
    load_balancer_history_resource_percentage: float = 0.9
    load_balancer_cpu_resource_weight: float = 1.0
    load_balancer_direct_memory_resource_weight: float = 0.0
    load_balancer_memory_resource_weight: float = 0.0  # deprecated; only the 5-argument usage form
    load_balancer_bandwidth_in_resource_weight: float = 1.0
    load_balancer_bandwidth_out_resource_weight: float = 1.0
    load_balancer_bandwith_in_resource_weight: float = 1.0  # sic: deprecated typo key, see effective_*
    load_balancer_bandwith_out_resource_weight: float = 1.0  # sic
    load_balancer_bundle_unload_min_throughput_threshold: float = 10.0  # MB (x 1048576)
    min_unload_message: int = 1000
    min_unload_message_throughput: int = 1048576
    max_unload_percentage: float = 0.2
    max_unload_bundle_num_per_shedding: int = -1
    at_least_one_bundle_selected: bool = True
    load_balancer_msg_rate_difference_shedder_threshold: float = 50.0
    load_balancer_msg_throughput_multiplier_difference_shedder_threshold: float = 4.0
    load_balancer_avg_shedder_low_threshold: int = 15
    load_balancer_avg_shedder_high_threshold: int = 40
    load_balancer_avg_shedder_hit_count_low_threshold: int = 8
    load_balancer_avg_shedder_hit_count_high_threshold: int = 2

    # --- Bundle split ----------------------------------------------------------------------------
    load_balancer_auto_bundle_split_enabled: bool = True
    load_balancer_auto_unload_split_bundles_enabled: bool = True
    load_balancer_namespace_bundle_max_topics: int = 1000
    load_balancer_namespace_bundle_max_sessions: int = 1000
    load_balancer_namespace_bundle_max_msg_rate: int = 30000
    load_balancer_namespace_bundle_max_bandwidth_mbytes: int = 100
    load_balancer_namespace_maximum_bundles: int = 128
    flow_or_qps_difference_threshold_percentage: int = 10
    supported_namespace_bundle_split_algorithms: list[str] = msgspec.field(
        default_factory=lambda: [
            "range_equally_divide",
            "topic_count_equally_divide",
            "specified_positions_divide",
            "flow_or_qps_equally_divide",
        ]
    )
    default_namespace_bundle_split_algorithm: str = "range_equally_divide"
    default_number_of_namespace_bundles: int = 4
    topic_bundle_assignment_strategy: str = (
        "org.apache.pulsar.common.naming.ConsistentHashingTopicBundleAssigner"
    )

    # --- Bundle data, host usage, misc. load-manager keys -----------------------------------------
    load_balancer_resource_quota_update_interval_minutes: int = 15
    load_balancer_max_number_of_bundles_in_bundle_load_report: int = 10
    load_balancer_override_broker_nic_speed_gbps: float | None = None  # Optional<Double>, empty
    namespace_bundle_unloading_timeout_ms: int = 60000
    failure_domains_enabled: bool = False
    prefer_later_versions: bool = False
    enable_persistent_topics: bool = True
    enable_non_persistent_topics: bool = True
    load_balancer_broker_underloaded_threshold_percentage: int = 50  # deprecated (SimpleLoadManager)
    load_balancer_broker_comfort_load_level_percentage: int = 65  # deprecated (SimpleLoadManager)

    # --- Extensible load manager only: kept so broker.conf files parse; ignored by MLMI ------------
    load_balancer_debug_mode_enabled: bool = False
    load_balancer_broker_load_target_std: float = 0.25
    load_balancer_shedding_condition_hit_count_threshold: int = 3
    load_balancer_transfer_enabled: bool = True
    load_balancer_max_number_of_broker_shedding_per_cycle: int = 3
    load_balance_shedding_delay_in_seconds: int = 180
    load_balancer_broker_load_data_ttl_in_seconds: int = 1800
    load_balancer_split_interval_minutes: int = 1
    load_balancer_max_number_of_bundles_to_split_per_cycle: int = 10
    load_balancer_namespace_bundle_split_condition_hit_count_threshold: int = 3
    load_balancer_service_unit_state_tombstone_delay_time_in_seconds: int = 3600
    load_balancer_shedding_bundles_with_policies_enabled: bool = False

    # --- Protocol: lookups, unload, shutdown, metadata sessions (protocol §3.4) --------------------
    max_concurrent_lookup_request: int = 50000
    max_concurrent_topic_load_request: int = 5000
    broker_shutdown_timeout_ms: int = 60000
    metadata_store_session_timeout_millis: int = 30000
    zoo_keeper_session_timeout_millis: int = 30000
    metadata_store_operation_timeout_seconds: int = 30
    zookeeper_session_expired_policy: str = "reconnect"
    keep_alive_interval_seconds: int = 30
    expose_bundles_metrics_in_prometheus: bool = False
    """Opt-in `pulsar_bundle_*` metrics (ServiceConfiguration.exposeBundlesMetricsInPrometheus)."""

    # --- Emulator-only switches (no Pulsar key; each names a deviation, default = Pulsar) -----------
    emulator_preallocation_enabled: bool = True
    """§3: `selectBrokerForAssignment` preallocates the chosen broker. False = no preallocation."""
    emulator_preallocation_literal_cleanup: bool = True
    """§10.4: True = MLMI's literal cleanup in updateBundleData; False = clear at the next cycle."""
    emulator_unweighted_max_usage: bool = False
    """Pre-PIP-358: placement/OverloadShedder use the unweighted max usage instead of the 4 weights."""
    emulator_uniform_skip_zero_traffic_bundles: bool = False
    """Unmerged PR #21214: UniformLoadShedder never selects bundles with zero traffic."""
    emulator_threshold_shedder_clamp_usage: bool = False
    """Reverted #16937: ThresholdShedder ignores weighted usages above 100 %."""
    emulator_avg_shedder_int_comparator: bool = False
    """Older AvgShedder: sort scores with `(int)(s1 - s2)`, so differences < 1 point tie."""
    emulator_unload_destination_affinity: bool = True
    """Shedding unloads with a destination (bundleBrokerAffinityMap); True = the next assignment of
    that bundle range goes there (where Pulsar consumes it is unconfirmed); False = ignored."""
    emulator_lookup_failures_as_service_not_ready: bool = False
    """Pulsar before 3.0.2 (the release the published Pulsar 3.0.0 table ran): TopicLookupBase answered
    every failed lookup, a bundle being unloaded, a busy ownership lock, a metadata error, with
    ServiceNotReady, and the client closes its connection to that broker on ServiceNotReady
    (ClientCnx.checkServerError), so every producer and consumer attached there reconnects. PR #21211
    (3.0.2) and PR #21993 (3.0.3) answer MetadataError instead, which closes nothing: the default."""
    emulator_instant_stats: bool = False
    """True = every load report carries the traffic and host usage of its own instant (the
    emulator's old behaviour), with no stats period or host-usage sampling interval between traffic
    and the report. Pulsar: False (see emulator/cluster/stats_window.py)."""

    def __post_init__(self) -> None:
        problems = [_check(f, getattr(self, f)) for f in _FIELD_TYPES]
        for field, problem in zip(_FIELD_TYPES, problems):
            if problem:
                raise ConfigError(
                    f"ServiceConfig: {field} = {getattr(self, field)!r}: {problem}"
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
            return _FIELD_TO_KEY[field]
        except KeyError:
            raise ValueError(f"field = {field!r}: not a ServiceConfig field") from None

    @staticmethod
    def field_name(pulsar_key: str) -> str:
        """Field of a camelCase broker.conf key (a snake_case field name is accepted as is)."""
        try:
            return _KEY_TO_FIELD[pulsar_key]
        except KeyError:
            if pulsar_key in _FIELD_TYPES:
                return pulsar_key
            raise ValueError(f"pulsar_key = {pulsar_key!r}: not a known broker.conf key") from None

    # --- Parsing ----------------------------------------------------------------------------------

    @classmethod
    def from_properties(cls, text: str, *, source: str = "<broker.conf>") -> ServiceConfig:
        """Parse broker.conf text; unknown keys are ignored with one warning listing them."""
        conf, unknown = cls.from_properties_with_unknown(text, source=source)
        if unknown:
            warnings.warn(
                f"{source}: ignoring {len(unknown)} key(s) the emulator does not use: "
                + ", ".join(unknown),
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
        for key, value in _parse_properties(text):
            if key in _KEY_TO_FIELD or key in _FIELD_TYPES:
                known[key] = value
            elif key not in unknown:
                unknown.append(key)
        return cls().with_overrides(known, source=source), unknown

    def with_overrides(self, mapping: Mapping[str, Any], *, source: str) -> ServiceConfig:
        """A copy with keys (camelCase or snake_case) replaced; strings parse like broker.conf."""
        if not isinstance(mapping, Mapping):
            raise TypeError(f"mapping = {mapping!r}: expected a mapping of key -> value")
        changes: dict[str, Any] = {}
        for key, raw in mapping.items():
            try:
                field = ServiceConfig.field_name(key)
            except ValueError:
                raise ConfigError(f"{source}: {key} = {_shown(raw)}: unknown key") from None
            if isinstance(raw, str):
                if raw.strip() == "":
                    continue  # Pulsar keeps the default for a blank value
                value = _parse_str(raw, _FIELD_TYPES[field])
            else:
                value = _coerce(raw, _FIELD_TYPES[field])
            if isinstance(value, _Bad):
                raise ConfigError(f"{source}: {key} = {_shown(raw)}: {value.reason}")
            problem = _check(field, value)
            if problem:
                raise ConfigError(f"{source}: {key} = {_shown(raw)}: {problem}")
            changes[field] = value
        return msgspec.structs.replace(self, **changes)

    def to_properties(self) -> dict[str, str]:
        """Every key as broker.conf text (camelCase key -> value), parseable by `from_properties`."""
        return {_FIELD_TO_KEY[field]: property_text(getattr(self, field)) for field in _FIELD_TYPES}

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


PROFILES: Mapping[str, Mapping[str, Any]] = types.MappingProxyType(
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


# --- Field tables (immutable, built once) ------------------------------------------------------------


def _camel_to_snake(key: str) -> str:
    key = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", key)
    key = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key)
    return key.lower()


# Every Pulsar key, spelled as in ServiceConfiguration.java (the snake names are derived from these).
_PULSAR_KEYS: tuple[str, ...] = (
    "loadBalancerEnabled", "loadManagerClassName",
    "loadBalancerInFlightServiceUnitStateWaitingTimeInMillis",
    "loadBalancerServiceUnitStateMonitorIntervalInSeconds", "loadManagerServiceUnitStateTableViewClassName",
    "loadBalancerServiceUnitTableViewSyncer", "loadBalancerMultiPhaseBundleUnload",
    "loadBalancerLoadSheddingStrategy",
    "loadBalancerLoadPlacementStrategy", "loadBalancerPlacementStrategy", "lowerBoundarySheddingEnabled",
    "loadBalancerReportUpdateThresholdPercentage", "loadBalancerReportUpdateMinIntervalMillis",
    "loadBalancerReportUpdateMaxIntervalMinutes", "loadBalancerHostUsageCheckIntervalMinutes",
    "statsUpdateFrequencyInSecs", "statsUpdateInitialDelayInSecs",
    "loadBalancerSheddingEnabled", "loadBalancerSheddingIntervalMinutes",
    "loadBalancerDistributeBundlesEvenlyEnabled", "loadBalancerSheddingGracePeriodMinutes",
    "loadBalancerSheddingExcludedNamespaces", "loadBalancerBrokerMaxTopics",
    "loadBalancerBrokerOverloadedThresholdPercentage", "loadBalancerBrokerThresholdShedderPercentage",
    "loadBalancerAverageResourceUsageDifferenceThresholdPercentage",
    "loadBalancerHistoryResourcePercentage", "loadBalancerCPUResourceWeight",
    "loadBalancerDirectMemoryResourceWeight", "loadBalancerMemoryResourceWeight",
    "loadBalancerBandwidthInResourceWeight", "loadBalancerBandwidthOutResourceWeight",
    "loadBalancerBandwithInResourceWeight", "loadBalancerBandwithOutResourceWeight",
    "loadBalancerBundleUnloadMinThroughputThreshold", "minUnloadMessage", "minUnloadMessageThroughput",
    "maxUnloadPercentage", "maxUnloadBundleNumPerShedding", "atLeastOneBundleSelected",
    "loadBalancerMsgRateDifferenceShedderThreshold",
    "loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold",
    "loadBalancerAvgShedderLowThreshold", "loadBalancerAvgShedderHighThreshold",
    "loadBalancerAvgShedderHitCountLowThreshold", "loadBalancerAvgShedderHitCountHighThreshold",
    "loadBalancerAutoBundleSplitEnabled", "loadBalancerAutoUnloadSplitBundlesEnabled",
    "loadBalancerNamespaceBundleMaxTopics", "loadBalancerNamespaceBundleMaxSessions",
    "loadBalancerNamespaceBundleMaxMsgRate", "loadBalancerNamespaceBundleMaxBandwidthMbytes",
    "loadBalancerNamespaceMaximumBundles", "flowOrQpsDifferenceThresholdPercentage",
    "supportedNamespaceBundleSplitAlgorithms", "defaultNamespaceBundleSplitAlgorithm",
    "defaultNumberOfNamespaceBundles", "topicBundleAssignmentStrategy",
    "loadBalancerResourceQuotaUpdateIntervalMinutes", "loadBalancerMaxNumberOfBundlesInBundleLoadReport",
    "loadBalancerOverrideBrokerNicSpeedGbps", "namespaceBundleUnloadingTimeoutMs",
    "failureDomainsEnabled", "preferLaterVersions", "enablePersistentTopics",
    "enableNonPersistentTopics", "loadBalancerBrokerUnderloadedThresholdPercentage",
    "loadBalancerBrokerComfortLoadLevelPercentage",
    "loadBalancerDebugModeEnabled", "loadBalancerBrokerLoadTargetStd",
    "loadBalancerSheddingConditionHitCountThreshold", "loadBalancerTransferEnabled",
    "loadBalancerMaxNumberOfBrokerSheddingPerCycle", "loadBalanceSheddingDelayInSeconds",
    "loadBalancerBrokerLoadDataTTLInSeconds", "loadBalancerSplitIntervalMinutes",
    "loadBalancerMaxNumberOfBundlesToSplitPerCycle",
    "loadBalancerNamespaceBundleSplitConditionHitCountThreshold",
    "loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds",
    "loadBalancerSheddingBundlesWithPoliciesEnabled",
    "maxConcurrentLookupRequest", "maxConcurrentTopicLoadRequest", "brokerShutdownTimeoutMs",
    "metadataStoreSessionTimeoutMillis", "zooKeeperSessionTimeoutMillis",
    "metadataStoreOperationTimeoutSeconds", "zookeeperSessionExpiredPolicy", "keepAliveIntervalSeconds",
    "exposeBundlesMetricsInPrometheus",
)  # fmt: skip

# field -> one of int, float, bool, str, list, "optfloat"
_FIELD_TYPES: Mapping[str, Any] = types.MappingProxyType(
    {
        f.name: (
            "optfloat"
            if f.type == (float | None)
            else {int: int, float: float, bool: bool, str: str, list[str]: list}[f.type]
        )
        for f in msgspec.structs.fields(ServiceConfig)
    }
)
_KEY_TO_FIELD: Mapping[str, str] = types.MappingProxyType(
    {k: _camel_to_snake(k) for k in _PULSAR_KEYS}
)
_FIELD_TO_KEY: Mapping[str, str] = types.MappingProxyType(
    {f: next((k for k, v in _KEY_TO_FIELD.items() if v == f), f) for f in _FIELD_TYPES}
)

# Validation: what Pulsar would break on (a scheduler period ≤ 0, a negative threshold or weight).
_POSITIVE = frozenset(
    {
        "load_balancer_report_update_min_interval_millis",
        "load_balancer_host_usage_check_interval_minutes",
        "stats_update_frequency_in_secs",
        "load_balancer_shedding_interval_minutes",
        "load_balancer_resource_quota_update_interval_minutes",
        "load_balancer_namespace_maximum_bundles",
        "default_number_of_namespace_bundles",
        "max_concurrent_lookup_request",
        "max_concurrent_topic_load_request",
        "metadata_store_session_timeout_millis",
        "metadata_store_operation_timeout_seconds",
        "keep_alive_interval_seconds",
        "load_balancer_split_interval_minutes",
        "load_balancer_service_unit_state_monitor_interval_in_seconds",  # scheduleWithFixedDelay period
    }
)
# Keys where a negative value has a meaning in Pulsar (-1 = "no limit" / "disabled" / "all").
_NEGATIVE_ALLOWED = frozenset(
    {
        "max_unload_bundle_num_per_shedding",
        "load_balancer_namespace_bundle_max_sessions",
        "load_balancer_max_number_of_bundles_in_bundle_load_report",
        # Deprecated, long, default -1 in Pulsar 3.x: ServiceConfiguration.getMetadataStoreSessionTimeoutMillis
        # uses it only when > 0, so conf/broker.conf ships `zooKeeperSessionTimeoutMillis=-1` = unset.
        "zoo_keeper_session_timeout_millis",
    }
)
# Keys declared `long` in ServiceConfiguration.java / LoadBalancerConfiguration.java; every other integer
# key is a Java `int`. PulsarConfigurationLoader parses with Integer/Long.valueOf, so a value outside the
# type's range is a NumberFormatException at broker start: refused here the same way.
_JAVA_LONG = frozenset(
    {
        "load_balancer_shedding_grace_period_minutes",
        "namespace_bundle_unloading_timeout_ms",
        "broker_shutdown_timeout_ms",
        "metadata_store_session_timeout_millis",
        "zoo_keeper_session_timeout_millis",
        "load_balance_shedding_delay_in_seconds",
        "load_balancer_broker_load_data_ttl_in_seconds",
        "load_balancer_service_unit_state_tombstone_delay_time_in_seconds",
        "load_balancer_in_flight_service_unit_state_waiting_time_in_millis",
        "load_balancer_service_unit_state_monitor_interval_in_seconds",
    }
)
_JAVA_INT_RANGE = (-(2**31), 2**31 - 1)
_JAVA_LONG_RANGE = (-(2**63), 2**63 - 1)
_CHOICES: Mapping[str, tuple[str, ...]] = types.MappingProxyType(
    {
        "zookeeper_session_expired_policy": ("reconnect", "shutdown"),
        # ServiceConfiguration.ServiceUnitTableViewSyncerType (Enum.valueOf: case-sensitive)
        "load_balancer_service_unit_table_view_syncer": (
            "None", "MetadataStoreToSystemTopicSyncer", "SystemTopicToMetadataStoreSyncer"),
    }
)
_SPLIT_ALGORITHMS = (
    "range_equally_divide",
    "topic_count_equally_divide",
    "specified_positions_divide",
    "flow_or_qps_equally_divide",
)


class _Bad(msgspec.Struct, frozen=True):
    reason: str


def _shown(raw: Any) -> str:
    """A value as errors show it: repr, cut to one readable line."""
    text = repr(raw)
    return text if len(text) <= 80 else text[:77] + "..."


def _effective_weight(new: float, old: float) -> float:
    if new != 1.0:
        return new
    if old != 1.0:
        return old
    return 1.0


def _parse_str(raw: str, kind: Any) -> Any:
    text = raw.strip()
    if kind is int:
        if re.fullmatch(r"[+-]?\d+", text):
            if len(text.lstrip("+-").lstrip("0")) > 19:  # past any Java long; int() of 4,300+ digits raises
                return _Bad("out of range for a Java long (-9223372036854775808..9223372036854775807)")
            return int(text)
        return _Bad("expected an integer")
    if kind is float or kind == "optfloat":
        try:
            value = float(text)
        except ValueError:
            return _Bad("expected a number")
        return value
    if kind is bool:
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        return _Bad("expected true or false")
    if kind is list:
        return [part.strip() for part in text.split(",") if part.strip()]
    return text


def _coerce(value: Any, kind: Any) -> Any:
    if kind is bool:
        return value if isinstance(value, bool) else _Bad("expected true or false")
    if kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return _Bad("expected an integer")
    if kind is float or kind == "optfloat":
        if value is None and kind == "optfloat":
            return None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        return _Bad("expected a number")
    if kind is list:
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return list(value)
        return _Bad("expected a list of strings")
    return value if isinstance(value, str) else _Bad("expected a string")


def _check(field: str, value: Any) -> str | None:
    """Why `value` is invalid for `field`, or None."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN is not a valid value"
    if isinstance(value, float) and math.isinf(value):
        return "must be a finite number"
    if isinstance(value, int) and not isinstance(value, bool) and _FIELD_TYPES.get(field) is int:
        java, (low, high) = (("long", _JAVA_LONG_RANGE) if field in _JAVA_LONG else ("int", _JAVA_INT_RANGE))
        if not low <= value <= high:
            return f"out of range for a Java {java} ({low}..{high})"
    if field in _CHOICES and value not in _CHOICES[field]:
        return f"expected one of {', '.join(_CHOICES[field])}"
    if field == "default_namespace_bundle_split_algorithm" and value not in _SPLIT_ALGORITHMS:
        return f"expected one of {', '.join(_SPLIT_ALGORITHMS)}"
    if field == "load_balancer_history_resource_percentage" and not 0.0 <= value <= 1.0:
        return "must be between 0 and 1 (the weight of history in the moving average)"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if field in _POSITIVE and value <= 0:
        return "must be > 0"
    if field not in _NEGATIVE_ALLOWED and value < 0:
        return "must be >= 0"
    return None


def _parse_properties(text: str) -> list[tuple[str, str]]:
    """java.util.Properties syntax: `k=v`, `k: v`, `k v`, `#`/`!` comments, `\\` continuations."""
    pairs: list[tuple[str, str]] = []
    logical = ""
    for line in text.splitlines():
        stripped = line.lstrip()
        if not logical and (not stripped or stripped[0] in "#!"):
            continue
        logical += stripped
        trailing = len(logical) - len(logical.rstrip("\\"))
        if trailing % 2 == 1:  # an odd number of backslashes continues the line
            logical = logical[:-1]
            continue
        match = re.match(r"((?:[^\s=:\\]|\\.)+)\s*[=:]?\s*(.*)$", logical)
        logical = ""
        if match:
            pairs.append((match.group(1).replace("\\", ""), match.group(2).strip()))
    return pairs


def property_text(value: Any) -> str:
    """A value as broker.conf text, the form `to_properties` writes and the dynamic configuration
    stores: booleans `true`/`false`, lists comma separated, an empty Optional blank."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if value is None:
        return ""
    return repr(value) if isinstance(value, float) else str(value)


# --- Dynamic configuration ---------------------------------------------------------------------------
#
# Pulsar: an operator changes a key at runtime with `pulsar-admin brokers update-dynamic-config`
# (POST /admin/v2/brokers/configuration/{name}/{value}, BrokersBase.updateDynamicConfiguration). The
# broker checks the key against BrokerService's dynamicConfigurationMap (every ServiceConfiguration field
# annotated `@FieldContext(dynamic = true)`) and the value against the validator registered for that key,
# then writes the change into one metadata node, /admin/configuration, a JSON map name -> string value
# (DynamicConfigurationResources). Every broker watches that node and applies each value with
# FieldParser (BrokerService.handleDynamicConfigurationUpdates / configValueChanged).

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

# ServiceConfiguration.java @0023b937: the keys of `_PULSAR_KEYS` whose field is annotated
# `@FieldContext(dynamic = true)`, plus loadBalancerSheddingExcludedNamespaces (PIP-380, pip/pip-380.md:
# `dynamic = true`; the field is newer than that revision). Every other key of ServiceConfig needs a
# broker restart in Pulsar: loadBalancerEnabled, loadBalancerLoadPlacementStrategy,
# loadBalancerPlacementStrategy, lowerBoundarySheddingEnabled, statsUpdate*, topicBundleAssignmentStrategy,
# loadBalancerResourceQuotaUpdateIntervalMinutes, loadBalancerOverrideBrokerNicSpeedGbps,
# enable(Non)PersistentTopics, loadBalancerBroker{Underloaded,ComfortLoadLevel}*,
# loadBalancerSplitIntervalMinutes,
# loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds, the metadata-session keys,
# keepAliveIntervalSeconds. The service-unit state channel's keys (pulsar-site reference configuration,
# Load Balancer category): loadBalancerServiceUnitTableViewSyncer is dynamic;
# loadBalancerInFlightServiceUnitStateWaitingTimeInMillis,
# loadBalancerServiceUnitStateMonitorIntervalInSeconds, loadManagerServiceUnitStateTableViewClassName and
# loadBalancerMultiPhaseBundleUnload are not.
DYNAMIC_KEYS: frozenset[str] = frozenset(
    {
        "loadManagerClassName", "loadBalancerServiceUnitTableViewSyncer", "loadBalancerLoadSheddingStrategy",
        "loadBalancerReportUpdateThresholdPercentage", "loadBalancerReportUpdateMinIntervalMillis",
        "loadBalancerReportUpdateMaxIntervalMinutes", "loadBalancerHostUsageCheckIntervalMinutes",
        "loadBalancerSheddingEnabled", "loadBalancerSheddingIntervalMinutes",
        "loadBalancerDistributeBundlesEvenlyEnabled", "loadBalancerSheddingGracePeriodMinutes",
        "loadBalancerSheddingExcludedNamespaces", "loadBalancerBrokerMaxTopics",
        "loadBalancerBrokerOverloadedThresholdPercentage", "loadBalancerBrokerThresholdShedderPercentage",
        "loadBalancerAverageResourceUsageDifferenceThresholdPercentage",
        "loadBalancerHistoryResourcePercentage", "loadBalancerCPUResourceWeight",
        "loadBalancerDirectMemoryResourceWeight", "loadBalancerMemoryResourceWeight",
        "loadBalancerBandwidthInResourceWeight", "loadBalancerBandwidthOutResourceWeight",
        "loadBalancerBandwithInResourceWeight", "loadBalancerBandwithOutResourceWeight",
        "loadBalancerBundleUnloadMinThroughputThreshold", "minUnloadMessage", "minUnloadMessageThroughput",
        "maxUnloadPercentage", "maxUnloadBundleNumPerShedding", "atLeastOneBundleSelected",
        "loadBalancerMsgRateDifferenceShedderThreshold",
        "loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold",
        "loadBalancerAvgShedderLowThreshold", "loadBalancerAvgShedderHighThreshold",
        "loadBalancerAvgShedderHitCountLowThreshold", "loadBalancerAvgShedderHitCountHighThreshold",
        "loadBalancerAutoBundleSplitEnabled", "loadBalancerAutoUnloadSplitBundlesEnabled",
        "loadBalancerNamespaceBundleMaxTopics", "loadBalancerNamespaceBundleMaxSessions",
        "loadBalancerNamespaceBundleMaxMsgRate", "loadBalancerNamespaceBundleMaxBandwidthMbytes",
        "loadBalancerNamespaceMaximumBundles", "flowOrQpsDifferenceThresholdPercentage",
        "supportedNamespaceBundleSplitAlgorithms", "defaultNamespaceBundleSplitAlgorithm",
        "defaultNumberOfNamespaceBundles", "loadBalancerMaxNumberOfBundlesInBundleLoadReport",
        "namespaceBundleUnloadingTimeoutMs", "failureDomainsEnabled", "preferLaterVersions",
        "loadBalancerDebugModeEnabled", "loadBalancerBrokerLoadTargetStd",
        "loadBalancerSheddingConditionHitCountThreshold", "loadBalancerTransferEnabled",
        "loadBalancerMaxNumberOfBrokerSheddingPerCycle", "loadBalanceSheddingDelayInSeconds",
        "loadBalancerBrokerLoadDataTTLInSeconds", "loadBalancerMaxNumberOfBundlesToSplitPerCycle",
        "loadBalancerNamespaceBundleSplitConditionHitCountThreshold",
        "loadBalancerSheddingBundlesWithPoliciesEnabled",
        "maxConcurrentLookupRequest", "maxConcurrentTopicLoadRequest", "brokerShutdownTimeoutMs",
        "exposeBundlesMetricsInPrometheus",
    }
)  # fmt: skip

# BrokersBase (apache/pulsar master): the reasons of its RestException(PRECONDITION_FAILED, ...), verbatim
# (the leading space of the first is Pulsar's).
INVALID_VALUE_REASON = " Invalid dynamic-config value"
NON_DYNAMIC_UPDATE_REASON = "Can't update non-dynamic configuration"
NON_DYNAMIC_DELETE_REASON = "Can't delete non-dynamic configuration"
PRECONDITION_FAILED = 412


class DynamicConfigError(ConfigError):
    """A dynamic-configuration change Pulsar's admin REST API refuses.

    `status` and `reason` are Pulsar's answer (`{"reason": ...}` with that HTTP status); `str(e)` is one
    line naming the key and the value, with what to do instead."""

    def __init__(self, key: str, value: str | None, reason: str, hint: str,
                 status: int = PRECONDITION_FAILED) -> None:
        shown = "" if value is None else f" = {_shown(value)}"
        super().__init__(f"dynamic configuration {key}{shown}: {reason.strip()} (HTTP {status}); {hint}")
        self.key, self.value, self.status, self.reason = key, value, status, reason


def is_dynamic_configuration(key: str) -> bool:
    """BrokerService.isDynamicConfiguration: is `key` (Pulsar's camelCase name) changeable at runtime."""
    return key in DYNAMIC_KEYS


def dynamic_configuration_names() -> list[str]:
    """BrokerService.getDynamicConfiguration: the dynamic keys, here in ServiceConfig's field order
    (Pulsar lists its map's keys in no set order)."""
    return [key for key in _FIELD_TO_KEY.values() if key in DYNAMIC_KEYS]


def validate_dynamic_configuration(key: str, value: str) -> bool:
    """BrokerService.validateDynamicConfiguration: the registered validator's verdict, True without one.
    Pulsar registers one validator, for loadManagerClassName (see `LOAD_MANAGER_CLASSES`)."""
    if key == "loadManagerClassName":
        return value in LOAD_MANAGER_CLASSES
    return True


def check_dynamic_update(key: str, value: str) -> None:
    """BrokersBase.persistDynamicConfigurationAsync's checks, in its order: the validator (412 " Invalid
    dynamic-config value"), then the key (412 "Can't update non-dynamic configuration", also for a key
    that does not exist). Raises `DynamicConfigError`.

    Pulsar stops there: a value its FieldParser cannot parse is written to /admin/configuration all the
    same, and every broker logs "Failed to update config" and keeps its value. `ServiceConfig.with_overrides`
    parses the value; the emulator refuses such a value up front (Cluster.set_config)."""
    if not validate_dynamic_configuration(key, value):
        raise DynamicConfigError(key, value, INVALID_VALUE_REASON,
                                 "known load managers: " + ", ".join(LOAD_MANAGER_CLASSES))
    if not is_dynamic_configuration(key):
        raise DynamicConfigError(key, value, NON_DYNAMIC_UPDATE_REASON, _non_dynamic_hint(key))


def check_dynamic_delete(key: str) -> None:
    """BrokersBase.internalDeleteDynamicConfigurationOnMetadataAsync's check: 412 "Can't delete
    non-dynamic configuration" for a key that is not dynamic (or does not exist)."""
    if not is_dynamic_configuration(key):
        raise DynamicConfigError(key, None, NON_DYNAMIC_DELETE_REASON, _non_dynamic_hint(key))


def _non_dynamic_hint(key: str) -> str:
    if key in _KEY_TO_FIELD:
        return f"{key} is read at broker start in Pulsar: set it in broker.conf, [settings] or --set"
    if key in _FIELD_TYPES and _FIELD_TO_KEY[key] != key:
        return f"Pulsar's name of this key is {_FIELD_TO_KEY[key]}"
    if key in _FIELD_TYPES:
        return f"{key} is an emulator switch: set it at start ([settings] or --set)"
    return f"{key} is not a broker.conf key the emulator knows"


def runtime_configuration(conf: ServiceConfig) -> dict[str, str]:
    """BrokerService.getRuntimeConfiguration: every key (Pulsar's camelCase name) -> String.valueOf of
    its current value, as GET /admin/v2/brokers/configuration/runtime answers (Java's rendering: doubles
    as Double.toString, lists and sets as `[a, b]`, an Optional as `Optional[1.0]` / `Optional.empty`).
    Emulator-only switches are not Pulsar keys and are left out."""
    out: dict[str, str] = {}
    for field, kind in _FIELD_TYPES.items():
        key = _FIELD_TO_KEY[field]
        if key == field:  # no camelCase name: an emulator switch
            continue
        value = getattr(conf, field)
        if key in _JAVA_SETS:
            value = sorted(value)
        out[key] = _java_string(value, kind)
    return out


_JAVA_SETS = frozenset({"loadBalancerSheddingExcludedNamespaces"})  # a TreeSet in Java: sorted


def _java_string(value: Any, kind: Any) -> str:
    if kind == "optfloat":
        return "Optional.empty" if value is None else f"Optional[{_java_double(value)}]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, list):
        return "[" + ", ".join(value) + "]"
    return str(value)


def _java_double(x: float) -> str:
    """Double.toString: plain decimal in [1e-3, 1e7), else `d.dddE±n`; always a fractional digit."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    a = abs(x)
    if 1e-3 <= a < 1e7:
        return sign + repr(a)  # Python's shortest repr has no exponent in this range
    digits, exponent = _shortest_digits(a)
    mantissa = digits[0] + "." + (digits[1:] or "0")
    return f"{sign}{mantissa}E{len(digits) - 1 + exponent}"


def _shortest_digits(a: float) -> tuple[str, int]:
    """(significant digits, exponent of the last digit) of a > 0 in its shortest round-trip form."""
    t = decimal.Decimal(repr(a)).normalize().as_tuple()
    return "".join(str(d) for d in t.digits), int(t.exponent)
