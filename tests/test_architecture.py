"""ARCHITECTURE.md is a map of the code: every file, class and function it names exists.

What the document writes in inline backticks, each span on one line (fenced code blocks are
illustrations, not checked):

* a path from the repository root, `emulator/cluster/broker.py` or `emulator/loadmanagers/noop/`, or a
  root file such as `pyproject.toml`: it exists;
* a bare module name, `broker.py`: some file of that name exists under `emulator/`, `strategies/`,
  `shedders/` or `tests/`;
* the one notation for "this function of this file", `path.py::name`, where `name` is a module-level
  function, class or constant, or `Class.member`: a method, property, class-level field or `self.`
  attribute written in that class's own body (not inherited): the file exists and defines it;
* a class of ours, `LookupTopic` or `Class.member` (CamelCase with a lower-case letter): a class of that
  name is defined under `emulator/`, `strategies/` or `shedders/` (or is a Python builtin), with that
  member in its own body;
* any other name with an underscore, `select_broker` or `LOAD_MANAGERS`: something of that name (a
  function, class, constant, field or attribute) is defined under `emulator/`, `strategies/` or
  `shedders/`. Looser than the forms above (it does not say where), but a name removed from
  the code fails it.

A dotted module path (`emulator.cluster.broker.Broker`) or a single colon (`broker.py:Broker`) is refused
with the form to write instead, so the document keeps one notation. Names in angle brackets
(`shedders/<name>.py`) are placeholders of a recipe and are not checked; neither is anything with a
space in it (commands, expressions). Pulsar's Java names are written without backticks.

Everything is read with `ast`: nothing of the emulator is imported.
"""

from __future__ import annotations

import ast
import builtins
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "ARCHITECTURE.md"
SOURCES = ("emulator", "strategies", "shedders")
SEARCHED = SOURCES + ("tests",)

_FENCE = re.compile(r"^\s*```.*?^\s*```[^\n]*$", re.M | re.S)
_INLINE = re.compile(r"`([^`\n]+)`")
_REF = re.compile(r"^(?P<path>[\w./-]+\.py)::(?P<name>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)$")
_ROOT_PATH = re.compile(r"^(?:(?:\.ci|emulator|strategies|shedders|tests|bench|spec)/[\w./-]*"
                        r"|[\w.-]+\.(?:toml|md))$")
_BARE_MODULE = re.compile(r"^\w+\.py$")
_CLASS_REF = re.compile(r"^(?P<cls>[A-Z]\w*[a-z]\w*)(?:\.(?P<member>[A-Za-z_]\w*))?$")
_DOTTED = re.compile(r"^(?:emulator|strategies|shedders)\.[\w.]+$")
_NAME = re.compile(r"^_?(?:[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)$")
_BUILTINS = frozenset(dir(builtins))
_SINGLE_COLON = re.compile(r"^[\w./-]+\.py:\w[\w.]*$")


def inline_code(text: str) -> list[str]:
    """The inline code spans of a Markdown text, fenced blocks left out, calls' `()` dropped."""
    spans = _INLINE.findall(_FENCE.sub("", text))
    return [s.strip().removesuffix("()") for s in spans]


# --------------------------------------------------------------------------- what a file defines


