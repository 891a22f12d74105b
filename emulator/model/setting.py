"""One declaration per configuration key, and every table derived from it.

As CockroachDB registers each cluster setting once (`settings.RegisterIntSetting(class, name, desc,
default)`) and Pulsar declares each broker.conf key once (a ServiceConfiguration field with its
`@FieldContext(dynamic = ..., doc = ...)`), a key here is one field of a msgspec Struct annotated with its
`Setting`:

    load_balancer_shedding_interval_minutes: Annotated[int, Setting(
        "loadBalancerSheddingIntervalMinutes", dynamic=True, bound="positive", doc="shedding period")] = 1

The field gives the attribute name, the Python type and the default; the `Setting` gives Pulsar's
camelCase key (None for an emulator switch, whose key is its field name), whether Pulsar lets an operator
change it at runtime, its Java type, its checks, where Pulsar declares it and its doc line.
`Settings.of(cls)` reads the annotations once and derives every table: names both ways, types, defaults,
the dynamic keys, the validators (and, in properties.py, the reference table). Nothing else lists keys.

Values: `parse_text` reads broker.conf text as PulsarConfigurationLoader does, `coerce` takes a typed
value (TOML, `--set`), `problem` says why a value is refused; each returns or names the reason in the
words the error messages use.
"""

from __future__ import annotations

import math
import re
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Literal, TypeAlias, get_args, get_origin, get_type_hints

import msgspec

__all__ = ["Bad", "Declared", "Kind", "Range", "Setting", "Settings", "Value", "shown", "switch"]

Value: TypeAlias = bool | int | float | str | list[str] | None
"""A setting's value: what a ServiceConfig field holds."""

Kind = Literal["bool", "int", "float", "optfloat", "str", "list"]
"""A setting's type: `optfloat` is Pulsar's Optional<Double> (None = empty), `list` a list of strings."""

_KINDS: Mapping[object, Kind] = types.MappingProxyType(
    {bool: "bool", int: "int", float: "float", float | None: "optfloat", str: "str", list[str]: "list"}
)
_JAVA_INT_RANGE = (-(2**31), 2**31 - 1)
_JAVA_LONG_RANGE = (-(2**63), 2**63 - 1)


@dataclass(frozen=True)
class Range:
    """Closed bounds of a number, with what the number means (said in the error)."""

    low: float
    high: float
    meaning: str


@dataclass(frozen=True)
class Setting:
    """What one key is, beyond its field's name, type and default (the `Annotated` metadata)."""

    key: str | None
    """Pulsar's camelCase name, spelled as in ServiceConfiguration.java; None = an emulator switch."""
    dynamic: bool = False
    """`@FieldContext(dynamic = true)`: `pulsar-admin brokers update-dynamic-config` may change it."""
    doc: str = ""
    """One line: what the key does, or which code reads it."""
    source: str = "ServiceConfiguration"
    """Where Pulsar declares it (ServiceConfiguration @0023b937 unless said)."""
    deprecated: str = ""
    """Why Pulsar deprecates it, or what replaces it; empty = not deprecated."""
    long: bool = False
    """An integer declared `long` in Java (else `int`): the range PulsarConfigurationLoader accepts."""
    bound: Literal["positive", "non-negative", "any"] = "non-negative"
    """For a number: > 0 (a scheduler period), >= 0 (a threshold, a weight), or any (-1 has a meaning)."""
    within: Range | None = None
    """For a number: closed bounds, checked before `bound`."""
    choices: tuple[str, ...] = ()
    """For a string: the accepted values (an enum's names, case-sensitive)."""
    accepts: tuple[str, ...] = ()
    """For a dynamic key: the values of the dynamic-config validator Pulsar registers for it."""
    sorted_set: bool = False
    """A Java TreeSet: its runtime view lists the values sorted."""
    quiet_default: bool = False
    """Left out of `ServiceConfig.to_properties` (run.json's config) while it holds its default: a switch
    added after the recorded runs, whose run.json lists every key, so a run that does not set it records
    the same bytes as before the switch existed."""


def switch(doc: str, *, quiet_default: bool = False) -> Setting:
    """An emulator-only switch: no Pulsar key (its key is its field name), set at start only; `doc` names
    the deviation from Pulsar it selects."""
    return Setting(None, doc=doc, source="emulator", quiet_default=quiet_default)


@dataclass(frozen=True)
class Bad:
    """A value that does not parse, with the reason the error gives."""

    reason: str


