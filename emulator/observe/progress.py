"""Progress of a long job on stderr: a bar with rate and ETA on a terminal, one line every N seconds
otherwise (a CI log, a file).

    with ProgressBar("run default", poll=lambda: (loop.time() - t0, duration), unit="emulated s"):
        ...                      # the job; `poll` is called from the bar's own thread

`poll` returns (done, total) in `unit`s; a total of None keeps the last one. It is read from a thread
of the bar's own, every `refresh` seconds of wall time, so the job never calls the bar and a run on
the virtual clock gets no extra timer (its decisions cannot depend on whether a bar is shown). The
terminal bar is rich's (`rich.progress`): rate = `unit`s per wall second over the last 30 s, ETA from it.
The plain line says the same: `run default: 1,800/7,200 emulated s (25 %), 412.3 emulated s/s, ETA 0:00:13`.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, TextIO

__all__ = ["PLAIN_EVERY", "ProgressBar", "format_eta"]

PLAIN_EVERY = 10.0
"""Wall seconds between two plain progress lines (stderr not a terminal)."""

Poll = Callable[[], "tuple[float, float | None]"]


def format_eta(seconds: float | None) -> str:
    if seconds is None or seconds != seconds or seconds == float("inf"):
        return "-:--:--"
    seconds = int(round(max(0.0, seconds)))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class ProgressBar:
    """See the module docstring. `terminal`: force the bar (True) or the plain lines (False); default:
    whether `stream` is a terminal. `every`: wall seconds between plain lines."""

    def __init__(self, description: str, *, poll: Poll, unit: str, stream: TextIO | None = None,
                 terminal: bool | None = None, every: float = PLAIN_EVERY, refresh: float = 0.25) -> None:
        self.description = description
        self.poll = poll
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.terminal = terminal if terminal is not None else bool(isatty and isatty())
        self.every = float(every)
        self.refresh = float(refresh)
        self.lines = 0
        """Plain lines written so far."""
        self._done = 0.0
        self._total: float | None = None
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
        self.stop()

    def start(self) -> None:
        self._started = time.monotonic()
        if self.terminal:
            self._rich, self._task = self._make_bar()
            self._rich.start()
        self._thread = threading.Thread(target=self._loop, name="progress", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop polling; the terminal bar is left showing its last state."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        if self._rich is not None:
            self._read()
            self._rich.stop()
            self._rich = None

    # ------------------------------------------------------------------ polling

    def _read(self) -> None:
        try:
            done, total = self.poll()
        except Exception:  # noqa: BLE001 - a job between states (a loop closing, no Spark yet): skip once
            return
        self._done = float(done)
        if total is not None:
            self._total = float(total)
        if self._rich is not None:
            self._rich.update(self._task, completed=self._done, total=self._total, refresh=True)

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

    def line(self) -> str:
        """The plain progress line: done/total, percent, rate since the start and the ETA from it."""
        elapsed = max(1e-9, time.monotonic() - self._started)
        rate = self._done / elapsed
        total = self._total
        if total:
            pct = 100.0 * self._done / total
            eta = (total - self._done) / rate if rate > 0 else None
            return (f"{self.description}: {self._done:,.0f}/{total:,.0f} {self.unit} ({pct:.0f} %), "
                    f"{rate:,.1f} {self.unit}/s, ETA {format_eta(eta)}")
        return f"{self.description}: {self._done:,.0f} {self.unit}, {rate:,.1f} {self.unit}/s"

    def _make_bar(self) -> tuple[Any, Any]:
        from rich.console import Console
        from rich.progress import (BarColumn, Progress, ProgressColumn, TaskProgressColumn, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)
        from rich.text import Text

        unit = self.unit

        class Count(ProgressColumn):
            def render(self, task: Any) -> Text:
                total = "?" if task.total is None else f"{task.total:,.0f}"
                return Text(f"{task.completed:,.0f}/{total} {unit}")

        class Rate(ProgressColumn):
            def render(self, task: Any) -> Text:
                speed = task.finished_speed or task.speed
                return Text(f"{speed:,.1f} {unit}/s" if speed is not None else f"- {unit}/s")

        bar = Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                       Count(), Rate(),
                       TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                       console=Console(file=self.stream, force_terminal=True), auto_refresh=False,
                       transient=False)
        task = bar.add_task(self.description, total=None)
        return bar, task
