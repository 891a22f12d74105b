"""The shared capacities' metrics (issue 27): how full each queue is, how long jobs waited in it.

One family set for every `ServiceQueue` of the cluster, labelled by `queue` (and `broker` where the
queue is a broker's own), so a dashboard sees a storm build and drain in the same units everywhere:

* `pulsar_lb_emulator_capacity_queued{cluster,broker,queue}` gauge: jobs waiting for a server now;
* `pulsar_lb_emulator_capacity_jobs{cluster,broker,queue}` counter: jobs admitted since the start;
* `pulsar_lb_emulator_capacity_wait_seconds{cluster,broker,queue}` counter: seconds jobs waited, summed
  (wait / jobs is the mean queueing delay);
* `pulsar_lb_emulator_capacity_busy_seconds{cluster,broker,queue}` counter: server-seconds of service
  (its rate over the queue's servers is the utilisation).

Queues: `zookeeper-leader` (writes, serialised) and `zookeeper-server-<i>` (reads), `broker=""`;
`bookie-<i>` (read-worker threads of each bookie), `broker=""`; a broker's `io` (its Netty I/O
threads summed), `assignment` (ModularLoadManagerImpl's decision lock) and `http` (Jetty). Unlimited
parts (the cost-free cluster) have no queues and export nothing.

Besides, with Pulsar's names where Pulsar has the figure: `pulsar_broker_topic_load_pending_requests`
`{cluster,broker}` gauge (BrokerService's topic loads waiting for a maxConcurrentTopicLoadRequest permit),
and the emulator's counts of what a storm ends in: `pulsar_lb_emulator_metadata_sessions_expired`,
`pulsar_lb_emulator_ledgers_fenced` (recoveries that fenced a ledger a live broker still wrote) and
`pulsar_lb_emulator_bookie_utilisation` (the publish traffic's share of the bookies).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster

__all__ = ["capacity_families", "capacity_values"]

_Q = ("cluster", "broker", "queue")


def _queues(cluster: "Cluster", live: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, str, list[Any]]]:
    """(broker label, queue label, the queues summed into it), in a fixed order."""
    ensemble = getattr(cluster.store, "ensemble", None)
    if ensemble is not None:
        yield "", "zookeeper-leader", [ensemble.leader]
        for q in ensemble.servers:
            yield "", q.name, [q]
    bookies = getattr(cluster, "bookies", None)
    if bookies is not None and not bookies.unlimited:
        for q in bookies.queues:
            yield "", q.name, [q]
    for broker_id, broker in live:
        ex = getattr(broker, "executors", None)
        if ex is None:
            continue
        for label, queues in (("io", [ex.io]), ("assignment", [ex.assignment]), ("http", [ex.http])):
            if any(not q.unlimited for q in queues):
                yield broker_id, label, queues


def _group(queues: list[Any], now: float) -> tuple[int, int, float, float]:
    """(queued, jobs, wait seconds, busy seconds) of queues summed into one series, in one pass; a
    queue that never had a job adds nothing (most of a broker's I/O threads, most of the time)."""
    queued = jobs = 0
    waited = busy = 0.0
    for q in queues:
        if q.admitted:
            queued += q.queued(now)
            jobs += q.admitted
            waited += q.waited
            busy += q.busy
    return queued, jobs, waited, busy


def capacity_families(cluster: "Cluster", k: Any, live: list[tuple[str, Any]], now: float) -> Iterator[Any]:
    """The families above, built with `k`'s classes (see metrics.py's `_Kinds`)."""
    name = cluster.name
    queued = k.gauge("pulsar_lb_emulator_capacity_queued", "Jobs waiting for a server of a shared capacity",
                     labels=_Q)
    jobs = k.counter("pulsar_lb_emulator_capacity_jobs", "Jobs admitted to a shared capacity", labels=_Q)
    waited = k.counter("pulsar_lb_emulator_capacity_wait_seconds",
                       "Seconds jobs waited for a server of a shared capacity, summed", labels=_Q)
    busy = k.counter("pulsar_lb_emulator_capacity_busy_seconds",
                     "Server-seconds of service of a shared capacity", labels=_Q)
    for broker_id, label, queues in _queues(cluster, live):
        labels = (name, broker_id, label)
        q, j, w, b = _group(queues, now)
        queued.add_metric(labels, q)
        jobs.add_metric(labels, j)
        waited.add_metric(labels, w)
        busy.add_metric(labels, b)
    yield from (queued, jobs, waited, busy)

    pending = k.gauge("pulsar_broker_topic_load_pending_requests",
                      "Topic loads waiting for a maxConcurrentTopicLoadRequest permit", labels=("cluster", "broker"))
    for broker_id, broker in live:
        pending.add_metric((name, broker_id), broker.topic_loader.pending)
    yield pending

    C = ("cluster",)
    expired = k.counter("pulsar_lb_emulator_metadata_sessions_expired",
                        "Metadata sessions the store expired (no heartbeat within the session timeout)", labels=C)
    expired.add_metric((name,), cluster.store.stats["sessions_expired"])
    yield expired
    bookies = getattr(cluster, "bookies", None)
    fenced = k.counter("pulsar_lb_emulator_ledgers_fenced",
                       "Ledger recoveries that fenced a ledger a live broker still wrote (split brain)", labels=C)
    fenced.add_metric((name,), 0 if bookies is None else bookies.fenced)
    yield fenced
    if bookies is not None and not bookies.unlimited:
        util = k.gauge("pulsar_lb_emulator_bookie_utilisation",
                       "Share of the bookies' write throughput the publish traffic takes (0..1)", labels=C)
        util.add_metric((name,), bookies.current_utilisation())
        yield util


def capacity_values(cluster: "Cluster", live: list[tuple[str, Any]], now: float,
                    cache: dict[str, Any] | None = None) -> list[Any]:
    """The values `capacity_families` gives, in its order (the recorder's fast path; keep in step:
    tests/observe/test_metrics.py compares the two). `cache` keeps the list of queue groups while the
    live brokers are the same objects (the recorder samples every 10 emulated s)."""
    key = tuple(id(broker) for _, broker in live)
    if cache is not None and cache.get("key") == key:
        groups = cache["groups"]
    else:
        groups = [queues for _, _, queues in _queues(cluster, live)]
        if cache is not None:
            cache["key"], cache["groups"] = key, groups
    stats = [_group(queues, now) for queues in groups]
    out: list[Any] = [s[0] for s in stats]
    out += [s[1] for s in stats]
    out += [s[2] for s in stats]
    out += [s[3] for s in stats]
    out += [broker.topic_loader.pending for _, broker in live]
    out.append(cluster.store.stats["sessions_expired"])
    bookies = getattr(cluster, "bookies", None)
    out.append(0 if bookies is None else bookies.fenced)
    if bookies is not None and not bookies.unlimited:
        out.append(bookies.current_utilisation())
    return out
