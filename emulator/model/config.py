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
"""

from __future__ import annotations

import math
import re
import types
import warnings
from collections.abc import Mapping
from typing import Any

import msgspec

from .errors import ConfigError

__all__ = ["ConfigError", "ServiceConfig", "PROFILES"]

_IMPL = "org.apache.pulsar.broker.loadbalance.impl."


class ServiceConfig(msgspec.Struct, kw_only=True):
    """Pulsar's ServiceConfiguration, restricted to what load balancing and the emulated protocol use."""

    # --- Load manager and strategies -------------------------------------------------------------
    load_balancer_enabled: bool = True
    load_manager_class_name: str = _IMPL + "ModularLoadManagerImpl"
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
        out: dict[str, str] = {}
        for field in _FIELD_TYPES:
            value = getattr(self, field)
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, list):
                text = ",".join(value)
            elif value is None:
                text = ""
            else:
                text = repr(value) if isinstance(value, float) else str(value)
            out[_FIELD_TO_KEY[field]] = text
        return out

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
    "loadBalancerEnabled", "loadManagerClassName", "loadBalancerLoadSheddingStrategy",
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
    }
)
_JAVA_INT_RANGE = (-(2**31), 2**31 - 1)
_JAVA_LONG_RANGE = (-(2**63), 2**63 - 1)
_CHOICES: Mapping[str, tuple[str, ...]] = types.MappingProxyType(
    {"zookeeper_session_expired_policy": ("reconnect", "shutdown")}
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
