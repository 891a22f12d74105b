"""Reading scenario files: TOML (tomllib) → typed `Scenario` (msgspec), with whole-file checks.

`loads(text)` and `load_file(path)`; a built-in scenario by name, or a name-or-path as the command
takes it, is `library.py`'s (which reads its files through this module, never the other way round).

Every problem is a `ScenarioError` whose message is one line naming the file, the key path and the bad
value, and saying what is expected, e.g.

    scenario.toml: events[2].at = -5s: times are offsets from the run start and must be >= 0
    scenario.toml: cluster.capcity = { cores = 4 }: unknown key (did you mean capacity?); expected one of: ...
    scenario.toml: invalid TOML: Expected '=' after a key in a key/value pair (at line 3, column 5)

Paths use the file's own keys, with list positions counted from 0 (`events[2]` is the third event).
"""

from __future__ import annotations

import os
import random
import re
import tomllib
import types
import typing
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from emulator.model.bundles import parse_bundle
from emulator.model.config import (LOAD_MANAGER_CLASSES, ConfigError, ServiceConfig,
                                   is_dynamic_configuration, property_text,
                                   validate_dynamic_configuration)
from emulator.model.durations import format_duration
from emulator.model.suggest import close_matches, did_you_mean

from . import limits
from .errors import MISSING, ScenarioError
from .capacity_table import scenario_capacity
from .latency_table import scenario_latencies
from .schema import (
    AddBrokers,
    DeleteFailureDomain,
    DeleteIsolationPolicy,
    SetAntiAffinityGroup,
    SetFailureDomain,
    SetIsolationPolicy,
    LeaderFailover,
    NoisePattern,
    RampPattern,
    RemoveBrokers,
    RestartRolling,
    Scenario,
    SessionExpire,
    SetConfig,
    SpikePattern,
    Split,
    TopicSelector,
    Unload,
    dec_hook,
    verb_of,
)
from .traffic import topic_names

__all__ = ["load_file", "loads", "strategy_keys"]

PLACEMENT_KEY = "loadBalancerLoadPlacementStrategy"
SHEDDER_KEY = "loadBalancerLoadSheddingStrategy"
SPLIT_ALGORITHMS = ("range_equally_divide", "topic_count_equally_divide", "flow_or_qps_equally_divide")
_BROKER = re.compile(r"^broker-(\d+)(?::8080)?$")
_BROKER_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,252})(?::\d{1,5})?")


# ---------------------------------------------------------------------------------- entry points


def loads(text: str, source: str = "<scenario>") -> Scenario:
    """Parse and check scenario TOML text; `source` names it in errors."""
    if len(text) > limits.MAX_TOML_BYTES:
        raise ScenarioError(source, None, MISSING, f"{len(text):,} characters; a scenario file is at most "
                            f"{limits.MAX_TOML_BYTES:,}")
    if "\x00" in text:
        raise ScenarioError(source, None, MISSING, "contains NUL bytes: a binary file, not a scenario")
    deep = limits.toml_depth_exceeded(text)
    if deep is not None:
        raise ScenarioError(source, None, MISSING, f"line {deep}: arrays or tables nested more than "
                            f"{limits.MAX_TOML_DEPTH} deep")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(source, None, MISSING, f"invalid TOML: {e}") from None
    except RecursionError:
        raise ScenarioError(source, None, MISSING, "invalid TOML: nested too deeply") from None
    return from_dict(raw, source)


def load_file(path: str | os.PathLike[str]) -> Scenario:
    """Read a scenario file; errors name the path as given."""
    source = os.fspath(path)
    try:
        if Path(source).stat().st_size > limits.MAX_TOML_BYTES:
            raise ScenarioError(source, None, MISSING, f"larger than {limits.MAX_TOML_BYTES:,} bytes; not a "
                                "scenario file")
        text = Path(source).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(source, None, MISSING, "no such scenario file" + _nearby_file(source)) from None
    except IsADirectoryError:
        raise ScenarioError(source, None, MISSING, "is a directory, not a scenario file") from None
    except UnicodeDecodeError as e:
        raise ScenarioError(source, None, MISSING, f"not UTF-8 text ({e.reason})") from None
    except OSError as e:
        raise ScenarioError(source, None, MISSING, f"cannot read the file ({e.strerror})") from None
    return loads(text, source)


def _nearby_file(source: str) -> str:
    """" (did you mean scenarios/overloading.toml?)": the closest .toml file of the same folder, or ""."""
    path = Path(source)
    try:
        names = [p.name for p in path.parent.iterdir() if p.suffix == ".toml"]
    except OSError:
        return ""
    found = close_matches(path.name, names)
    return f" (did you mean {path.with_name(found[0]) if str(path.parent) != '.' else found[0]}?)" if found else ""


def broker_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """A restarted broker's own keys as ServiceConfig takes them: `loadManagerClassName` (or
    `load_manager_class_name`) may name a load manager by its short class name."""
    out = dict(settings)
    for key in ("loadManagerClassName", "load_manager_class_name"):
        if isinstance(out.get(key), str):
            short = out[key].strip()
            out[key] = next((c for c in LOAD_MANAGER_CLASSES if short in (c, c.rsplit(".", 1)[1])), short)
    return out


def from_dict(raw: dict[str, Any], source: str) -> Scenario:
    limits.check_finite(raw, lambda segs, reason, value: ScenarioError(source, format_path(segs), value,
                                                                       reason))
    try:
        scenario = msgspec.convert(raw, Scenario, strict=True, dec_hook=dec_hook)
    except msgspec.ValidationError as e:
        raise _translate(str(e), raw, source, Scenario) from None
    _Checker(scenario, raw, source).run()
    return scenario


