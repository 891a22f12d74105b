"""The base event types, their registry and records, and the bus (`ClusterEvents`).

Every concrete `Event` subclass registers its kind when defined (`Event.__init_subclass__`); the
family modules beside this one define them, and the package imports those in a fixed order so that
`event_types()` lists every type in the order it always has. See the package docstring for what an
event is and how it is recorded."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any, ClassVar

import msgspec

from emulator.runtime import Clock

Listener = Callable[["Event"], None]


def to_builtins(value: Any) -> Any:
    """Structs and sets to plain JSON-able values, dict keys sorted; +inf stays a float (JSON null)."""
    return msgspec.to_builtins(value, builtin_types=(float,), str_keys=True, order="deterministic")


# ================================================================================== the base types

_KINDS: dict[type[Event], str] = {}
"""Concrete event type -> its kind: what `emit` accepts, and the name it counts under."""
_BY_RECORD: dict[tuple[str, str | None], type[Event]] = {}
"""(kind, decision or op) -> type, for `from_record`."""
_SUBKIND_FIELD: dict[str, str | None] = {}
"""kind -> the record field that tells its types apart ("decision", "op"), or None."""


class Event(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One thing the cluster reports. `t` is stamped by `ClusterEvents.emit` (emulated seconds).

    Concrete types set `kind`; bases that only group types set `abstract = True` in their body."""

    kind: ClassVar[str]
    subkind_field: ClassVar[str | None] = None
    abstract: ClassVar[bool] = True
    t: float = 0.0

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("abstract", False):
            return
        cls.abstract = False
        if not isinstance(getattr(cls, "kind", None), str):
            raise TypeError(f"event type {cls.__name__} has no `kind`; give it `kind = \"...\"` "
                            "(or `abstract = True` if it only groups other types)")
        field = cls.subkind_field
        sub = getattr(cls, field, None) if field is not None else None
        if field is not None and not isinstance(sub, str):
            raise TypeError(f"event type {cls.__name__} (kind {cls.kind!r}) has no `{field}`; "
                            f"give it `{field} = \"...\"`")
        key = (cls.kind, sub)
        if key in _BY_RECORD:
            raise TypeError(f"event types {_BY_RECORD[key].__name__} and {cls.__name__} both record "
                            f"as kind={cls.kind!r}" + (f", {field}={sub!r}" if field else ""))
        if _SUBKIND_FIELD.setdefault(cls.kind, field) != field:
            raise TypeError(f"event type {cls.__name__}: kind {cls.kind!r} is told apart by "
                            f"{_SUBKIND_FIELD[cls.kind]!r} elsewhere, not {field!r}")
        _KINDS[cls] = cls.kind
        _BY_RECORD[key] = cls

    def record(self) -> dict[str, Any]:
        """This event as its recorded JSON object (see the module docstring)."""
        out: dict[str, Any] = {"kind": self.kind, "t": self.t}
        fields = to_builtins(self)
        fields.pop("t", None)
        out.update(fields)
        return out

    @classmethod
    def from_fields(cls, fields: dict[str, Any]) -> Event:
        """The inverse of `record` (without `kind` and `decision`)."""
        return msgspec.convert(fields, cls)


class Decision(Event):
    """A load-balancing decision: what the decision log keeps (decisions.jsonl). Its record ends with
    `decision`: the leader's own name for it, or its kind."""

    abstract = True
    decision: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        if cls.subkind_field is None and isinstance(cls.__dict__.get("kind"), str):
            cls.decision = cls.kind   # assignment, bundle_unloaded, ...: the decision is the kind
        super().__init_subclass__(**kwargs)

    def record(self) -> dict[str, Any]:
        out = super().record()
        out["decision"] = self.decision
        return out


class LeaderDecision(Decision):
    """One step of the leader's shedding or split cycle: kind "decision", told apart by `decision`."""

    abstract = True
    kind = "decision"
    subkind_field = "decision"


class AdminAction(Event):
    """An operator's admin call (Cluster's operator API, policy_admin.py): kind "admin" and an `op`."""

    abstract = True
    kind = "admin"
    subkind_field = "op"
    op: ClassVar[str]

    def record(self) -> dict[str, Any]:
        out = super().record()
        out["op"] = self.op
        return out


def to_record(event: Event) -> dict[str, Any]:
    """The JSON object a recording holds for `event` (decisions.jsonl / events.jsonl line)."""
    return event.record()


def from_record(record: dict[str, Any]) -> Event:
    """A recorded JSON object read back into its event type (ValueError for an unknown kind)."""
    kind = record.get("kind")
    if kind not in _SUBKIND_FIELD:
        raise ValueError(f"recorded event kind = {kind!r}; known kinds: {', '.join(sorted(_SUBKIND_FIELD))}")
    field = _SUBKIND_FIELD[kind]
    sub = record.get(field) if field is not None else None
    cls = _BY_RECORD.get((kind, sub))
    if cls is None:
        raise ValueError(f"recorded event kind = {kind!r}, {field} = {sub!r}: no such event type")
    drop = {"kind", field, "decision" if issubclass(cls, Decision) else None}
    return cls.from_fields({k: v for k, v in record.items() if k not in drop})


def event_types() -> list[type[Event]]:
    """Every concrete event type, in definition order."""
    return list(_KINDS)


# ================================================================================== the bus


class ClusterEvents:
    """The cluster's event bus: `emit` counts by kind and hands the event to every listener.

    `now` reads the clock faster where the caller has a faster reader of the same time (an
    entered ActorSystem's `now`, bound to the loop's own time): one event per producer
    connecting in a storm."""

    def __init__(self, clock: Clock, now: Callable[[], float] | None = None) -> None:
        self._now = now if now is not None else clock.now
        self.listeners: list[Listener] = []
        self.counts: Counter[str] = Counter()
        self._seen: set[Any] = set()

    def first(self, key: Any) -> bool:
        """True the first time `key` is given: a fault that repeats every lookup is logged once per
        distinct error (and counted every time by its event)."""
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    def emit(self, event: Event) -> None:
        """Count `event` under its kind; if anyone listens, stamp its time and hand it over."""
        try:
            self.counts[_KINDS[type(event)]] += 1
        except KeyError:
            raise TypeError(
                f"emit takes an event of emulator.cluster.events, e.g. "
                f"emit(BrokerStarted(broker=...)), not {type(event).__name__} {event!r:.60}; "
                "a new kind of report needs a Struct there") from None
        if not self.listeners:
            return
        event.t = self._now()
        for listener in tuple(self.listeners):
            listener(event)
