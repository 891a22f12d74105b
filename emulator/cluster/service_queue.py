"""ServiceQueue: a finite resource with `servers` parallel servers and one FIFO queue in front.

Every shared capacity of the cluster is one of these: the ZooKeeper leader that serialises writes (1
server), the followers that serve reads, a bookie's journal, a broker's ordered executor threads. A job
that arrives when every server is busy waits for the first one to free up, in arrival order, as a
thread pool's LinkedBlockingQueue or ZooKeeper's request pipeline serves it.

Why no events of its own: a FIFO multi-server queue with known service times is fully determined at
arrival. The job starts when the earliest server frees up (`max(now, min(free_at))`) and ends a service
time later, so `admit` returns the finish instant at once and the caller schedules its own completion
(a timer of the owning actor, as `TopicLoader` does). One heap push per job, no task, no callback
here: a storm of 100,000 jobs costs 100,000 heap operations. Arrival order is the order of `admit`
calls, which the deterministic event loop fixes.

`servers = 0` means unlimited: every job starts at once (the cost-free cluster of the tests and the
behaviour before issue 27).
"""

from __future__ import annotations

import bisect
import heapq
from collections import deque

__all__ = ["QueueTotals", "ServiceQueue"]


class ServiceQueue:
    """FIFO M/G/c in closed form: `admit(now, service)` -> the job's finish instant."""

    __slots__ = ("name", "servers", "_free_at", "_starts", "admitted", "waited", "busy",
                 "max_wait", "totals")

    def __init__(self, name: str, servers: int) -> None:
        if isinstance(servers, bool) or not isinstance(servers, int) or servers < 0:
            raise ValueError(f"{name}: servers = {servers!r}, must be an int >= 0 (0: unlimited)")
        self.name = name
        self.servers = servers
        self._free_at: list[float] = [0.0] * servers   # a heap: when each server is next free
        self._starts: deque[float] = deque()   # start instants of the jobs that had to wait, in FIFO order
        self.admitted = 0          # jobs, since start
        self.waited = 0.0          # seconds jobs spent queued before a server took them, summed
        self.busy = 0.0            # server-seconds of service, summed
        self.max_wait = 0.0
        self.totals: QueueTotals | None = None   # the group it is counted in (QueueTotals), if any

    @property
    def unlimited(self) -> bool:
        return self.servers == 0

    def admit(self, now: float, service: float) -> float:
        """Queue one job arriving at `now` needing `service` seconds of a server; its finish time."""
        self.admitted += 1
        service = service if service > 0.0 else 0.0
        self.busy += service
        if not self.servers:
            return now + service
        free = self._free_at[0]
        start = free if free > now else now
        finish = start + service
        heapq.heapreplace(self._free_at, finish)
        wait = start - now
        if wait > 0.0:
            self.waited += wait
            if wait > self.max_wait:
                self.max_wait = wait
        if start > now:
            starts = self._starts
            while starts and starts[0] <= now:   # started by now: not queued any more
                starts.popleft()
            starts.append(start)
        totals = self.totals
        if totals is not None:
            totals.admitted += 1
            totals.waited += wait if wait > 0.0 else 0.0
            totals.busy += service
            if finish > totals.last_finish:
                totals.last_finish = finish
        return finish

    def wait_for(self, now: float) -> float:
        """How long a job arriving now would wait before a server takes it (0 with a free server)."""
        if not self.servers:
            return 0.0
        free = self._free_at[0]
        return free - now if free > now else 0.0

    def queued(self, now: float) -> int:
        """Jobs admitted that no server has taken yet at `now` (the queue's depth, for metrics). FIFO start
        instants never decrease, so the ones still ahead of `now` are the tail of `_starts`."""
        starts = self._starts
        if not starts or starts[-1] <= now:
            return 0
        return len(starts) - bisect.bisect_right(starts, now)


class QueueTotals:
    """Several queues counted as one (a broker's I/O threads), kept as jobs arrive so that a reader (the
    metrics, every sample) does not walk them: the same four figures as a ServiceQueue's."""

    __slots__ = ("queues", "admitted", "waited", "busy", "last_finish")

    def __init__(self, queues: list[ServiceQueue]) -> None:
        self.queues = queues
        self.admitted = 0
        self.waited = 0.0
        self.busy = 0.0
        self.last_finish = 0.0   # the latest finish instant admitted: after it, every queue is idle
        for q in queues:
            q.totals = self

    @property
    def unlimited(self) -> bool:
        return all(q.unlimited for q in self.queues)

    def queued(self, now: float) -> int:
        if now >= self.last_finish:
            return 0
        return sum(q.queued(now) for q in self.queues)
