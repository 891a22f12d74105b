"""The real Pulsar client (`pulsar-client`, the C++ client's Python wheel) against an emulated cluster.

Each test runs a 4-broker wall-clock cluster with the binary protocol on; the client's blocking calls
run in worker threads. Waits are loops on a condition with generous limits, never a fixed sleep taken
as the result.
"""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

from emulator.cluster.load_manager import EXTENSIBLE
from emulator.model.config import ServiceConfig
from emulator.wire import PulsarApi_pb2 as pb
from emulator.wire.codec import FrameDecoder, encode, encode_payload, payload_of

from .harness import in_thread, wait_for, with_cluster

pulsar = pytest.importorskip("pulsar")

NS = "public/default"


def _client(server, broker_ids, **kw):
    hosts = ",".join(f"127.0.0.1:{server.port_of(b)}" for b in broker_ids)
    return pulsar.Client(f"pulsar://{hosts}", operation_timeout_seconds=60, logger=_quiet(), **kw)


def _quiet():
    return pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn)


def _receive(consumer, n):
    """`n` messages' texts, each acknowledged as it comes."""
    got = []
    for _ in range(n):
        m = consumer.receive(timeout_millis=30_000)
        got.append(m.data().decode())
        consumer.acknowledge(m)
    return got


async def _bundle_of(cluster, topic):
    return (await cluster.namespace_bundles(NS)).bundle_of_full_name(topic)


def _handle_brokers(server, kind):
    """Broker ids of the wire connections holding a producer ("p") or consumer ("c")."""
    return {c.broker_id for c in list(server._connections) if (c.producers if kind == "p" else c.consumers)}


def test_produce_and_consume_through_a_redirect():
    topic = "persistent://public/default/redirected"

    async def body(cluster, server):
        leader = cluster.leader()
        follower = next(b for b in cluster.live_brokers() if b != leader)
        before = cluster.lookup_counts()["redirects"]

        def work():
            client = _client(server, [follower])
            try:
                consumer = client.subscribe(topic, "sub")
                producer = client.create_producer(topic)
                for i in range(20):
                    producer.send(f"m{i}".encode())
                return _receive(consumer, 20)
            finally:
                client.close()

        got = await in_thread(work)
        assert got == [f"m{i}" for i in range(20)]
        assert cluster.lookup_counts()["redirects"] > before   # the follower redirected to the leader
        return True

    assert with_cluster(body)


def test_a_short_topic_name_makes_public_default_on_first_use():
    """A scenario's cluster has only its own namespaces; the client's `my-topic` is
    persistent://public/default/my-topic, which Pulsar's cluster initialisation created: the first
    lookup writes it (16 bundles, PulsarClusterMetadataSetup) and the topic is served."""

    async def body(cluster, server):
        assert cluster.store.peek("/admin/local-policies/public/default") is None

        def work():
            client = _client(server, cluster.live_brokers()[:1])
            try:
                producer = client.create_producer("my-topic")
                producer.send(b"hello")
                consumer = client.subscribe("my-topic", "sub", initial_position=pulsar.InitialPosition.Earliest)
                m = consumer.receive(timeout_millis=30_000)
                consumer.acknowledge(m)
                return m.data()
            finally:
                client.close()

        assert await in_thread(work) == b"hello"
        assert len(await cluster.namespace_bundles(NS)) == 16
        return True

    assert with_cluster(body, namespaces={"acme/app": 4})


def test_a_send_is_receipted_once_persisted():
    """The receipt waits for the write (ledger_write.py: BaseLatency, median 3 ms): a synchronous send
    takes at least that, where an immediate receipt took well under a millisecond on loopback."""
    topic = "persistent://public/default/persisted"

    async def body(cluster, server):
        def work():
            client = _client(server, cluster.live_brokers())
            try:
                producer = client.create_producer(topic, batching_enabled=False)
                took = []
                for i in range(41):
                    t = time.perf_counter()
                    producer.send(f"m{i}".encode())
                    took.append(time.perf_counter() - t)
                return sorted(took)[20]
            finally:
                client.close()

        median = await in_thread(work)
        assert median > 0.0022, median
        return True

    assert with_cluster(body)