def strategy_keys(scenario: Scenario) -> dict[str, str]:
    """The Pulsar strategy keys the scenario sets, [cluster] placement/shedder over [settings]."""
    out: dict[str, str] = {}
    for key in (PLACEMENT_KEY, SHEDDER_KEY):
        value = scenario.settings.get(key)
        if isinstance(value, str):
            out[key] = value
    if scenario.cluster.placement is not None:
        out[PLACEMENT_KEY] = scenario.cluster.placement
    if scenario.cluster.shedder is not None:
        out[SHEDDER_KEY] = scenario.cluster.shedder
    return out


# ---------------------------------------------------------------------------------- msgspec errors

Seg = str | int
_AT = re.compile(r"^(.*) - at `\$(.*)`$", re.S)
_SEG = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")
_TYPE_WORDS = {"int": "an integer", "float": "a number", "str": "a string", "bool": "true or false",
               "array": "a list", "object": "a table", "null": "nothing", "datetime": "a date-time",
               "date": "a date", "time": "a time"}


def _parse_path(text: str) -> list[Seg]:
    return [m.group(1) if m.group(1) is not None else
            (m.group(2) if m.group(2) == "..." else int(m.group(2))) for m in _SEG.finditer(text)]


def format_path(segs: Sequence[Seg]) -> str:
    out = ""
    for s in segs:
        out += f"[{s}]" if isinstance(s, int) else (f".{s}" if out else s)
    return out


def _raw_at(raw: Any, segs: Sequence[Seg]) -> Any:
    node = raw
    for s in segs:
        try:
            node = node[s]
        except (KeyError, IndexError, TypeError):
            return MISSING
    return node


def _strip(tp: Any) -> Any:
    """Annotated[X, ...] -> X; X | None -> X."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
            continue
        if origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) == 1:
                tp = args[0]
                continue
        return tp


def _union_members(tp: Any) -> list[Any]:
    tp = _strip(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return [a for a in typing.get_args(tp) if a is not type(None)]
    return [tp]


def _pick_tagged(tp: Any, raw: Any) -> Any:
    members = _union_members(tp)
    structs = [m for m in members if isinstance(m, type) and issubclass(m, msgspec.Struct)]
    if len(structs) > 1 and isinstance(raw, dict):
        field = structs[0].__struct_config__.tag_field
        for m in structs:
            if raw.get(field) == m.__struct_config__.tag:
                return m
    return _strip(tp) if len(members) == 1 else tp


def _fields(tp: Any) -> dict[str, Any]:
    """A Struct's fields by their names in the file (`from` for `from_`), with their types."""
    hints = typing.get_type_hints(tp, include_extras=True)
    encoded = getattr(tp, "__struct_encode_fields__", None)
    if encoded:
        return {name: hints[f] for f, name in zip(tp.__struct_fields__, encoded)}
    return hints


def _type_at(root: Any, segs: list[Seg], raw: Any) -> Any:
    tp = root
    node = raw
    for s in segs:
        tp = _pick_tagged(tp, node)
        tp = _strip(tp)
        if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
            tp = _fields(tp).get(s) if isinstance(s, str) else None
        else:
            args = typing.get_args(tp)
            tp = args[-1] if args else None
        node = _raw_at(node, [s]) if node is not MISSING else MISSING
        if tp is None:
            return None
    return _pick_tagged(tp, node)


def _tag_choices(members: list[Any]) -> list[str]:
    """The `kind`/`do` values of a tagged union's members (strings: every tag in schema.py is one)."""
    return [str(m.__struct_config__.tag) for m in members
            if isinstance(m, type) and issubclass(m, msgspec.Struct) and m.__struct_config__.tag]


def _describe_expected(types_text: str) -> str:
    words = [_TYPE_WORDS.get(t.strip(), t.strip()) for t in types_text.split("|")]
    return " or ".join(dict.fromkeys(words))


