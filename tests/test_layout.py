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


def _children(folder: Path) -> set[str]:
    """The packages and modules directly in `folder`, as `emulator/x/` and `emulator/x.py`."""
    return {str(p.relative_to(ROOT)) + ("/" if p.is_dir() else "")
            for p in folder.iterdir()
            if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.name != "__init__.py")}


def test_every_emulator_module_is_in_a_layer():
    """Every package of `emulator`, and every part (`model/`, `actors/`) of each load manager's package
    under `emulator/loadmanagers/`, sits in one layer; a load manager's package holds nothing else."""
    placed = set().union(*_contract_layers())
    children = _children(ROOT / "emulator") - {"emulator/loadmanagers/"}
    for manager in sorted(_children(ROOT / "emulator" / "loadmanagers")):
        children |= _children(ROOT / manager)
    assert children - placed == set(), "add these to the layers in pyproject.toml and the README's table"
    assert {p for p in placed if p.startswith("emulator/")} <= children