def test_batches_round_trip_and_count_in_the_stats():
    topic = "persistent://public/default/batched"

    async def body(cluster, server):
        def work():
            client = _client(server, cluster.live_brokers())
            try:
                consumer = client.subscribe(topic, "sub")
                producer = client.create_producer(topic, batching_enabled=True,
                                                  batching_max_publish_delay_ms=50)
                for i in range(200):
                    producer.send_async(f"b{i}".encode(), None)
                producer.flush()
                return _receive(consumer, 200)
            finally:
                client.close()

        got = await in_thread(work)
        assert got == [f"b{i}" for i in range(200)]
        log = server.logs.topics[topic]
        assert log.next_entry < 200            # stored as batches, not one entry per message
        rates = server.meter.rates(topic, cluster.system.now() + 1)
        assert rates is not None and rates[0] > 0
        return True

    assert with_cluster(body)


def _raw(port, data):
    """Send bytes, return what the broker answers until it closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        chunks = []
        while True:
            try:
                chunk = s.recv(65536)
            except TimeoutError:
                return b"".join(chunks), False
            if not chunk:
                return b"".join(chunks), True
            chunks.append(chunk)


def test_a_malformed_frame_closes_only_that_connection():
    async def body(cluster, server):
        port = server.port_of(cluster.live_brokers()[0])
        connect = encode(pb.BaseCommand(type=pb.BaseCommand.CONNECT, connect=pb.CommandConnect(
            client_version="raw", protocol_version=99)))
        answer, closed = await in_thread(_raw, port, connect + struct.pack(">II", 6, 2) + b"\xff\xff")
        frames = FrameDecoder().feed(answer)
        assert [f.command.type for f in frames] == [pb.BaseCommand.CONNECTED, pb.BaseCommand.ERROR]
        assert frames[0].command.connected.protocol_version == 20   # min(client's 99, ours)
        assert "malformed" in frames[1].command.error.message and closed
        # an unsupported command: an error, then the close; the broker serves on
        seek = encode(pb.BaseCommand(type=pb.BaseCommand.SEEK))
        answer, closed = await in_thread(_raw, port, connect + seek)
        frames = FrameDecoder().feed(answer)
        assert frames[-1].command.type == pb.BaseCommand.ERROR and closed
        assert cluster.live_brokers() == ["broker-1:8080"]   # the broker serves on
        ping = encode(pb.BaseCommand(type=pb.BaseCommand.PING, ping=pb.CommandPing()))

        def ping_pong():
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(connect + ping)
                dec, frames = FrameDecoder(), []
                while len(frames) < 2:
                    frames += dec.feed(s.recv(65536))
                return [f.command.type for f in frames]

        assert await in_thread(ping_pong) == [pb.BaseCommand.CONNECTED, pb.BaseCommand.PONG]
        return True

    assert with_cluster(body, brokers=1)


class _Flow:
    """A producer thread sending `n` messages (blocking sends) and a consumer thread acking them."""

    def __init__(self, client, topic, n):
        self.topic, self.n = topic, n
        self.producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=120_000)
        self.consumer = client.subscribe(topic, "sub")
        self.sent = 0
        self.received: list[str] = []
        self.errors: list[str] = []
        self.stopped = False

    def produce(self):
        try:
            for i in range(self.n):
                if self.stopped:
                    return
                self.producer.send(f"m{i}".encode())
                self.sent = i + 1
                time.sleep(0.01)
        except Exception as e:  # reported by the test
            self.errors.append(repr(e))

    def consume(self):
        deadline = time.monotonic() + 180
        while len(set(self.received)) < self.n and time.monotonic() < deadline and not self.stopped:
            try:
                m = self.consumer.receive(timeout_millis=1000)
            except pulsar.Timeout:
                continue
            self.received.append(m.data().decode())
            self.consumer.acknowledge(m)


async def _run_flow(flow, during, server):
    """Produce and consume while `during()` (a coroutine function) acts on the cluster.

    Every message sent is consumed, and none whose acknowledgement the broker had when `during` began
    is consumed again. The C++ client groups acknowledgements (100 ms, not configurable from Python)
    and sends those of the last moments before the close on the new connection, after the new
    owner's first dispatch: those messages are redelivered, as Pulsar redelivers what it has no
    acknowledgement of (at-least-once), and are the only ones allowed twice."""
    t_p = threading.Thread(target=flow.produce, daemon=True)
    t_c = threading.Thread(target=flow.consume, daemon=True)
    t_p.start()
    t_c.start()
    await wait_for(lambda: flow.sent >= flow.n // 3, 60, "a third sent")
    log = server.logs.topics[flow.topic]
    sub = log.subscriptions["sub"]
    acked = {f"m{e}" for e in range(log.next_entry) if sub.is_acked(e)}   # one entry per message
    assert len(acked) >= flow.n // 4
    await during()
    await wait_for(lambda: not t_p.is_alive() and not t_c.is_alive(), 200, "the flow to finish")
    assert not flow.errors
    assert sorted(set(flow.received), key=lambda s: int(s[1:])) == [f"m{i}" for i in range(flow.n)]
    dups = sorted({m for m in flow.received if flow.received.count(m) > 1})
    assert not set(dups) & acked, f"acknowledged before the move, consumed again: {set(dups) & acked}"
    assert len(dups) <= 20, f"consumed twice: {dups}"
    return dups


@pytest.mark.slow
def test_admin_unload_moves_the_client_to_the_new_owner():
    topic = "persistent://public/default/unloaded"

    async def body(cluster, server):
        client = await in_thread(lambda: _client(server, cluster.live_brokers()))
        try:
            flow = await in_thread(_Flow, client, topic, 150)
            bundle = await _bundle_of(cluster, topic)
            owner = cluster.owner_of(bundle)
            assert _handle_brokers(server, "p") == {owner}
            target = next(b for b in cluster.live_brokers() if b != owner)

            async def unload():
                result = await cluster.unload_bundle(bundle, destination=target)
                assert result.ok, result.message

            await _run_flow(flow, unload, server)
            assert cluster.owner_of(bundle) == target
            await wait_for(lambda: _handle_brokers(server, "p") == {target}, 60, "the producer on the new owner")
        finally:
            await in_thread(client.close)
        return True

    assert with_cluster(body)


@pytest.mark.slow
def test_a_killed_broker_the_client_reconnects_once_the_session_expires():
    topic = "persistent://public/default/killed"
    conf = ServiceConfig(metadata_store_session_timeout_millis=5000)

    async def body(cluster, server):
        bundle = await _bundle_of(cluster, topic)
        victim = next(b for b in cluster.live_brokers() if b != cluster.leader())
        assert (await cluster.acquire_bundle(bundle, victim)).ok
        client = await in_thread(lambda: _client(server, cluster.live_brokers()))
        try:
            flow = await in_thread(_Flow, client, topic, 150)
            assert _handle_brokers(server, "p") == {victim}
            killed_at = []

            async def kill():
                cluster.kill_broker(victim)
                killed_at.append(cluster.system.now())
                await wait_for(lambda: bool(_handle_brokers(server, "p") - {victim}), 90, "the producer back")
                # the dead owner's lock holds until its session expires: no other broker serves before
                assert cluster.system.now() - killed_at[0] >= 0.9 * 5.0

            await _run_flow(flow, kill, server)
            new_owner = cluster.owner_of(bundle)
            assert new_owner not in (None, victim)
            assert _handle_brokers(server, "p") == {new_owner}
            assert victim not in server._listeners            # its port is closed
        finally:
            await in_thread(client.close)
        return True

    assert with_cluster(body, conf=conf)


@pytest.mark.slow
def test_extensible_transfer_the_client_follows_without_a_lookup():
    topic = "persistent://public/default/transferred"
    conf = ServiceConfig(load_manager_class_name=EXTENSIBLE, load_balancer_multi_phase_bundle_unload=True)

    async def body(cluster, server):
        client = await in_thread(lambda: _client(server, cluster.live_brokers()))
        try:
            flow = await in_thread(_Flow, client, topic, 150)
            bundle = await _bundle_of(cluster, topic)
            source = cluster.owner_of(bundle)
            assert _handle_brokers(server, "p") == {source}
            dest = next(b for b in cluster.live_brokers() if b != source)
            lookups = []

            async def transfer():
                lookups.append(cluster.lookup_counts()["lookups"])
                result = await cluster.unload_bundle(bundle, destination=dest)
                assert result.ok, result.message

            await _run_flow(flow, transfer, server)
            assert cluster.owner_of(bundle) == dest
            assert _handle_brokers(server, "p") == {dest} and _handle_brokers(server, "c") == {dest}
            assert cluster.lookup_counts()["lookups"] == lookups[0]   # straight to the assigned broker
        finally:
            await in_thread(client.close)
        return True

    assert with_cluster(body, conf=conf)


@pytest.mark.slow
def test_real_traffic_counts_in_the_owners_load_data():
    """What the client sends and reads is in the owner's LocalBrokerData (msgRateIn/Out, throughput),
    which its load reports carry to the load manager."""
    topic = "persistent://public/default/measured"
    conf = ServiceConfig(stats_update_frequency_in_secs=5, stats_update_initial_delay_in_secs=5)

    async def body(cluster, server):
        bundle = await _bundle_of(cluster, topic)
        owner = next(b for b in cluster.live_brokers() if b != cluster.leader())
        assert (await cluster.acquire_bundle(bundle, owner)).ok
        client = await in_thread(lambda: _client(server, cluster.live_brokers()))
        try:
            flow = await in_thread(_Flow, client, topic, 1500)
            t_p = threading.Thread(target=flow.produce, daemon=True)
            t_c = threading.Thread(target=flow.consume, daemon=True)
            t_p.start()
            t_c.start()
            local = cluster.brokers[owner].local_data
            await wait_for(lambda: local.msg_rate_in > 10 and local.msg_rate_out > 10, 60, "rates reported")
            assert local.msg_throughput_in > 10 * 1   # bytes/s: at least a byte a message
            others = [cluster.brokers[b].local_data.msg_rate_in for b in cluster.live_brokers() if b != owner]
            assert others == [0.0] * 3          # FlatLoad: no producer of its own, only the client's
            await wait_for(lambda: not t_p.is_alive() and not t_c.is_alive(), 120, "the flow to finish")
        finally:
            await in_thread(client.close)
        return True

    assert with_cluster(body, conf=conf)


def _frames_until(sock, dec, want):
    frames = []
    while not any(f.command.type == want for f in frames):
        data = sock.recv(65536)
        if not data:
            break
        frames += dec.feed(data)
    return frames


def test_a_bad_checksum_is_a_send_error_and_a_new_broker_gets_its_port():
    topic = "persistent://public/default/checked"

    async def body(cluster, server):
        broker = cluster.live_brokers()[0]
        port = server.port_of(broker)
        T = pb.BaseCommand

        def raw_producer():
            with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                dec = FrameDecoder()
                s.sendall(encode(T(type=T.CONNECT, connect=pb.CommandConnect(client_version="raw",
                                                                             protocol_version=20))))
                _frames_until(s, dec, T.CONNECTED)
                s.sendall(encode(T(type=T.LOOKUP, lookupTopic=pb.CommandLookupTopic(topic=topic, request_id=1))))
                (lookup,) = [f for f in _frames_until(s, dec, T.LOOKUP_RESPONSE) if f.command.type == T.LOOKUP_RESPONSE]
                s.sendall(encode(T(type=T.PRODUCER, producer=pb.CommandProducer(topic=topic, producer_id=1,
                                                                                request_id=2))))
                done = _frames_until(s, dec, T.PRODUCER_SUCCESS)
                meta = pb.MessageMetadata(producer_name="raw", sequence_id=0, publish_time=1)
                entry = bytearray(payload_of(meta, b"payload"))
                entry[-1] ^= 0xFF                                  # corrupt the payload, keep the checksum
                s.sendall(encode_payload(T(type=T.SEND, send=pb.CommandSend(producer_id=1, sequence_id=0)),
                                         bytes(entry)))
                return lookup.command.lookupTopicResponse, done, _frames_until(s, dec, T.SEND_ERROR)

        lookup, done, frames = await in_thread(raw_producer)
        assert lookup.response == lookup.Connect and lookup.brokerServiceUrl == f"pulsar://127.0.0.1:{port}"
        assert done[-1].command.type == pb.BaseCommand.PRODUCER_SUCCESS
        (error,) = [f.command.send_error for f in frames if f.command.type == pb.BaseCommand.SEND_ERROR]
        assert error.error == pb.ChecksumError and error.sequence_id == 0
        assert topic not in server.logs.topics or server.logs.topics[topic].next_entry == 0   # not stored
        # a broker started later listens on base + k - 1 as soon as it is up
        added = await cluster.add_broker()
        assert added.broker_id == "broker-2:8080"
        await wait_for(lambda: added.broker_id in server._listeners, 10, "the new broker's listener")
        assert server.port_of(added.broker_id) == server.base_port + 1
        return True

    assert with_cluster(body, brokers=1)


def test_the_broker_pings_and_closes_a_silent_connection():
    """PulsarHandler's keep-alive: a PING each interval; no frame for a whole interval closes."""

    async def body(cluster, server):
        port = server.port_of(cluster.live_brokers()[0])
        T = pb.BaseCommand

        def silent():
            with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                s.sendall(encode(T(type=T.CONNECT, connect=pb.CommandConnect(client_version="raw",
                                                                             protocol_version=20))))
                dec, frames = FrameDecoder(), []
                started = time.monotonic()
                while True:
                    data = s.recv(65536)
                    if not data:
                        return [f.command.type for f in frames], time.monotonic() - started
                    frames += dec.feed(data)

        types, took = await in_thread(silent)
        assert types == [T.CONNECTED, T.PING] and 0.9 <= took < 20
        return True

    assert with_cluster(body, brokers=1, keep_alive=1.0)


