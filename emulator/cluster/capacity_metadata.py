"""The ZooKeeper ensemble behind the metadata store: the `[capacity.metadata]` table of a scenario (issue 27).

Every field is one default with its source in its docstring; `unlimited()` is the cost-free version
the cluster tests use (the behaviour before finite capacity).

Source of the throughputs, [ZK]: Hunt, Konar, Junqueira, Reed, "ZooKeeper: Wait-free coordination for
Internet-scale systems", USENIX ATC 2010, §5.1, Table 1 (the extremes of the figure the ZooKeeper
overview reprints as "ZooKeeper Throughput as the Read-Write Ratio Varies": ZooKeeper 3.2 on dual 2 GHz
Xeons, a dedicated log disk, 1 KB reads and writes, 250 clients). For a 3-server ensemble: 21,000
writes/s at 0% reads (also quoted as "21k writes/sec in a three server ensemble" by the runfigures.com
AWS benchmark) and about 87,000 reads/s at 100% reads. Writes do not scale with servers (every write is
one Zab proposal serialised by the leader; 13 servers do 8,000/s); reads do (each server answers the
reads of its own clients from memory). A service time is the inverse of that saturation throughput:
the time the bottleneck (the leader for writes, one server for reads) spends per request. Modern
hardware is faster (NVMe fsync, faster CPUs); these are the published figures, not a tuning, and a
scenario overrides them.
"""

from __future__ import annotations

import msgspec

from .capacity_units import Count, Ratio, Seconds

__all__ = ["MetadataStoreCapacity"]


class MetadataStoreCapacity(msgspec.Struct, frozen=True, kw_only=True):
    """The ZooKeeper ensemble behind the metadata store: seconds for times, counts for servers (0: unlimited)."""

    servers: Count = 3
    """Servers of the ensemble, each serving the reads (and pings) of the sessions connected to it: a
    session is pinned to server `session_id % servers` (ZooKeeper's client connects to one server of its
    connect string, shuffled by StaticHostProvider). 3 = the smallest fault-tolerant ensemble, the one
    [ZK] and Pulsar's deployment docs use. 0 = unlimited: no queue anywhere in this part (and no
    metadata batching), the behaviour before issue 27."""

    write_service_time: Seconds = 1.0 / 21_000
    """The leader's time per write request (create, set, delete, createSession, closeSession, one multi):
    1 / 21,000 writes/s, [ZK] Table 1, 3 servers, 0% reads. Writes are serialised by the one leader
    (ZooKeeper's PrepRequestProcessor -> ProposalRequestProcessor -> CommitProcessor pipeline), so this
    queue has one server whatever the ensemble size."""

    read_service_time: Seconds = 3.0 / 87_000
    """One server's time per read request (get, exists, getChildren, one read multi): 3 / 87,000 s,
    [ZK] Table 1, 3 servers, 100% reads = 87,000/s shared by 3 servers (29,000/s each). Assumption: the
    leader serves clients too (ZooKeeper's default leaderServes=yes), so all `servers` serve reads."""

    multi_op_cost: Ratio = 0.1
    """Cost of each operation of a multi after the first, as a fraction of its request's service time:
    a batch of n operations (Pulsar's metadataStoreBatching*, ZKMetadataStore.batchOperation -> one
    ZooKeeper multi) costs service * (1 + (n - 1) * multi_op_cost). Derivation: a multi is ONE request
    through the pipeline (one MultiTxn, one Zab proposal, one log append, one quorum ack, one commit,
    one response: PrepRequestProcessor.pRequest2Txn makes one txn of the sub-ops), so the per-request
    part of the service time is paid once; each sub-op adds its own check and DataTree apply
    (FinalRequestProcessor / DataTree.processTxn per sub-txn) and its bytes in the log. No benchmark
    of multi throughput is published; 0.1 (the in-memory apply of one sub-op = a tenth of a whole
    request) is an assumption, stated here. closeSession deleting n ephemeral nodes costs the same
    (one txn, n deletions: PrepRequestProcessor's closeSession case, DataTree.killSession)."""

    @classmethod
    def unlimited(cls) -> "MetadataStoreCapacity":
        """No capacity limit anywhere in this part (the cost-free cluster)."""
        return cls(servers=0, write_service_time=0.0, read_service_time=0.0)

    @property
    def is_unlimited(self) -> bool:
        return self.servers == 0

    def multi_service(self, service: float, ops: int) -> float:
        """Service time of one request carrying `ops` operations (a multi, a closeSession)."""
        return service * (1.0 + (ops - 1) * self.multi_op_cost) if ops > 1 else service
