"""When each metadata operation is served: the ZooKeeper ensemble's queues and Pulsar's batching (issue 27).

The `MetadataStore` actor decides each operation at once, in arrival order (ZooKeeper's
PrepRequestProcessor decides a write against its outstanding changes as it arrives at the leader);
this module says when the answer is ready, so that a storm queues:

* writes (create, set, delete, createSession, closeSession) go through the ONE leader, a single-server
  `ServiceQueue`: Zab serialises every write in one pipeline (PrepRequestProcessor ->
  ProposalRequestProcessor -> CommitProcessor -> FinalRequestProcessor);
* reads (get, getChildren, exists, addWatch) are answered from memory by the server the session is
  connected to (ZooKeeper's FinalRequestProcessor on that server), one single-server queue per server;
  a session's reads wait for its own pending writes (CommitProcessor keeps a session's requests in
  order: a read queued behind the session's uncommitted write waits for its commit);
* a ping (`ping`) waits likewise: ClientCnxn's ping is a request like the others, answered by
  FinalRequestProcessor after everything before it in the session's pipeline.

Batching follows Pulsar's AbstractBatchedMetadataStore: each client (a broker's metadata store; here a
session) queues its get/getChildren and put/delete ops; a fixed-rate timer flushes them every
`metadataStoreBatchingMaxDelayMillis` (phase: the session's open), and a queue longer than
`metadataStoreBatchingMaxOperations` flushes at once. A flush sends the reads first, in chunks of
MaxOperations, then the writes, in chunks of MaxOperations and at most `metadataStoreBatchingMaxSizeKb`
of path + data (OpPut.size); each chunk is one ZooKeeper multi (ZKMetadataStore.batchOperation): one job
of the leader (writes) or of the session's server (reads), costed by `MetadataStoreCapacity.multi_service`.
exists is not batched (ZKMetadataStore.existsFromStore calls zk.exists directly), nor are session
requests. One timer per flush and per job, never a task.

Simplification: the tree changes when the op is decided, so a reader may see a write before it
commits (ZooKeeper shows it at commit); replies and notifications still leave at commit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import msgspec

from .capacity_metadata import MetadataStoreCapacity
from .service_queue import ServiceQueue

__all__ = ["MetadataBatching", "MetadataEnsemble"]

Entry = Any
"""What the store delivers once the op is served (opaque here)."""


class MetadataBatching(msgspec.Struct, frozen=True, kw_only=True):
    """Pulsar's metadataStoreBatching* keys (ServiceConfiguration; MetadataStoreConfig's defaults)."""

    enabled: bool = True
    max_delay: float = 0.005
    max_operations: int = 1000
    max_size: int = 128 * 1024

    @classmethod
    def from_conf(cls, conf: Any) -> "MetadataBatching":
        return cls(enabled=conf.metadata_store_batching_enabled,
                   max_delay=conf.metadata_store_batching_max_delay_millis / 1000.0,
                   max_operations=conf.metadata_store_batching_max_operations,
                   max_size=conf.metadata_store_batching_max_size_kb * 1024)


class _ClientBatch:
    """One client's two queues (AbstractBatchedMetadataStore.readOps / writeOps) and its flush timer."""

    __slots__ = ("phase", "reads", "writes", "armed")

    def __init__(self, phase: float) -> None:
        self.phase = phase
        self.reads: list[Entry] = []
        self.writes: list[tuple[Entry, int]] = []   # (entry, OpPut/OpDelete size)
        self.armed = False