def _translate(message: str, raw: dict[str, Any], source: str, root: Any) -> ScenarioError:
    m = _AT.match(message)
    if m is None:
        return ScenarioError(source, None, MISSING, message)
    text, segs = m.group(1), _parse_path(m.group(2))
    if "..." in segs:  # a dict value: find which key fails, then translate that error
        cut = segs.index("...")
        parent = _raw_at(raw, segs[:cut])
        dict_type = _strip(_type_at(root, segs[:cut], raw))
        args = typing.get_args(dict_type) if dict_type is not None else ()
        value_type = args[-1] if args else Any
        if isinstance(parent, dict):
            for key, item in parent.items():
                try:
                    msgspec.convert(item, value_type, strict=True, dec_hook=dec_hook)
                except msgspec.ValidationError as e:
                    inner = _AT.match(str(e))
                    sub_text, sub_path = (inner.group(1), inner.group(2)) if inner else (str(e), "")
                    full = segs[:cut] + [key] + _parse_path(sub_path)
                    return _translate(f"{sub_text} - at `${_dotted(full)}`", raw, source, root)
        segs = segs[:cut]
    value = _raw_at(raw, segs)
    if text.startswith("Object contains unknown field `"):
        key = text[len("Object contains unknown field `"):-1]
        tp = _strip(_type_at(root, segs, raw))
        struct = tp if isinstance(tp, type) and issubclass(tp, msgspec.Struct) else None
        known = list(_fields(struct)) if struct is not None else []
        if known and struct is not None and struct.__struct_config__.tag_field:
            known = [struct.__struct_config__.tag_field] + known
        hint = f"{did_you_mean(key, known)}; expected one of: {', '.join(known)}" if known else ""
        return ScenarioError(source, format_path(segs + [key]), _raw_at(raw, segs + [key]),
                             f"unknown key{hint}")
    if text.startswith("Object missing required field `"):
        key = text[len("Object missing required field `"):-1]
        members = _union_members(_type_at(root, segs, raw))
        tags = _tag_choices(members)
        if tags and key == members[0].__struct_config__.tag_field:
            return ScenarioError(source, format_path(segs + [key]), MISSING,
                                 f"required key is missing; one of: {', '.join(tags)}")
        return ScenarioError(source, format_path(segs + [key]), MISSING, "required key is missing")
    if text.startswith("Invalid value ") and segs and isinstance(segs[-1], str):
        members = _union_members(_type_at(root, segs[:-1], MISSING))
        tags = _tag_choices(members)
        what = "unknown event" if segs[-1] == "do" else f"unknown {segs[-1]}"
        hint = did_you_mean(value, tags) if isinstance(value, str) else ""
        return ScenarioError(source, format_path(segs), value, f"{what}{hint}; expected one of: {', '.join(tags)}")
    if text.startswith("Invalid enum value "):
        tp = _strip(_type_at(root, segs, raw))
        choices = [str(a) for a in typing.get_args(tp)] if typing.get_origin(tp) is typing.Literal else []
        hint = did_you_mean(value, choices) if isinstance(value, str) else ""
        return ScenarioError(source, format_path(segs), value,
                             f"expected one of: {', '.join(choices)}{hint}" if choices else text)
    bound = re.match(r"^Expected `[^`]*` (>=|>|<=|<) (\S+)$", text)
    if bound:
        num = float(bound.group(2))
        return ScenarioError(source, format_path(segs), value,
                             f"must be {bound.group(1)} {num:g}")
    typed = re.match(r"^Expected `([^`]*)`, got `([^`]*)`$", text)
    if typed:
        return ScenarioError(source, format_path(segs), value,
                             f"expected {_describe_expected(typed.group(1))}, "
                             f"got {_describe_expected(typed.group(2))}")
    return ScenarioError(source, format_path(segs), value, text)


def _dotted(segs: Sequence[Seg]) -> str:
    return "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in segs)


# ---------------------------------------------------------------------------------- whole-file checks