@pytest.mark.slow
def test_a_graceful_stop_closes_the_handles_and_the_client_moves():
    topic = "persistent://public/default/drained"

    async def body(cluster, server):
        bundle = await _bundle_of(cluster, topic)
        victim = next(b for b in cluster.live_brokers() if b != cluster.leader())
        assert (await cluster.acquire_bundle(bundle, victim)).ok
        client = await in_thread(lambda: _client(server, cluster.live_brokers()))
        try:
            flow = await in_thread(_Flow, client, topic, 150)

            async def stop():
                assert await cluster.stop_broker(victim)

            await _run_flow(flow, stop, server)
            assert cluster.owner_of(bundle) not in (None, victim)
            assert _handle_brokers(server, "p") == {cluster.owner_of(bundle)}
            await wait_for(lambda: victim not in server._listeners, 10, "the stopped broker's port closed")
        finally:
            await in_thread(client.close)
        return True

    assert with_cluster(body)


@pytest.mark.slow
def test_the_shedder_unloads_the_bundle_of_a_real_clients_topic():
    """The real client's measured traffic is the only traffic (FlatLoad without producers): the
    UniformLoadShedder sees its owner as the busiest broker and unloads that bundle; the client
    follows. At 10 emulated seconds per real second, so a one-minute shedding cycle takes six."""
    topic = "persistent://public/default/shed"
    conf = ServiceConfig(
        stats_update_frequency_in_secs=5, stats_update_initial_delay_in_secs=5,
        load_balancer_load_shedding_strategy="org.apache.pulsar.broker.loadbalance.impl.UniformLoadShedder",
        min_unload_message=1, max_unload_percentage=1.0, load_balancer_shedding_grace_period_minutes=0)

    async def body(cluster, server):
        bundles = (await cluster.namespace_bundles(NS)).names
        bundle = await _bundle_of(cluster, topic)
        owner = next(b for b in cluster.live_brokers() if b != cluster.leader())
        other = next(b for b in bundles if b != bundle)
        for b in (bundle, other):          # two bundles there: the shedder never moves a sole bundle
            assert (await cluster.acquire_bundle(b, owner)).ok
        unloads = []
        cluster.events.subscribe(lambda e: unloads.append(e) if type(e).__name__ == "Unload" else None)
        client = await in_thread(lambda: _client(server, cluster.live_brokers()))
        try:
            flow = await in_thread(_Flow, client, topic, 100_000)
            t_p = threading.Thread(target=flow.produce, daemon=True)
            t_c = threading.Thread(target=flow.consume, daemon=True)
            t_p.start()
            t_c.start()
            await wait_for(lambda: any(u.bundle == bundle for u in unloads), 1800, "the shedder's unload")
            (u,) = [u for u in unloads if u.bundle == bundle][:1]
            assert u.broker == owner and u.destination != owner
            await wait_for(lambda: _handle_brokers(server, "p") == {u.destination}, 600, "the client moved")
            flow.stopped = True
            await in_thread(t_p.join, 60)
            await in_thread(t_c.join, 60)
            assert not flow.errors
        finally:
            await in_thread(client.close)
        return True

    assert with_cluster(body, conf=conf, speed=10.0)