@dataclass(frozen=True)
class Declared:
    """One key as declared: its field, its key, its type, its default and its `Setting`."""

    field: str
    key: str
    kind: Kind
    setting: Setting
    default: Value | msgspec.UnsetType
    default_factory: Callable[[], Value] | None

    @property
    def is_pulsar(self) -> bool:
        """A Pulsar key (not an emulator switch)."""
        return self.setting.key is not None

    def default_value(self) -> Value:
        if self.default_factory is not None:
            return self.default_factory()
        assert not isinstance(self.default, msgspec.UnsetType), f"{self.field}: a setting needs a default"
        return self.default

    # --- values --------------------------------------------------------------------------------------

    def parse_text(self, raw: str) -> Value | Bad:
        """A non-blank broker.conf value, parsed as PulsarConfigurationLoader's FieldParser does."""
        text = raw.strip()
        kind = self.kind
        if kind == "int":
            if re.fullmatch(r"[+-]?\d+", text):
                if len(text.lstrip("+-").lstrip("0")) > 19:  # past any Java long; int() of 4,300+ digits raises
                    return Bad("out of range for a Java long (-9223372036854775808..9223372036854775807)")
                return int(text)
            return Bad("expected an integer")
        if kind in ("float", "optfloat"):
            try:
                return float(text)
            except ValueError:
                return Bad("expected a number")
        if kind == "bool":
            if text.lower() in ("true", "false"):
                return text.lower() == "true"
            return Bad("expected true or false")
        if kind == "list":
            return [part.strip() for part in text.split(",") if part.strip()]
        return text

    def coerce(self, value: object) -> Value | Bad:
        """A typed value (TOML, `--set` after parsing, a test): an int where a number is expected becomes
        a float, a float with no fraction where an integer is expected an int; nothing else converts."""
        kind = self.kind
        if kind == "bool":
            return value if isinstance(value, bool) else Bad("expected true or false")
        if kind == "int":
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            if isinstance(value, float) and value.is_integer():
                return int(value)
            return Bad("expected an integer")
        if kind in ("float", "optfloat"):
            if value is None and kind == "optfloat":
                return None
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
            return Bad("expected a number")
        if kind == "list":
            if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
                return [str(v) for v in value]
            return Bad("expected a list of strings")
        return value if isinstance(value, str) else Bad("expected a string")

    def problem(self, value: object) -> str | None:
        """Why `value` is refused (what Pulsar would refuse or break on), or None."""
        setting = self.setting
        if isinstance(value, float) and math.isnan(value):
            return "NaN is not a valid value"
        if isinstance(value, float) and math.isinf(value):
            return "must be a finite number"
        if isinstance(value, int) and not isinstance(value, bool) and self.kind == "int":
            java, (low, high) = ("long", _JAVA_LONG_RANGE) if setting.long else ("int", _JAVA_INT_RANGE)
            if not low <= value <= high:
                return f"out of range for a Java {java} ({low}..{high})"
        if setting.choices and value not in setting.choices:
            return f"expected one of {', '.join(setting.choices)}"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        within = setting.within
        if within is not None and not within.low <= value <= within.high:
            return f"must be between {within.low:g} and {within.high:g} ({within.meaning})"
        if setting.bound == "positive" and value <= 0:
            return "must be > 0"
        if setting.bound != "any" and value < 0:
            return "must be >= 0"
        return None


class Settings:
    """The declared keys of one Struct, in field order, and the tables derived from them."""

    def __init__(self, declared: tuple[Declared, ...]) -> None:
        self.declared = declared
        self.by_field: Mapping[str, Declared] = types.MappingProxyType({d.field: d for d in declared})
        self.by_key: Mapping[str, Declared] = types.MappingProxyType({d.key: d for d in declared if d.is_pulsar})
        self.dynamic_keys: frozenset[str] = frozenset(d.key for d in declared if d.setting.dynamic)
        if len(self.by_field) != len(declared) or len(set(d.key for d in declared)) != len(declared):
            raise TypeError("a setting is declared twice: " + ", ".join(_twice(declared)))

    @classmethod
    def of(cls, struct: type[msgspec.Struct]) -> Settings:
        """Read each field's `Setting` (a field without exactly one is a TypeError naming it)."""
        hints = get_type_hints(struct, include_extras=True)
        declared: list[Declared] = []
        for info in msgspec.structs.fields(struct):
            hint = hints[info.name]
            if get_origin(hint) is not Annotated:
                raise TypeError(f"{struct.__name__}.{info.name}: declare it as Annotated[type, Setting(...)]")
            base, *meta = get_args(hint)
            settings = [m for m in meta if isinstance(m, Setting)]
            if len(settings) != 1 or base not in _KINDS:
                raise TypeError(f"{struct.__name__}.{info.name}: needs one Setting and a type of {list(_KINDS)}")
            (setting,) = settings
            factory = None if info.default_factory is msgspec.NODEFAULT else info.default_factory
            default = msgspec.UNSET if info.default is msgspec.NODEFAULT else info.default
            declared.append(Declared(field=info.name, key=setting.key or info.name, kind=_KINDS[base],
                                     setting=setting, default=default, default_factory=factory))
        return cls(tuple(declared))

    def __iter__(self) -> Iterator[Declared]:
        return iter(self.declared)

    def lookup(self, name: str) -> Declared | None:
        """The key of a camelCase Pulsar name or of a field name; None if neither."""
        return self.by_key.get(name) or self.by_field.get(name)


def _twice(declared: tuple[Declared, ...]) -> list[str]:
    """The field names and the keys that more than one declaration has."""
    twice: list[str] = []
    for names in ([d.field for d in declared], [d.key for d in declared]):
        twice += sorted({name for name in names if names.count(name) > 1})
    return twice


def shown(raw: object) -> str:
    """A value as errors show it: repr, cut to one readable line."""
    text = repr(raw)
    return text if len(text) <= 80 else text[:77] + "..."
