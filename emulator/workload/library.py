"""The built-in scenario library: one TOML file per scenario in `emulator/scenarios/` (package data).

Each file's `[scenario]` table names it (the same as the file) and says in one line what it exists to
show; `describe()` lists them for `pulsar-lb-emulator scenarios`.
"""

from __future__ import annotations

from importlib import resources

from .errors import MISSING, ScenarioError
from .loader import loads
from .schema import Scenario

__all__ = ["describe", "load", "names", "source"]


def _folder():  # type: ignore[no-untyped-def]
    return resources.files("emulator") / "scenarios"


def names() -> list[str]:
    """Names of the built-in scenarios, sorted."""
    return sorted(p.name[:-5] for p in _folder().iterdir() if p.name.endswith(".toml"))


def source(name: str) -> str:
    """The TOML text of a built-in scenario."""
    if name not in names():
        raise ScenarioError(name, None, MISSING,
                            "no built-in scenario of that name; known: " + ", ".join(names()))
    return (_folder() / f"{name}.toml").read_text(encoding="utf-8")


def load(name: str) -> Scenario:
    return loads(source(name), f"{name}.toml")


def describe() -> list[tuple[str, str]]:
    """(name, one-line description) of every built-in scenario."""
    return [(n, load(n).description) for n in names()]
