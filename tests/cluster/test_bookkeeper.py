"""The bookies behind the managed ledgers: queueing of recoveries, the publish load, a crash storm, and
the cost-free cluster left as it was."""

from __future__ import annotations

import anyio
import pytest

from emulator.cluster.bookkeeper import Bookies
from emulator.cluster.bookkeeper_open import ledger_path, managed_ledger_path
from emulator.cluster.capacity import Capacity
from emulator.cluster.capacity_bookkeeper import BookKeeperCapacity
from emulator.cluster.cluster import ClusterSettings
from emulator.cluster.events import HandleReconnected
from emulator.cluster.latency import Constant
from emulator.testing import emulated_cluster

NS = "public/default"
SERVICE = 0.05   # seconds of a bookie per request in these tests: large, so the queue is plain to see


def topics(n: int) -> list[str]:
    return [f"persistent://{NS}/t-{i}" for i in range(n)]


def bk(**changes: object) -> BookKeeperCapacity:
    base = dict(bookies=2, read_threads=1, ensemble_size=2, ack_quorum=2, request=Constant(SERVICE))
    base.update(changes)
    return BookKeeperCapacity(**base)  # type: ignore[arg-type]


def left_open(bookies: Bookies, n: int, writer: str = "old") -> list[str]:
    names = topics(n)
    for t in names:
        bookies.created(t, writer)
    return names


def test_a_burst_of_recoveries_takes_n_times_the_service_over_the_servers() -> None:
    bookies = Bookies(bk(), seed=1)
    n = 40
    finishes = [bookies.round(0.0, bookies.open_ledger(t).ensemble) for t in left_open(bookies, n)]
    # each recovery round asks both bookies (ensemble 2 of 2): 2 n requests on 2 single-thread bookies
    assert max(finishes) == pytest.approx(n * 2 * SERVICE / 2)
    assert sorted(finishes) == finishes   # FIFO: served in arrival order
    assert bookies.queued(0.0) == 2 * (n - 1)
    assert bookies.queued(max(finishes)) == 0


def test_more_read_threads_serve_the_burst_faster() -> None:
    bookies = Bookies(bk(read_threads=4), seed=1)
    n = 40
    last = max(bookies.round(0.0, bookies.open_ledger(t).ensemble) for t in left_open(bookies, n))
    assert last == pytest.approx(n * 2 * SERVICE / (2 * 4))


def test_publish_traffic_slows_the_opens() -> None:
    capacity = bk(write_throughput=100e6, write_quorum=2)
    idle = Bookies(capacity, seed=1, publish_bytes=lambda: 0.0)
    # 50 MB/s x write quorum 2 over 2 bookies of 100 MB/s: half of each bookie goes to the publishes
    busy = Bookies(capacity, seed=1, publish_bytes=lambda: 50e6)
    assert busy.utilisation(0.0) == pytest.approx(0.5)
    n = 10
    t_idle = max(idle.round(0.0, idle.open_ledger(t).ensemble) for t in left_open(idle, n))
    t_busy = max(busy.round(0.0, busy.open_ledger(t).ensemble) for t in left_open(busy, n))
    assert t_busy == pytest.approx(2 * t_idle)


def test_saturating_publish_traffic_is_capped() -> None:
    bookies = Bookies(bk(write_throughput=1.0, max_utilisation=0.9), seed=1, publish_bytes=lambda: 1e9)
    assert bookies.utilisation(0.0) == pytest.approx(0.9)


def test_a_closed_ledger_needs_no_recovery_and_fencing_names_the_previous_writer() -> None:
    bookies = Bookies(bk(), seed=1)
    [t] = left_open(bookies, 1, writer="a")
    assert bookies.fence(t, "b") == "a" and bookies.writer_of(t) == "b"
    bookies.created(t, "b")
    bookies.closed(t, "a")                  # not a's ledger any more: stays open
    assert bookies.open_ledger(t) is not None
    bookies.closed(t, "b")
    assert bookies.open_ledger(t) is None and bookies.fence(t, "c") is None


@pytest.mark.asyncio
async def test_unlimited_capacity_sends_no_open_to_the_store_and_no_request_to_bookies() -> None:
    async with emulated_cluster(2, seed=3, namespaces={NS: 2}) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(20))
        await cluster.wait_until(lambda: client.connected_count() == 20)
        assert cluster.bookies.unlimited and cluster.bookies.requests == 0
        assert cluster.store.peek(managed_ledger_path(topics(1)[0])) is None
        assert cluster.bookies.ledgers_created == 20


@pytest.mark.asyncio
async def test_opens_go_through_the_metadata_store() -> None:
    settings = ClusterSettings(capacity=_capacity(bk()))
    async with emulated_cluster(2, seed=3, namespaces={NS: 2}, settings=settings) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(10))
        await cluster.wait_until(lambda: client.connected_count() == 10)
        t = topics(1)[0]
        assert cluster.store.peek(managed_ledger_path(t)) == b"OPEN"
        assert cluster.store.peek(ledger_path(t)) == b"OPEN"
        assert cluster.bookies.ledgers_created == 10 and cluster.bookies.recoveries == 0


@pytest.mark.asyncio
async def test_a_crash_storm_builds_a_bookie_queue_that_drains() -> None:
    """A broker holding n topics crashes; once its session expires the survivor reopens them all: n
    recoveries (the crashed broker never closed its ledgers), two rounds each, on one single-thread
    bookie: the queue builds, drains, and the last producer is back at least 2 n x service after the
    first (the reconnects arrive spread by their backoffs, faster than the bookie serves them)."""
    n = 30
    service = 0.5
    settings = ClusterSettings(capacity=_capacity(bk(bookies=1, ensemble_size=1, ack_quorum=1,
                                                     request=Constant(service))))
    async with emulated_cluster(2, seed=5, namespaces={NS: 1}, settings=settings) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(n))
        await cluster.wait_until(lambda: client.connected_count() == n)
        bookies = cluster.bookies
        assert bookies.requests == 0          # first opens: nothing to recover
        victim = cluster.owner_of(f"{NS}/0x00000000_0xffffffff")
        back: list[float] = []
        cluster.events.subscribe(lambda e: back.append(e.t) if isinstance(e, HandleReconnected) else None)
        cluster.kill_broker(victim)
        await cluster.wait_until(lambda: client.connected_count() == 0)
        depth: list[int] = []
        while client.connected_count() < n:
            await anyio.sleep(0.1)
            depth.append(bookies.queued(cluster.system.clock.now()))
        assert bookies.recoveries == n and bookies.requests == 2 * n
        assert max(depth) >= n // 5 and depth[-1] == 0
        assert max(back) - min(back) >= (2 * n - 2) * service


def _capacity(bookkeeper: BookKeeperCapacity) -> Capacity:
    u = Capacity.unlimited()
    return Capacity(metadata=u.metadata, bookkeeper=bookkeeper, broker=u.broker, client=u.client)
