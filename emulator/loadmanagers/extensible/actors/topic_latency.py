"""How long a system-topic message takes: to be persisted and acknowledged, and to reach each reader.

The Extensible load manager's tables are Pulsar topics read through client TableViews, not metadata
nodes, so they have their own latency, drawn here from named distributions as `latency.Latencies`
does for the other steps (same `Constant` / `LogNormal` / `Uniform` shapes, one stream per topic
derived from (run seed, topic name + "/latency"), so the draws never shift any other random stream).

Defaults and where they come from ([BK], [ZK] are the sources named in `emulator.cluster.latency`):

- the producer side (`ServiceUnitStateTableViewImpl.put` / `TableViewLoadDataStoreImpl.pushAsync`:
  `producer.newMessage().key(k).value(v).sendAsync()` until the ack): the producer batches for up to
  `batchingMaxPublishDelayMicros` = 1 ms (`ProducerConfigurationData`, apache/pulsar PR #5788; the
  channel's producer has `enableBatching(true)`), then one LAN round trip to the topic's owner, which
  for a persistent topic also writes to a bookie quorum before it acks ([BK]: 0.3 ms on one switch,
  more across racks). Median 2 ms (persistent) / 1.5 ms (non-persistent, no bookie write), p99 ten
  times the median (an assumption, as in `Latencies`).
- the reader side (the broker dispatching the persisted entry to each TableView reader, one LAN hop
  and the reader's receive queue): median 1 ms, p99 10 ms (the same one-hop derivation as
  `Latencies.lookup`, with a bigger tail for the dispatcher's read).

No published measurement of the channel's end-to-end latency exists that we know of; a scenario may
override any of these, and `TopicLatencies.zero()` makes every step instantaneous for unit tests.
"""

from __future__ import annotations

import random
from math import exp as _exp

import msgspec

from emulator.cluster.latency import Constant, Distribution, LogNormal
from emulator.runtime.rng import derive_rng

__all__ = ["TopicLatencies", "TopicLatencySampler"]


def _ms(median: float, p99: float) -> LogNormal:
    return LogNormal(median / 1000.0, p99 / 1000.0)


class TopicLatencies(msgspec.Struct, frozen=True, kw_only=True):
    """The emulated duration of each step of a system-topic message, in seconds."""

    persistent_publish: Distribution = _ms(2.0, 20.0)
    """Send to ack on a persistent topic (the service-unit state channel): batching delay + LAN round
    trip + bookie quorum write."""
    non_persistent_publish: Distribution = _ms(1.5, 15.0)
    """Send to ack on a non-persistent topic (the two load-data stores): batching delay + LAN round trip."""
    delivery: Distribution = _ms(1.0, 10.0)
    """From the ack until one reader's TableView applies the entry (drawn per reader)."""

    @classmethod
    def zero(cls) -> TopicLatencies:
        """Every step instantaneous (unit tests that count steps, not time)."""
        zero = Constant(0.0)
        return cls(persistent_publish=zero, non_persistent_publish=zero, delivery=zero)


class TopicLatencySampler:
    """A topic's draws, from its own stream (seed, topic + "/latency")."""

    __slots__ = ("latencies", "rng")

    def __init__(self, latencies: TopicLatencies, seed: int, topic: str) -> None:
        self.latencies = latencies
        self.rng: random.Random = derive_rng(seed, topic + "/latency")

    def publish(self, persistent: bool) -> float:
        d = self.latencies.persistent_publish if persistent else self.latencies.non_persistent_publish
        return max(0.0, d.sample(self.rng))

    def delivery(self) -> float:
        return max(0.0, self.latencies.delivery.sample(self.rng))

    def deliveries(self, n: int) -> list[float]:
        """`n` delivery draws, one per reader of an entry: a log-normal's are drawn at once from the
        same normal deviates `delivery` would take (gauss from this stream), with the exponent of
        each computed in one pass; other shapes draw one by one."""
        d = self.latencies.delivery
        if isinstance(d, LogNormal):
            sigma, median, gauss = d.sigma, d.median, self.rng.gauss
            if not sigma:
                return [max(0.0, median)] * n
            return [median * _exp(sigma * gauss(0.0, 1.0)) for _ in range(n)]
        return [max(0.0, d.sample(self.rng)) for _ in range(n)]
