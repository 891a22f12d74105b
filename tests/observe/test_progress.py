"""The progress bar tells the truth: what it shows never goes backwards, a start-up phase is shown as
such, an ETA only once the rate has settled, and reading it changes nothing in a run."""

from __future__ import annotations

import io

import pytest

import emulator.observe.progress as progress
from emulator.observe.progress import ProgressBar, Reading, run_reading, settled_rate
from emulator.runner import RunOptions, run


def bar(**kw: object) -> ProgressBar:
    return ProgressBar("job", poll=lambda: (0.0, None), unit="u", stream=io.StringIO(), terminal=False, **kw)


def test_done_total_and_percent_never_go_backwards_under_a_growing_plan():
    b = bar()
    shown = []
    # 10 of 10 done, then a second job plans 20 more (10/30), a reading behind (a stage listed pending)
    for done, total in [(0, 10), (5, 10), (10, 10), (10, 30), (9, 30), (20, 30), (28, 30), (30, 30)]:
        b.update(Reading(done, total, growing=True))
        shown.append((b.done, b.total, b.fraction))
    for before, after in zip(shown, shown[1:]):
        assert all(a >= p for a, p in zip(after, before)), shown
    # 10/10 (all planned done, more may come) does not raise it; 10/30 does not lower it
    assert [round(f, 3) for _, _, f in shown] == [0.0, 0.5, 0.5, 0.5, 0.5, 0.667, 0.933, 0.933]
    assert "30/30 u (93 %)" in b.line()                                # never 100 % while running
    b.update(Reading(30, None))                                        # a None total keeps the last
    assert b.total == 30
    b.update((99.8, 100))
    assert b.fraction == progress.RUNNING_MAX
    fixed = bar()
    fixed.update((100, 100))                                          # a fixed plan (a run) done: 99 %
    assert fixed.fraction == progress.RUNNING_MAX


def test_a_phase_replaces_the_bare_count():
    b = bar()
    b.update(Reading(0, None, "starting Spark"))
    assert b.line() == "job: starting Spark"
    b.update(Reading(0, None, "planning"))
    assert b.line() == "job: planning"
    b.update(Reading(3, 12))
    assert b.line().startswith("job: 3/12 u (25 %), ") and "ETA -:--:--" in b.line()


def test_settled_rate_needs_a_steady_span_and_follows_a_change():
    steady = [(t * 0.25, 10.0 * t * 0.25) for t in range(41)]           # 10 u/s for 10 s
    assert settled_rate(steady, settle=2.0) == pytest.approx(10.0)
    assert settled_rate(steady[:7], settle=2.0) is None                 # 1.5 s: too short to judge
    # 1 u/s for 20 s, then 30 u/s: the long span mixes both, a short span after the change is settled
    ramp = [(t * 0.25, t * 0.25) for t in range(81)]
    ramp += [(20 + t * 0.25, 20 + 30 * t * 0.25) for t in range(1, 5)]
    assert settled_rate(ramp, settle=2.0) is None                        # 1 s of the new rate
    ramp += [(20 + t * 0.25, 20 + 30 * t * 0.25) for t in range(5, 13)]
    assert settled_rate(ramp, settle=2.0) == pytest.approx(30.0, rel=0.1)
    # bursts (tasks ending in waves of 2 every 4 s) are judged on a long span
    waves = [(t * 0.25, 2.0 * (int(t * 0.25) // 4)) for t in range(0, 161)]
    assert settled_rate(waves, settle=2.0) == pytest.approx(0.5, rel=0.15)
    assert settled_rate([(0, 0), (1, 0), (2, 0), (3, 0)], settle=2.0) is None   # no progress: no rate


def test_run_start_up_is_a_phase_and_its_eta_is_not_many_times_too_long():
    assert run_reading(5.0, 7200.0, 60.0) == Reading(5.0, 7200.0, "starting clients")
    assert run_reading(60.0, 7200.0, 60.0) == Reading(60.0, 7200.0, None)
    assert run_reading(7300.0, 7200.0, 60.0).done == 7200.0
    assert run_reading(1.0, 7200.0, 0.0).phase is None                 # connect_over = 0: no phase
    # the default scenario measured: 35 emulated s per wall s while its clients connect (60 s), then
    # ~3,000; from the start, a rate-based ETA would be ~50x too long
    b, now, elapsed = bar(), 0.0, 0.0
    while elapsed < 7200.0:
        reading = run_reading(elapsed, 7200.0, 60.0)
        b.update(reading, now=now)
        if reading.phase is not None:
            assert b.eta() is None and "starting clients" in b.line()
            naive = (7200.0 - elapsed) / (elapsed / now) if elapsed else None   # the old rule: since start
        now += 0.25
        elapsed += 0.25 * (35.0 if elapsed < 60.0 else 3000.0)
        if b.eta() is not None:
            assert b.eta() == pytest.approx((7200.0 - b.done) / 3000.0, rel=0.2)
            break
    else:
        pytest.fail("no ETA once the rate settled")
    assert naive is not None and naive > 30 * (7200.0 - 60.0) / 3000.0   # 30-40x too long, as seen


def test_reading_the_bar_changes_nothing_in_a_run(monkeypatch):
    polls = []

    class Often(ProgressBar):
        def __init__(self, *args, **kw):
            poll = kw.pop("poll")
            def read():
                reading = poll()
                polls.append(reading)
                return reading
            super().__init__(*args, poll=read, **{**kw, "refresh": 0.002})

    def once(show: bool) -> str:
        return run(RunOptions(scenario="pip364-skewed", duration=120.0, progress=show),
                   out=io.StringIO(), err=io.StringIO()).summary_text

    quiet = once(False)
    monkeypatch.setattr(progress, "ProgressBar", Often)
    shown = once(True)
    # readings taken while the run was under way (not its first or last): their number follows the
    # machine's speed (19 polls in all on a fast one), so only a few are asked for
    during = [r for r in polls if 0.0 < (r.done if isinstance(r, Reading) else r[0]) < 120.0]
    assert len(during) >= 5 and shown == quiet
