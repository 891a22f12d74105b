"""Publish accounting: what every producer published, how long it waited, what failed, from events only.

Producers publish at their topic's rate (the workload's traffic model, or a `FlatLoad`'s rate): a
fluid model, no event per message. `PublishAccounting` listens to `cluster.events`:

* `HandleConnected` of a producer: it publishes from now on (a producer is created by its first
  connect; before that the application holds no producer to send with). A topic with p producers
  gives each 1/p of its rate.
* `HandleDisconnected` -> `HandleReconnected`: one outage window. The messages the producer sent
  during it (its share of the integral of the topic's rate) wait, time out or are refused as
  `emulator.model.publish_latency.outage_outcome` decides; the per-topic windows are kept exactly and
  the cluster's in `WaitBins`.
* `HandleClosed` while disconnected: ProducerImpl.closeAsync fails the pending messages
  (AlreadyClosedException), counted as `failed_closed`.

The integral of each topic's rate is kept as a cumulative vector brought up to date ("settled") every
`settle_interval` emulated seconds, by a timer on the run's loop at t0 + k x settle_interval (t0: when
the accounting was made), and interpolated in between: the work is one vector operation per settle and
O(1) per producer event, never per message. Settling only at those instants, which the run fixes, is
what keeps every read pure: a read (a Prometheus scrape of /metrics, an admin view, the summary, the
recorder) interpolates up to its `now` and changes nothing, so the same scenario, config and seed give
the same figures however often and whenever the run is read (issue 32). Without a running loop (a unit
test's fake clock) the producers' own events settle instead, at most once per `settle_interval`.

A message of an outage still running at read time has not been acknowledged: it is in no quantile
yet (its batch that already timed out is counted as failed).

`publish_accounting(cluster)` returns the cluster's accounting, creating it on first use, so the
metrics, the recorder and the summary read the same one; the runner creates it right after the
cluster starts.
"""

from __future__ import annotations

import asyncio
import math
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from emulator.cluster.events import (
    Event,
    HandleClosed,
    HandleConnected,
    HandleDisconnected,
    HandleEvent,
    HandleReconnected,
)
from emulator.cluster.messages import HandleKind
from emulator.model.publish_latency import (
    PUBLISH_LATENCY_BUCKETS,
    QUANTILES,
    BaseLatency,
    TabulatedMixture,
    PendingQueue,
    WaitBins,
    grouped_quantiles,
    mixture_quantiles,
    outage_outcome,
)

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster

__all__ = ["PUBLISH_FILE", "PublishAccounting", "PublishLine", "PublishStats", "publish_accounting",
           "publish_values"]

PUBLISH_FILE = "publish.jsonl"
"""Recording file: one PublishLine for the cluster (topic "") then one per topic, written at close."""


class PublishLine(msgspec.Struct, frozen=True, kw_only=True):
    """Publish latency of the cluster (`topic` "") or of one topic, up to `t`."""

    topic: str
    t: float
    messages: float
    """Messages acknowledged (fluid: not an integer)."""
    failed_timeout: float
    failed_queue_full: float
    failed_closed: float
    p50: float
    p99: float
    p999: float
    p9999: float

    @property
    def failed(self) -> float:
        return self.failed_timeout + self.failed_queue_full + self.failed_closed


class PublishStats(msgspec.Struct, frozen=True, kw_only=True):
    """The cluster's line, its histogram over Pulsar's buckets, and its latency sum."""

    cluster: PublishLine
    buckets: list[tuple[float, float]]
    """(upper bound s, cumulative messages), the last bound +inf."""
    latency_sum: float


class _Window(msgspec.Struct, array_like=True):
    n: float
    lo: float
    hi: float


class _Topic:
    """A topic that had an outage: its windows (exact) and its failures."""

    __slots__ = ("windows", "failed")

    def __init__(self) -> None:
        self.windows: list[_Window] = []
        self.failed = [0.0, 0.0, 0.0]   # timeout, queue full, closed


