"""Recorded outputs of every built-in scenario, compared on every run (issue 28).

Each case below is a short run (a few emulated minutes, the scenario's seed, the virtual clock, the
invariant checker on); its summary, run.json, decision log and lifecycle events are checked in under
`tests/recorded/<case>/` (what each file holds: `harness.py`). A run that records anything else fails
with a unified diff of the first lines. When the change is meant, regenerate and review:

    python3 -m pytest tests/recorded --rewrite      # rewrites the folders instead of comparing
    git diff tests/recorded                         # the moved decisions, to review and commit

`pulsar3-restart` (100 brokers, 100,000 producers) is `slow`: CI's second pass (`-m slow`) runs it;
`python3 -m pytest tests/recorded -m slow --rewrite` rewrites it. `pulsar-large` (1,000 brokers, 1,000,000
topics) is `huge`, by hand only: `python3 -m pytest tests/recorded -m huge -k pulsar-large --rewrite`
records it (its folder may be missing until then); `pulsar-large-0.01`, the same scenario generated at
1/100 (bench/large_scenario.py), is a default case.
"""

from __future__ import annotations

import shutil

import pytest

from bench.large_scenario import render as render_large
from emulator.workload import library

from .harness import HERE, Case, Mismatch, compare, render

MIN = 60.0

# loadManagerClassName values, Pulsar's class names (what `run --load-manager` resolves a short name to)
SIMPLE = "org.apache.pulsar.broker.loadbalance.impl.SimpleLoadManagerImpl"
EXTENSIBLE = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"

CASES: tuple[Case, ...] = (
    Case(name="broker-crash", scenario="broker-crash", duration=12 * MIN,
         shows="the crash at 10m, the session expiry and the orphaned bundles' reassignment"),
    Case(name="default", scenario="default", duration=5 * MIN,
         shows="the first assignments of 10,000 topics and the first (empty) shedding plans"),
    Case(name="heterogeneous-brokers", scenario="heterogeneous-brokers", duration=17 * MIN,
         shows="assignments by msg rate and the first unloads on CPU % (at ~16m)"),
    Case(name="hot-topic", scenario="hot-topic", duration=12.5 * MIN,
         shows="the rate jump at 5m and the first splits of the hot bundle (from 11m)"),
    Case(name="idle-new-broker", scenario="idle-new-broker", duration=8 * MIN,
         shows="the new broker at 5m and the shedding plans that leave it empty"),
    Case(name="jittery-consumers", scenario="jittery-consumers", duration=5 * MIN,
         shows="five rounds of consumers going away and coming back"),
    Case(name="leader-failover", scenario="leader-failover", duration=13 * MIN,
         shows="the leader killed at 10m, the re-election and the orphaned bundles' reassignment"),
    Case(name="migrate-to-extensible", scenario="migrate-to-extensible", duration=8 * MIN,
         shows="the rolling restart into ExtensibleLoadManagerImpl from 3m: the mixed cluster's redirects"),
    Case(name="overloading", scenario="overloading", duration=13 * MIN,
         shows="3 brokers removed at 10m and where their bundles land"),
    Case(name="pip364-skewed", scenario="pip364-skewed", duration=9 * MIN,
         shows="AvgShedder from the skewed warm start: its first unloads at ~8m"),
    Case(name="pulsar3-restart", scenario="pulsar3-restart", duration=5 * MIN + 10, slow=True,
         counted=("assignment", "bundle_unloaded"),
         shows="100 brokers' boot (54,000 bundles assigned), then the first 9 restarts from 5m"),
    Case(name="pulsar-large", scenario="pulsar-large", duration=21 * MIN, huge=True,
         counted=("assignment", "bundle_unloaded"),
         shows="1,000 brokers' boot, 1,000,000 topics connected over 5m, then the first restarts from 20m"),
    Case(name="pulsar-large-0.01", scenario="pulsar-large", duration=22 * MIN, text=render_large(0.01),
         shows="pulsar-large at 1/100 (bench/large_scenario.py): boot, connect, broker-10 drained at 20m"),
    Case(name="pulsar3-rolling-restart", scenario="pulsar3-rolling-restart", duration=2.5 * MIN,
         shows="1,000 partitions assigned, then the first restart at 2m: broker-1 drained"),
    Case(name="pulsar3-scale-down", scenario="pulsar3-scale-down", duration=7 * MIN,
         shows="5 brokers removed at 5m and their bundles reassigned"),
    Case(name="pulsar3-scale-up", scenario="pulsar3-scale-up", duration=7 * MIN,
         shows="5 brokers added at 5m and the first bundles unloaded to them"),
    Case(name="pulsar3-split", scenario="pulsar3-split", duration=2 * MIN,
         shows="the first automatic splits of the one bundle (from ~1m)"),
    Case(name="rolling-restart", scenario="rolling-restart", duration=8 * MIN,
         shows="the rolling restart from 5m: the first two brokers drained and back"),
    Case(name="scale-down", scenario="scale-down", duration=12 * MIN,
         shows="the graceful stops from 10m and where their load lands"),
    Case(name="scale-up", scenario="scale-up", duration=12 * MIN,
         shows="4 brokers added at 10m and the first bundle unloaded to them"),
    # every scenario pins the Modular load manager: the other two on the `default` scenario
    Case(name="default-simple", scenario="default", duration=5 * MIN, overrides={"loadManagerClassName": SIMPLE},
         shows="SimpleLoadManagerImpl: its assignments and first shedding plans"),
    Case(name="default-extensible", scenario="default", duration=5 * MIN,
         overrides={"loadManagerClassName": EXTENSIBLE},
         shows="ExtensibleLoadManagerImpl: its assignments and first unload decisions"),
)


