"""The built-in scenario library: one TOML file per scenario in `emulator/scenarios/` (package data).

Each file's `[scenario]` table names it (the same as the file) and says in one line what it exists to
show; `describe()` lists them for `pulsar-lb-emulator scenarios`. `load_scenario(name_or_path)` is what
the command and the test fixtures take: a built-in by name, or a scenario file by path.
"""

from __future__ import annotations

import os
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from emulator.model.suggest import did_you_mean

from .errors import MISSING, ScenarioError
from .loader import load_file, loads
from .schema import Scenario

__all__ = ["describe", "load", "load_scenario", "names", "source"]


def _folder() -> Traversable:
    return resources.files("emulator") / "scenarios"


def names() -> list[str]:
    """Names of the built-in scenarios, sorted."""
    return sorted(p.name[:-5] for p in _folder().iterdir() if p.name.endswith(".toml"))


def source(name: str) -> str:
    """The TOML text of a built-in scenario."""
    if name not in names():
        raise ScenarioError(name, None, MISSING, "no built-in scenario of that name"
                            + did_you_mean(name, names()) + "; known: " + ", ".join(names()))
    return (_folder() / f"{name}.toml").read_text(encoding="utf-8")


def load(name: str) -> Scenario:
    """A built-in scenario by name."""
    return loads(source(name), f"{name}.toml")


def load_scenario(name_or_path: str | os.PathLike[str]) -> Scenario:
    """A built-in scenario by name, or a scenario file by path (a name wins only if no such file)."""
    text = os.fspath(name_or_path)
    if text in names() and not Path(text).is_file():
        return load(text)
    if Path(text).exists() or text.endswith(".toml") or os.sep in text:
        return load_file(text)
    raise ScenarioError(text, None, MISSING, "not a built-in scenario nor a file"
                        + did_you_mean(text, names()) + "; built-in: " + ", ".join(names()))


def describe() -> list[tuple[str, str]]:
    """(name, one-line description) of every built-in scenario."""
    return [(n, load(n).description) for n in names()]
