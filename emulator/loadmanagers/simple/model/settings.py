"""The settings SimpleLoadManagerImpl decides with: broker.conf keys, overridable in the metadata store.

Follows `SimpleLoadManagerImpl`'s `getLoadBalancerPlacementStrategy`, `isCentralized`,
`getLoadBalancerBroker{Underloaded,Overloaded,ComfortLoad}ThresholdPercentage`,
`getLoadBalancerAutoBundleSplitEnabled`, `getDynamicConfiguration{Double,Boolean}` and the load-factor
writes of `writeResourceQuotasToZooKeeper`. Every value is read from a JSON map stored at a path under
`/loadbalance/settings/` (`{"overloadThreshold": "90"}`), falling back to the ServiceConfig key
(the deprecated `loadBalancerPlacementStrategy`, `loadBalancerBrokerUnderloadedThresholdPercentage`,
`loadBalancerBrokerOverloadedThresholdPercentage`, `loadBalancerBrokerComfortLoadLevelPercentage`,
`loadBalancerAutoBundleSplitEnabled`). A value that does not parse falls back too (Pulsar logs it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import msgspec

from emulator.model.config import ServiceConfig
from emulator.model.java_math import double_to_string, to_long

__all__ = [
    "LEAST_LOADED_SERVER",
    "WEIGHTED_RANDOM_SELECTION",
    "LEAST_MSG_PER_SECOND",
    "STRATEGY_PATH",
    "LOAD_FACTOR_CPU_PATH",
    "LOAD_FACTOR_MEM_PATH",
    "OVERLOAD_THRESHOLD_PATH",
    "COMFORT_LOAD_THRESHOLD_PATH",
    "UNDERLOAD_THRESHOLD_PATH",
    "AUTO_BUNDLE_SPLIT_ENABLED_PATH",
    "SimpleSettings",
    "load_factor_writes",
    "initial_load_factors",
]

LEAST_LOADED_SERVER = "leastLoadedServer"
WEIGHTED_RANDOM_SELECTION = "weightedRandomSelection"
LEAST_MSG_PER_SECOND = "leastMsgPerSecond"
_STRATEGIES = (LEAST_LOADED_SERVER, WEIGHTED_RANDOM_SELECTION, LEAST_MSG_PER_SECOND)

STRATEGY_PATH = "/loadbalance/settings/strategy"
LOAD_FACTOR_CPU_PATH = "/loadbalance/settings/load_factor_cpu"
LOAD_FACTOR_MEM_PATH = "/loadbalance/settings/load_factor_mem"
OVERLOAD_THRESHOLD_PATH = "/loadbalance/settings/overload_threshold"
COMFORT_LOAD_THRESHOLD_PATH = "/loadbalance/settings/comfort_load_threshold"
UNDERLOAD_THRESHOLD_PATH = "/loadbalance/settings/underload_threshold"
AUTO_BUNDLE_SPLIT_ENABLED_PATH = "/loadbalance/settings/auto_bundle_split_enabled"

_NAME_STRATEGY = "loadBalancerStrategy"
_NAME_LOAD_FACTOR_CPU = "loadFactorCPU"
_NAME_LOAD_FACTOR_MEM = "loadFactorMemory"
_NAME_OVERLOAD = "overloadThreshold"
_NAME_UNDERLOAD = "underloadThreshold"
_NAME_COMFORT = "comfortLoadThreshold"
_NAME_AUTO_SPLIT = "autoBundleSplitEnabled"

DynamicSettings = Mapping[str, Mapping[str, str]]
"""path -> the JSON map stored there (what `dynamicConfigurationCache.get(path)` returns)."""


def _lookup(dynamic: DynamicSettings, path: str, name: str) -> str | None:
    stored = dynamic.get(path)
    return None if stored is None else stored.get(name)


def _parse_double(text: str) -> float | None:
    """`Double.parseDouble`, for the forms a setting takes (None where Java throws)."""
    t = text.strip()
    if t.endswith(("d", "D", "f", "F")):
        t = t[:-1]
    if t in ("NaN", "+NaN", "-NaN"):
        return math.nan
    if t.lstrip("+-") == "Infinity":
        return -math.inf if t.startswith("-") else math.inf
    if not t or t.lower().lstrip("+-") in ("nan", "inf", "infinity"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def _double(dynamic: DynamicSettings, path: str, name: str, default: float) -> float:
    text = _lookup(dynamic, path, name)
    if text is None:
        return float(default)
    value = _parse_double(text)
    return float(default) if value is None else value


class SimpleSettings(msgspec.Struct, frozen=True, kw_only=True):
    """The effective values of one decision (Pulsar reads them afresh at each use)."""

    strategy: str = LEAST_LOADED_SERVER
    underload_threshold: int = 50
    overload_threshold: int = 85
    comfort_load_threshold: int = 65
    auto_bundle_split_enabled: bool = True

    @classmethod
    def resolve(cls, conf: ServiceConfig, dynamic: DynamicSettings | None = None) -> SimpleSettings:
        """Stored value, else `conf`. An unknown strategy becomes `weightedRandomSelection`; the
        thresholds are `(long)` of a double, as Pulsar reads them."""
        dyn: DynamicSettings = dynamic or {}
        strategy = _lookup(dyn, STRATEGY_PATH, _NAME_STRATEGY)
        if strategy is None:
            strategy = conf.load_balancer_placement_strategy
        if strategy not in _STRATEGIES:
            strategy = WEIGHTED_RANDOM_SELECTION
        split_text = _lookup(dyn, AUTO_BUNDLE_SPLIT_ENABLED_PATH, _NAME_AUTO_SPLIT)
        return cls(
            strategy=strategy,
            underload_threshold=to_long(_double(dyn, UNDERLOAD_THRESHOLD_PATH, _NAME_UNDERLOAD,
                                                conf.load_balancer_broker_underloaded_threshold_percentage)),
            overload_threshold=to_long(_double(dyn, OVERLOAD_THRESHOLD_PATH, _NAME_OVERLOAD,
                                               conf.load_balancer_broker_overloaded_threshold_percentage)),
            comfort_load_threshold=to_long(_double(dyn, COMFORT_LOAD_THRESHOLD_PATH, _NAME_COMFORT,
                                                   conf.load_balancer_broker_comfort_load_level_percentage)),
            auto_bundle_split_enabled=(conf.load_balancer_auto_bundle_split_enabled if split_text is None
                                       else split_text.strip().lower() == "true"),
        )

    @property
    def is_centralized(self) -> bool:
        """`isCentralized`: leastLoadedServer and leastMsgPerSecond decide on the leader (lookups
        are redirected there); weightedRandomSelection decides on any broker."""
        return self.strategy in (LEAST_LOADED_SERVER, LEAST_MSG_PER_SECOND)


def initial_load_factors(dynamic: DynamicSettings, cpu: float = 0.025, memory: float = 25.0) -> tuple[float, float]:
    """The CPU and memory load factors `start()` reads back from the store (defaults otherwise)."""
    return (_double(dynamic, LOAD_FACTOR_CPU_PATH, _NAME_LOAD_FACTOR_CPU, cpu),
            _double(dynamic, LOAD_FACTOR_MEM_PATH, _NAME_LOAD_FACTOR_MEM, memory))


def load_factor_writes(cpu_load_factor: float, memory_load_factor: float) -> list[tuple[str, dict[str, str]]]:
    """What `writeResourceQuotasToZooKeeper` stores first: each factor as `Double.toString`."""
    return [(LOAD_FACTOR_CPU_PATH, {_NAME_LOAD_FACTOR_CPU: double_to_string(cpu_load_factor)}),
            (LOAD_FACTOR_MEM_PATH, {_NAME_LOAD_FACTOR_MEM: double_to_string(memory_load_factor)})]
