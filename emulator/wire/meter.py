"""What real clients actually send and receive, as topic rates the brokers report.

`RateMeter` counts messages and bytes per topic in one-second buckets of emulated time and gives the
mean over the last `window` seconds. `MeteredLoadSource` wraps the cluster's load source: a topic a
real client produced to or consumed from carries its measured rates on top of whatever the workload
gives it, so the brokers' bundle stats, their load reports and the load manager's shedding and split
decisions see the application's traffic like any other (LoadSource.bundle_stats). While a broker
owns such a topic its traffic has no closed form (`bundle_curves` answers None) and the stats windows
sample it at each report. Installed only when the wire protocol is on (`--pulsar-port`).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from typing import Any

from emulator.cluster.load_source import LoadSource, SystemUsage, TopicLoad, TrafficCurves
from emulator.model.loaddata import NamespaceBundleStats

__all__ = ["MeteredLoadSource", "RateMeter"]

_IN_MSGS, _IN_BYTES, _OUT_MSGS, _OUT_BYTES = range(4)


class RateMeter:
    def __init__(self, window: float = 10.0) -> None:
        self.window = window
        self._buckets: dict[str, deque[list[float]]] = {}   # [second, in msgs, in bytes, out msgs, out bytes]

    def _add(self, topic: str, now: float, col: int, msgs: int, size: int) -> None:
        second = math.floor(now)
        q = self._buckets.get(topic)
        if q is None:
            q = self._buckets[topic] = deque()
        if not q or q[-1][0] != second:
            q.append([second, 0.0, 0.0, 0.0, 0.0])
            while q and q[0][0] <= second - self.window - 1:
                q.popleft()
        q[-1][1 + col] += msgs
        q[-1][2 + col] += size

    def published(self, topic: str, now: float, msgs: int, size: int) -> None:
        self._add(topic, now, _IN_MSGS, msgs, size)

    def delivered(self, topic: str, now: float, msgs: int, size: int) -> None:
        self._add(topic, now, _OUT_MSGS, msgs, size)

    def topics(self) -> set[str]:
        return set(self._buckets)

    def rates(self, topic: str, now: float) -> tuple[float, float, float, float] | None:
        """(msg rate in, msg rate out, bytes/s in, bytes/s out) over the last window, or None."""
        q = self._buckets.get(topic)
        if q is None:
            return None
        lo = math.floor(now) - self.window
        sums = [0.0, 0.0, 0.0, 0.0]
        for b in q:
            if lo <= b[0] < lo + self.window:
                for i in range(4):
                    sums[i] += b[1 + i]
        w = self.window
        return sums[0] / w, sums[2] / w, sums[1] / w, sums[3] / w


class MeteredLoadSource:
    """`inner`'s stats plus the measured rates of real clients' topics (see the module docstring)."""

    def __init__(self, inner: LoadSource, meter: RateMeter) -> None:
        self.inner = inner
        self.meter = meter

    def __getattr__(self, name: str) -> Any:   # traffic, memory_usage, rate...: the inner source's
        return getattr(self.inner, name)

    def _metered(self, bundles: Mapping[str, Mapping[str, TopicLoad]]) -> bool:
        metered = self.meter.topics()
        return bool(metered) and any(t in metered for topics in bundles.values() for t in topics)

    def bundle_curves(self, broker_id: str, now: float,
                      bundles: Mapping[str, Mapping[str, TopicLoad]]) -> TrafficCurves | None:
        curves = getattr(self.inner, "bundle_curves", None)
        if curves is None or self._metered(bundles):
            return None
        result: TrafficCurves | None = curves(broker_id, now, bundles)
        return result

    def curve_still(self, broker_id: str, curve: TrafficCurves, now: float) -> bool:
        still = getattr(self.inner, "curve_still", None)
        return bool(still(broker_id, curve, now)) if still is not None else False

    def bundle_stats(self, broker_id: str, now: float,
                     bundles: Mapping[str, Mapping[str, TopicLoad]]) -> dict[str, NamespaceBundleStats]:
        out = self.inner.bundle_stats(broker_id, now, bundles)
        metered = self.meter.topics()
        if not metered:
            return out
        for bundle, topics in bundles.items():
            extra = [r for t in topics if t in metered and (r := self.meter.rates(t, now)) is not None]
            if not extra:
                continue
            s = out.get(bundle) or NamespaceBundleStats()
            out[bundle] = NamespaceBundleStats(
                msg_rate_in=s.msg_rate_in + sum(r[0] for r in extra),
                msg_rate_out=s.msg_rate_out + sum(r[1] for r in extra),
                msg_throughput_in=s.msg_throughput_in + sum(r[2] for r in extra),
                msg_throughput_out=s.msg_throughput_out + sum(r[3] for r in extra),
                consumer_count=s.consumer_count, producer_count=s.producer_count, topics=s.topics)
        return out

    def system_usage(self, broker_id: str, now: float,
                     stats: Mapping[str, NamespaceBundleStats]) -> SystemUsage:
        return self.inner.system_usage(broker_id, now, stats)