class _Down:
    """One producer's outage so far. `batches` send-timeout batches have failed (the last at
    `t + batches x send_timeout`, when the rate integral was `batch_cum`): `timed` of their messages
    failed by the timeout, `full` were refused by the full queue. Recorded as each batch fails, at
    the settle instants, so the failure counters only ever grow (Prometheus reads a drop as a reset)."""

    __slots__ = ("topic", "t", "cum", "share", "queue", "cap", "batches", "batch_cum", "timed", "full")

    def __init__(self, topic: int, t: float, cum: float, share: int, queue: PendingQueue, cap: float) -> None:
        self.topic, self.t, self.cum, self.share, self.queue, self.cap = topic, t, cum, share, queue, cap
        self.batches = 0
        self.batch_cum = cum
        self.timed = self.full = 0.0

    def batches_until(self, now: float, rates: "_Rates") -> tuple[int, float, float, float]:
        """(batches, batch_cum, timed, full) with the batches that failed up to `now` added: each is
        the messages sent since the previous one (the rate integral between the two instants),
        min(that, the queue's capacity) timed out, the rest refused. `now` must not be before the
        rates' last settle (`_Rates.at` interpolates forward only)."""
        batches, batch_cum, timed, full = self.batches, self.batch_cum, self.timed, self.full
        t_out = self.queue.send_timeout
        if t_out <= 0:
            return batches, batch_cum, timed, full
        while self.t + (batches + 1) * t_out <= now:
            batches += 1
            cum = rates.at(self.topic, self.t + batches * t_out)
            sent = max(0.0, cum - batch_cum) / self.share
            accepted = min(sent, self.cap)
            timed += accepted
            full += sent - accepted
            batch_cum = max(batch_cum, cum)
        return batches, batch_cum, timed, full

    def record_batches(self, now: float, rates: "_Rates") -> None:
        self.batches, self.batch_cum, self.timed, self.full = self.batches_until(now, rates)


class _Rates:
    """Cumulative publish-rate integral per topic index, from the cluster's load source.

    With a traffic model (the workload's `WorkloadLoadSource`) the indices are the model's, and the
    integral follows its rates(t), re-read at each settle; a topic the model does not know carries no
    traffic (as `load.py` serves it). Otherwise (a `FlatLoad`) every topic has its constant rate."""

    def __init__(self, load_source: Any, now: float) -> None:
        traffic = getattr(load_source, "traffic", None)
        self.traffic = traffic if traffic is not None and hasattr(traffic, "rates") else None
        self.t = self.t0 = now
        if self.traffic is not None:
            self.names: list[str] = list(self.traffic.names)
            self.index: dict[str, int] = dict(self.traffic.index)
            self.known = len(self.names)
            self._size = [float(x) for x in np.asarray(self.traffic.msg_size, dtype=float)]
            self.rate = np.asarray(self.traffic.rates(now), dtype=float)
            self.cum = np.zeros(self.known)
        else:
            self.names, self.index, self.known = [], {}, 0
            self._flat_rate = float(getattr(load_source, "rate", 0.0) or 0.0)
            self._flat_size = float(getattr(load_source, "msg_size", 0.0) or 0.0)
            self._topic_rates = dict(getattr(load_source, "topic_rates", {}) or {})
            self._size = []
        self._flat: list[float] = []     # constant rate of each topic beyond the model's
        self._flat_array = np.zeros(0)

    def lookup(self, topic: str) -> int:
        i = self.index.get(topic)
        if i is not None:
            return i
        i = self.index[topic] = len(self.names)
        self.names.append(topic)
        if self.traffic is not None:
            self._flat.append(0.0)
            self._size.append(0.0)
        else:
            self._flat.append(float(self._topic_rates.get(topic, self._flat_rate)))
            self._size.append(self._flat_size)
        return i

    def size(self, i: int) -> float:
        return self._size[i]

    def settle(self, now: float) -> None:
        """Bring the integral to `now` and re-read the rates there: only at the instants the run fixes
        (`PublishAccounting._tick`, or events), never on a read."""
        if now <= self.t or self.traffic is None:
            return
        self.cum += self.rate * (now - self.t)
        self.t = now
        self.rate = np.asarray(self.traffic.rates(now), dtype=float)

    def at(self, i: int, now: float) -> float:
        if i >= self.known:
            return self._flat[i - self.known] * (now - self.t0)
        return float(self.cum[i] + self.rate[i] * max(0.0, now - self.t))

    def all_at(self, now: float) -> np.ndarray:
        if len(self._flat_array) != len(self._flat):
            self._flat_array = np.asarray(self._flat, dtype=float)
        flat = self._flat_array * (now - self.t0)
        if self.traffic is None:
            return flat
        return np.concatenate([self.cum + self.rate * max(0.0, now - self.t), flat])