def _names_in(body: list[ast.stmt], prefix: str, out: set[str], *, imports: bool) -> None:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.add(prefix + node.name)
        elif isinstance(node, ast.ClassDef):
            out.add(prefix + node.name)
            _names_in(node.body, prefix + node.name + ".", out, imports=False)
            out.update(prefix + node.name + "." + a for a in _instance_attributes(node))
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out.add(prefix + target.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(prefix + node.target.id)
        elif isinstance(node, ast.If):
            _names_in(node.body + node.orelse, prefix, out, imports=imports)
        elif isinstance(node, ast.Try):
            _names_in(node.body + node.orelse + node.finalbody, prefix, out, imports=imports)
        elif imports and isinstance(node, ast.ImportFrom):
            out.update(prefix + (a.asname or a.name) for a in node.names)


def _instance_attributes(cls: ast.ClassDef) -> set[str]:
    """`self.x = ...` (or `self.x: T = ...`) in the class's own methods."""
    out: set[str] = set()
    for method in cls.body:
        if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(method):
                targets = node.targets if isinstance(node, ast.Assign) else \
                    [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
                for t in targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        out.add(t.attr)
    return out


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@functools.cache
def defined(path: Path) -> frozenset[str]:
    """Qualified names `path` defines: functions, classes, constants, and each class's own members.
    A package's `__init__.py` also defines what it re-exports."""
    tree = _tree(path)
    out: set[str] = set()
    _names_in(tree.body, "", out, imports=path.name == "__init__.py")
    return frozenset(out)


@functools.cache
def _python_files() -> tuple[Path, ...]:
    return tuple(p for top in SEARCHED for p in sorted((ROOT / top).rglob("*.py")))


@functools.cache
def classes() -> dict[str, list[frozenset[str]]]:
    """Class name -> the members of each class of that name under SOURCES (as `Class.member`)."""
    out: dict[str, list[frozenset[str]]] = {}
    for path in _python_files():
        if path.relative_to(ROOT).parts[0] not in SOURCES:
            continue
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ClassDef):
                members: set[str] = set()
                _names_in(node.body, "", members, imports=False)
                members |= _instance_attributes(node)
                out.setdefault(node.name, []).append(frozenset(members))
    return out


@functools.cache
def all_names() -> frozenset[str]:
    """Every name defined anywhere under SOURCES (the last part of each qualified name)."""
    out = {name.rsplit(".", 1)[-1] for path in _python_files()
           if path.relative_to(ROOT).parts[0] in SOURCES for name in defined(path)}
    for found in classes().values():
        for members in found:
            out |= members
    return frozenset(out)


# --------------------------------------------------------------------------- the check


def problem(span: str) -> str | None:
    """What is wrong with one inline code span of the document, or None (it exists, or is not a
    reference to our code)."""
    if "<" in span or ">" in span or " " in span:
        return None
    if m := _REF.match(span):
        path, name = ROOT / m["path"], m["name"]
        if not path.is_file():
            return f"`{span}`: no file {m['path']}"
        if name not in defined(path):
            return f"`{span}`: {m['path']} defines no {name}"
        return None
    if _SINGLE_COLON.match(span):
        return f"`{span}`: write file and function as `{span.replace(':', '::', 1)}`"
    if _DOTTED.match(span):
        return f"`{span}`: write it as `{_as_ref(span)}`, the one notation of this document"
    if _ROOT_PATH.match(span):
        return None if (ROOT / span).exists() else f"`{span}`: no such file or folder"
    if _BARE_MODULE.match(span):
        if any(p.name == span for p in _python_files()):
            return None
        return f"`{span}`: no module of that name under {', '.join(SEARCHED)}"
    if m := _CLASS_REF.match(span):
        if m["cls"] in _BUILTINS:
            return None
        found = classes().get(m["cls"])
        if found is None:
            return (f"`{span}`: no class {m['cls']} under {', '.join(SOURCES)} "
                    "(write Pulsar's own names without backticks)")
        if m["member"] is not None and not any(m["member"] in members for members in found):
            return f"`{span}`: class {m['cls']} defines no {m['member']} in its own body"
        return None
    if _NAME.match(span) and span not in all_names() and span not in _BUILTINS:
        return f"`{span}`: nothing of that name is defined under {', '.join(SOURCES)}"
    return None


def _as_ref(dotted: str) -> str:
    """`emulator.cluster.broker.Broker` -> `emulator/cluster/broker.py::Broker` (the longest module
    prefix that is a file or a package)."""
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        base = "/".join(parts[:i])
        for path in (base + ".py", base + "/__init__.py"):
            if (ROOT / path).is_file():
                return f"{path}::{'.'.join(parts[i:])}"
    return "path.py::name"


def problems(text: str) -> list[str]:
    """Every problem of the document's code spans; a span broken over two lines is one too (it would
    pair the rest of the line's backticks wrongly, and go unchecked)."""
    broken = [f"line {n}: a code span runs onto the next line; keep each span on one line"
              for n, line in enumerate(_FENCE.sub(lambda m: "\n" * m[0].count("\n"), text).splitlines(), 1)
              if line.count("`") % 2]
    return broken + [p for span in inline_code(text) if (p := problem(span)) is not None]


def test_every_name_in_architecture_md_exists():
    text = DOC.read_text(encoding="utf-8")
    found = problems(text)
    assert not found, "ARCHITECTURE.md names what the code does not have:\n  " + "\n  ".join(found)


def test_architecture_md_names_enough_to_be_a_map():
    """The hop lists name a file and a function at each hop: a document that lost them (or a
    check that stopped seeing them) fails here."""
    refs = [s for s in inline_code(DOC.read_text(encoding="utf-8")) if _REF.match(s)]
    assert len(refs) >= 40, refs


def test_the_check_catches_stale_names():
    """A wrong file, a wrong function, a wrong method, a wrong class and the other notations fail."""
    bad = """
    `emulator/cluster/brokers.py` `emulator/cluster/broker.py::Broker.on_lookup`
    `emulator/cluster/broker.py::no_such_function` `emulator/cluster/nowhere.py::Broker`
    `LookupTopics` `PulsarClient.reconnect` `emulator.cluster.broker.Broker` `broker.py:Broker`
    `nosuchmodule.py` `select_brokers` `LOAD_MANAGER` `emulator/cluster/
    broker.py`
    """
    assert len(problems(bad)) == 13, problems(bad)
    good = """
    `emulator/cluster/broker.py` `emulator/cluster/broker.py::Broker._on_notification`
    `emulator/cluster/load_manager.py::LOAD_MANAGERS` `emulator/runtime/__init__.py::Actor`
    `LookupTopic` `PulsarClient._connection_lost` `shedders/<name>.py` `pulsar-lb-emulator run`
    `broker.py` `pyproject.toml` `ClientSettings.max_lookup_redirects` `LoadManagerLeader.affinity`
    `select_broker` `LOAD_MANAGERS` `suggest_key` `getattr` `TypeError`
    ```
    `emulator/cluster/illustration.py::not_checked`
    ```
    """
    assert problems(good) == []
