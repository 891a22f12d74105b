"""The reply side of request/reply: how a handler answers an ask.

An ask is an `asyncio.Future` owned by the asker; `receive()` gets a `Reply` wrapping it. Tell passes
the no-op `NO_REPLY`, so one handler serves both. The first answer wins; later ones (a second
`ok`, or a reply after the asker timed out or the actor died) are dropped, as a late packet would be.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["NO_REPLY", "Reply"]


def _check_exception(exc: BaseException) -> None:
    if isinstance(exc, type) and issubclass(exc, BaseException):
        raise TypeError(f"reply.error() takes an exception instance, not a class:\n"
                        f"  reply.error({exc.__name__})  # incorrect!\n"
                        f"  reply.error({exc.__name__}('what went wrong'))  # correct!")
    if not isinstance(exc, BaseException):
        raise TypeError(f"reply.error() takes an exception instance, got {exc!r}")


class Reply:
    """Answers one ask: `ok(value)` returns value from the asker's `ask()`, `error(exc)` raises exc
    there. Neither affects the actor itself: an error reply is an answer, not a crash."""

    __slots__ = ("_future",)

    def __init__(self, future: asyncio.Future[Any]) -> None:
        self._future = future

    @property
    def expects(self) -> bool:
        """True when someone waits for the answer (an ask), False for a tell."""
        return True

    def ok(self, value: object = None) -> None:
        if not self._future.done():
            self._future.set_result(value)

    def error(self, exc: BaseException) -> None:
        _check_exception(exc)
        if not self._future.done():
            self._future.set_exception(exc)

    def _fail(self, exc: BaseException) -> None:
        """Runtime-side failure (ActorDead, AskTimeout): same as error, without the checks."""
        if not self._future.done():
            self._future.set_exception(exc)

    def __repr__(self) -> str:
        return f"<Reply {'answered' if self._future.done() else 'pending'}>"


class _NoReply(Reply):
    """The reply of a tell: nobody listens, so answering does nothing."""

    __slots__ = ()

    def __init__(self) -> None:
        pass

    @property
    def expects(self) -> bool:
        return False

    def ok(self, value: object = None) -> None:
        pass

    def error(self, exc: BaseException) -> None:
        _check_exception(exc)

    def _fail(self, exc: BaseException) -> None:
        pass

    def __repr__(self) -> str:
        return "NO_REPLY"


NO_REPLY: Reply = _NoReply()
