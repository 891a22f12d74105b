"""BrokerExecutors: the broker threads a storm saturates, each a ServiceQueue (issue 27).

Which threads run what, in Pulsar 3.0:

* netty I/O threads (`numIOThreads`, default 2 x cores): ServerCnx.handleLookup runs on the I/O
  thread of the connection it came over, up to its first asynchronous step; Netty assigns each
  accepted connection to the next thread of its EventLoopGroup, round robin, and keeps it there. One
  single-server queue per I/O thread; a client connection is mapped to one at its first lookup.
* the placement decision (ModularLoadManagerImpl.selectBrokerForAssignment) holds
  `synchronized (brokerCandidateCache)`: one at a time per broker, whichever of
  `pulsar.getExecutor()`'s threads runs NamespaceService.searchForCandidateBroker. One server.
* Jetty threads of the web service (`numHttpServerThreads`, default max(8, 2 x cores)): an admin
  REST call (unload, split) holds one until its AsyncResponse frees it.

The permits (`maxConcurrentLookupRequest`, `maxConcurrentTopicLoadRequest`) are elsewhere:
namespace_service.py and topic_loader.py. Each job's CPU is drawn from the broker's own
random stream, (seed, broker + "/executors"); its wait is the queue's. A job whose service time is zero
(the cost-free cluster: `BrokerCapacity.unlimited()`) does not queue: `None` tells the caller to go
on at once, exactly as before this module.

Not modelled: the metadata store's callback thread (ZooKeeper client's event thread, then the
"metadata-store" executor: metadata_client.py's), the ordered executor (`numOrderedExecutorThreads`,
not on the lookup or unload path in 3.0) and the managed-ledger threads (BookKeeper's part).
"""

from __future__ import annotations

import random

from emulator.model.config import ServiceConfig

from .capacity_broker import BrokerCapacity
from .latency import Constant, Distribution
from .service_queue import QueueTotals, ServiceQueue

__all__ = ["BrokerExecutors", "DEFAULT_CORES"]

DEFAULT_CORES = 8
"""availableProcessors() of a broker whose host says nothing of its cores (a load source without
`available_processors`): the default host of emulator/workload/resources.py (`cores = 8`)."""


def _costs_nothing(d: Distribution) -> bool:
    return type(d) is Constant and d.value <= 0.0


class BrokerExecutors:
    """One broker's I/O threads, its assignment lock and its web threads."""

    __slots__ = ("_rng", "_cpu", "io_threads", "io", "assignment", "http", "_io_of", "_next_io")

    def __init__(self, name: str, capacity: BrokerCapacity, conf: ServiceConfig,
                 rng: random.Random) -> None:
        self._rng = rng      # its own stream: the broker's latency draws do not shift with capacity
        self._cpu = capacity
        cores = max(1, DEFAULT_CORES if capacity.cores is None else capacity.cores)
        io = conf.num_io_threads or 2 * cores             # Netty: 0 threads = 2 x availableProcessors
        http = conf.num_http_server_threads or max(8, 2 * cores)
        self.io_threads = [ServiceQueue(f"{name}/io-{i}", 1) for i in range(io)]
        self.io = QueueTotals(self.io_threads)   # the I/O threads counted together, for the metrics
        self.assignment = ServiceQueue(f"{name}/assignment", 1)
        self.http = ServiceQueue(f"{name}/http", http)
        self._io_of: dict[str, ServiceQueue] = {}
        self._next_io = 0

    def _draw(self, d: Distribution) -> float:
        return max(0.0, d.sample(self._rng))

    def _io_thread(self, connection: str) -> ServiceQueue:
        q = self._io_of.get(connection)
        if q is None:   # EventLoopGroup.next(): round robin over the threads, at the connection's accept
            q = self._io_of[connection] = self.io_threads[self._next_io % len(self.io_threads)]
            self._next_io += 1
        return q

    def lookup(self, now: float, connection: str) -> float | None:
        """When the I/O thread of `connection` has handled a lookup arriving now; None: at once."""
        d = self._cpu.lookup_cpu
        if _costs_nothing(d):
            return None
        return self._io_thread(connection).admit(now, self._draw(d))

    def assign(self, now: float) -> tuple[float, float] | None:
        """(start, finish) of a placement decision asked for now (the lock's wait, then its CPU);
        None: at once."""
        d = self._cpu.assignment_cpu
        if _costs_nothing(d):
            return None
        service = self._draw(d)
        finish = self.assignment.admit(now, service)
        return finish - service, finish

    def admin(self, now: float) -> float | None:
        """When a Jetty thread has dispatched an admin call arriving now; None: at once."""
        d = self._cpu.admin_cpu
        if _costs_nothing(d):
            return None
        return self.http.admit(now, self._draw(d))