class _Checker:
    """Checks that need more than one key: references between sections, times vs the duration,
    Pulsar keys and strategy names, broker names."""

    def __init__(self, scenario: Scenario, raw: dict[str, Any], source: str) -> None:
        self.s = scenario
        self.raw = raw
        self.source = source
        self.namespaces: list[str] = []
        self.groups: dict[str, int] = {}
        self.topics: set[str] = set()
        self.partitioned: set[str] = set()

    def fail(self, segs: Sequence[Seg], reason: str, value: Any = None) -> ScenarioError:
        v = _raw_at(self.raw, segs) if value is None else value
        return ScenarioError(self.source, format_path(segs), v, reason)

    def run(self) -> None:
        s = self.s
        if s.scenario.duration <= 0:
            raise self.fail(["scenario", "duration"], "must be > 0 (how long the run lasts)")
        limits.check_sizes(s, lambda segs, reason, value: self.fail(segs, reason, value))
        self.check_positive_durations()
        self.check_settings()
        self.check_namespaces()
        self.check_topics()
        for i, p in enumerate(s.traffic.patterns):
            self.check_pattern(["traffic", "patterns", i], p, None)
        self.check_brokers()
        self.check_initial()
        self.check_events()
        self.check_expectations()
        self.check_policies()
        self.check_latency()

    def check_latency(self) -> None:
        """[latency] entries and the older keys they replace (latency_table.py)."""
        scenario_latencies(self.s, source=self.source)
        scenario_capacity(self.s, source=self.source)

    def check_positive_durations(self) -> None:
        """Periods and lengths where 0 makes no sense: a 0 s report interval or jitter period would loop
        without emulated time passing, a 0 s diurnal period divides by zero, a 0 s spike is nothing."""
        c = self.s.cluster
        for key in ("report_interval", "broker_start_timeout"):
            if getattr(c, key) <= 0:
                raise self.fail(["cluster", key], "must be > 0")
        patterns: list[tuple[list[Seg], Any]] = [(["traffic", "patterns", i], p)
                                                 for i, p in enumerate(self.s.traffic.patterns)]
        for i, g in enumerate(self.s.topics):
            patterns += [(["topics", i, "patterns", j], p) for j, p in enumerate(g.patterns)]
            if g.consumer_jitter is not None and g.consumer_jitter.period <= 0:
                raise self.fail(["topics", i, "consumer_jitter", "period"], "must be > 0 (how often "
                                "consumers are cycled)")
        for at, p in patterns:
            for key in ("period", "duration"):
                if isinstance(getattr(p, key, None), (int, float)) and getattr(p, key) <= 0:
                    raise self.fail(at + [key], "must be > 0")
        for i, e in enumerate(self.s.events):
            for key in ("duration", "over"):
                value = getattr(e, key, None)
                if isinstance(value, (int, float)) and value <= 0 and verb_of(e) in ("spike", "ramp"):
                    raise self.fail(["events", i, key], "must be > 0")

    # --- settings and strategies

    def check_settings(self) -> None:
        base = ServiceConfig()
        for key, value in self.s.settings.items():
            try:
                base = base.with_overrides({key: value}, source="settings")
            except ConfigError as e:
                raise self.fail(["settings", key], _config_reason(str(e), key)) from None
        self.conf = base
        keys = strategy_keys(self.s)
        where = {PLACEMENT_KEY: (["cluster", "placement"] if self.s.cluster.placement is not None
                                 else ["settings", PLACEMENT_KEY]),
                 SHEDDER_KEY: (["cluster", "shedder"] if self.s.cluster.shedder is not None
                               else ["settings", SHEDDER_KEY])}
        placement = keys.get(PLACEMENT_KEY, base.load_balancer_load_placement_strategy)
        shedder = keys.get(SHEDDER_KEY, base.load_balancer_load_shedding_strategy)
        from emulator.cluster.load_manager import EXTENSIBLE, resolve_class_name

        check_strategies(placement, shedder, lambda key, reason: self.fail(where[key], reason),
                         extensible=resolve_class_name(base.load_manager_class_name) == EXTENSIBLE)

    # --- namespaces and topics

    def check_namespaces(self) -> None:
        for i, ns in enumerate(self.s.namespaces):
            if not re.fullmatch(r"[\w.-]+/[\w.-]+", ns.name):
                raise self.fail(["namespaces", i, "name"], "expected tenant/namespace (e.g. public/default)")
            if ns.name in self.namespaces:
                raise self.fail(["namespaces", i, "name"], "declared twice")
            if ns.bundles is not None and ns.bundles > self.conf.load_balancer_namespace_maximum_bundles:
                raise self.fail(["namespaces", i, "bundles"],
                                f"more than loadBalancerNamespaceMaximumBundles "
                                f"({self.conf.load_balancer_namespace_maximum_bundles})")
            self.namespaces.append(ns.name)

    def check_topics(self) -> None:
        for i, g in enumerate(self.s.topics):
            at: list[Seg] = ["topics", i]
            if g.namespace not in self.namespaces:
                raise self.fail(at + ["namespace"], self._namespace_hint(g.namespace))
            label = g.label(i)
            if label in self.groups:
                raise self.fail(at + ["group"], f"topic group name used twice (also topics[{self.groups[label]}])",
                                label)
            self.groups[label] = i
            self.check_explicit_topics(at, g)
            try:
                first = g.local_name(0)
            except (KeyError, IndexError, ValueError) as e:
                raise self.fail(at + ["name"], f"bad name pattern ({e}); use {{i}} for the topic index") from None
            if not g.names and g.count > 1 and g.name.format(i=1) == first:
                raise self.fail(at + ["name"], f"all {g.count} topics would share one name; put {{i}} in it")
            if not first or "/" in first:
                raise self.fail(at + ["name"], "a local topic name must be non-empty and without '/'")
            r = g.rate
            if r.distribution == "uniform" and r.low is not None and r.high is not None and r.low > r.high:
                raise self.fail(at + ["rate", "low"], f"greater than rate.high ({r.high:g})")
            if r.hot_count is not None and r.hot_fraction is not None:
                raise self.fail(at + ["rate", "hot_count"], "give hot_count or hot_fraction, not both")
            for name, base in topic_names(g):
                if name in self.topics:
                    raise self.fail(at + ["name"], f"topic {name} is also made by another group", g.name)
                self.topics.add(name)
                self.partitioned.add(base)
        for i, g in enumerate(self.s.topics):
            for j, p in enumerate(g.patterns):
                self.check_pattern(["topics", i, "patterns", j], p, g.label(i))

    def check_explicit_topics(self, at: list[Seg], g: Any) -> None:
        """`names` (explicit topics) and `rate.distribution = "explicit"` (a rate per topic): the
        per-topic form snapshots write (schema.py's module docstring)."""
        raw = _raw_at(self.raw, at)
        if g.names:
            for key in ("count", "name"):
                if isinstance(raw, dict) and key in raw:
                    raise self.fail(at + [key], "give names = [...] or count/name, not both")
            seen: set[str] = set()
            for j, name in enumerate(g.names):
                if not name or "/" in name:
                    raise self.fail(at + ["names", j], "a local topic name must be non-empty and without '/'")
                if name in seen:
                    raise self.fail(at + ["names", j], "listed twice")
                seen.add(name)
        r = g.rate
        if r.distribution == "explicit":
            if len(r.rates) != g.size:
                raise self.fail(at + ["rate", "rates"], f"{len(r.rates)} rates for {g.size} topics; "
                                "give one msg/s per topic, in order")
        elif r.rates:
            raise self.fail(at + ["rate", "rates"], "only with distribution = \"explicit\"")

    def check_pattern(self, at: list[Seg], p: Any, group: str | None) -> None:
        if isinstance(p, RampPattern) and p.end <= p.start:
            raise self.fail(at + ["end"], f"must be after start ({format_duration(p.start)})")
        if isinstance(p, SpikePattern):
            self.check_selector(at + ["select"], p.select)
            self.check_time(at + ["at"], p.at)
        if isinstance(p, NoisePattern):
            self.check_selector(at + ["select"], p.select)
            if p.interval <= 0:
                raise self.fail(at + ["interval"], "must be > 0 (how often the noise is drawn again)")

    def check_selector(self, at: list[Seg], sel: TopicSelector) -> None:
        if sel.group is not None and sel.group not in self.groups:
            raise self.fail(at + ["group"], "no such topic group" + did_you_mean(sel.group, self.groups)
                            + "; known: " + (", ".join(self.groups) or "none"))
        if sel.namespace is not None and sel.namespace not in self.namespaces:
            raise self.fail(at + ["namespace"], self._namespace_hint(sel.namespace))
        for j, name in enumerate(sel.topics):
            full = name if "://" in name else f"persistent://{name}"
            if full not in self.topics and full not in self.partitioned:
                raise self.fail(at + ["topics", j], "not one of the scenario's topics")
        chosen = [k for k in ("hottest", "random", "fraction") if getattr(sel, k) is not None]
        if len(chosen) > 1:
            raise self.fail(at + [chosen[1]], f"give one of hottest, random, fraction (also {chosen[0]})")

    def _namespace_hint(self, name: str) -> str:
        return ("not declared in [[namespaces]]" + did_you_mean(name, self.namespaces) + "; declared: "
                + (", ".join(self.namespaces) or "none"))

    # --- brokers

    def _broker_total(self) -> int:
        """The highest broker number the scenario can have: the cluster's, then each add_brokers."""
        total = self.s.cluster.broker_count
        for e in sorted(self.s.events, key=lambda e: e.at):
            if isinstance(e, AddBrokers):
                total = _known_after(e, total)
        return total

    def check_brokers(self) -> None:
        self.check_broker_names()
        total = self._broker_total()
        for key in self.s.cluster.overrides:
            self.broker_index(["cluster", "overrides", key], key, total, value=key)

    def check_broker_names(self) -> None:
        """`[cluster] brokers = [...]`: ids as Pulsar writes them (host or host:port), each once."""
        names = self.s.cluster.brokers
        if isinstance(names, int):
            return
        if not names:
            raise self.fail(["cluster", "brokers"], "an empty list; name at least one broker (or give a count)")
        seen: set[str] = set()
        for j, name in enumerate(names):
            if not _BROKER_NAME.fullmatch(name):
                raise self.fail(["cluster", "brokers", j], "expected a broker id host:port (e.g. "
                                "broker-a:8080) or a host name")
            bid = name if ":" in name else f"{name}:8080"
            if bid in seen:
                raise self.fail(["cluster", "brokers", j], "named twice")
            seen.add(bid)

    def broker_ids(self, limit: int) -> list[str]:
        """The broker ids known once the cluster has `limit` brokers: the initial ones, then those
        add_brokers names broker-<k> above every broker-<k> so far (events._next_hosts)."""
        ids = self.s.cluster.broker_ids
        top = max((int(m.group(1)) for b in ids if (m := _BROKER.match(b))), default=0)
        return ids + [f"broker-{top + k}:8080" for k in range(1, limit - len(ids) + 1)]

    def broker_index(self, at: list[Seg], name: str, limit: int, value: Any = None) -> int:
        if not isinstance(self.s.cluster.brokers, int):
            ids = self.broker_ids(limit)
            bid = name if ":" in name else f"{name}:8080"
            if bid not in ids:
                raise self.fail(at, "no such broker (the scenario has " + _listed(ids) + " by then)", value)
            return ids.index(bid) + 1
        m = _BROKER.match(name)
        if m is None:
            raise self.fail(at, "expected a broker name like broker-3 (or broker-3:8080)", value)
        k = int(m.group(1))
        if not 1 <= k <= limit:
            raise self.fail(at, f"no such broker (the scenario has broker-1..broker-{limit} by then)", value)
        return k

    # --- initial state (issue 16 item 1)

    def check_initial(self) -> None:
        """[initial]: the generator's arguments, and per namespace boundaries that cover the hash range
        in ascending order and one known broker per bundle. Owners are brokers of t = 0."""
        ini = self.s.initial
        if ini is None:
            return
        at: list[Seg] = ["initial"]
        ids = self.s.cluster.broker_ids
        if ini.owners == "skewed":
            if ini.ratio is None:
                raise self.fail(at + ["owners"], "skewed needs ratio = <max/min broker msg rate, >= 1>")
            if len(ids) < 2 and ini.ratio != 1:
                raise self.fail(at + ["ratio"], "a max/min ratio needs at least 2 brokers at t = 0")
        elif ini.ratio is not None:
            raise self.fail(at + ["ratio"], f"only for owners = \"skewed\" (owners is \"{ini.owners}\")")
        if ini.owners == "all_on":
            if ini.broker is None:
                raise self.fail(at + ["owners"], "all_on needs broker = <the broker that owns every bundle>")
            self.initial_owner(at + ["broker"], ini.broker, ids)
        elif ini.broker is not None:
            raise self.fail(at + ["broker"], f"only for owners = \"all_on\" (owners is \"{ini.owners}\")")
        declared = {ns.name: ns for ns in self.s.namespaces}
        seen: set[str] = set()
        for i, ns in enumerate(ini.namespaces):
            nat: list[Seg] = at + ["namespaces", i]
            if ns.name not in declared:
                raise self.fail(nat + ["name"], self._namespace_hint(ns.name))
            if ns.name in seen:
                raise self.fail(nat + ["name"], "given twice in [[initial.namespaces]]")
            seen.add(ns.name)
            if ns.boundaries is not None:
                count = len(self.initial_boundaries(nat + ["boundaries"], ns.boundaries)) - 1
                if count > self.conf.load_balancer_namespace_maximum_bundles:
                    raise self.fail(nat + ["boundaries"], f"{count} bundles; more than "
                                    f"loadBalancerNamespaceMaximumBundles "
                                    f"({self.conf.load_balancer_namespace_maximum_bundles})")
                spec_bundles = declared[ns.name].bundles
                if spec_bundles is not None and spec_bundles != count:
                    raise self.fail(nat + ["boundaries"], f"{count} bundles, but namespaces"
                                    f"[{self.namespaces.index(ns.name)}].bundles = {spec_bundles}; "
                                    "give one of them, or make them agree")
            else:
                count = declared[ns.name].bundles or self.conf.default_number_of_namespace_bundles
            if ns.owners is not None:
                if len(ns.owners) != count:
                    raise self.fail(nat + ["owners"], f"{len(ns.owners)} owners for {count} bundles; "
                                    "give one broker per bundle, in bundle order")
                for j, owner in enumerate(ns.owners):
                    if owner:   # "": no stated owner (what `snapshot to-scenario` writes for an unowned bundle)
                        self.initial_owner(nat + ["owners", j], owner, ids)

    def initial_owner(self, at: list[Seg], name: str, ids: list[str]) -> str:
        bid = name if ":" in name else f"{name}:8080"
        if bid not in ids:
            raise self.fail(at, "no such broker at t = 0 (the cluster starts with " + _listed(ids) + ")")
        return bid

    def initial_boundaries(self, at: list[Seg], texts: list[str]) -> list[int]:
        values: list[int] = []
        for j, text in enumerate(texts):
            if not re.fullmatch(r"0x[0-9a-fA-F]{1,8}", text):
                raise self.fail(at + [j], "expected a hash boundary like 0x40000000 (0x00000000..0xffffffff)")
            values.append(int(text, 16))
        if len(values) < 2:
            raise self.fail(at, "needs at least 2 boundaries: 0x00000000 and 0xffffffff")
        if values[0] != 0:
            raise self.fail(at + [0], "the first boundary must be 0x00000000 (the bundles cover the whole "
                            "hash range)")
        if values[-1] != 0xFFFFFFFF:
            raise self.fail(at + [len(values) - 1], "the last boundary must be 0xffffffff (the bundles cover "
                            "the whole hash range)")
        for j in range(1, len(values)):
            if values[j] <= values[j - 1]:
                raise self.fail(at + [j], f"not above the previous boundary ({texts[j - 1]}); boundaries "
                                "must be strictly ascending")
        return values

    # --- events

    def check_time(self, at: list[Seg], t: float) -> None:
        d = self.s.scenario.duration
        if t > d:
            raise self.fail(at, f"past the scenario's duration ({format_duration(d)}); "
                                "move it earlier or lengthen scenario.duration")

    def check_events(self) -> None:
        known = self.s.cluster.broker_count
        order = sorted(range(len(self.s.events)), key=lambda i: self.s.events[i].at)
        for i in order:
            e = self.s.events[i]
            at: list[Seg] = ["events", i]
            self.check_time(at + ["at"], e.at)
            if isinstance(e, AddBrokers):
                self.check_add_brokers(at, e)
                known = _known_after(e, known)
            for j, name in enumerate(getattr(e, "brokers", None) or []):
                self.broker_index(at + ["brokers", j], name, known)
            if isinstance(e, RestartRolling) and e.settings:
                self.check_broker_settings(at + ["settings"], e.settings)
            if isinstance(e, RestartRolling) and e.every is not None:
                if e.every <= 0:
                    raise self.fail(at + ["every"], "must be > 0 (the time between two batches)")
                if isinstance(_raw_at(self.raw, at), dict) and "wait" in _raw_at(self.raw, at):
                    raise self.fail(at + ["wait"], "give wait (after each batch is back) or every "
                                    "(a fixed cadence), not both")
            if isinstance(e, RemoveBrokers):
                if bool(e.brokers) == (e.count is not None):
                    raise self.fail(at, "give brokers = [...] or count = N (one of them)",
                                    _raw_at(self.raw, at))
            if isinstance(e, SessionExpire) and e.broker != "leader":
                self.broker_index(at + ["broker"], e.broker, known)
            if isinstance(e, LeaderFailover) and e.restart_after is not None and e.mode == "session_expire":
                raise self.fail(at + ["restart_after"], "only for mode kill, graceful or sigterm "
                                "(after a session expiry the broker is still running)")
            if isinstance(e, SetConfig):
                self.check_set_config(at, e)
            if isinstance(e, Unload):
                given = [k for k in ("namespace", "bundle", "topic") if getattr(e, k) is not None]
                if len(given) != 1:
                    raise self.fail(at, "give exactly one of namespace, bundle or topic",
                                    _raw_at(self.raw, at))
                self.check_target(at, e)
                if e.destination is not None:
                    self.broker_index(at + ["destination"], e.destination, known)
            if isinstance(e, Split):
                if (e.bundle is None) == (e.topic is None):
                    raise self.fail(at, "give exactly one of bundle or topic", _raw_at(self.raw, at))
                self.check_target(at, e)
                if e.algorithm is not None and e.algorithm not in SPLIT_ALGORITHMS:
                    raise self.fail(at + ["algorithm"], "expected one of: " + ", ".join(SPLIT_ALGORITHMS)
                                    + did_you_mean(e.algorithm, SPLIT_ALGORITHMS))
            select = getattr(e, "select", None)
            if isinstance(select, TopicSelector):
                self.check_selector(at + ["select"], select)

    def check_broker_settings(self, at: list[Seg], settings: dict[str, Any]) -> None:
        """A restarted broker's own broker.conf keys: each a key ServiceConfig knows, with a value it
        takes (a load manager by its short or full class name)."""
        for key, value in broker_settings(settings).items():
            try:
                self.conf.with_overrides({key: value}, source="settings")
            except ConfigError as err:
                raise self.fail(at + [key], _config_reason(str(err), key)) from None

    def check_set_config(self, at: list[Seg], e: SetConfig) -> None:
        """A set_config event changes what Pulsar lets an operator change at runtime
        (update-dynamic-config): a dynamic key (emulator.model.config.DYNAMIC_KEYS) with a value its
        validator and ServiceConfig accept."""
        try:
            self.conf.with_overrides({e.key: e.value}, source="set_config")
        except ConfigError as err:
            if "unknown key" in str(err):
                raise self.fail(at + ["key"], _config_reason(str(err), e.key)) from None
            bad_value: ConfigError | None = err
        else:
            bad_value = None
        name = ServiceConfig.pulsar_name(ServiceConfig.field_name(e.key))
        if not is_dynamic_configuration(name):
            raise self.fail(at + ["key"], f"set_config changes dynamic keys only, and {name} is not dynamic "
                            "in Pulsar (update-dynamic-config answers 412 \"Can't update non-dynamic "
                            "configuration\"): set it from the start in [settings], broker.conf or --set")
        if not validate_dynamic_configuration(name, property_text(e.value)):
            raise self.fail(at + ["value"], f"not a load manager class of Pulsar ({name}'s validator; "
                            "update-dynamic-config answers 412 \" Invalid dynamic-config value\"); "
                            "expected one of: " + ", ".join(LOAD_MANAGER_CLASSES)
                            + did_you_mean(property_text(e.value), LOAD_MANAGER_CLASSES))
        if bad_value is not None:
            raise self.fail(at + ["value"], _config_reason(str(bad_value), e.key))

    def check_add_brokers(self, at: list[Seg], e: AddBrokers) -> None:
        if e.brokers and e.count is not None and e.count != len(e.brokers):
            raise self.fail(at + ["count"], f"{len(e.brokers)} brokers are named; give count = N or "
                            "brokers = [...], not both")
        seen: set[int] = set()
        for j, name in enumerate(e.brokers):
            k = self.broker_index(at + ["brokers", j], name, _known_after(e, 0))
            if k in seen:
                raise self.fail(at + ["brokers", j], "named twice")
            seen.add(k)

    # --- expectations

    def check_expectations(self) -> None:
        """[[expect]]: a known KPI, a bound, a window inside the run (format 5 of issue 16)."""
        from emulator.model.kpi_registry import KPIS, WHOLE_RUN_ONLY

        for i, x in enumerate(self.s.expect):
            at: list[Seg] = ["expect", i]
            if x.kpi not in KPIS:
                raise self.fail(at + ["kpi"], "unknown KPI" + did_you_mean(x.kpi, KPIS) + "; known: "
                                + ", ".join(KPIS))
            if x.min is None and x.max is None:
                raise self.fail(at, "give min, max or both", _raw_at(self.raw, at))
            if x.min is not None and x.max is not None and x.min > x.max:
                raise self.fail(at + ["min"], f"greater than max ({x.max:g})")
            windowed = [k for k in ("from", "to", "after_event", "within")
                        if k in (_raw_at(self.raw, at) or {})]
            if windowed and x.kpi in WHOLE_RUN_ONLY:
                raise self.fail(at + [windowed[0]], f"{x.kpi} is measured over the whole run only "
                                "(the exact latency mixture is not kept per window)")
            if x.after_event is not None:
                if x.from_ is not None or x.to is not None:
                    raise self.fail(at + ["after_event"], "give after_event (+ within) or from / to, not both")
                if x.after_event >= len(self.s.events):
                    raise self.fail(at + ["after_event"], f"no such event; the scenario has "
                                    f"{len(self.s.events)} ([[events]] are counted from 0)")
            elif x.within is not None:
                raise self.fail(at + ["within"], "only with after_event (the event the window starts at)")
            if x.within is not None and x.within <= 0:
                raise self.fail(at + ["within"], "must be > 0")
            for key, t in (("from", x.from_), ("to", x.to)):
                if t is not None:
                    self.check_time(at + [key], t)
            if x.from_ is not None and x.to is not None and x.to <= x.from_:
                raise self.fail(at + ["to"], f"must be after from ({format_duration(x.from_)})")

    # --- isolation policies, failure domains, anti-affinity groups (issue 16)

    def check_policies(self) -> None:
        """[[isolation_policies]], [[failure_domains]] and the policy events: Pulsar's validation
        (regexes compile, namespaces and primary non-empty, failover type min_available with an integer
        min_limit), names used once, brokers that exist in the scenario and sit in one domain."""
        total = self._broker_total()
        seen: dict[str, int] = {}
        for i, p in enumerate(self.s.isolation_policies):
            at: list[Seg] = ["isolation_policies", i]
            self.check_policy_name(at, p.name, seen, "isolation policy")
            self.check_isolation_policy(at, p)
        seen = {}
        domain_of: dict[str, str] = {}
        for i, d in enumerate(self.s.failure_domains):
            at = ["failure_domains", i]
            self.check_policy_name(at, d.name, seen, "failure domain")
            for j, name in enumerate(d.brokers):
                k = self.broker_index(at + ["brokers", j], name, total)
                b = f"broker-{k}"
                if b in domain_of:
                    raise self.fail(at + ["brokers", j], f"already in failure domain {domain_of[b]!r}; a broker "
                                    "belongs to one domain (Pulsar answers 409 Conflict)")
                domain_of[b] = d.name
        for i, e in enumerate(self.s.events):
            at = ["events", i]
            if isinstance(e, SetIsolationPolicy):
                self.check_policy_name(at, e.name, {}, "isolation policy")
                self.check_isolation_policy(at, e)
            elif isinstance(e, (DeleteIsolationPolicy, SetFailureDomain, DeleteFailureDomain)):
                self.check_policy_name(at, e.name, {}, "name")
            elif isinstance(e, SetAntiAffinityGroup):
                if e.namespace not in self.namespaces:
                    raise self.fail(at + ["namespace"], self._namespace_hint(e.namespace))
                if e.group is not None and not e.group.strip():
                    raise self.fail(at + ["group"], "blank; leave group out to remove the namespace's group")

    def check_policy_name(self, at: list[Seg], name: str, seen: dict[str, int], what: str) -> None:
        if not name or "/" in name or name.strip() != name:
            raise self.fail(at + ["name"], "expected a non-empty name without '/' or surrounding spaces")
        if name in seen:
            raise self.fail(at + ["name"], f"{what} declared twice (also {at[0]}[{seen[name]}])")
        seen[name] = int(at[1])

    def check_isolation_policy(self, at: list[Seg], spec: Any) -> None:
        from emulator.model.policies import NamespaceIsolationPolicy

        try:
            msgspec.convert(spec.data(), NamespaceIsolationPolicy).validate()
        except (ValueError, msgspec.ValidationError) as e:
            text = re.sub(r" - at `\$[^`]*`$", "", str(e))
            m = re.match(r"^([a-z_]+(?:\.[a-z_]+)*)(?: = .*?)?[;:] (.*)$", text, re.S)
            if m is None:
                raise self.fail(at, text, _raw_at(self.raw, at)) from None
            raise self.fail([*at, *m.group(1).split(".")], m.group(2)) from None

    def check_target(self, at: list[Seg], e: Any) -> None:
        if getattr(e, "namespace", None) is not None and e.namespace not in self.namespaces:
            raise self.fail(at + ["namespace"], self._namespace_hint(e.namespace))
        if e.bundle is not None:
            try:
                ns, _, _ = parse_bundle(e.bundle)
            except ValueError:
                raise self.fail(at + ["bundle"], "expected tenant/ns/0x<lower>_0x<upper>") from None
            if ns not in self.namespaces:
                raise self.fail(at + ["bundle"], self._namespace_hint(ns))
        if e.topic is not None:
            full = e.topic if "://" in e.topic else f"persistent://{e.topic}"
            ns = full.split("://", 1)[1].rsplit("/", 1)[0]
            if ns not in self.namespaces:
                raise self.fail(at + ["topic"], "its namespace is " + self._namespace_hint(ns))