class _Grown:
    """Float arrays indexed by topic, grown by doubling."""

    names = ("producers", "since", "sent", "window_total")
    producers: np.ndarray
    since: np.ndarray
    sent: np.ndarray
    window_total: np.ndarray

    def __init__(self) -> None:
        self.capacity = 0
        for name in self.names:
            setattr(self, name, np.zeros(0))

    def ensure(self, n: int) -> None:
        if n <= self.capacity:
            return
        cap = max(n, 2 * self.capacity, 1024)
        for name in self.names:
            old = getattr(self, name)
            new = np.zeros(cap)
            new[:len(old)] = old
            setattr(self, name, new)
        self.capacity = cap


class PublishAccounting:
    """See the module docstring. `base` and `queue` default to the cited Pulsar figures; the send
    timeout of each outage is its client's `ClientSettings.send_timeout` when it has one."""

    def __init__(self, cluster: "Cluster", *, base: BaseLatency | None = None,
                 queue: PendingQueue | None = None, settle_interval: float = 1.0) -> None:
        self.cluster = cluster
        self.base = base or BaseLatency()
        self.queue = queue or PendingQueue()
        self.settle_interval = settle_interval
        self._rates = _Rates(cluster.load_source, cluster.system.clock.now())
        # per topic index: producers, rate integral when the first came, messages of closed spells,
        # messages of finished outage windows (delivered or failed)
        self._a = _Grown()
        self._a.ensure(len(self._rates.names))
        self._topics: dict[int, _Topic] = {}     # topics that had an outage
        self._down: dict[tuple[str, int], _Down] = {}
        self._bins = WaitBins()
        self._queues: dict[str, PendingQueue] = {}
        self._last_segment: dict[PendingQueue, PendingQueue] = {}
        self.failed = [0.0, 0.0, 0.0]             # timeout, queue full, closed
        self.window_total = 0.0
        self.window_wait_sum = 0.0     # over delivered window messages, of their wait
        self._events = 0
        self._table: tuple[int, TabulatedMixture, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
        self._per_topic: tuple[tuple[float, int], list[PublishLine]] | None = None
        self._unsubscribe = cluster.events.subscribe(self._on_event)
        self._timer: asyncio.TimerHandle | None = None
        self._ticks = self._start_ticks()

    def close(self) -> None:
        self._unsubscribe()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # ------------------------------------------------------------------ settling

    def _start_ticks(self) -> bool:
        """Settle on a timer at t0 + k x settle_interval (see the module docstring); False when there
        is nothing to settle (constant rates) or no running loop to time it."""
        if self._rates.traffic is None:
            return False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        # the loop's time of emulated t0 (the same number on the emulator's zero-origin loops)
        self._loop_t0 = loop.time() - (self.cluster.system.clock.now() - self._rates.t0)
        self._arm(loop, 1)
        return True

    def _arm(self, loop: asyncio.AbstractEventLoop, k: int) -> None:
        self._timer = loop.call_at(self._loop_t0 + k * self.settle_interval, self._tick, loop, k)

    def _tick(self, loop: asyncio.AbstractEventLoop, k: int) -> None:
        self._timer = None
        system = getattr(self.cluster, "system", None)
        if getattr(system, "closed", False):
            return          # the run is over: no timer left to keep a finished loop's time moving
        self._settle(self._rates.t0 + k * self.settle_interval)
        self._arm(loop, k + 1)

    def _settle(self, now: float) -> None:
        """The send-timeout batches that failed up to `now` are recorded first: they need the
        integral between the last settle and `now`, which the settle replaces."""
        for down in self._down.values():
            down.record_batches(now, self._rates)
        self._rates.settle(now)

    # ------------------------------------------------------------------ events

    def _on_event(self, e: Event) -> None:
        self._events += 1
        t = e.t
        if not self._ticks and t - self._rates.t >= self.settle_interval:
            self._settle(t)
        match e:
            case HandleConnected():
                if self._is_producer(e):
                    self._producer_added(e.topic, t)
            case HandleDisconnected():
                if self._is_producer(e):
                    i = self._index(e.topic)
                    queue = self._queue_of(e.client)
                    self._down[(e.client, e.handle)] = _Down(
                        i, t, self._rates.at(i, t), max(1, int(self._a.producers[i])), queue,
                        queue.capacity(self._rates.size(i)))
            case HandleReconnected():
                down = self._down.pop((e.client, e.handle), None)
                if down is not None:
                    self._window_ended(down, t, closed=False)
            case HandleClosed():
                down = self._down.pop((e.client, e.handle), None)
                if down is not None:
                    self._window_ended(down, t, closed=True)
                if down is not None or self._is_producer(e):
                    self._producer_removed(e.topic, t)

    def _is_producer(self, e: HandleEvent) -> bool:
        client = self.cluster.clients.get(e.client)
        h = client.handles.get(e.handle) if client is not None else None
        return h is not None and h.kind is HandleKind.PRODUCER

    def _queue_of(self, client_name: str) -> PendingQueue:
        q = self._queues.get(client_name)
        if q is None:
            client = self.cluster.clients.get(client_name)
            timeout = getattr(getattr(client, "settings", None), "send_timeout", None)
            q = self.queue if timeout is None else msgspec.structs.replace(self.queue, send_timeout=timeout)
            self._queues[client_name] = q
        return q

    def _index(self, topic: str) -> int:
        i = self._rates.lookup(topic)
        self._a.ensure(i + 1)
        return i

    def _producer_added(self, name: str, t: float) -> None:
        i = self._index(name)
        a = self._a
        if a.producers[i] == 0:
            a.since[i] = self._rates.at(i, t)
        a.producers[i] += 1

    def _producer_removed(self, name: str, t: float) -> None:
        i = self._index(name)
        a = self._a
        if a.producers[i] <= 0:
            return
        a.producers[i] -= 1
        if a.producers[i] == 0:
            a.sent[i] += max(0.0, self._rates.at(i, t) - a.since[i])

    def _window_ended(self, down: _Down, t: float, *, closed: bool) -> None:
        """The send-timeout batches as they failed (`_Down`), then the last segment since the last
        batch: queued up to the queue's capacity (delivered now, or failed by the close), the rest
        refused (`outage_outcome` of that segment alone)."""
        i = down.topic
        duration = t - down.t
        end = self._rates.at(i, t)
        messages = max(0.0, end - down.cum) / down.share
        if duration <= 0 or messages <= 0:
            return
        topic = self._topics.get(i)
        if topic is None:
            topic = self._topics[i] = _Topic()
        down.record_batches(t, self._rates)
        rest = duration - down.batches * down.queue.send_timeout
        out = outage_outcome(rest, max(0.0, end - down.batch_cum) / down.share, self._rates.size(i),
                             self._no_timeout(down.queue))
        failed = (down.timed, down.full + out.failed_queue_full, out.delivered if closed else 0.0)
        if not closed:
            topic.windows.append(_Window(out.delivered, out.wait_lo, out.wait_hi))
            self._bins.add(out.delivered, out.wait_lo, out.wait_hi)
            self.window_wait_sum += out.delivered * (out.wait_lo + out.wait_hi) / 2.0
        for k in range(3):
            topic.failed[k] += failed[k]
            self.failed[k] += failed[k]
        self._a.window_total[i] += messages
        self.window_total += messages

    def _no_timeout(self, queue: PendingQueue) -> PendingQueue:
        q = self._last_segment.get(queue)
        if q is None:
            q = self._last_segment[queue] = msgspec.structs.replace(queue, send_timeout=0.0)
        return q

    # ------------------------------------------------------------------ reading

    def _ongoing(self, now: float) -> tuple[dict[int, float], dict[int, float], dict[int, float]]:
        """Per topic: messages of outages still running, how many of them already timed out, and how
        many the full queue refused in the batches that failed (both final: counters that grow)."""
        sent: dict[int, float] = {}
        timed: dict[int, float] = {}
        full: dict[int, float] = {}
        for down in self._down.values():
            if now - down.t <= 0:
                continue
            i = down.topic
            n = max(0.0, self._rates.at(i, now) - down.cum) / down.share
            sent[i] = sent.get(i, 0.0) + n
            _, _, down_timed, down_full = down.batches_until(now, self._rates)
            if down_timed or down_full:
                timed[i] = timed.get(i, 0.0) + down_timed
                full[i] = full.get(i, 0.0) + down_full
        return sent, timed, full

    def _sent(self, now: float) -> np.ndarray:
        """Messages published per topic index up to `now`."""
        cum = self._rates.all_at(now)
        a = self._a
        n = len(cum)
        producing = a.producers[:n] > 0
        return a.sent[:n] + np.where(producing, cum - a.since[:n], 0.0)

    def stats(self, now: float, *, exact: bool = False) -> PublishStats:
        """The cluster's quantiles, failures and histogram at `now`.

        Cheap enough for every recorder sample: the windows are the cluster's `WaitBins`, tabulated
        once per change (`TabulatedMixture`, quantiles to 0.4 %); `exact=True` (the summary, the
        recording's publish.jsonl) searches the exact mixture instead. A pure read: it settles nothing
        (the module docstring says why), the tabulation is a cache of the windows."""
        sent_total = float(self._sent(now).sum())
        ongoing, timed, full = self._ongoing(now)
        direct = max(0.0, sent_total - self.window_total - sum(ongoing.values())) + self._bins.no_wait
        bins = self._bins
        table = self._table
        if table is None or table[0] != bins.version:
            n, lo, hi = bins.windows()
            table = self._table = (bins.version, TabulatedMixture(self.base, n, lo, hi, PUBLISH_LATENCY_BUCKETS),
                                   (n, lo, hi))
        tab = table[1]
        total = direct + tab.windows_total
        if exact:
            qs = mixture_quantiles(QUANTILES, self.base, direct, *table[2])
        else:
            qs = tab.quantiles(QUANTILES, direct)
        cumulative = np.minimum(np.maximum.accumulate(tab.counts(direct)), total)
        buckets = [(float(b), float(c)) for b, c in zip(PUBLISH_LATENCY_BUCKETS, cumulative)] + [(math.inf, total)]
        line = PublishLine(topic="", t=now, messages=total,
                           failed_timeout=self.failed[0] + sum(timed.values()),
                           failed_queue_full=self.failed[1] + sum(full.values()), failed_closed=self.failed[2],
                           p50=qs[0], p99=qs[1], p999=qs[2], p9999=qs[3])
        return PublishStats(cluster=line, buckets=buckets,
                            latency_sum=total * self.base.mean + self.window_wait_sum)

    def per_topic(self, now: float) -> list[PublishLine]:
        """One line per topic that ever had a producer, sorted by name (exact mixtures per topic).
        Kept until the next event: the summary and the recorder's close both ask at the run's end."""
        key = (now, self._events)
        if self._per_topic is not None and self._per_topic[0] == key:
            return self._per_topic[1]
        lines = self._per_topic_lines(now)
        self._per_topic = (key, lines)
        return lines

    def _per_topic_lines(self, now: float) -> list[PublishLine]:
        sent = self._sent(now)
        ongoing, timed, full = self._ongoing(now)
        a = self._a
        n_idx = len(sent)
        had = np.nonzero((a.producers[:n_idx] > 0) | (a.sent[:n_idx] > 0) | (a.window_total[:n_idx] > 0))[0]
        names = self._rates.names
        ids = sorted((int(i) for i in had), key=names.__getitem__)
        ids_set = set(ids)
        ids.extend(sorted((i for i in self._topics if i not in ids_set), key=names.__getitem__))
        if not ids:
            return []
        direct = np.array([max(0.0, sent[i] - a.window_total[i] - ongoing.get(i, 0.0)) for i in ids])
        qs = np.empty((len(ids), len(QUANTILES)))
        qs[:] = [self.base.quantile(p) for p in QUANTILES]
        rows = [k for k, i in enumerate(ids) if i in self._topics and self._topics[i].windows]
        if rows:
            group, n, lo, hi = [], [], [], []
            for g, k in enumerate(rows):
                for w in self._topics[ids[k]].windows:
                    group.append(g)
                    n.append(w.n)
                    lo.append(w.lo)
                    hi.append(w.hi)
            sel = np.asarray(rows)
            qs[sel] = grouped_quantiles(QUANTILES, self.base, direct[sel], np.asarray(group, dtype=np.int64),
                                        np.asarray(n), np.asarray(lo), np.asarray(hi))
        out = []
        zero = [0.0, 0.0, 0.0]
        for k, i in enumerate(ids):
            topic = self._topics.get(i)
            failed = topic.failed if topic is not None else zero
            delivered = direct[k] + (sum(w.n for w in topic.windows) if topic is not None else 0.0)
            out.append(PublishLine(
                topic=names[i], t=now, messages=float(delivered),
                failed_timeout=failed[0] + timed.get(i, 0.0), failed_queue_full=failed[1] + full.get(i, 0.0),
                failed_closed=failed[2], p50=float(qs[k, 0]), p99=float(qs[k, 1]),
                p999=float(qs[k, 2]), p9999=float(qs[k, 3])))
        return out


def publish_accounting(cluster: "Cluster") -> PublishAccounting:
    """The cluster's accounting (attribute `publish_accounting`), made on first use."""
    acc = getattr(cluster, "publish_accounting", None)
    if acc is None:
        acc = PublishAccounting(cluster)
        cluster.publish_accounting = acc   # type: ignore[attr-defined]
    return acc


def publish_families(k: Any, cluster_name: str, acc: PublishAccounting, now: float) -> list[Any]:
    """The metrics families (built with `k`'s classes, see `emulator.observe.metrics`):

    * `pulsar_lb_emulator_publish_latency_seconds{cluster}` histogram over Pulsar's publish latency
      buckets (`PUBLISH_LATENCY_BUCKETS`), fluid counts (messages need not be whole);
    * `pulsar_lb_emulator_publish_latency_quantile_seconds{cluster,quantile}` gauge: P50, P99, P99.9,
      P99.99 of the exact mixture (not interpolated from the coarse buckets);
    * `pulsar_lb_emulator_publish_failed_total{cluster,reason}` counter, reason timeout | queue_full |
      closed (SendTimeoutException, ProducerQueueIsFullError, AlreadyClosedException)."""
    from prometheus_client.utils import floatToGoString

    s = acc.stats(now)
    line = s.cluster
    C = ("cluster",)
    h = k.histogram("pulsar_lb_emulator_publish_latency_seconds",
                    "Publish latency (send to ack) of every acknowledged message, s; fluid counts", labels=C)
    h.add_metric((cluster_name,), [(floatToGoString(b), c) for b, c in s.buckets], sum_value=s.latency_sum)
    q = k.gauge("pulsar_lb_emulator_publish_latency_quantile_seconds",
                "Publish latency quantiles of the exact mixture (base + waits while disconnected), s",
                labels=("cluster", "quantile"))
    for p, v in zip(QUANTILES, (line.p50, line.p99, line.p999, line.p9999)):
        q.add_metric((cluster_name, floatToGoString(p)), v)
    f = k.counter("pulsar_lb_emulator_publish_failed",
                  "Messages whose send failed: send timeout, queue full, producer closed", labels=("cluster", "reason"))
    for reason, v in (("timeout", line.failed_timeout), ("queue_full", line.failed_queue_full),
                      ("closed", line.failed_closed)):
        f.add_metric((cluster_name, reason), v)
    return [h, q, f]


def publish_values(acc: PublishAccounting, now: float) -> list[Any]:
    """The values of `publish_families`' samples in their order (the recorder's rows: see
    `emulator.observe.metrics.ClusterMetrics.rows`)."""
    s = acc.stats(now)
    line = s.cluster
    return [*(c for _, c in s.buckets), s.buckets[-1][1], s.latency_sum,
            line.p50, line.p99, line.p999, line.p9999,
            line.failed_timeout, line.failed_queue_full, line.failed_closed]


WORST_TOPICS = 5
"""Topics the summary lists by their P99.99 (the recording's publish.jsonl has every topic)."""


def summary_lines(acc: PublishAccounting | None, now: float) -> tuple[PublishLine | None, list[PublishLine]]:
    """The cluster's line and the `WORST_TOPICS` topics with the highest P99.99 (ties by name)."""
    if acc is None:
        return None, []
    topics = acc.per_topic(now)
    worst = sorted(topics, key=lambda p: (-p.p9999, p.topic))[:WORST_TOPICS]
    return acc.stats(now, exact=True).cluster, worst


def _ms(x: float) -> str:
    return f"{x * 1000.0:.1f} ms" if x < 1.0 else f"{x:.3f} s"


def format_publish(line: PublishLine | None, worst: list[PublishLine]) -> list[str]:
    """Summary text lines (fixed layout, deterministic)."""
    if line is None:
        return []
    out = [f"  publish latency    p50 {_ms(line.p50)}; p99 {_ms(line.p99)}; p99.9 {_ms(line.p999)}; "
           f"p99.99 {_ms(line.p9999)}; {line.messages:,.0f} acked",
           f"  failed sends       {line.failed:,.0f} (send timeout {line.failed_timeout:,.0f}, "
           f"queue full {line.failed_queue_full:,.0f}, closed {line.failed_closed:,.0f})"]
    for p in worst:
        out.append(f"    {p.topic}: p50 {_ms(p.p50)}, p99 {_ms(p.p99)}, p99.9 {_ms(p.p999)}, "
                   f"p99.99 {_ms(p.p9999)}; failed {p.failed:,.0f}")
    return out
