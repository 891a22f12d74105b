"""bench/heap_spread.py: the ballast it scatters a run through, the decision check that makes its two
kinds of run comparable, and (slow) one real pair of tiny runs."""

from __future__ import annotations

import pytest

from bench.heap_spread import main, make_ballast, same_decisions


def test_ballast_has_the_size_asked_and_the_holes_freed():
    ballast = make_ballast(0.01, 0.25)
    kept = [b for b in ballast if b is not None]
    assert len(kept) == len(ballast) - int(len(ballast) * 0.25)
    size = sum(len(b) + 33 for b in kept) / (1 << 30)
    assert 0.0070 < size < 0.0080          # three quarters of 0.01 GB
    assert min(map(len, kept)) >= 2 and max(map(len, kept)) < 480


def test_same_decisions_names_each_kpi_that_differs_and_only_those():
    a = {"kpis": {"bundle_moves": 40, "lookup_failures": 0}}
    b = {"kpis": {"bundle_moves": 40, "lookup_failures": 0}}
    c = {"kpis": {"bundle_moves": 41, "lookup_failures": 0, "splits": 0}}
    assert same_decisions([a, b]) == []
    assert same_decisions([a, b, c]) == ["bundle_moves", "splits"]


def test_bad_arguments_are_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--holes", "1.5"])
    assert exc.value.code == 2
    assert "--holes" in capsys.readouterr().err


@pytest.mark.slow
def test_a_tiny_pair_runs_and_decides_the_same(capsys):
    assert main(["--scale", "0.01", "--ballast-gb", "0.2", "--holes", "0.5", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "plain:" in out and "spread:" in out and "same decisions" in out
