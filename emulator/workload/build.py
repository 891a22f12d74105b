"""From a Scenario to the pieces a cluster is built from: ServiceConfig, ClusterSettings, ClientSettings
and the `Workload` (traffic model + resource model + the load source the brokers call).

Configuration precedence, lowest first (the rule `--help` states):

    built-in defaults < broker.conf (`base`) < scenario [settings] < scenario [cluster] placement/shedder
                      < `overrides` (--set key=value, --placement, --shedder)

`overrides` takes Pulsar keys (camelCase or snake_case) plus the two shorthands "placement" and
"shedder", which set loadBalancerLoadPlacementStrategy / loadBalancerLoadSheddingStrategy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import numpy as np

from emulator.cluster.client import ClientSettings
from emulator.cluster.cluster import ClusterSettings
from emulator.cluster.load_manager import EXTENSIBLE, resolve_class_name
from emulator.model.class_registry import is_extensible_name
from emulator.cluster.network import broker_id_for
from emulator.model.config import ConfigError, ServiceConfig
from emulator.runtime import derive_seed

from .errors import MISSING, ScenarioError
from .initial import InitialPlan, plan_initial
from .capacity_table import scenario_capacity
from .latency_table import scenario_latencies
from .load import WorkloadLoadSource
from .loader import PLACEMENT_KEY, SHEDDER_KEY, check_strategies, strategy_keys, unknown_config_key
from .resources import BrokerCapacity, ResourceModel
from .schema import Scenario
from .traffic import TrafficModel

__all__ = ["Workload", "broker_id", "client_settings", "cluster_settings", "initial_capacities",
           "scenario_latencies", "service_config"]

_SHORTHANDS = {"placement": PLACEMENT_KEY, "shedder": SHEDDER_KEY, "load_manager": "loadManagerClassName"}
TRANSFER_SHEDDER = "org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder"


def broker_id(name: str) -> str:
    """`broker-3` or `broker-3:8080` -> `broker-3:8080`."""
    return name if ":" in name else broker_id_for(name)


def service_config(scenario: Scenario, base: ServiceConfig | None = None,
                   overrides: Mapping[str, Any] | None = None, *,
                   overrides_source: str = "--set") -> ServiceConfig:
    """The run's ServiceConfig (a fresh object: the cluster mutates it on set_config)."""
    conf = base or ServiceConfig()
    source = f"{scenario.name} [settings]"
    try:
        conf = conf.with_overrides(scenario.settings, source=source)
        conf = conf.with_overrides(strategy_keys(scenario), source=f"{scenario.name} [cluster]")
    except ConfigError as e:
        raise ScenarioError(source, None, MISSING, str(e)) from None
    if overrides:
        mapped = {_SHORTHANDS.get(k, k): v for k, v in overrides.items()}
        for key, value in mapped.items():
            try:
                ServiceConfig.field_name(key)
            except ValueError:
                raise ConfigError(f"{overrides_source}: {key} = {value!r}: {unknown_config_key(key)}") from None
        if "loadManagerClassName" in mapped:
            mapped["loadManagerClassName"] = resolve_class_name(str(mapped["loadManagerClassName"]))
        conf = conf.with_overrides(mapped, source=overrides_source)
        if (conf.load_manager_class_name == EXTENSIBLE and SHEDDER_KEY not in mapped
                and not is_extensible_name(conf.load_balancer_load_shedding_strategy)):
            # a scenario written for Modular (its ThresholdShedder) switched to the Extensible load
            # manager: configured as Pulsar's docs configure it (loadBalancerLoadSheddingStrategy=
            # ...TransferShedder). A Modular shedder named by --shedder / --set stays, and Pulsar's
            # own fallback applies (an error logged, TransferShedder used).
            conf = conf.with_overrides({SHEDDER_KEY: TRANSFER_SHEDDER}, source=overrides_source)

        def fail(key: str, reason: str) -> Exception:
            flag = next((k for k, v in _SHORTHANDS.items() if v == key and k in overrides), key)
            if flag in _SHORTHANDS and overrides_source == "--set":   # `run --placement X` said so
                return ConfigError(f"--{flag.replace('_', '-')} = {overrides.get(flag)!r}: {reason}")
            return ConfigError(f"{overrides_source}: {flag} = {overrides.get(flag)!r}: {reason}")

        check_strategies(conf.load_balancer_load_placement_strategy,
                         conf.load_balancer_load_shedding_strategy, fail,
                         extensible=conf.load_manager_class_name == EXTENSIBLE)
    first = conf.emulator_first_leader
    if first and first not in scenario.cluster.broker_ids:   # a snapshot's leader: one of its brokers
        raise ConfigError(f"{source}: emulator_first_leader = {first!r}: not one of the scenario's brokers "
                          f"({', '.join(scenario.cluster.broker_ids)})")
    return msgspec.structs.replace(conf)


