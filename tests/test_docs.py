"""The documentation pages hold what the code has: every named deviation (an `emulator_*` switch of
ServiceConfig) is listed in docs/faithfulness.md with its default, and every page the README links exists."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from emulator.model.config import ServiceConfig

ROOT = Path(__file__).resolve().parents[1]


def test_every_emulator_switch_is_documented_with_its_default():
    text = (ROOT / "docs" / "faithfulness.md").read_text(encoding="utf-8")
    documented = dict(re.findall(r'^\| `(emulator_\w+)` \| `(\w+|"")` \|', text, re.M))
    switches = {f.name: str(f.default).lower() or '""' for f in msgspec.structs.fields(ServiceConfig)
                if f.name.startswith("emulator_")}
    assert switches, "no emulator_* switch found in ServiceConfig"
    assert documented == switches


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.*)$", text, re.M)}


def test_links_between_the_readme_and_the_docs_resolve():
    pages = [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    checked = 0
    for page in pages:
        for target, anchor in re.findall(r"\]\(([^)#:]+\.md)(?:#([^)]*))?\)", page.read_text(encoding="utf-8")):
            linked = (page.parent / target).resolve()
            assert linked.is_file(), f"{page.name}: {target}"
            assert not anchor or anchor in _anchors(linked), f"{page.name}: {target}#{anchor}"
            checked += 1
    assert checked >= 10


def test_the_scenario_key_reference_is_the_schema():
    """docs/scenarios.md's generated tables are the scenario Structs as they are; after a schema change,
    `python3 -m tests.scenario_reference` rewrites them."""
    from tests.scenario_reference import PAGE, generated_part, render

    assert generated_part(PAGE.read_text(encoding="utf-8")) == render(), \
        "the scenario schema changed: run `python3 -m tests.scenario_reference` and commit docs/scenarios.md"


def test_the_scenario_key_reference_covers_every_section_of_the_file():
    from emulator.workload.schema import Scenario
    from tests.scenario_reference import render

    headings = render()
    free = {"settings", "latency"}          # free keys: Pulsar's names, operation names (said above the tables)
    for field in msgspec.structs.fields(Scenario):
        if field.name in free:
            continue
        name = field.encode_name
        assert f"`[{name}]`" in headings or f"`[[{name}]]`" in headings or (
            name == "events" and 'event `do = "' in headings) or (
            name == "capacity" and "`[capacity." in headings), name


def test_every_exported_metric_is_in_the_metrics_page():
    """Short runs under Modular, Simple and Extensible; each family they export has a row in
    docs/metrics.md's "Every metric" table, with its type."""
    from tests.metric_reference import exported

    text = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    section = text[text.index("## Every metric"):]
    section = section[:section.index("\n## ")]
    documented = set(re.findall(r"^\| `(\w+)` \| (\w+) \|", section, re.M))
    found = {(name, typ) for families in exported().values() for name, (typ, _, _) in families.items()}
    assert found - documented == set(), "add these to docs/metrics.md (python3 -m tests.metric_reference)"
