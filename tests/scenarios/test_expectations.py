"""Every built-in scenario states what it demonstrates as [[expect]] tables, and a full run (seed 1, the
invariant checker on) meets them. The small scenarios run in the default suite (a few seconds each); the
large ones (`default`, `pulsar3-*`: tens of thousands of topics) are marked slow, and the full-size
`pulsar3-restart` (about 30 min of wall time) and `pulsar-large` (a million topics) `huge`: run by hand,
`python -m pytest -m huge`."""

from __future__ import annotations

import io

import pytest

from emulator.observe.expectations import format_result
from emulator.runner import RunOptions, run
from emulator.workload import library

SLOW = {"default", "pulsar3-rolling-restart", "pulsar3-scale-down", "pulsar3-scale-up", "pulsar3-split"}
HUGE = {"pulsar3-restart",    # 100 brokers, 100,000 producers: ~30 min wall; `pytest -m huge`
        "pulsar-large"}       # 1,000 brokers, 1,000,000 topics (its 1/100 runs in test_pulsar_large.py)
FAST = sorted(set(library.names()) - SLOW - HUGE)


def test_every_builtin_scenario_states_its_expectations():
    missing = [n for n in library.names() if not library.load(n).expect]
    assert not missing, missing


def _meets(name: str) -> None:
    result = run(RunOptions(scenario=name), out=io.StringIO(), err=io.StringIO())
    assert not result.violations and not result.actor_failures and not result.summary.event_errors
    failed = [format_result(r) for r in result.expectations if not r.passed]
    assert not failed, failed
    assert len(result.expectations) == len(library.load(name).expect)


@pytest.mark.parametrize("name", FAST)
def test_builtin_scenario_meets_its_expectations(name):
    _meets(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW))
def test_large_builtin_scenario_meets_its_expectations(name):
    _meets(name)


@pytest.mark.huge
@pytest.mark.parametrize("name", sorted(HUGE))
def test_huge_builtin_scenario_meets_its_expectations(name):
    _meets(name)
