"""Dynamic configuration rules: which keys Pulsar lets an operator change at runtime, the checks and
answers of its admin REST API, and the runtime view of the values.

Pulsar: an operator changes a key at runtime with `pulsar-admin brokers update-dynamic-config`
(POST /admin/v2/brokers/configuration/{name}/{value}, BrokersBase.updateDynamicConfiguration). The
broker checks the key against BrokerService's dynamicConfigurationMap (every ServiceConfiguration field
annotated `@FieldContext(dynamic = true)`: here every key declared with `Setting(dynamic=True)`) and the
value against the validator registered for that key (`Setting(accepts=...)`), then writes the change
into one metadata node, /admin/configuration, a JSON map name -> string value
(DynamicConfigurationResources). Every broker watches that node and applies each value with
FieldParser (BrokerService.handleDynamicConfigurationUpdates / configValueChanged).
"""

from __future__ import annotations

from .errors import ConfigError
from .properties import java_string
from .service_config import SETTINGS, ServiceConfig
from .setting import shown

__all__ = [
    "DYNAMIC_KEYS",
    "DynamicConfigError",
    "INVALID_VALUE_REASON",
    "NON_DYNAMIC_DELETE_REASON",
    "NON_DYNAMIC_UPDATE_REASON",
    "PRECONDITION_FAILED",
    "check_dynamic_delete",
    "check_dynamic_update",
    "dynamic_configuration_names",
    "is_dynamic_configuration",
    "runtime_configuration",
    "validate_dynamic_configuration",
]

DYNAMIC_KEYS: frozenset[str] = SETTINGS.dynamic_keys
"""The keys (Pulsar's camelCase names) Pulsar changes at runtime; every other key needs a restart."""

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
        shown_value = "" if value is None else f" = {shown(value)}"
        super().__init__(f"dynamic configuration {key}{shown_value}: {reason.strip()} (HTTP {status}); {hint}")
        self.key, self.value, self.status, self.reason = key, value, status, reason


def is_dynamic_configuration(key: str) -> bool:
    """BrokerService.isDynamicConfiguration: is `key` (Pulsar's camelCase name) changeable at runtime."""
    return key in DYNAMIC_KEYS


def dynamic_configuration_names() -> list[str]:
    """BrokerService.getDynamicConfiguration: the dynamic keys, here in ServiceConfig's field order
    (Pulsar lists its map's keys in no set order)."""
    return [d.key for d in SETTINGS if d.setting.dynamic]


def validate_dynamic_configuration(key: str, value: str) -> bool:
    """BrokerService.validateDynamicConfiguration: the registered validator's verdict, True without one.
    Pulsar registers one validator, for loadManagerClassName (see `LOAD_MANAGER_CLASSES`)."""
    declared = SETTINGS.by_key.get(key)
    if declared is None or not declared.setting.accepts:
        return True
    return value in declared.setting.accepts


def check_dynamic_update(key: str, value: str) -> None:
    """BrokersBase.persistDynamicConfigurationAsync's checks, in its order: the validator (412 " Invalid
    dynamic-config value"), then the key (412 "Can't update non-dynamic configuration", also for a key
    that does not exist). Raises `DynamicConfigError`.

    Pulsar stops there: a value its FieldParser cannot parse is written to /admin/configuration all the
    same, and every broker logs "Failed to update config" and keeps its value. `ServiceConfig.with_overrides`
    parses the value; the emulator refuses such a value up front (Cluster.set_config)."""
    if not validate_dynamic_configuration(key, value):
        accepts = SETTINGS.by_key[key].setting.accepts
        raise DynamicConfigError(key, value, INVALID_VALUE_REASON, "known load managers: " + ", ".join(accepts))
    if not is_dynamic_configuration(key):
        raise DynamicConfigError(key, value, NON_DYNAMIC_UPDATE_REASON, _non_dynamic_hint(key))


def check_dynamic_delete(key: str) -> None:
    """BrokersBase.internalDeleteDynamicConfigurationOnMetadataAsync's check: 412 "Can't delete
    non-dynamic configuration" for a key that is not dynamic (or does not exist)."""
    if not is_dynamic_configuration(key):
        raise DynamicConfigError(key, None, NON_DYNAMIC_DELETE_REASON, _non_dynamic_hint(key))


def _non_dynamic_hint(key: str) -> str:
    if key in SETTINGS.by_key:
        return f"{key} is read at broker start in Pulsar: set it in broker.conf, [settings] or --set"
    declared = SETTINGS.by_field.get(key)
    if declared is not None and declared.is_pulsar:
        return f"Pulsar's name of this key is {declared.key}"
    if declared is not None:
        return f"{key} is an emulator switch: set it at start ([settings] or --set)"
    return f"{key} is not a broker.conf key the emulator knows"


def runtime_configuration(conf: ServiceConfig) -> dict[str, str]:
    """BrokerService.getRuntimeConfiguration: every key (Pulsar's camelCase name) -> String.valueOf of
    its current value, as GET /admin/v2/brokers/configuration/runtime answers (Java's rendering: doubles
    as Double.toString, lists and sets as `[a, b]`, an Optional as `Optional[1.0]` / `Optional.empty`).
    Emulator-only switches are not Pulsar keys and are left out."""
    out: dict[str, str] = {}
    for declared in SETTINGS:
        if not declared.is_pulsar:
            continue
        value = getattr(conf, declared.field)
        if declared.setting.sorted_set:  # a TreeSet in Java: sorted
            value = sorted(value)
        out[declared.key] = java_string(value, declared.kind)
    return out
