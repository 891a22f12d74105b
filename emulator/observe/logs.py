"""structlog set-up: every event stamped with emulated time; levels filtered before any work is done;
repeated warnings folded (`RepeatedWarnings`), so a warning Pulsar logs per lookup stays a line a minute.
"""

from __future__ import annotations

import logging
import math
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import msgspec
import structlog

from emulator.runtime import Clock

__all__ = ["RepeatedWarnings", "WarningTotal", "configure_logging", "emulated_time_stamper",
           "repeated_warnings"]

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR}

FOLD_WINDOW = 60.0
"""Emulated seconds in which a warning with the same message is logged once."""


def emulated_time_stamper(clock: Clock):
    """A processor adding `t` (emulated seconds): structlog's TimeStamper would read the wall clock."""

    def add_time(logger: Any, method: str, event: dict[str, Any]) -> dict[str, Any]:
        try:
            event["t"] = round(clock.now(), 3)
        except RuntimeError:  # no running loop (before/after a run)
            pass
        return event

    return add_time


class WarningTotal(msgspec.Struct, frozen=True):
    """One distinct warning message and how often it was logged (shown or folded) in the run."""

    level: str
    message: str
    total: int


class RepeatedWarnings:
    """A structlog processor: a warning (or error) whose message was already logged in the current
    emulated minute is dropped and counted; the next one shown carries `repeated=N`, the number
    dropped since the last shown. SimpleLoadManagerImpl logs "No broker available to acquire service
    unit" once per lookup (100,788 lines in one run): folded, it is one line a minute, and `totals`
    keeps every message's count for the summary. The key is the actor and the message, not the other
    fields (the bundle differs per lookup), so distinct messages are few; the summary's totals add the
    actors up."""

    def __init__(self, clock: Clock, window: float = FOLD_WINDOW) -> None:
        self._clock = clock
        self._window = window
        self._minute: dict[tuple[str, str, str], float] = {}   # (level, actor, message) -> window shown
        self._dropped: dict[tuple[str, str, str], int] = {}
        self.counts: dict[tuple[str, str], int] = {}

    def __call__(self, logger: Any, method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        level = "warning" if method == "warn" else method
        if level not in ("warning", "error", "critical"):
            return event
        message = str(event.get("event", ""))
        count_key = (level, message)
        self.counts[count_key] = self.counts.get(count_key, 0) + 1
        try:
            window = math.floor(self._clock.now() / self._window)
        except RuntimeError:   # no running loop: nothing to fold against
            return event
        # folded per actor: each broker is its own Pulsar process with its own log, and one broker's
        # repeated warning must not hide another's first one
        key = (level, str(event.get("actor", "")), message)
        if self._minute.get(key) == window:
            self._dropped[key] = self._dropped.get(key, 0) + 1
            raise structlog.DropEvent
        self._minute[key] = window
        dropped = self._dropped.pop(key, 0)
        if dropped:
            event["repeated"] = dropped
        return event

    def mark(self) -> dict[tuple[str, str], int]:
        """The counts now: `totals(since=mark())` then gives one run's warnings only."""
        return dict(self.counts)

    def totals(self, since: dict[tuple[str, str], int] | None = None) -> list[WarningTotal]:
        """Each message logged more than once (since `since`), most frequent first."""
        since = since or {}
        out = [WarningTotal(level, message, n - since.get((level, message), 0))
               for (level, message), n in self.counts.items()]
        return sorted((w for w in out if w.total > 1), key=lambda w: (-w.total, w.level, w.message))


def repeated_warnings() -> RepeatedWarnings | None:
    """The folding processor of the current structlog configuration (None when logging was not set
    up by `configure_logging`, e.g. a library caller's own structlog set-up)."""
    for processor in structlog.get_config().get("processors", ()):
        if isinstance(processor, RepeatedWarnings):
            return processor
    return None


def configure_logging(clock: Clock, *, level: str = "info", fmt: str = "console",
                      stream: TextIO | None = None) -> None:
    """Configure structlog for one run. A filtered-out call costs one method lookup (make_filtering_bound_logger)."""
    if level not in _LEVELS:
        raise ValueError(f"log level = {level!r}; expected one of {', '.join(_LEVELS)}")
    renderer = (structlog.processors.JSONRenderer() if fmt == "json"
                else structlog.dev.ConsoleRenderer(colors=False))
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            RepeatedWarnings(clock),
            emulated_time_stamper(clock),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS[level]),
        logger_factory=structlog.PrintLoggerFactory(stream or sys.stderr),
        cache_logger_on_first_use=False,
    )
