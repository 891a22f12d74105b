"""One declaration per config key (emulator.model.setting): every table is derived from ServiceConfig's
declarations, a key declared twice is refused, and no table of keys is written by hand again."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Annotated, Any

import msgspec
import pytest

from emulator.model.config import (DYNAMIC_KEYS, SETTINGS, ServiceConfig, dynamic_configuration_names,
                                   runtime_configuration)
from emulator.model.properties import reference_table
from emulator.model.setting import Setting, Settings, switch

ROOT = Path(__file__).resolve().parents[2]
CONFIG_MODULES = ["config.py", "service_config.py", "dynamic_config.py", "setting.py", "properties.py"]


def test_every_field_is_declared_with_one_setting() -> None:
    fields = [f.name for f in msgspec.structs.fields(ServiceConfig)]
    assert [d.field for d in SETTINGS] == fields
    assert len({d.key for d in SETTINGS}) == len(fields)


def test_pulsar_keys_name_their_fields() -> None:
    """The field is the snake_case of Pulsar's key (CPU -> cpu, TTL -> ttl); a switch is `emulator_*`."""
    for d in SETTINGS:
        if d.is_pulsar:
            snake = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", d.key))
            assert snake.lower() == d.field, d.key
            assert not d.field.startswith("emulator_") and d.setting.source.startswith("ServiceConfiguration")
        else:
            assert d.key == d.field and d.field.startswith("emulator_") and d.setting.source == "emulator"
            assert not d.setting.dynamic, "an emulator switch is set at start only"


def test_every_declaration_has_a_doc_line_and_consistent_checks() -> None:
    for d in SETTINGS:
        assert d.setting.doc, d.key
        assert d.problem(d.default_value()) is None, d.key
        if d.setting.long or d.setting.bound != "non-negative" or d.setting.within:
            assert d.kind in ("int", "float", "optfloat"), d.key
        if d.setting.choices:
            assert d.kind == "str" and d.default_value() in d.setting.choices, d.key
        if d.setting.accepts:
            assert d.setting.dynamic and d.default_value() in d.setting.accepts, d.key


def test_every_derived_table_has_exactly_the_declared_keys() -> None:
    keys = [d.key for d in SETTINGS]
    pulsar_keys = [d.key for d in SETTINGS if d.is_pulsar]
    conf = ServiceConfig()
    # run.json's config: every key but the switches added after the recordings, while at their default
    assert list(conf.to_properties()) == [d.key for d in SETTINGS if not d.setting.quiet_default]
    quiet = [d for d in SETTINGS if d.setting.quiet_default]
    assert quiet and all(d.key in ServiceConfig(**{d.field: _not_default(d)}).to_properties() for d in quiet)
    assert list(runtime_configuration(conf)) == pulsar_keys
    assert list(SETTINGS.by_key) == pulsar_keys
    assert list(SETTINGS.by_field) == [d.field for d in SETTINGS]
    assert DYNAMIC_KEYS == {d.key for d in SETTINGS if d.setting.dynamic}
    assert dynamic_configuration_names() == [k for k in pulsar_keys if k in DYNAMIC_KEYS]
    for d in SETTINGS:
        assert ServiceConfig.pulsar_name(d.field) == d.key
        assert ServiceConfig.field_name(d.key) == ServiceConfig.field_name(d.field) == d.field
        assert getattr(conf, d.field) == d.default_value()
    rows = reference_table(SETTINGS).splitlines()[2:]
    assert [re.match(r"\| `([^`]+)` \|", row).group(1) for row in rows] == keys  # type: ignore[union-attr]


def _not_default(d: Any) -> Any:
    """A valid value of `d`'s type other than its default (a quiet key then shows in run.json)."""
    if d.kind is bool or isinstance(d.default_value(), bool):
        return not d.default_value()
    if isinstance(d.default_value(), str):
        return "broker-1:8080"
    return d.default_value() + 1


def test_a_key_declared_twice_is_refused() -> None:
    class Twice(msgspec.Struct, kw_only=True):
        a_b: Annotated[int, Setting("aB", doc="one")] = 1
        a_b2: Annotated[int, Setting("aB", doc="two")] = 2

    with pytest.raises(TypeError, match="declared twice: aB"):
        Settings.of(Twice)


def test_a_field_without_its_setting_is_refused() -> None:
    class Bare(msgspec.Struct, kw_only=True):
        emulator_x: Annotated[bool, switch("x")] = False
        plain: int = 1

    with pytest.raises(TypeError, match="Bare.plain: declare it as Annotated"):
        Settings.of(Bare)


def _string_constants(tree: ast.AST, skip: set[int]) -> list[ast.Constant]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in skip]


def _profile_constants(tree: ast.Module) -> set[int]:
    """The override values of PROFILES (data, as a scenario's [settings]: not a table of keys)."""
    return {id(n) for node in tree.body if isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name) and node.target.id == "PROFILES"
            for n in ast.walk(node)}


def test_config_modules_name_each_key_only_in_its_declaration() -> None:
    """Each Pulsar key is spelled once, as the first argument of its Setting; no field name is a string.
    A second spelling would be a table written by hand, which the declarations would not update."""
    keys, fields = set(SETTINGS.by_key), set(SETTINGS.by_field)
    seen: dict[str, int] = {}
    for name in CONFIG_MODULES:
        tree = ast.parse((ROOT / "emulator" / "model" / name).read_text(encoding="utf-8"))
        declared = {id(n.args[0]) for n in ast.walk(tree) if isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Name) and n.func.id == "Setting" and n.args}
        for node in _string_constants(tree, _profile_constants(tree)):
            if node.value in keys:
                assert id(node) in declared, f"emulator/model/{name}:{node.lineno}: {node.value} outside its Setting"
                seen[node.value] = seen.get(node.value, 0) + 1
            assert node.value not in fields, f"emulator/model/{name}:{node.lineno}: field {node.value} as a string"
    assert seen == dict.fromkeys(keys, 1)


def test_no_module_holds_a_hand_written_table_of_keys() -> None:
    """No collection literal of three or more keys (or field names) anywhere in the shipped code."""
    names = set(SETTINGS.by_key) | set(SETTINGS.by_field)
    found = []
    shipped = (p for top in ("emulator", "strategies", "shedders", "bench") for p in (ROOT / top).rglob("*.py"))
    for path in sorted(shipped):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _profile_constants(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Set, ast.List, ast.Tuple, ast.Dict)):
                elements = node.keys if isinstance(node, ast.Dict) else node.elts
                hits = [e for e in elements if isinstance(e, ast.Constant) and e.value in names and id(e) not in skip]
                if len(hits) >= 3:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == [], "derive these from emulator.model.config.SETTINGS"
