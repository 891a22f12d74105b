"""A registry of decision classes by name: built-ins by import path, Pulsar class names, `pkg.module:Class`.

Placement strategies and shedders are both created this way (`strategies.create`, `shedders.create`), so
the lookup rules live once, here, in the layer below both, with `DecisionBase`, the root both bases
(`strategies.BasePlacementStrategy`, `shedders.BaseShedder`) share: what `cls(rng)` stores and Java's
default hooks. Built-ins are a constant table loaded lazily; extra names go on a registry object, never
on module state. Unlike Pulsar, which falls back to a default class when the name cannot be loaded, an
unknown name is an error naming the closest known one: a typo should not change the experiment quietly.
"""

from __future__ import annotations

import functools
import importlib
import random
from collections.abc import Collection, Mapping
from typing import Any

from emulator.model.suggest import did_you_mean

PULSAR_PACKAGE = "org.apache.pulsar.broker.loadbalance.impl."
EXTENSIONS_PACKAGE = "org.apache.pulsar.broker.loadbalance.extensions."
"""The Extensible load manager's classes: registered by their full names, with their own protocol."""


def is_extensible_name(name: str) -> bool:
    """A built-in name of the Extensible load manager (its protocol is not the Modular one)."""
    return name.strip().startswith(EXTENSIONS_PACKAGE)

__all__ = ["PULSAR_PACKAGE", "ClassRegistry", "DecisionBase", "explains"]


class DecisionBase:
    """The root of the built-in strategies and shedders: the constructor `ClassRegistry.create` calls,
    `cls(rng)`, which keeps the injected rng, and Java's default (no-op) `on_active_brokers_change`.
    A subclass writes only its decision (SimPy's `_do_put`/`_do_get` style)."""

    def __init__(self, rng: random.Random) -> None:
        if not isinstance(rng, random.Random):
            raise TypeError(f"rng must be a random.Random, got {type(rng).__name__}")
        self.rng = rng

    def on_active_brokers_change(self, active_brokers: set[str]) -> None:
        """The set of live brokers changed (Java's default: nothing to forget)."""
        return None


class ClassRegistry:
    """Name -> class with a required method; `kind` names the role in error messages."""

    def __init__(self, builtins: Mapping[str, str], *, kind: str, noun: str, method: str,
                 signature: str, elsewhere: Collection[str] = (), elsewhere_hint: str = "") -> None:
        self._entries: dict[str, str | type] = dict(builtins)
        self._kind = kind            # "placement strategy" / "load shedding strategy"
        self._noun = noun            # "strategy" / "shedder"
        self._method = method        # "select_broker" / "find_bundles_for_unloading"
        self._signature = signature  # shown when a class lacks the method
        self._elsewhere = frozenset(elsewhere)  # built-ins of another protocol (the Extensible load manager's)
        self._elsewhere_hint = elsewhere_hint   # "is ...; make it with ..." said for those

    def is_valid_class(self, cls: Any) -> bool:
        return isinstance(cls, type) and callable(getattr(cls, self._method, None))

    def check_class(self, name: str, cls: Any) -> None:
        if not self.is_valid_class(cls):
            raise ValueError(f"{self._noun} {name!r}: {cls!r} is not a {self._kind} class "
                             f"(it needs {self._signature})")

    def import_class(self, path: str) -> type:
        module_name, _, class_name = path.partition(":")
        if not module_name or not class_name:
            raise ValueError(f"{self._noun} {path!r}: expected 'pkg.module:Class'")
        try:
            module = importlib.import_module(module_name)
        except Exception as e:  # ImportError, SyntaxError, anything the module raises at import
            raise ValueError(f"{self._noun} {path!r}: cannot import module {module_name!r}: "
                             f"{type(e).__name__}: {_one_line(e)}") from None
        cls: object = getattr(module, class_name, None)
        if cls is None:
            classes = [n for n, v in vars(module).items() if isinstance(v, type)]
            raise ValueError(f"{self._noun} {path!r}: module {module_name!r} has no attribute {class_name!r}"
                             + did_you_mean(class_name, classes))
        self.check_class(path, cls)
        assert isinstance(cls, type)  # check_class refused anything else
        return cls

    def register(self, name: str, cls: type) -> None:
        if not isinstance(name, str) or not name or ":" in name:
            raise ValueError(f"{self._noun} name = {name!r}; use a non-empty short name without ':'")
        self.check_class(name, cls)
        self._entries[name] = cls

    def names(self) -> list[str]:
        return sorted(self._entries)

    def resolve(self, name: str) -> type:
        """Short name, Pulsar FQCN of a known class, or 'pkg.module:Class'."""
        if not isinstance(name, str):
            raise TypeError(f"{self._noun} name must be a str, got {type(name).__name__}")
        key = name.strip()
        if key in self._elsewhere:
            raise ValueError(f"{self._noun} {name!r} {self._elsewhere_hint}")
        if key.startswith(PULSAR_PACKAGE):
            key = key[len(PULSAR_PACKAGE):]
        entry = self._entries.get(key)
        if entry is None:
            if ":" in key:
                return self.import_class(key)
            raise ValueError(f"unknown {self._kind} {name!r}{did_you_mean(key, self.names())}; known: "
                             f"{', '.join(self.names())} (or give your own class as 'pkg.module:Class')")
        if isinstance(entry, str):
            entry = self.import_class(entry)
            self._entries[key] = entry
        return entry

    def create(self, name: str, rng: random.Random) -> Any:
        if not isinstance(rng, random.Random):
            raise TypeError(f"rng must be a random.Random, got {type(rng).__name__}")
        cls = self.resolve(name)
        try:
            return cls(rng)
        except Exception as e:  # a user's constructor: reported like an import error, up front
            raise ValueError(f"{self._noun} {name!r}: {cls.__qualname__}(rng) raised "
                             f"{type(e).__name__}: {_one_line(e)}") from None


def _one_line(error: BaseException) -> str:
    """An exception's message on one line (a SyntaxError's includes its file and line)."""
    return " ".join(str(error).split()) or "(no message)"


def _defined_at(cls: type, name: str) -> int | None:
    """Index in `cls.__mro__` of the class whose body defines `name` (None: nowhere)."""
    for i, klass in enumerate(cls.__mro__):
        if name in klass.__dict__:
            return i
    return None


@functools.cache
def explains(cls: type, explained: str, *plain: str) -> bool:
    """True when `cls`'s method `explained` speaks for it: defined, and defined no further from `cls`
    than any of the `plain` methods. A user's subclass of a built-in that overrides only the plain
    method (`select_broker`, `find_bundles_for_unloading`) is called through it, not through the
    built-in's explained one (which would ignore the override)."""
    at = _defined_at(cls, explained)
    if at is None:
        return False
    return all((p := _defined_at(cls, name)) is None or at <= p for name in plain)
