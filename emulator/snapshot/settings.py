"""A snapshot's runtime configuration -> the scenario's `[settings]`: the cluster's own load-balancing keys.

`GET /admin/v2/brokers/configuration/runtime` (BrokersBase.getRuntimeConfiguration) answers every key as
Java's `String.valueOf` renders it: `0.85`, `true`, `[a, b]` for a list, `Optional[1.0]` or
`Optional.empty` for an Optional. Each key the emulator knows is parsed back into the emulator's own type
(ServiceConfig's parsing, as a broker.conf value); a key whose value equals the emulator's default is left
out (the replay gets it anyway), except the load manager, its shedder and its placement strategy, which
are always written so the scenario says which ones the cluster ran. Keys the emulator does not know (a
real broker's other keys: storage, TLS, ...) are not load balancing and are passed over silently; a
known key whose value the emulator cannot take is one "skipped" line.
"""

from __future__ import annotations

from typing import Any

from emulator.model.errors import ConfigError
from emulator.model.service_config import SETTINGS, ServiceConfig
from emulator.workload.loader import PLACEMENT_KEY, SHEDDER_KEY

__all__ = ["ALWAYS", "settings_from_runtime"]

LOAD_MANAGER_KEY = ServiceConfig.pulsar_name("load_manager_class_name")
ALWAYS = (LOAD_MANAGER_KEY, SHEDDER_KEY, PLACEMENT_KEY)
"""Written even when they are the emulator's defaults: which manager, shedder and placement ran."""


def _java_value(text: str) -> str | list[str] | None:
    """The broker.conf form of one `String.valueOf` rendering; None for `Optional.empty`."""
    text = text.strip()
    if text == "Optional.empty":
        return None
    if text.startswith("Optional[") and text.endswith("]"):
        return text[len("Optional["):-1]
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [part.strip() for part in inner.split(",")] if inner else []
    return text


def _toml_value(value: Any) -> Any:
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_toml_value(v) for v in value]
        return sorted(items) if isinstance(value, (set, frozenset)) else items
    return str(value)


def settings_from_runtime(runtime: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    """(`[settings]` keys -> TOML values, one line per known key left out and why)."""
    default = ServiceConfig()
    settings: dict[str, Any] = {}
    skipped: list[str] = []
    for declared in SETTINGS:
        if not declared.is_pulsar or declared.key not in runtime:
            continue
        raw = _java_value(runtime[declared.key])
        if raw is None:
            continue
        try:
            conf = default.with_overrides({declared.key: raw}, source="runtime configuration")
        except ConfigError as e:
            skipped.append(f"setting {declared.key} = {runtime[declared.key]!r}: {e}")
            continue
        value = getattr(conf, declared.field)
        if value != getattr(default, declared.field) or declared.key in ALWAYS:
            settings[declared.key] = _toml_value(value)
    return settings, skipped
