"""A broker's executors and permits: the `[capacity.broker]` table of a scenario (issue 27).

Every field is one default with its source in its docstring; `unlimited()` is the cost-free version
the cluster tests use (the behaviour before finite capacity).

The permits are ServiceConfig keys, as Pulsar names them (`maxConcurrentLookupRequest`,
`maxConcurrentTopicLoadRequest`), and so are the thread counts (`numIOThreads`,
`numHttpServerThreads`); this table holds what Pulsar's configuration does not: the CPU each job
costs the thread that runs it, and the cores a thread count defaults from. How the jobs queue is
broker_executors.py.

Where the service times come from: no published measurement of one lookup's or one assignment's CPU
cost was found (the `pulsar_broker_lookup` and `pulsar_broker_load_manager_bundle_assigment` summaries
are latencies, including metadata waits, and no deployment publishes their quantiles). Each default
is therefore derived from what the thread does, per field, and stated as an assumption; a scenario
that has measured them overrides them.
"""

from __future__ import annotations

import msgspec

from .capacity_units import Count
from .latency import ZERO, Distribution, LogNormal

__all__ = ["BrokerCapacity"]


def _us(median: float, p99: float) -> LogNormal:
    return LogNormal(median / 1e6, p99 / 1e6)


class BrokerCapacity(msgspec.Struct, frozen=True, kw_only=True):
    """A broker's executors and permits. Seconds for times; counts for servers and limits (0: unlimited)."""

    lookup_cpu: Distribution = _us(50.0, 500.0)
    """CPU of one CommandLookupTopic on the netty I/O thread of its connection (ServerCnx.handleLookup:
    decode, TopicName, the bundle's hash range, the ownership cache read, the response's encode and
    write), before its first asynchronous step. Netty pins a connection to one I/O thread, so the
    lookups of one client connection are served one after another, and a broker's `numIOThreads`
    serve its connections. Assumption: 50 us median, of the order of the broker's per-message publish
    path (emulator/workload/resources.py, `cpu_us_per_msg_in` = 40 us: decode, handling, write) plus
    the bundle and cache look-ups; p99 500 us assumed (GC pauses and a busy event loop)."""
    assignment_cpu: Distribution = _us(300.0, 3000.0)
    """CPU of one placement decision (ModularLoadManagerImpl.selectBrokerForAssignment), which holds
    `synchronized (brokerCandidateCache)`: one decision at a time per broker, whichever executor
    thread runs searchForCandidateBroker. It applies the namespace policies, the topic-count,
    anti-affinity and version filters and the strategy over every available broker and records the
    preallocation. Assumption: 300 us median for a 100-broker cluster (a few passes over 100
    BrokerData entries, each a few hundred nanoseconds of map reads and arithmetic, plus the
    bundle-data lookup and the preallocation maps); p99 3 ms assumed."""
    admin_cpu: Distribution = _us(200.0, 2000.0)
    """CPU of one admin REST call on a Jetty thread of the web service (`numHttpServerThreads`):
    authentication, JAX-RS dispatch, the namespace-policy checks, up to the AsyncResponse that frees
    the thread (Namespaces.unloadNamespaceBundle / splitNamespaceBundle are asynchronous in 3.0).
    Assumption: 200 us median, p99 2 ms; the call's wire time is `Latencies.admin_call`."""
    cores: Count | None = None
    """Runtime.availableProcessors() of a broker's JVM, for the thread counts left at their Pulsar
    default (numIOThreads = 2 x cores, numHttpServerThreads = max(8, 2 x cores)). None: its host's cores
    as the broker starts (`[cluster.capacity] cores` or the broker's `[cluster.overrides]`, rounded up,
    as the JVM rounds a container's CPU quota up; a `set_capacity` takes effect at the next start, as
    Pulsar sizes its pools once). A number: every broker's JVM sees that many, whatever its host (a
    container limit, `-XX:ActiveProcessorCount`)."""

    @classmethod
    def unlimited(cls) -> "BrokerCapacity":
        """No capacity limit anywhere in this part (the cost-free cluster): every job costs no CPU,
        so no thread queues (the permits stay ServiceConfig's)."""
        return cls(lookup_cpu=ZERO, assignment_cpu=ZERO, admin_cpu=ZERO)
