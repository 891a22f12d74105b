"""The C++ client's lookup retry (pulsar-client-cpp 3.x, lib/RetryableLookupService.h and
lib/RetryableOperation.h), for `ClientSettings.lookup_retry`.

The C++ client wraps every topic lookup in a RetryableOperation (one per topic in flight, shared, as
the Java client's lookupInProgress): a lookup that fails with a retryable result is run again from a
service-URL host after its own backoff (100 ms doubling up to 2 x operationTimeout, the jitter of
Backoff.cc), until operationTimeout has passed since it began; only then, or on a fatal result, does the
producer or consumer see the failure and take its own next backoff step. Retryable is everything but
lib/ResultUtils.h's fatal list: here a refused connection (the connection pool's ResultRetryable), a
closed connection (ResultDisconnected) and a ServiceNotReady answer (ResultServiceUnitNotReady), not a
timed-out request (ResultTimeout), TooManyRequests or too many redirects.

The Java client, which the emulated client follows by default, fails the lookup at once
(BinaryProtoLookupService.findBroker) and the handle backs off (ConnectionHandler.grabCnx): with a dead
broker still in the service URL list, a handle whose turn picks it waits its next backoff step
(6.4 s after six failures) where the C++ client waits 100 ms (bench/README.md, "Emulated clients
against the real client").
"""

from __future__ import annotations

import random

from .backoff import Backoff

__all__ = ["LookupRetry", "retryable"]

RETRYABLE_PREFIXES = ("connection refused", "Disconnected from server", "ServiceNotReady")


def retryable(reason: str) -> bool:
    """Whether a failed lookup's reason is one the C++ client retries inside the lookup."""
    return reason.startswith(RETRYABLE_PREFIXES)


class LookupRetry:
    """One lookup's retries: its start, its own backoff (RetryableOperation's), the deadline."""

    __slots__ = ("backoff", "deadline", "retries")

    def __init__(self, now: float, operation_timeout: float, rng: random.Random) -> None:
        self.deadline = now + operation_timeout
        self.backoff = Backoff(100, int(2 * operation_timeout * 1000), 0, rng)
        self.retries = 0

    def delay(self, now: float, now_ms: int) -> float | None:
        """Seconds until the next try, or None when the operation timeout has passed."""
        left = self.deadline - now
        if left <= 0:
            return None
        self.retries += 1
        return min(self.backoff.next(now_ms) / 1000.0, left)
