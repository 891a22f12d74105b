"""A user's placement strategy or shedder that raises: Pulsar's failure, not the emulator's.

Pulsar runs the configured classes inside the broker, and an exception there does not take the broker
down:

* from `selectBroker` (placement): `NamespaceService.searchForCandidateBroker` completes the lookup's
  future exceptionally, and `TopicLookupBase.lookupTopicAsync` answers `ServiceNotReady` with the
  exception's message; the client retries the lookup after its backoff;
* from `findBundlesForUnloading` (shedding), or from the placement while `doLoadShedding` picks a
  destination: `LoadSheddingTask.run` catches it ("Error during the load shedding") and the next cycle
  runs on its schedule, so that one cycle is skipped.

The emulator does the same for a user's class: the decision core raises `UserCodeError` (pure: no log,
no clock), the actor that asked reports it (`report`: an event every time, a warning with the traceback
once per distinct error) and fails that lookup or skips that cycle. A built-in class (the `strategies`
and `shedders` packages) that raises is an emulator bug instead: it is not wrapped, so it crashes its
actor loudly like any other bug (exit code 3).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from .events import ClusterEvents, PlacementFailed, SheddingFailed

__all__ = ["BUILTIN_PACKAGES", "UserCodeError", "call_user", "is_builtin", "report"]

T = TypeVar("T")

BUILTIN_PACKAGES = frozenset({"strategies", "shedders"})
"""Top-level packages of the emulator's own strategies and shedders."""


class UserCodeError(Exception):
    """A user's strategy (`role` "placement") or shedder (`role` "shedding") raised `error`."""

    def __init__(self, role: str, strategy: Any, error: Exception) -> None:
        cls = type(strategy)
        self.role = role
        self.strategy = f"{cls.__module__}:{cls.__qualname__}"
        self.error = error
        super().__init__(f"{role} strategy {self.strategy} raised {error!r}")


def is_builtin(strategy: Any) -> bool:
    """A class of the emulator's own packages (a user's subclass of one is the user's)."""
    return type(strategy).__module__.split(".", 1)[0] in BUILTIN_PACKAGES


def call_user(role: str, strategy: Any, fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)`, a method of `strategy`; a user's exception comes out as `UserCodeError`."""
    try:
        return fn(*args)
    except Exception as e:
        if is_builtin(strategy):
            raise
        raise UserCodeError(role, strategy, e) from e


def report(events: ClusterEvents, log: Any, fault: UserCodeError, *, outcome: str,
           bundle: str | None = None) -> None:
    """Count the fault (an event every time) and log it with its traceback once per distinct error.

    `outcome` says what Pulsar does about it ("lookup failed", "shedding cycle skipped"); `bundle`
    is the one a failed lookup asked for."""
    error = repr(fault.error)
    if fault.role == "placement":
        event: PlacementFailed | SheddingFailed = PlacementFailed(
            strategy=fault.strategy, error=error, outcome=outcome, bundle=bundle)
    else:
        event = SheddingFailed(strategy=fault.strategy, error=error, outcome=outcome)
    events.emit(event)
    context = {} if bundle is None else {"bundle": bundle}
    if events.first((event.kind, fault.strategy, error)):
        log.warning(f"{fault.role} strategy raised: {outcome}, as in Pulsar (logged once per "
                    "distinct error, counted every time)", strategy=fault.strategy, error=error,
                    exc_info=fault.error, **context)
