"""structlog set-up: every event stamped with emulated time; levels filtered before any work is done."""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog

from emulator.runtime import Clock

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR}


def emulated_time_stamper(clock: Clock):
    """A processor adding `t` (emulated seconds): structlog's TimeStamper would read the wall clock."""

    def add_time(logger: Any, method: str, event: dict[str, Any]) -> dict[str, Any]:
        try:
            event["t"] = round(clock.now(), 3)
        except RuntimeError:  # no running loop (before/after a run)
            pass
        return event

    return add_time


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
            emulated_time_stamper(clock),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS[level]),
        logger_factory=structlog.PrintLoggerFactory(stream or sys.stderr),
        cache_logger_on_first_use=False,
    )
