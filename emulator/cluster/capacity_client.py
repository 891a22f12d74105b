"""The Java client's limits on its lookups and sends: the `[capacity.client]` table of a scenario (issue 27).

Every field is one default with its source in its docstring; `unlimited()` is the cost-free version
the cluster tests use (the behaviour before finite capacity).

Only what queues is here; the client's timeouts and backoff are its configuration, as Pulsar names it
(`ClientSettings` in client.py: operationTimeoutMs, lookupTimeoutMs, the backoff, sendTimeoutMs,
maxLookupRedirects, maxNumberOfRejectedRequestPerConnection). An emulated client actor is one
PulsarClient: one connection per broker (connectionsPerBroker = 1) and these limits per connection.
"""

from __future__ import annotations

import msgspec

from .capacity_units import Count

__all__ = ["ClientCapacity"]


class ClientCapacity(msgspec.Struct, frozen=True, kw_only=True):
    """The Java client's limits on its lookups, per connection. Counts (0: unlimited)."""

    concurrent_lookup_request: Count = 5000
    """Lookups one connection has sent and not yet had answered (ClientConfigurationData
    .concurrentLookupRequest, default 5000: ClientCnx.pendingLookupRequestSemaphore). Beyond it a
    lookup waits in the connection's waitingLookupRequests until an answer frees a permit. 0:
    unlimited."""
    max_lookup_request: Count = 50000
    """Lookups one connection holds at most, sent and waiting (ClientConfigurationData
    .maxLookupRequest, default 50000: ClientCnx.maxLookupRequestSemaphore has maxLookupRequest -
    concurrentLookupRequest places). Beyond it a lookup fails at once in the client with
    TooManyRequestsException, and the producer or consumer backs off and retries. Pulsar requires
    it to be greater than concurrent_lookup_request (ClientCnx's checkArgument)."""

    def __post_init__(self) -> None:
        if self.concurrent_lookup_request and self.max_lookup_request <= self.concurrent_lookup_request:
            raise ValueError(f"capacity.client: max_lookup_request = {self.max_lookup_request} must be "
                             f"greater than concurrent_lookup_request = {self.concurrent_lookup_request} "
                             "(ClientCnx: checkArgument(maxLookupRequest > concurrentLookupRequest))")

    @classmethod
    def unlimited(cls) -> "ClientCapacity":
        """No capacity limit anywhere in this part (the cost-free cluster)."""
        return cls(concurrent_lookup_request=0, max_lookup_request=0)