def cluster_settings(scenario: Scenario) -> ClusterSettings:
    """Emulator knobs of the scenario. Network latency is passed only if the cluster supports it."""
    c = scenario.cluster
    values: dict[str, Any] = dict(
        report_interval=float(c.report_interval),
        metadata_op_latency=float(scenario.metadata_store.latency or 0.0),
        broker_start_timeout=float(c.broker_start_timeout),
        bundle_close_time=float(0.02 if c.bundle_close_time is None else c.bundle_close_time),
        topic_close_time=float(0.002 if c.topic_close_time is None else c.topic_close_time),
        sigterm_timeout=float(c.sigterm_timeout),
        latency=scenario_latencies(scenario),
        capacity=scenario_capacity(scenario),
    )
    fields = {f.name for f in msgspec.structs.fields(ClusterSettings)}
    if "network_latency" in fields:
        values["network_latency"] = float(scenario.network.latency)
    return ClusterSettings(**values)


def client_settings(scenario: Scenario) -> ClientSettings:
    c = scenario.clients
    return ClientSettings(operation_timeout=c.operation_timeout, initial_backoff=c.initial_backoff,
                          max_backoff=c.max_backoff, max_lookup_redirects=c.max_lookup_redirects,
                          service_url=c.service_url, lookup_retry=c.library == "cpp",
                          lockstep_jitter=c.library == "cpp")


def initial_capacities(scenario: Scenario) -> dict[str, BrokerCapacity]:
    """broker id -> capacity, for the brokers named in [cluster.overrides]."""
    default = scenario.cluster.capacity
    return {broker_id(name): msgspec.structs.replace(default, **o.changes())
            for name, o in scenario.cluster.overrides.items()}


class Workload:
    """Everything the scenario drives besides the cluster: traffic, resources, the load source, the
    consumers' handles (for jitter), and the event generator. Build it with the run's ServiceConfig
    object (the one the cluster gets), so the resource model sees dynamic config changes."""

    def __init__(self, scenario: Scenario, *, seed: int | None = None,
                 conf: ServiceConfig | None = None) -> None:
        self.scenario = scenario
        self.seed = scenario.seed if seed is None else seed
        self.conf = conf
        self.traffic = TrafficModel.from_scenario(scenario, self.seed)
        self.resources = ResourceModel(scenario.resources, scenario.cluster.capacity, seed=self.seed,
                                       capacities=initial_capacities(scenario), conf=conf)
        self.load_source = WorkloadLoadSource(self.traffic, self.resources)
        self.rng = np.random.default_rng(derive_seed(self.seed, "workload/events"))
        self.t0: float | None = None
        """Emulated time of the run start (set by `drive`); event times are offsets from it."""
        self.producers: dict[str, list[tuple[str, int]]] = {}
        self.consumers: dict[str, list[tuple[str, int]]] = {}
        """topic -> [(client name, handle id)] of its live producers / consumers."""
        self.errors: list[str] = []
        """Events that could not be applied (one line each); the run goes on."""
        self.initial: InitialPlan | None = (
            plan_initial(scenario, self.traffic, conf or ServiceConfig()) if scenario.initial else None)
        """The [initial] table's owners and steady traffic at t = 0 (initial.py), or None."""

    def offset(self, now: float) -> float:
        """Run-relative time of an emulated instant."""
        return now - (self.t0 or 0.0)
