"""What a broker's load report sees: stats periods and host-usage samples, not the traffic of the moment.

Two clocks sit between traffic and a load report in Pulsar, and `BrokerWindows` keeps both for one broker.

**Stats periods** (`BrokerService.startStatsUpdater`): `updateRates()` runs once when the broker service
starts, then at a fixed rate of `statsUpdateFrequencyInSecs` (60) after `statsUpdateInitialDelayInSecs`
(60). Each run is `PulsarStats.updateStats`: `bundleStats.clear()`, then for every bundle of the topics map
(`multiLayerTopicsMap`, the topics loaded at that moment) `topics = topics.size()` and each topic's
`PersistentTopic.updateRates` adds its producers' and consumers' rates and `producers.size()` /
consumer counts. A producer's rate is `Rate.calculateRate()` (pulsar-common `common/stats/Rate.java`):
messages counted since the previous calculation divided by the time since then, and the `Rate` object
starts its clock when it is made, so a producer (or topic) that arrived mid-period shows its mean over
the time it has been there, not a diluted one; a producer that left before the update is gone from
the sums. `ModularLoadManagerImpl
.updateLocalBrokerData` then reads `getBundleStats()` (`BrokerService` -> `PulsarStats.getBundleStats`):
the map of the last update, for the bundle list, the rates and the counts alike. So:

* the bundles a report lists are those served here at the last stats update (a bundle acquired since
  is missing; one unloaded or split since is still listed, the parent of a split included). As before,
  an owned bundle without topics is listed too (Pulsar loads a bundle's topics when it acquires it);
* a bundle's rates are the time mean of its traffic over the part of the last completed period it was
  on this broker: the exact integral divided by the time, which is what Pulsar's message counters
  measure (see "Exact means" below);
* topic, producer and consumer counts are those at the moment of the update.

**Exact means.** A load source that can give a broker's traffic in closed form (`bundle_curves`, a
`TrafficCurves`: per bundle c0 + c1 sin(wt) + c2 cos(wt), valid until the traffic's next breakpoint)
is integrated exactly: `_integrate` adds the antiderivative over each stretch, a stretch ends where
the curve's piece ends (a noise interval, a spike's edge: closed at that very instant) or where the
broker's bundles or the traffic model changed. The workload's source has this form for a base rate
times piecewise-constant factors times at most one diurnal curve (`TopicSubset.linear`). Changes of the
topic tables (attaches, detaches, bundles acquired or lost) and of the traffic model (scenario events)
are seen at the next report tick and counted from the tick before, as a sample would count them (their
instant is not known here). Otherwise (a ramp in progress, two diurnal curves, a source without
`bundle_curves` such as `FlatLoad`) the traffic is *sampled* at every report tick, the sample standing
for the time since the previous one (a right-endpoint sum over 5 s steps). Before issue 19's fourth round
every run was sampled; on a diurnal curve the right endpoint biased a period's mean by half a tick's
change (about 0.04 % in `default` while the curve rises), and a step between two ticks counted from the
tick before it.

Choice: the mean is taken per bundle, not per producer, so a topic that joins a bundle already present
mid-period is averaged over the bundle's time here (Pulsar: over its own time). Equal for steady traffic and
for bundles that arrive whole (acquisition, split), which is the common case.

**Host usage** (`LinuxBrokerHostUsageImpl`): `calculateBrokerHostUsage()` runs in the constructor, then
with a fixed delay of `loadBalancerHostUsageCheckIntervalMinutes` (1). CPU is the /proc/stat (or cgroup)
delta over the elapsed interval and bandwidth the NIC counter deltas over it, i.e. means over the last
interval (the first sample has no previous counters: bandwidth 0). Reports carry the last sample.
Heap and direct memory are read when the report is generated (`LoadManagerShared.getSystemResourceUsage`
overrides the host sample's memory with the JVM's), so they follow the traffic of the report tick.
The mean CPU is the resource model applied to the interval's mean traffic (it is linear in the traffic,
saturation and noise aside).

Cost: with a closed form a report tick is one identity check of the source's curve and the instant's
totals from three per-broker sums (for the memory read at report time); the per-bundle integrals run
when a stretch ends (every stats update and host sample, and at changes). Sampled, a stats sample equal
to the previous one (steady traffic: the C-level `==` of two dicts of structs) only extends that
sample's weight; the per-bundle sums run only when the numbers changed.
"""

from __future__ import annotations


import math
from collections.abc import Mapping

from emulator.model.loaddata import NamespaceBundleStats, ResourceUsage, sum_bundle_stats