def _listed(ids: list[str], most: int = 8) -> str:
    """`a, b, c` or `a, b, ... (N brokers)`: a broker list short enough for one error line."""
    if len(ids) <= most:
        return ", ".join(ids)
    return ", ".join(ids[:most - 1]) + f", ... ({len(ids)} brokers)"


def _known_after(e: AddBrokers, known: int) -> int:
    """The highest broker number after an add_brokers: new ones are numbered above the highest; named
    ones may bring back a removed broker or name a new one."""
    if e.brokers:
        return max([known, *(int(m.group(1)) for n in e.brokers if (m := _BROKER.match(n)))])
    return known + (e.count or 1)


def _config_reason(message: str, key: str) -> str:
    """The reason part of a ConfigError ("<source>: <key> = <value>: <reason>")."""
    head = f": {key} = "
    pos = message.find(head)
    if pos < 0:
        return message
    rest = message[pos + len(head):]
    m = re.match(r"^(?:'[^']*'|\"[^\"]*\"|\[[^\]]*\]|[^:]*): (.*)$", rest, re.S)
    reason = m.group(1) if m else rest
    if reason.startswith("unknown key"):   # with_overrides' own hint, or none
        return unknown_config_key(key)
    return reason


def unknown_config_key(key: str) -> str:
    """The reason for a key [settings], set_config and --set do not take, with the closest one."""
    names = [*ServiceConfig().to_properties(), *(f.name for f in msgspec.structs.fields(ServiceConfig))]
    hint = did_you_mean(key, names)
    return f"unknown key{hint}; not a broker.conf key the emulator knows"


