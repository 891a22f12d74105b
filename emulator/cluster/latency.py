"""Operation latencies: every step that takes time in Pulsar takes emulated time here.

Each step is a named distribution in `Latencies`; an actor draws from it through its own
`LatencySampler`, whose `random.Random` is derived from (run seed, actor name + "/latency") so that the
draws never shift the actor's other random stream (strategies, backoff jitter): a run with latencies
makes the same decisions as one without, except where the time itself changes them.

Distributions (a scenario's `[latency]` table writes them, see `emulator/workload/latency_table.py`):

    constant   value                 always `value` seconds
    lognormal  median, p99           exp(N(ln median, sigma)) with sigma = ln(p99 / median) / z(0.99);
                                     p99 = median is a constant
    uniform    low, high             U(low, high)

Defaults and where they come from are in each `Latencies` field's docstring. Where no published
measurement of the whole step exists, the default is derived from the step's parts as Pulsar's code
runs them (each part's measurement cited) and says so; a scenario overrides any of them.

`Latencies.zero()` is the cost-free cluster the cluster tests use (every step instantaneous, as before
this module, except the two close times that existed already).
"""

from __future__ import annotations

import math
import random
from statistics import NormalDist
from typing import Union

import msgspec

from emulator.runtime.rng import derive_rng

__all__ = ["Constant", "Distribution", "LATENCY_NAMES", "Latencies", "LatencySampler", "LogNormal",
           "Uniform"]

_Z99 = NormalDist().inv_cdf(0.99)   # 2.3263...
_STD = NormalDist()


class Constant(msgspec.Struct, frozen=True, tag_field="distribution", tag="constant"):
    """Always `value` seconds."""

    value: float = 0.0

    def sample(self, rng: random.Random) -> float:
        return self.value

    def max_of(self, n: int, rng: random.Random) -> float:
        return self.value if n > 0 else 0.0

    @property
    def is_zero(self) -> bool:
        return self.value == 0.0


class LogNormal(msgspec.Struct, frozen=True, tag_field="distribution", tag="lognormal"):
    """Median and 99th percentile in seconds: service times are skewed, with a long right tail."""

    median: float
    p99: float

    @property
    def sigma(self) -> float:
        return math.log(self.p99 / self.median) / _Z99 if self.p99 > self.median else 0.0

    def sample(self, rng: random.Random) -> float:
        sigma = self.sigma
        return self.median * math.exp(sigma * rng.gauss(0.0, 1.0)) if sigma else self.median

    def max_of(self, n: int, rng: random.Random) -> float:
        """The largest of `n` independent draws, with one draw (inverse CDF at U^(1/n))."""
        if n <= 0:
            return 0.0
        sigma = self.sigma
        if not sigma:
            return self.median
        q = rng.random() ** (1.0 / n)
        q = min(max(q, 1e-12), 1.0 - 1e-12)
        return self.median * math.exp(sigma * _STD.inv_cdf(q))

    @property
    def is_zero(self) -> bool:
        return False


class Uniform(msgspec.Struct, frozen=True, tag_field="distribution", tag="uniform"):
    """U(low, high) seconds."""

    low: float
    high: float

    def sample(self, rng: random.Random) -> float:
        return self.low + (self.high - self.low) * rng.random()

    def max_of(self, n: int, rng: random.Random) -> float:
        if n <= 0:
            return 0.0
        return self.low + (self.high - self.low) * rng.random() ** (1.0 / n)

    @property
    def is_zero(self) -> bool:
        return self.high == 0.0


Distribution = Union[Constant, LogNormal, Uniform]
ZERO = Constant(0.0)


def _ms(median: float, p99: float) -> LogNormal:
    return LogNormal(median / 1000.0, p99 / 1000.0)