class MetadataEnsemble:
    """The leader's queue, one queue per server, and each client's batch (see the module docstring).

    `on_write(finish, session, entries)` and `on_read(ready, session, entries)` are the store's: they
    deliver `entries` once served (after the round trip's latency). Attributes for metrics: `leader`,
    `servers` (ServiceQueues: queued(now), admitted, waited, busy, max_wait), `leader_jobs`,
    `read_jobs`, `batched_writes`, `batched_reads` (ops that went through a batch), `flushes`."""

    def __init__(self, capacity: MetadataStoreCapacity, batching: MetadataBatching,
                 now: Callable[[], float], call_later: Callable[..., None],
                 on_write: Callable[[float, int | None, list[Entry]], None],
                 on_read: Callable[[float, int | None, list[Entry]], None]) -> None:
        if capacity.is_unlimited:
            raise ValueError("MetadataEnsemble needs a finite capacity (servers >= 1)")
        self.capacity = capacity
        self.batching = batching
        self.leader = ServiceQueue("zookeeper-leader", 1)
        self.servers = [ServiceQueue(f"zookeeper-server-{i}", 1) for i in range(capacity.servers)]
        self._now = now
        self._call_later = call_later
        self._on_write = on_write
        self._on_read = on_read
        self._batches: dict[int | None, _ClientBatch] = {}
        self._write_commit: dict[int | None, float] = {}   # session -> commit of its last write
        self.leader_jobs = 0
        self.read_jobs = 0
        self.batched_writes = 0
        self.batched_reads = 0
        self.flushes = 0

    def server_of(self, session: int | None) -> ServiceQueue:
        return self.servers[0 if session is None else session % len(self.servers)]

    def opened(self, session: int) -> None:
        """A session opened now: its client's batch timer starts (scheduleAtFixedRate from creation)."""
        self._batches[session] = _ClientBatch(self._now())

    def closed(self, session: int) -> None:
        """The session ended: forget it once nothing of it is waiting."""
        batch = self._batches.get(session)
        if batch is not None and not batch.reads and not batch.writes:
            del self._batches[session]

    # -- operations ---------------------------------------------------------------------------

    def write(self, session: int | None, entry: Entry, *, size: int = 0, batched: bool = True,
              ops: int = 1) -> None:
        """A write decided now; `ops` operations in one request (a closeSession's ephemeral nodes)."""
        if batched and self.batching.enabled:
            batch = self._batch(session)
            batch.writes.append((entry, size))
            self.batched_writes += 1
            if len(batch.writes) > self.batching.max_operations:
                self._flush_now(session, batch)
            return
        self._write_job(session, [entry], ops)

    def read(self, session: int | None, entry: Entry, *, batched: bool = True) -> None:
        if batched and self.batching.enabled:
            batch = self._batch(session)
            batch.reads.append(entry)
            self.batched_reads += 1
            if len(batch.reads) > self.batching.max_operations:
                self._flush_now(session, batch)
            return
        self._read_job(session, [entry])

    def ping(self, session: int) -> float:
        """When a ping sent now is answered: after the session's server has served what it queued
        before, and after the session's pending writes commit (its requests are answered in order)."""
        now = self._now()
        answered = now + self.server_of(session).wait_for(now)
        commit = self._write_commit.get(session, 0.0)
        return commit if commit > answered else answered

    # -- batches ------------------------------------------------------------------------------

    def _batch(self, session: int | None) -> _ClientBatch:
        batch = self._batches.get(session)
        if batch is None:
            batch = self._batches[session] = _ClientBatch(self._now())
        if not batch.armed:
            batch.armed = True
            now = self._now()
            period = self.batching.max_delay
            tick = batch.phase + (math.floor((now - batch.phase) / period) + 1) * period
            self._call_later(tick - now, self._tick, session)
        return batch

    def _tick(self, session: int | None) -> None:
        batch = self._batches.get(session)
        if batch is None:
            return
        batch.armed = False
        self._flush_now(session, batch)

    def _flush_now(self, session: int | None, batch: _ClientBatch) -> None:
        """AbstractBatchedMetadataStore.flush: reads first, then writes, chunked."""
        if not batch.reads and not batch.writes:
            return
        self.flushes += 1
        reads, batch.reads = batch.reads, []
        most = self.batching.max_operations
        for i in range(0, len(reads), most):
            self._read_job(session, reads[i:i + most])
        writes, batch.writes = batch.writes, []
        limit = self.batching.max_size
        i = 0
        while i < len(writes):
            chunk: list[Entry] = []
            size = 0
            while i < len(writes) and len(chunk) < most:
                entry, op_size = writes[i]
                if chunk and size + op_size > limit:
                    break
                chunk.append(entry)
                size += op_size
                i += 1
            self._write_job(session, chunk, len(chunk))

    # -- jobs ---------------------------------------------------------------------------------

    def _write_job(self, session: int | None, entries: list[Entry], ops: int) -> None:
        cap = self.capacity
        finish = self.leader.admit(self._now(), cap.multi_service(cap.write_service_time, ops))
        self.leader_jobs += 1
        if finish > self._write_commit.get(session, 0.0):
            self._write_commit[session] = finish
        self._on_write(finish, session, entries)

    def _read_job(self, session: int | None, entries: list[Entry]) -> None:
        cap = self.capacity
        finish = self.server_of(session).admit(self._now(),
                                               cap.multi_service(cap.read_service_time, len(entries)))
        self.read_jobs += 1
        commit = self._write_commit.get(session, 0.0)
        self._on_read(commit if commit > finish else finish, session, entries)
