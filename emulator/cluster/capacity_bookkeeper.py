"""The bookies behind the managed ledgers: the `[capacity.bookkeeper]` table of a scenario (issue 27).

Every field is one default with its source in its docstring; `unlimited()` is the cost-free version
the cluster tests use (the behaviour before finite capacity: a topic load is one `topic_load` draw).
What the fields drive is in `bookkeeper.py` (the bookies) and `managed_ledger.py` (a ledger's open).

Sources: [HELM] apache/pulsar-helm-chart charts/pulsar/values.yaml (`bookkeeper.replicaCount: 4`).
[CONF] Pulsar's conf/broker.conf (`managedLedgerDefaultEnsembleSize=2`, `...WriteQuorum=2`,
`...AckQuorum=2`). [BKCONF] BookKeeper's ServerConfiguration defaults (`numReadWorkerThreads` 8).
[OMB] Confluent, "Benchmarking Apache Kafka, Apache Pulsar, and RabbitMQ: Which is the Fastest?"
(A. Nikhil, V. Chandar, Aug 2020; OpenMessaging Benchmark, 3 bookies on i3en.2xlarge NVMe, every
entry on the three): Pulsar's peak throughput 305 MB/s, so one bookie absorbed about 305 MB/s of
entries. [BK] StreamNative, "Inside Apache Pulsar's Millisecond Write Path" (Sep 2025): a quorum write
to bookies in 0.3 ms on NVMe behind one switch.
"""

from __future__ import annotations

import msgspec

from .capacity_units import Count, PerSecond, Ratio, Seconds
from .latency import Distribution, LogNormal

__all__ = ["BookKeeperCapacity"]


class BookKeeperCapacity(msgspec.Struct, frozen=True, kw_only=True):
    """The bookies behind the managed ledgers. Seconds for times; counts for servers and limits (0: unlimited)."""

    bookies: Count = 4
    """Bookies in the cluster, each with its own request queue. [HELM]: `bookkeeper.replicaCount: 4`.
    0: the bookies are not modelled; a topic load is then one `topic_load` draw (the behaviour before
    issue 27) and no metadata operation of the open is sent."""
    ensemble_size: Count = 2
    """Bookies a new ledger is striped over (managedLedgerDefaultEnsembleSize). [CONF]: 2."""
    write_quorum: Count = 2
    """Copies of every entry (managedLedgerDefaultWriteQuorum): the publish traffic's bytes land on
    this many bookies. [CONF]: 2."""
    ack_quorum: Count = 2
    """Copies acknowledged before a write (or a fence) completes (managedLedgerDefaultAckQuorum).
    [CONF]: 2. A recovery round waits for this many of its ensemble's answers (the slowest of them)."""
    read_threads: Count = 8
    """Servers of one bookie's request queue: fencing (a ReadLastConfirmed with the fence flag) and
    recovery reads are read requests, served by the read worker pool (ReadEntryProcessorV3).
    [BKCONF]: numReadWorkerThreads = 8."""
    request: Distribution = LogNormal(0.0003, 0.003)
    """A bookie's service time of one fence or recovery read, alone. [BK]: a whole quorum write in
    0.3 ms on NVMe, so the bookie's part of one request is at most that (median 0.3 ms taken);
    p99 ten times the median (assumed: fsync and GC tails)."""
    write_throughput: PerSecond = 305e6
    """Bytes per second one bookie absorbs (journal and ledger device). [OMB]: 305 MB/s. The publish
    traffic (the brokers' msgThroughputIn x write_quorum, spread over the bookies) uses this share of
    every bookie, and a request's service stretches by 1 / (1 - that share)."""
    max_utilisation: Ratio = 0.99
    """Cap of the publish traffic's share of a bookie (past it the bookie is saturated and a request
    takes 1 / (1 - 0.99) = 100 times its service). An emulator bound, not a Pulsar figure."""
    utilisation_refresh: Seconds = 1.0
    """Emulated seconds between two readings of the brokers' publish throughput (the brokers' load
    data changes at their 5 s report ticks; reading it per request would cost a sum over brokers
    each time). An emulator setting."""

    @classmethod
    def unlimited(cls) -> "BookKeeperCapacity":
        """No capacity limit anywhere in this part (the cost-free cluster)."""
        return cls(bookies=0)