class Latencies(msgspec.Struct, frozen=True, kw_only=True):
    """The emulated duration of every step of Pulsar that takes time. Seconds; defaults calibrated.

    Sources named below: [ZK] Hunt et al., "ZooKeeper: Wait-free coordination for Internet-scale
    systems", USENIX ATC 2010, §5 (requests served in about a millisecond on a LAN; writes go through
    the leader and a quorum fsync). [BK] StreamNative blog "Inside Apache Pulsar's Millisecond Write
    Path" (Sep 2025): a quorum write to bookies in 0.3 ms on a single-switch NVMe setup, more across
    racks/AZs. [LOAD] the topic-load steps as listed from BrokerService.loadOrCreatePersistentTopic /
    checkOwnershipAndCreatePersistentTopic (BewareMyPower, "Topic loading in Pulsar", Nov 2025 gist):
    about six metadata reads (mostly cached), ManagedLedgerFactory.asyncOpen (ML and cursor znodes,
    recovery of the last ledger from the bookies, a new ledger created), the PersistentTopic made.
    p99 values are ten times the median where no tail is published (an assumption, stated per field).
    """

    metadata_op: Distribution = _ms(1.0, 10.0)
    """Each metadata-store operation (get, exists, children, create, set, delete), as a ZooKeeper
    round trip. [ZK]: about 1 ms; p99 10 ms assumed (fsync and GC tails). Replaces
    `[metadata_store] latency`."""
    admin_call: Distribution = _ms(2.0, 20.0)
    """The admin REST call from the leader (or pulsar-admin) to the owner, unload or split
    (ModularLoadManagerImpl.doLoadShedding -> pulsar.getAdminClient().namespaces().unloadNamespaceBundle,
    checkNamespaceBundleSplit -> splitNamespaceBundle): HTTP over a kept-alive connection, one LAN round
    trip plus Jetty's handling; the metadata work of the operation is timed by metadata_op. Derived:
    1 round trip [BK's LAN] + handling, median 2 ms, p99 20 ms assumed."""
    topic_load: Distribution = _ms(10.0, 100.0)
    """Loading one topic on the broker that now owns its bundle (BrokerService.getTopic ->
    loadOrCreatePersistentTopic -> ManagedLedgerFactory.asyncOpen), once a permit of
    maxConcurrentTopicLoadRequest is held. Derived from [LOAD]: ~6 metadata round trips at [ZK]'s
    1 ms + two bookie round trips [BK] = about 10 ms median; p99 100 ms assumed (ledger recovery).
    Drawn only when the bookies are not modelled (`[capacity.bookkeeper] bookies = 0`); otherwise the
    open runs its steps through the metadata store and the bookies (bookkeeper_open.py)."""
    bundle_close: Distribution = Constant(0.02)
    """Fixed part of unloading a bundle (OwnedBundle.handleUnloadRequest: the ownership node marked
    disabled, the bundle's topic list taken). Was `[cluster] bundle_close_time` (20 ms, kept)."""
    topic_close: Distribution = Constant(0.002)
    """Closing one topic on unload (PersistentTopic.close: ledger closed = one bookie write [BK] and
    one metadata write [ZK]). BrokerService.unloadServiceUnit closes the bundle's topics concurrently
    and waits for all of them (FutureUtil.waitForAll), so a bundle takes bundle_close + the LARGEST of
    its topics' draws, cut at namespaceBundleUnloadingTimeoutMs. Was `[cluster] topic_close_time`
    (2 ms, kept)."""
    broker_start: Distribution = LogNormal(8.0, 20.0)
    """From process start until the broker opens its metadata session and registers
    (PulsarService.start: metadata store, BookKeeper client, managed-ledger factory, web service, load
    manager, then /loadbalance/brokers/<id>). Assumption: 8 s median (JVM start plus the steps above,
    as a broker log's "messaging service is ready" shows it), p99 20 s."""
    tcp_connect: Distribution = _ms(1.0, 5.0)
    """A client opening a connection to a broker: TCP handshake and CommandConnect/CommandConnected,
    two LAN round trips (ClientCnx). Derived: 2 x ~0.5 ms RTT [BK: 50 us one way per switch hop, more
    across racks]; p99 5 ms assumed."""
    producer_create: Distribution = _ms(1.0, 5.0)
    """The CommandProducer -> CommandProducerSuccess round trip, beyond loading the topic (timed by
    topic_load): one LAN round trip plus ServerCnx.handleProducer. Derived as tcp_connect's RTT."""
    subscribe: Distribution = _ms(2.0, 10.0)
    """The CommandSubscribe -> CommandSuccess round trip, beyond loading the topic: one round trip plus
    opening the subscription's cursor (one metadata read [ZK])."""
    lookup: Distribution = _ms(0.5, 5.0)
    """One lookup hop: the CommandLookupTopic round trip and ServerCnx/NamespaceService handling up to
    the first metadata read (timed by metadata_op). Derived: one LAN round trip; p99 5 ms assumed."""

    @classmethod
    def zero(cls, *, bundle_close: float = 0.0, topic_close: float = 0.0,
             metadata_op: float = 0.0) -> "Latencies":
        """Every step instantaneous but the given constants (the emulator before this module)."""
        values = {name: ZERO for name in LATENCY_NAMES}
        values.update(bundle_close=Constant(bundle_close), topic_close=Constant(topic_close),
                      metadata_op=Constant(metadata_op))
        return cls(**values)


LATENCY_NAMES: tuple[str, ...] = tuple(f.name for f in msgspec.structs.fields(Latencies))


class LatencySampler:
    """An actor's draws from `Latencies`, with its own stream (seed, name + "/latency")."""

    __slots__ = ("latencies", "rng")

    def __init__(self, latencies: Latencies, seed: int, name: str) -> None:
        self.latencies = latencies
        self.rng = derive_rng(seed, name + "/latency")

    def __call__(self, name: str) -> float:
        """One draw of the step `name` (a Latencies field), in seconds, >= 0."""
        d: Distribution = getattr(self.latencies, name)
        if type(d) is Constant:
            return d.value
        return max(0.0, d.sample(self.rng))

    def max_of(self, name: str, n: int) -> float:
        """The largest of `n` concurrent draws of `name` (one draw of randomness)."""
        d: Distribution = getattr(self.latencies, name)
        return max(0.0, d.max_of(n, self.rng))
