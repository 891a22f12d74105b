"""`emulator.runner`: scenario runs check invariants every `check_interval` emulated seconds."""

from __future__ import annotations

import io

import pytest

from emulator.observe.invariants import InvariantChecker
from emulator.runner import RunError, RunOptions, run


def test_scenario_runs_check_invariants_every_10_emulated_seconds_by_default():
    assert RunOptions().check_interval == 10.0


@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf"), float("nan")])
def test_a_check_interval_must_be_a_positive_number(bad):
    with pytest.raises(RunError, match="--check-interval"):
        run(RunOptions(scenario="idle-new-broker", check_interval=bad), out=io.StringIO(), err=io.StringIO())


def test_the_checker_runs_at_the_given_interval(monkeypatch):
    checks: list[float] = []
    original = InvariantChecker.check_now

    def counting(self: InvariantChecker) -> list:
        checks.append(self.cluster.system.clock.now())
        return original(self)

    monkeypatch.setattr(InvariantChecker, "check_now", counting)
    result = run(RunOptions(scenario="idle-new-broker", duration=120.0, check_interval=30.0),
                 out=io.StringIO(), err=io.StringIO())
    assert result.violations == []
    assert 4 <= len(checks) <= 6     # every 30 s over 120 s, and once more at the end
    assert all(b - a == pytest.approx(30.0) for a, b in zip(checks[:3], checks[1:4]))
