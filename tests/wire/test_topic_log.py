"""The topics' logs and the measured rates, without a socket."""

from __future__ import annotations

from emulator.cluster.load_source import FlatLoad, TopicLoad
from emulator.wire.meter import MeteredLoadSource, RateMeter
from emulator.wire.topic_log import TopicLog


def test_with_deduplication_a_resend_is_acknowledged_with_the_first_id_and_stored_once():
    log = TopicLog("t", max_entries=10, deduplicate=True)   # brokerDeduplicationEnabled=true
    assert log.append("p", 0, 0, b"a", 1) == (0, True)
    assert log.append("p", 1, 1, b"b", 1) == (1, True)
    assert log.append("p", 1, 1, b"b", 1) == (1, False)     # after a reconnect
    assert log.append("q", 0, 0, b"c", 1) == (2, True)      # another producer's own sequence
    assert log.next_entry == 3


def test_without_deduplication_a_resend_is_stored_again_as_pulsars_default():
    log = TopicLog("t", max_entries=10)                     # brokerDeduplicationEnabled=false
    assert log.append("p", 1, 1, b"b", 1) == (0, True)
    assert log.append("p", 1, 1, b"b", 1) == (1, True)      # at least once


def test_acks_redelivery_and_the_bound():
    log = TopicLog("t", max_entries=4)
    sub = log.subscribe("s", earliest=True)
    for i in range(3):
        log.append("p", i, i, b"x", 1)
    got = [log.next_for(sub) for _ in range(3)]
    assert [e.entry_id for e in got] == [0, 1, 2] and log.next_for(sub) is None
    for e in got:
        sub.pending[e.entry_id] = ("c1", 1)
    sub.ack(1)
    assert sub.release("c1", 1) == 2                        # the consumer went: 0 and 2 come back
    assert [log.next_for(sub).entry_id, log.next_for(sub).entry_id] == [0, 2]
    assert sub.redelivery_count == {0: 1, 2: 1}
    sub.ack_cumulative(2)
    assert sub.mark_delete == 2 and not sub.pending
    log.append("p", 3, 3, b"x", 1)
    assert [e.entry_id for e in log.entries] == [3]          # what every subscription acked is gone
    for i in range(4, 10):
        log.append("p", i, i, b"x", 1)
    assert len(log.entries) == 4 and log.dropped == 3        # the bound: the oldest unacked dropped
    late = log.subscribe("late", earliest=False)
    assert log.next_for(late) is None                        # Latest: only what comes after


def test_measured_rates_add_to_the_inner_sources_stats():
    meter = RateMeter(window=10)
    for second in range(10):
        meter.published("persistent://a/b/t", 100.0 + second, msgs=50, size=5000)
        meter.delivered("persistent://a/b/t", 100.0 + second, msgs=100, size=10_000)
    source = MeteredLoadSource(FlatLoad(), meter)
    bundles = {"a/b/0x0_0x1": {"persistent://a/b/t": TopicLoad(producers=1, consumers=2),
                               "persistent://a/b/other": TopicLoad()}}
    stats = source.bundle_stats("b1", 110.0, bundles)["a/b/0x0_0x1"]
    flat = FlatLoad().bundle_stats("b1", 110.0, bundles)["a/b/0x0_0x1"]
    assert stats.msg_rate_in == flat.msg_rate_in + 50.0
    assert stats.msg_rate_out == flat.msg_rate_out + 100.0
    assert stats.msg_throughput_in == flat.msg_throughput_in + 5000.0
    assert stats.producer_count == 1 and stats.consumer_count == 2
    assert source.bundle_curves("b1", 110.0, bundles) is None   # sampled, not in closed form
    assert source.rate == FlatLoad().rate                       # the rest is the inner source's


def test_partitioned_groups_of_the_scenario_answer_partitioned_metadata():
    from emulator.wire.serve import partitioned_topics
    from emulator.workload.loader import loads

    scenario = loads('''
[scenario]
name = "p"
description = "partitioned"
[[namespaces]]
name = "a/b"
[[topics]]
namespace = "a/b"
count = 2
name = "orders-{i}"
partitions = 3
[[topics]]
namespace = "a/b"
count = 1
name = "plain-{i}"
''')
    assert partitioned_topics(scenario) == {"persistent://a/b/orders-0": 3, "persistent://a/b/orders-1": 3}


def test_a_producers_writes_complete_in_the_order_sent():
    """A write never completes before the one sent ahead of it (the managed ledger acks adds in order,
    the client needs receipts in sequence order), and a draw is BaseLatency's log-normal."""
    import random

    from emulator.model.publish_latency import BaseLatency
    from emulator.wire.ledger_write import LedgerWrites, PendingWrite, WriteLatency

    writes = LedgerWrites()
    w = PendingWrite(0.0, 1, 0, None, b"x", 1, 1)
    assert writes.add(10.0, 0.009, w).done == 10.009
    assert writes.add(10.001, 0.002, w._replace(sequence_id=1)).done == 10.009   # not before the first
    assert writes.add(10.008, 0.003, w._replace(sequence_id=2)).done == 10.008 + 0.003   # later: its own
    assert [q.sequence_id for q in writes.queue] == [0, 1, 2]
    latency = WriteLatency(BaseLatency(), random.Random(1))
    draws = sorted(latency.draw() for _ in range(4001))
    assert abs(draws[2000] - 0.003) < 0.0003 and abs(draws[3960] - 0.009) < 0.0015
