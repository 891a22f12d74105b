"""What happens when an actor crashes, as data: a failure record, a log line, and listeners.

The actor itself is isolated by `Actor` (marked dead, asks failed, children killed); this module
only reports it, so observability can subscribe without the runtime knowing about it (asim's
listeners).
"""

from __future__ import annotations

from collections.abc import Callable
import msgspec
from structlog.typing import FilteringBoundLogger

__all__ = ["ActorFailure", "report_failure"]


class ActorFailure(msgspec.Struct, frozen=True):
    """One crash: which actor, at which emulated time (s), and the exception's repr."""

    actor: str
    time: float
    error: str


def report_failure(failures: list[ActorFailure],
                   listeners: list[Callable[[ActorFailure], None]],
                   log: FilteringBoundLogger, actor: str, time: float, error: BaseException) -> ActorFailure:
    """Log the crash, record it, then tell each listener; a failing listener is logged, not fatal,
    because the crash being reported must still be isolated."""
    log.error("actor crashed", error=repr(error), exc_info=error)
    failure = ActorFailure(actor=actor, time=time, error=repr(error))
    failures.append(failure)
    for listener in list(listeners):
        try:
            listener(failure)
        except Exception as exc:  # noqa: BLE001 - a broken listener must not hide the crash
            log.error("failure listener raised", listener=repr(listener), error=repr(exc),
                      exc_info=exc)
    return failure
