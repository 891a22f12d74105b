"""Progress of a long job on stderr: a bar on a terminal, one line every N seconds otherwise (a CI log).

    with ProgressBar("run default", poll=lambda: Reading(done, total, phase), unit="emulated s"):
        ...                      # the job; `poll` is called from the bar's own thread

`poll` returns a `Reading` (or `(done, total)`) in `unit`s; a total of None keeps the last one, and a
`phase` ("starting Spark", "planning", "starting clients") is shown instead of a bare `0/?`. It is read
from a thread of the bar's own, every `refresh` seconds of wall time, so the job never calls the bar and
a run on the virtual clock gets no extra timer (its decisions cannot depend on whether a bar is shown).

What the bar shows never goes backwards: done and total are each the maximum read so far, and the
percent is the maximum of done/total read so far (a plan that grows, a Spark command planning its next
job, holds the percent rather than dropping it; a reading of a `growing` plan with all its work done
does not raise it, since more may come; it shows 99 % at most until the job has ended).

The ETA is (total - done) / rate, shown only once the rate has settled (`settled_rate`): the rate over
the last span of readings taken outside a start-up phase, where the span's older and newer halves agree
within `TOLERANCE`. A rate still climbing, or too short to judge, shows `ETA -:--:--` rather than an
ETA many times too long; a run's `[clients] connect_over` is a phase ("starting clients", `run_reading`)
whose readings are not used at all (`default`: 35 emulated s per wall s while its clients connect, then
~3,000, so a rate from the start made the ETA ~50x too long). The plain line and the terminal bar say the same:
`run default: 1,800/7,200 emulated s (25 %), 412.3 emulated s/s, ETA 0:00:13`.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, TextIO, Union

import msgspec

__all__ = ["PLAIN_EVERY", "RUNNING_MAX", "SETTLE", "STARTING_CLIENTS", "TOLERANCE", "WINDOW", "ProgressBar", "Reading",
           "format_eta", "run_reading",
           "settled_rate"]

PLAIN_EVERY = 10.0
"""Wall seconds between two plain progress lines (stderr not a terminal)."""
WINDOW = 60.0
"""The longest span of wall seconds a rate is measured over."""
SETTLE = 2.0
"""The shortest span of wall seconds a rate is judged on: no ETA before it."""
RUNNING_MAX = 0.99
"""The most the percent shows while the job runs: 100 % is said once, when it ended."""
TOLERANCE = 1.5
"""A span's rate is settled when its two halves' rates are within this factor of each other."""


class Reading(msgspec.Struct, frozen=True):
    """One poll: done and total (None: not known yet) in the bar's unit, the phase, if any, and whether
    the total may still grow (`growing`: a Spark command that may plan another job)."""

    done: float = 0.0
    total: float | None = None
    phase: str | None = None
    growing: bool = False


Poll = Callable[[], Union[Reading, "tuple[float, float | None]"]]


def format_eta(seconds: float | None) -> str:
    if seconds is None or seconds != seconds or seconds == float("inf"):
        return "-:--:--"
    seconds = int(round(max(0.0, seconds)))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _done_at(samples: Sequence[tuple[float, float]], t: float) -> float:
    """Done at wall time t: the last reading at or before t (the first one if none)."""
    done = samples[0][1]
    for ts, d in samples:
        if ts > t:
            break
        done = d
    return done


def settled_rate(samples: Sequence[tuple[float, float]], *, window: float = WINDOW, settle: float = SETTLE,
                 tolerance: float = TOLERANCE) -> float | None:
    """Units per wall second over the longest recent span (at most `window`, at least `settle` s) whose
    older and newer halves progressed at rates within `tolerance` of each other; None if no span does.
    `samples`: (wall time, done) readings in time order. Longest first, so steady but bursty progress
    (Spark tasks ending in waves) is judged on a long span, and a rate that just changed on a short one."""
    if len(samples) < 3:
        return None
    last_t, last_d = samples[-1]
    span = min(window, last_t - samples[0][0])
    while span >= settle:
        start, middle = last_t - span, last_t - span / 2
        d0, d1 = _done_at(samples, start), _done_at(samples, middle)
        older, newer = (d1 - d0) / (span / 2), (last_d - d1) / (span / 2)
        if older > 0 and newer > 0 and max(older, newer) <= tolerance * min(older, newer):
            return (last_d - d0) / span
        span /= 2
    return None


class ProgressBar:
    """See the module docstring. `terminal`: force the bar (True) or the plain lines (False); default:
    whether `stream` is a terminal. `every`: wall seconds between plain lines."""

    def __init__(self, description: str, *, poll: Poll, unit: str, stream: TextIO | None = None,
                 terminal: bool | None = None, every: float = PLAIN_EVERY, refresh: float = 0.25,
                 window: float = WINDOW, settle: float = SETTLE, tolerance: float = TOLERANCE) -> None:
        self.description = description
        self.poll = poll
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.terminal = terminal if terminal is not None else bool(isatty and isatty())
        self.every = float(every)
        self.refresh = float(refresh)
        self.window, self.settle, self.tolerance = float(window), float(settle), float(tolerance)
        self.lines = 0
        """Plain lines written so far."""
        self.done = 0.0
        self.total: float | None = None
        self.fraction = 0.0
        """The percent shown / 100: the maximum of done/total read (of a growing plan: while done <
        total), at most RUNNING_MAX until the job has ended (a plan may still grow: a sweep's runs are all done before
        its roll-up's jobs are planned)."""
        self.phase: str | None = None
        self._samples: deque[tuple[float, float]] = deque()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._rich: Any = None
        self._task: Any = None
        self._started = 0.0

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> "ProgressBar":
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop(finished=kind is None)

    def start(self) -> None:
        self._started = time.monotonic()
        if self.terminal:
            self._rich, self._task = self._make_bar()
            self._rich.start()
        self._thread = threading.Thread(target=self._loop, name="progress", daemon=True)
        self._thread.start()

    def stop(self, finished: bool = False) -> None:
        """Stop polling; the terminal bar is left showing its last state (100 % only if `finished`, the
        job ended without an error, and done reached the total)."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        if self._rich is not None:
            self._read()
            if finished and self.total and self.done >= self.total:
                self.fraction = 1.0
                self._rich.update(self._task, completed=1000.0, status=self.status(), refresh=True)
            self._rich.stop()
            self._rich = None

    # ------------------------------------------------------------------ polling

    def update(self, reading: Reading | tuple[float, float | None], now: float | None = None) -> None:
        """Take one reading (what the polling thread does; public for tests): keep the maxima, and the
        samples the rate is judged on once no phase is shown."""
        if not isinstance(reading, Reading):
            reading = Reading(*reading)
        now = time.monotonic() if now is None else now
        self.done = max(self.done, float(reading.done))
        if reading.total is not None:
            self.total = max(self.total or 0.0, float(reading.total))
        if self.total is not None and self.total < self.done:
            self.total = self.done
        # a growing plan with all its work done may get more: the percent holds
        if self.total and (self.done < self.total or not reading.growing):
            self.fraction = max(self.fraction, min(self.done / self.total, RUNNING_MAX))
        self.phase = reading.phase
        if reading.phase is None:
            self._samples.append((now, self.done))
            while len(self._samples) > 2 and self._samples[1][0] < now - self.window:
                self._samples.popleft()

    def _read(self) -> None:
        try:
            reading = self.poll()
        except Exception:  # noqa: BLE001 - a job between states (a loop closing, no Spark yet): skip once
            return
        self.update(reading)
        if self._rich is not None:
            self._rich.update(self._task, completed=1000.0 * self.fraction,
                              total=1000.0 if self.total else None, status=self.status(), refresh=True)

    def _loop(self) -> None:
        next_line = self._started + self.every
        while not self._stop.wait(self.refresh):
            self._read()
            if not self.terminal and time.monotonic() >= next_line:
                self.stream.write(self.line() + "\n")
                self.stream.flush()
                self.lines += 1
                next_line += self.every

    # ------------------------------------------------------------------ rendering

    def rate(self) -> float | None:
        """The settled rate (units per wall second), or None (`settled_rate`)."""
        return settled_rate(list(self._samples), window=self.window, settle=self.settle,
                            tolerance=self.tolerance)

    def recent_rate(self) -> float | None:
        """The rate over the readings kept (the last `window` s out of a phase), settled or not."""
        if len(self._samples) < 2 or self._samples[-1][0] <= self._samples[0][0]:
            return None
        (t0, d0), (t1, d1) = self._samples[0], self._samples[-1]
        return (d1 - d0) / (t1 - t0)

    def eta(self) -> float | None:
        """Wall seconds left at the settled rate; None without a total or a settled rate, and once done
        reached the total while the job runs (a Spark command may still plan its next job)."""
        rate = self.rate()
        if not self.total or self.done >= self.total or rate is None or rate <= 0:
            return None
        return (self.total - self.done) / rate

    def status(self) -> str:
        """Everything after the description: phase, done/total, percent, rate and ETA."""
        parts = [self.phase] if self.phase else []
        if self.total:
            parts.append(f"{self.done:,.0f}/{self.total:,.0f} {self.unit} ({100.0 * self.fraction:.0f} %)")
        elif self.done or not self.phase:
            parts.append(f"{self.done:,.0f} {self.unit}")
        if self.phase is None:   # a start-up phase has no rate worth judging, nor an ETA
            rate = self.recent_rate()
            parts.append(f"{rate:,.1f} {self.unit}/s" if rate is not None else f"- {self.unit}/s")
            if self.total and self.fraction < 1.0:
                parts.append(f"ETA {format_eta(self.eta())}")
        return ", ".join(parts)

    def line(self) -> str:
        """The plain progress line."""
        return f"{self.description}: {self.status()}"

    def _make_bar(self) -> tuple[Any, Any]:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(TextColumn("{task.description}"), BarColumn(bar_width=20),
                       TextColumn("{task.fields[status]}"),
                       TimeElapsedColumn(),
                       console=Console(file=self.stream, force_terminal=True), auto_refresh=False,
                       transient=False)
        task = bar.add_task(self.description, total=None, status="")
        return bar, task


STARTING_CLIENTS = "starting clients"


def run_reading(elapsed: float, duration: float, connecting: float) -> Reading:
    """A run's reading: emulated seconds of `duration`, in the phase "starting clients" while the
    clients still connect (`[clients] connect_over` emulated seconds from the start), whose wall cost
    per emulated second is many times the rest's, so no rate is judged on it."""
    elapsed = min(duration, max(0.0, elapsed))
    return Reading(elapsed, duration, STARTING_CLIENTS if elapsed < connecting else None)
