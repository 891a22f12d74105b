"""No module of the cluster or of a load manager's package is over 600 lines (issue 28): one concern per
module, as STYLE.md asks; a module that grows past it is split along a seam of its own (a mixin part of
the same object, as extensible_wrapper.py's selection.py, admin.py and decision_events.py, or a second
module of pure rules, as channel_rules.py's channel_cleanup.py), not trimmed of its docstrings."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 600
PACKAGES = ("emulator/cluster", "emulator/loadmanagers")


def _lines(path: Path) -> int:
    with path.open(encoding="utf-8") as f:
        return sum(1 for _ in f)


def test_no_cluster_or_load_manager_module_is_over_600_lines():
    sizes = {str(p.relative_to(ROOT)): _lines(p)
             for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}
    assert len(sizes) > 40, "the packages moved? update PACKAGES"
    over = {path: n for path, n in sizes.items() if n > LIMIT}
    assert over == {}, f"over {LIMIT} lines (split each along a seam of its own): {over}"