from .load_source import LoadSource, SystemUsage, TopicLoad, TrafficCurves

__all__ = ["BrokerWindows"]


class BrokerWindows:
    """One broker's stats period and host-usage interval: `sample` at every report tick, `update_stats`
    and `sample_host` on their own clocks. `stats_version` / `host_version` change when a new update
    or sample is published, so the broker rebuilds its report only then."""

    __slots__ = ("broker_id", "load_source", "_cur", "_cur_totals", "_cur_dt", "_last_t", "_sampled", "_acc",
                 "_host_acc", "_host_dt", "_host_started", "bundle_stats", "stats_version",
                 "stats_updated_at", "host_usage", "host_version", "host_sampled_at", "_curves",
                 "_seg", "_seg_t0", "_still")

    def __init__(self, broker_id: str, load_source: LoadSource, now: float) -> None:
        self.broker_id = broker_id
        self.load_source = load_source
        self._cur: dict[str, NamespaceBundleStats] = {}   # the last sample, not yet added to _acc
        self._cur_totals = NamespaceBundleStats()
        self._cur_dt = 0.0                                  # the time the last sample stands for
        self._last_t = now
        self._sampled = False
        # bundle -> [rate in, rate out, throughput in, throughput out] x seconds, and seconds
        self._acc: dict[str, list[float]] = {}
        self._host_acc = [0.0] * 7       # broker totals x seconds (4 rates, topics, producers, consumers)
        self._host_dt = 0.0
        self._host_started = False
        self.bundle_stats: dict[str, NamespaceBundleStats] = {}
        self.stats_version = 0
        self.stats_updated_at = now
        self.host_usage: SystemUsage | None = None
        self.host_version = 0
        self.host_sampled_at = now
        self._curves = getattr(load_source, "bundle_curves", None)
        self._still = getattr(load_source, "curve_still", None)
        self._seg: TrafficCurves | None = None   # the closed form in force since _seg_t0
        self._seg_t0 = now

    # ------------------------------------------------------------------ sampling

    def sampled_at(self, now: float) -> bool:
        """True if a sample was taken at `now` already: the report tick, the stats update and the
        host sample fall on the same instants (5 s divides 60 s), and one sample serves them all."""
        return self._last_t == now and self._sampled

    @property
    def current_totals(self) -> NamespaceBundleStats:
        """The broker's totals of the last sample."""
        return self._cur_totals

    def track(self, now: float, topics: Mapping[str, Mapping[str, TopicLoad]]) -> NamespaceBundleStats:
        """The broker's bundles (`topics`: bundle -> its topic table) as they are at `now`; returns
        the totals of this instant. Exact means when the load source gives its traffic in closed
        form (`bundle_curves`), a `sample` of `bundle_stats` otherwise (see the module docstring)."""
        curves = self._curves
        c = curves(self.broker_id, now, topics) if curves is not None else None
        if c is None:
            if self._seg is not None:
                self._integrate(self._last_t)
                self._seg = None
            return self.sample(now, self.load_source.bundle_stats(self.broker_id, now, topics))
        seg = self._seg
        if seg is None:                  # after warm start, or samples: the closed form from here
            self._flush()
            self._cur = {}
            self._seg, self._seg_t0 = c, self._last_t
        elif c is not seg:
            if c.key == seg.key and seg.until <= now:
                # the same tables and model, past a breakpoint of the traffic (a noise interval,
                # a spike's edge): close each piece where it ends
                assert curves is not None        # c came from it
                while seg.until <= now:
                    t = seg.until
                    self._integrate(t)
                    nxt = curves(self.broker_id, t, topics)
                    if nxt is None:
                        # no closed form from t on: a ramp began there and ended before `now`
                        # (shorter than a tick); what follows t is counted as the form in force
                        # now, from t on, as a sample taken now would be
                        break
                    if nxt.until <= t:   # pragma: no cover - a source's bug
                        raise RuntimeError(f"{self.load_source!r}.bundle_curves at t={t}: no piece "
                                           f"after the one that ended there")
                    self._seg = seg = nxt
                self._seg = c
            else:
                # tables or traffic changed since the last tick: seen now, counted from the last
                # tick on, as a sample would be (the change's instant is not known here)
                self._integrate(self._last_t)
                self._seg = c
        return self._advance(c, now)

    def unchanged(self, now: float) -> bool:
        """True if the closed form in force is still the one the load source gives at `now`, for
        the same tables: the caller knows the tables did not change since the last `track`
        (`track` would find the same curve object and only `advance`)."""
        seg = self._seg
        still = self._still
        return seg is not None and still is not None and still(self.broker_id, seg, now)

    def advance(self, now: float) -> NamespaceBundleStats:
        """`track(now, tables)` when `unchanged(now)`: the totals of `now` from the closed form."""
        c = self._seg
        assert c is not None
        return self._advance(c, now)

    def _advance(self, c: TrafficCurves, now: float) -> NamespaceBundleStats:
        self._last_t = now
        self._sampled = True
        x = c.omega * (now - c.origin)
        s, co = (math.sin(x), math.cos(x)) if c.omega else (0.0, 0.0)
        k0, k1, k2 = c.totals
        consumers, producers, n = c.total_counts
        self._cur_totals = totals = NamespaceBundleStats(
            k0[0] + k1[0] * s + k2[0] * co, k0[1] + k1[1] * s + k2[1] * co,
            k0[2] + k1[2] * s + k2[2] * co, k0[3] + k1[3] * s + k2[3] * co,
            consumers, producers, n)
        return totals

    def _integrate(self, end: float) -> None:
        """Add the closed form's exact integrals from `_seg_t0` to `end` to both windows' sums."""
        c = self._seg
        t0 = self._seg_t0
        dt = end - t0
        if c is None or dt <= 0.0:
            return
        self._seg_t0 = end
        coef = c.coef
        k0, k1, k2 = c.totals
        if c.omega:
            # int sin(w t) over [a, b] = 2 sin(w (a+b)/2) sin(w (b-a)/2) / w, and likewise cos: no
            # difference of nearly equal cosines
            w = c.omega
            half = 2.0 * math.sin(0.5 * w * dt) / w
            mid = 0.5 * w * (t0 + end - 2.0 * c.origin)
            i_sin, i_cos = half * math.sin(mid), half * math.cos(mid)
            vals = (coef[0] * dt + coef[1] * i_sin + coef[2] * i_cos).tolist()
            tot = [k0[j] * dt + k1[j] * i_sin + k2[j] * i_cos for j in range(4)]
        else:
            vals = (coef[0] * dt).tolist()
            tot = [k0[j] * dt for j in range(4)]
        acc = self._acc
        nb = len(c.names)
        for b, name in enumerate(c.names):
            a = acc.get(name)
            if a is None:
                acc[name] = [vals[b], vals[nb + b], vals[2 * nb + b], vals[3 * nb + b], dt]
            else:
                a[0] += vals[b]
                a[1] += vals[nb + b]
                a[2] += vals[2 * nb + b]
                a[3] += vals[3 * nb + b]
                a[4] += dt
        h = self._host_acc
        consumers, producers, topics = c.total_counts
        h[0] += tot[0]
        h[1] += tot[1]
        h[2] += tot[2]
        h[3] += tot[3]
        h[4] += topics * dt
        h[5] += producers * dt
        h[6] += consumers * dt
        self._host_dt += dt

    def _end_at(self, now: float) -> None:
        """Everything up to `now` into the sums (a period or a host interval ends)."""
        if self._seg is not None:
            self._integrate(now)
        else:
            self._flush()

    def _present(self, now: float) -> dict[str, NamespaceBundleStats]:
        """The bundles here at `now` with their rates and counts of the moment."""
        c = self._seg
        if c is None:
            return self._cur
        x = c.omega * (now - c.origin)
        s, co = (math.sin(x), math.cos(x)) if c.omega else (0.0, 0.0)
        v = (c.coef[0] + c.coef[1] * s + c.coef[2] * co).tolist()
        nb = len(c.names)
        return {name: NamespaceBundleStats(v[b], v[nb + b], v[2 * nb + b], v[3 * nb + b],
                                           c.consumers[b], c.producers[b], c.topics[b])
                for b, name in enumerate(c.names)}

    def sample(self, now: float, stats: dict[str, NamespaceBundleStats]) -> NamespaceBundleStats:
        """The traffic at `now` stands for the time since the previous sample. Returns its totals."""
        dt = now - self._last_t
        self._last_t = now
        self._sampled = True
        if stats == self._cur:
            self._cur_dt += dt
            return self._cur_totals
        self._flush()
        self._cur = stats
        self._cur_dt = dt
        self._cur_totals = totals = sum_bundle_stats(stats)
        return totals

    def _flush(self) -> None:
        """Add the current sample, weighted by the time it stands for, to both windows' sums."""
        w = self._cur_dt
        if w <= 0.0:
            return
        self._cur_dt = 0.0
        acc = self._acc
        for name, s in self._cur.items():
            a = acc.get(name)
            if a is None:
                acc[name] = [s.msg_rate_in * w, s.msg_rate_out * w, s.msg_throughput_in * w,
                             s.msg_throughput_out * w, w]
            else:
                a[0] += s.msg_rate_in * w
                a[1] += s.msg_rate_out * w
                a[2] += s.msg_throughput_in * w
                a[3] += s.msg_throughput_out * w
                a[4] += w
        t = self._cur_totals
        h = self._host_acc
        h[0] += t.msg_rate_in * w
        h[1] += t.msg_rate_out * w
        h[2] += t.msg_throughput_in * w
        h[3] += t.msg_throughput_out * w
        h[4] += t.topics * w
        h[5] += t.producer_count * w
        h[6] += t.consumer_count * w
        self._host_dt += w

    # ------------------------------------------------------------------ stats period

    def update_stats(self, now: float) -> dict[str, NamespaceBundleStats]:
        """PulsarStats.updateStats: publish each present bundle's mean over the period just ended and
        its counts of the moment; start a new period. Call right after a `track` at `now`."""
        self._end_at(now)
        acc = self._acc
        out: dict[str, NamespaceBundleStats] = {}
        for name, s in self._present(now).items():
            a = acc.get(name)
            if a is None or a[4] <= 0.0:   # present only at this instant: its rates of the moment
                out[name] = NamespaceBundleStats(
                    s.msg_rate_in, s.msg_rate_out, s.msg_throughput_in, s.msg_throughput_out,
                    s.consumer_count, s.producer_count, s.topics)
            else:
                secs = a[4]
                out[name] = NamespaceBundleStats(
                    a[0] / secs, a[1] / secs, a[2] / secs, a[3] / secs,
                    s.consumer_count, s.producer_count, s.topics)
        acc.clear()
        self.bundle_stats = out
        self.stats_version += 1
        self.stats_updated_at = now
        return out

    # ------------------------------------------------------------------ warm start

    def warm(self, now: float, stats: dict[str, NamespaceBundleStats]) -> None:
        """A scenario's warm start: `stats` (the traffic of `now`) is taken to have been steady for
        longer than either window, so the published stats period and host sample are its values,
        bandwidth included, and both windows go on from `now` as if they had just been published.
        The next stats update and host sample then report the same traffic if it stays steady."""
        self._acc.clear()
        self._host_acc = [0.0] * 7
        self._host_dt = 0.0
        self._seg = None
        self._cur = stats
        self._cur_dt = 0.0
        self._last_t = now
        self._sampled = True
        self._cur_totals = totals = sum_bundle_stats(stats)
        self.bundle_stats = {name: NamespaceBundleStats(
            s.msg_rate_in, s.msg_rate_out, s.msg_throughput_in, s.msg_throughput_out,
            s.consumer_count, s.producer_count, s.topics) for name, s in stats.items()}
        self.stats_version += 1
        self.stats_updated_at = now
        self._host_started = True
        self.host_usage = self.load_source.system_usage(self.broker_id, now, {"": totals})
        self.host_version += 1
        self.host_sampled_at = now

    # ------------------------------------------------------------------ host usage

    def sample_host(self, now: float) -> SystemUsage:
        """LinuxBrokerHostUsageImpl.calculateBrokerHostUsage: CPU and bandwidth as the means over the
        interval since the previous sample (bandwidth 0 on the first), from the interval's mean
        traffic. Call right after a `track` at `now`. The memory fields are replaced at report time
        (see the module docstring)."""
        self._end_at(now)
        h = self._host_acc
        secs = self._host_dt
        if secs > 0.0:
            # counts as means too (CPU per topic and session over the interval): floats, which the
            # load sources only add up
            mean = NamespaceBundleStats(h[0] / secs, h[1] / secs, h[2] / secs, h[3] / secs,
                                        h[6] / secs, h[5] / secs, h[4] / secs)  # type: ignore[arg-type]
        else:
            mean = self._cur_totals
        usage = self.load_source.system_usage(self.broker_id, now, {"": mean})
        if not self._host_started:
            self._host_started = True
            usage.bandwidth_in = ResourceUsage(usage=0.0, limit=usage.bandwidth_in.limit)
            usage.bandwidth_out = ResourceUsage(usage=0.0, limit=usage.bandwidth_out.limit)
        self._host_acc = [0.0] * 7
        self._host_dt = 0.0
        self.host_usage = usage
        self.host_version += 1
        self.host_sampled_at = now
        return usage
