"""The KPI registry is the one list: the table of docs/rollup.md repeats it word for word, and the roll-up's
columns and the expectations' KPIs are its names."""

from __future__ import annotations

import re
from pathlib import Path

from emulator.model.kpi_registry import KPIS, WHOLE_RUN_ONLY

ROLLUP_DOC = Path(__file__).resolve().parents[2] / "docs" / "rollup.md"


def test_the_documented_table_is_the_registry():
    text = ROLLUP_DOC.read_text(encoding="utf-8")
    section = text[text.index("## KPIs: one definition each"):]
    rows = re.findall(r"^\| `([a-z0-9_]+)` \| (.*) \|$", section, re.M)
    assert rows == [(k.name, k.doc) for k in KPIS.values()]


def test_rollup_columns_are_the_registry_names():
    from emulator.pipeline.rollup import KPI_COLUMNS

    assert set(KPI_COLUMNS) == set(KPIS) - {"publish_messages", "publish_failed"} - WHOLE_RUN_ONLY
