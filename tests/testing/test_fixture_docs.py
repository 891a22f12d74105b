"""docs/testing.md documents every fixture of the pytest plugin and every keyword its factories take, with
the default the code has: a keyword added, renamed or given another default fails here until the page says so."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

from emulator.cluster.cluster import Cluster
from emulator.testing import emulated_cluster, emulated_scenario

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "testing.md"
PLUGIN = ROOT / "emulator" / "testing" / "plugin.py"

# a factory fixture -> the functions whose keywords it takes (emulated_cluster hands **kwargs to Cluster.start)
FACTORIES = {"pulsar_cluster": (emulated_cluster, Cluster.start), "pulsar_scenario": (emulated_scenario,)}
# parametrized fixtures: a name each, no keywords
PARAMETRIZED = {"placement_strategy", "load_shedder"}


def _plugin_fixtures() -> set[str]:
    """The functions of plugin.py decorated with `pytest.fixture` (with or without arguments)."""
    names = set()
    for node in ast.parse(PLUGIN.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                target = d.func if isinstance(d, ast.Call) else d
                if isinstance(target, ast.Attribute) and target.attr == "fixture":
                    names.add(node.name)
    return names


def _keywords(*functions) -> dict[str, str]:
    """Keyword -> the repr of its default ("required" without one); the first function's default wins."""
    keywords: dict[str, str] = {}
    for fn in functions:
        for p in inspect.signature(inspect.unwrap(fn)).parameters.values():
            if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) or p.name in ("cls", "self"):
                continue
            keywords.setdefault(p.name, "required" if p.default is p.empty else repr(p.default))
    return keywords


def _documented(fixture: str) -> dict[str, str]:
    """The keyword table under the heading that names `fixture(...)`: keyword -> default as written."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"### `{fixture}(...)`")
    end = text.find("\n#", start + 1)
    section = text[start:end if end != -1 else len(text)]
    return {name: default.strip("`") for name, default in re.findall(r"^\| `(\w+)` \| ([^|]+?) \|", section, re.M)}


def test_every_plugin_fixture_is_documented():
    assert _plugin_fixtures() == set(FACTORIES) | PARAMETRIZED, "a new fixture: add it here and to docs/testing.md"
    table = DOC.read_text(encoding="utf-8").split("## The fixtures", 1)[1]
    for name in _plugin_fixtures():
        assert re.search(rf"^\| `{name}` \|", table, re.M), f"docs/testing.md: no row for the fixture {name}"


def test_every_factory_keyword_is_documented_with_its_default():
    for fixture, functions in FACTORIES.items():
        assert _documented(fixture) == _keywords(*functions), f"docs/testing.md, `{fixture}(...)`"


def test_the_readme_links_the_fixture_reference():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/testing.md" in readme
    for name in _plugin_fixtures():
        assert f"`{name}`" in readme, name
