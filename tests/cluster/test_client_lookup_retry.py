"""`ClientSettings.lookup_retry`: the C++ client's retry inside a lookup (emulator/cluster/lookup_retry.py),
against the Java client's failed lookup and handle backoff (the default)."""

from __future__ import annotations

import pytest

from emulator.cluster.client import ClientSettings
from emulator.cluster.events import HandleReconnected
from emulator.cluster.lookup_retry import LookupRetry, retryable
from emulator.cluster.messages import HandleKind
from emulator.model.config import ServiceConfig
from emulator.testing import emulated_cluster

NS = "public/default"
TOPICS = [f"persistent://{NS}/t-{i}" for i in range(40)]


async def _after_a_kill(lookup_retry: bool) -> tuple[list[float], int, float]:
    """Every handle of a killed broker's bundles reconnects once its session expires: (their outage
    times, the client's failed lookups, the session timeout)."""
    conf = ServiceConfig(metadata_store_session_timeout_millis=5000)
    async with emulated_cluster(4, seed=7, namespaces={NS: 8}, conf=conf) as cluster:
        client = cluster.add_client(settings=ClientSettings(lookup_retry=lookup_retry))
        client.create_handles(TOPICS, HandleKind.PRODUCER)
        await cluster.wait_until(lambda: client.connected_count() == len(TOPICS), timeout=60)
        leader = cluster.leader()
        owners = [cluster.owner_of(b) for b in cluster.ownership()]
        victim = max((b for b in set(owners) if b != leader), key=owners.count)
        outages: list[float] = []
        cluster.events.subscribe(lambda e: outages.append(e.unavailable) if isinstance(e, HandleReconnected) else None)
        on_victim = sum(h.broker_id == victim for h in client.handles.values())
        cluster.kill_broker(victim)   # it stays in the client's service URL list: a refused host
        await cluster.wait_until(lambda: len(outages) == on_victim, timeout=300)
        return outages, client.stats.lookups_failed, 5.0


@pytest.mark.asyncio
async def test_a_refused_service_url_host_costs_the_lookup_100_ms_not_the_handles_next_backoff():
    java, java_failed, session = await _after_a_kill(False)
    cpp, cpp_failed, _ = await _after_a_kill(True)
    assert java and len(cpp) == len(java)
    assert java_failed > 0 and cpp_failed == 0       # the C++ lookup retries instead of failing
    # nobody is back before the dead owner's session expires; with the retry, one backoff step after
    assert min(cpp) >= session and min(java) >= session
    assert max(cpp) < 2 * session < max(java)       # Java: some wait their next step (~12 s)


def test_what_the_cpp_client_retries_and_for_how_long():
    assert retryable("connection refused") and retryable("Disconnected from server")
    assert retryable("ServiceNotReady: Namespace bundle is being unloaded")
    assert not retryable("lookup timed out") and not retryable("TooManyRequests: ...")
    assert not retryable("Too many redirects: 21")
    import random

    r = LookupRetry(10.0, 30.0, random.Random(1))
    delays = [r.delay(10.0 + t, int((10.0 + t) * 1000)) for t in (0.0, 0.1, 0.3)]
    assert delays[0] == 0.1 and 0.18 <= delays[1] <= 0.2 and 0.36 <= delays[2] <= 0.4
    assert r.delay(39.95, 39950) == pytest.approx(0.05)   # capped by what is left of the timeout
    assert r.delay(40.0, 40000) is None                    # operationTimeout passed: the lookup fails


def test_lockstep_jitter_backoffs_of_one_second_wait_the_same_and_others_do_not():
    import random

    from emulator.cluster.backoff import Backoff, LockstepJitter

    jitter = LockstepJitter(random.Random(3))

    def steps(stream) -> list[int]:
        b = Backoff(100, 60_000, 0, stream)
        return [b.next(1000 * k) for k in range(8)]

    a, b, other = steps(jitter.stream(7)), steps(jitter.stream(7)), steps(jitter.stream(8))
    assert a == b                           # created in the same second: the same waits (C++ time(NULL) seed)
    assert a != other                       # another second, other draws
    assert all(x <= y for x, y in zip(a[1:], [200, 400, 800, 1600, 3200, 6400, 12800]))
    java = Backoff(100, 60_000, 0, random.Random(3)), Backoff(100, 60_000, 0, random.Random(4))
    assert [j.next(0) for j in java][0] == 100 and [java[0].next(k) for k in range(6)] != \
        [java[1].next(k) for k in range(6)]   # Java: every Backoff its own draws


@pytest.mark.asyncio
async def test_a_dead_brokers_attach_fails_at_the_tcp_connect_without_a_producer_command():
    """ConnectionPool.getConnection fails before CommandProducer is sent (Java and C++ alike): no
    `producer_create` draw, no pooled connection to the dead broker, the handle backs off at once."""
    from emulator.cluster.client import Phase
    from emulator.cluster.cluster import ClusterSettings
    from emulator.cluster.latency import Latencies

    async with emulated_cluster(3, seed=2, namespaces={NS: 4},
                                settings=ClusterSettings(latency=Latencies())) as cluster:
        client = cluster.add_client()
        (hid,) = client.create_handles(TOPICS[:1], HandleKind.PRODUCER)
        await cluster.wait_until(lambda: client.connected_count() == 1, timeout=60)
        victim = next(b for b in cluster.live_brokers() if b not in (client.handles[hid].broker_id,
                                                                     cluster.leader()))
        cluster.kill_broker(victim)
        await cluster.wait_until(lambda: victim not in client.pool._cnx, timeout=10)   # its connection dropped
        draws: list[str] = []
        sample = client.latency
        client.latency = lambda name: draws.append(name) or sample(name)   # type: ignore[method-assign]
        h = client.handles[hid]
        h.phase = Phase.BACKING_OFF
        client._on_broker(h, victim, None)   # a lookup that answered the dead broker
        assert h.phase is Phase.BACKING_OFF and draws == []     # failed at once, nothing drawn
        assert victim not in client.pool._cnx
