"""The README's layout table and the import-linter contract in pyproject.toml state the same layers, and
every module and package of `emulator` sits in one of them (so a new one cannot slip past the check)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _contract_layers() -> list[set[str]]:
    """The layers contract, bottom first, each as the set of its paths (`emulator/cli.py`, `strategies/`)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    layers = []
    for layer in reversed(contract["layers"]):
        modules = [m.strip() for m in re.split(r"[|:]", layer)]
        layers.append({m.replace(".", "/") + ("/" if (ROOT / m.replace(".", "/")).is_dir() else ".py")
                       for m in modules})
    return layers


def _readme_layers() -> list[set[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text.split("## Layout", 1)[1]
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \|", table, re.M)
    assert [int(n) for n, _ in rows] == list(range(1, len(rows) + 1)), rows
    return [set(re.findall(r"`([^`]+)`", paths)) for _, paths in rows]


def test_readme_layout_table_is_the_import_linter_contract():
    assert _readme_layers() == _contract_layers()


def test_every_emulator_module_is_in_a_layer():
    placed = set().union(*_contract_layers())
    children = {f"emulator/{p.name}/" if p.is_dir() else f"emulator/{p.name}"
                for p in (ROOT / "emulator").iterdir()
                if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.name != "__init__.py")}
    assert children - placed == set(), "add these to the layers in pyproject.toml and the README's table"
    assert {p for p in placed if p.startswith("emulator/")} <= children
