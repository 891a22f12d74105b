"""The two ways a conversation with an actor fails: nobody is there, or nobody answered in time."""

from __future__ import annotations

__all__ = ["ActorDead", "AskTimeout"]


class ActorDead(Exception):
    """Like a refused TCP connection: the actor is stopped, crashed, killed, unknown or not yet
    spawned, or it died before replying to an ask. `cause` says which."""

    def __init__(self, actor: str, cause: str) -> None:
        super().__init__(actor, cause)
        self.actor = actor
        self.cause = cause

    def __str__(self) -> str:
        return f"actor {self.actor!r} is unreachable: {self.cause}"


class AskTimeout(TimeoutError):
    """An ask's deadline passed without a reply (the target may still be alive and busy)."""

    def __init__(self, actor: str, message_type: str, timeout: float) -> None:
        super().__init__(actor, message_type, timeout)
        self.actor = actor
        self.message_type = message_type
        self.timeout = timeout

    def __str__(self) -> str:
        return (f"ask to actor {self.actor!r} with a {self.message_type} message got no reply "
                f"within {self.timeout}s")
