"""The KPI registry is the one list: the README's table repeats it word for word, and the roll-up's
columns and the expectations' KPIs are its names."""

from __future__ import annotations

import re
from pathlib import Path

from emulator.model.kpi_registry import KPIS, WHOLE_RUN_ONLY

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_table_is_the_registry():
    text = README.read_text()
    section = text[text.index("### KPIs: one definition each"):]
    rows = re.findall(r"^\| `([a-z0-9_]+)` \| (.*) \|$", section, re.M)
    assert rows == [(k.name, k.doc) for k in KPIS.values()]


def test_rollup_columns_are_the_registry_names():
    from emulator.pipeline.rollup import KPI_COLUMNS

    assert set(KPI_COLUMNS) == set(KPIS) - {"publish_messages", "publish_failed"} - WHOLE_RUN_ONLY