@pytest.fixture
def rewrite(request) -> bool:
    return bool(request.config.getoption("--rewrite", default=False))


def _marks(case: Case) -> list[pytest.MarkDecorator]:
    return [pytest.mark.slow] * case.slow + [pytest.mark.huge] * case.huge


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=_marks(c)) for c in CASES])
def test_recorded(case: Case, tmp_path, rewrite: bool):
    got = render(case, tmp_path)
    for name, text in got.items():      # nothing of this machine or this hour in what is checked in
        assert str(tmp_path) not in text and "/tmp/" not in text, f"{case.name}/{name} holds a path"
    try:
        compare(case.name, got, HERE / case.name, rewrite=rewrite)
        return
    except Mismatch as e:
        failure = str(e)
    pytest.fail(failure, pytrace=False)      # the diff and the hint, not this function's source


def test_every_builtin_scenario_is_recorded_and_every_folder_is_a_case():
    assert set(library.names()) <= {c.scenario for c in CASES}, set(library.names()) - {c.scenario for c in CASES}
    names = [c.name for c in CASES]
    assert len(set(names)) == len(names)
    folders = {p.name for p in HERE.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}
    # a huge case is recorded by hand at full size: until then its folder may be missing
    expected = {c.name for c in CASES if not c.huge or (HERE / c.name).is_dir()}
    assert folders == expected, ("folders without a case", folders - expected,
                                 "cases without a folder (run with --rewrite)", expected - folders)
    for case in CASES:
        if case.name in folders:
            assert {p.name for p in (HERE / case.name).iterdir()} == set(case.files()), case.name


def test_the_readme_lists_every_case():
    readme = (HERE / "README.md").read_text(encoding="utf-8")
    for c in CASES:
        assert f"| `{c.name}` |" in readme, f"tests/recorded/README.md lacks the case {c.name}"


def test_a_moved_decision_fails_with_a_diff_and_rewrite_makes_it_pass(tmp_path):
    """The mechanism itself: a config change that moves the shedder's decisions fails the comparison with
    a diff naming the decision log and the hint, and passes once rewritten (here into a copy)."""
    case = next(c for c in CASES if c.name == "heterogeneous-brokers")
    folder = tmp_path / "expected"
    shutil.copytree(HERE / case.name, folder)
    moved = Case(name=case.name, scenario=case.scenario, duration=case.duration, shows=case.shows,
                 overrides={"loadBalancerBrokerThresholdShedderPercentage": "5"})
    got = render(moved, tmp_path / "run")
    with pytest.raises(Mismatch) as failed:
        compare(case.name, got, folder)
    message = str(failed.value)
    assert "decisions.jsonl" in message and "--rewrite" in message
    assert "\n-" in message and "\n+" in message and "@@" in message       # a unified diff
    assert len(message.splitlines()) < 70
    assert "decisions.jsonl" in compare(case.name, got, folder, rewrite=True)
    assert compare(case.name, got, folder) == []
    assert compare(case.name, render(moved, tmp_path / "again"), folder) == []   # and it stays so