def check_strategies(placement: str, shedder: str,
                     fail: Callable[[str, str], Exception], *, extensible: bool = False) -> None:
    """Raise `fail(key, reason)` when a strategy name is unknown or the pair is not allowed.

    `extensible`: the load manager is ExtensibleLoadManagerImpl, whose unload strategy is a
    NamespaceUnloadStrategy (TransferShedder or the user's); a Modular shedder's name is accepted
    too, because Pulsar then logs an error and uses TransferShedder (`createNamespaceUnloadStrategy`),
    a documented fallback rather than a typo. The placement pair is Modular's only."""
    import shedders
    import strategies
    from emulator.cluster.strategy_pair import create_pair

    try:
        strategies.create(placement, rng=random.Random(0))
    except (ValueError, TypeError, ImportError) as e:
        raise fail(PLACEMENT_KEY, str(e)) from None
    if extensible:
        try:
            shedders.create_extensible(shedder, rng=random.Random(0))
            return
        except (ValueError, TypeError, ImportError) as e:
            extensible_error = str(e)
        try:
            shedders.create(shedder, rng=random.Random(0))
        except (ValueError, TypeError, ImportError):
            raise fail(SHEDDER_KEY, extensible_error) from None
        return
    try:
        shedders.create(shedder, rng=random.Random(0))
    except (ValueError, TypeError, ImportError) as e:
        raise fail(SHEDDER_KEY, str(e)) from None
    try:
        create_pair(placement, shedder, rng=random.Random(0))
    except (ValueError, TypeError) as e:
        raise fail(PLACEMENT_KEY, str(e)) from None


def iter_events(scenario: Scenario) -> Iterator[tuple[int, Any]]:
    """(index in the file, event) by time, file order among events at the same time."""
    return iter(sorted(enumerate(scenario.events), key=lambda p: p[1].at))

