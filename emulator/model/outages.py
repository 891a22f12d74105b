"""Unavailable topic-seconds, the one definition (the summary, the metrics and `kpis.py` count with this
class; the Spark roll-up writes the same rule as Spark expressions and a test holds them equal).

A producer or consumer handle is *down* from its disconnect (`handle_disconnected` at t), or, for a
handle whose creation failed (`handle_failed`), from the moment it was wanted (`since`), until the
first `handle_reconnected` or `handle_closed` of that handle after it, or the end of the run. A topic
is *unavailable* while at least one of its handles is down: its unavailable seconds are the length of
the union of its handles' down intervals (touching intervals merge). So a producer and a consumer cut
off by the same unload make one unavailable topic-second per second, not two.

The other figure, kept under its own name, is `handle_seconds`: the down time summed over handles
(producer/consumer-seconds), what the summary called unavailable topic-seconds before the two were
told apart (212 against the roll-up's 106 on a run whose topics each had a producer and a consumer).
"""

from __future__ import annotations

import math
from typing import Hashable, Iterable

__all__ = ["TopicOutages", "union_length"]


def union_length(intervals: Iterable[tuple[float, float]], start: float = -math.inf,
                 end: float = math.inf) -> float:
    """Length of the union of [a, b] intervals, cut to [start, end]."""
    total = 0.0
    lo = hi = None
    for a, b in sorted(intervals):
        if lo is not None and hi is not None and a <= hi:
            hi = max(hi, b)
            continue
        if lo is not None and hi is not None:
            total += max(0.0, min(hi, end) - max(lo, start))
        lo, hi = a, b
    if lo is not None and hi is not None:
        total += max(0.0, min(hi, end) - max(lo, start))
    return total


class TopicOutages:
    """Down intervals per topic, fed in event order; totals at any `now` (a counter: never decreasing
    while `now` grows)."""

    def __init__(self) -> None:
        self.closed: dict[str, list[tuple[float, float]]] = {}   # finished down intervals per topic
        self._open: dict[Hashable, tuple[str, float]] = {}        # handle -> (topic, down since)
        self._open_topics: dict[str, int] = {}                    # topic -> handles down now
        self._settled: dict[str, float] = {}                      # topic -> union of its closed intervals
        self._settled_total = 0.0
        self._handle_closed_total = 0.0

    def down(self, handle: Hashable, topic: str, since: float) -> None:
        """The handle is down from `since` (a disconnect, or a failed creation's `since`)."""
        if handle in self._open:   # down already: the earlier start stands (the union of both)
            topic, start = self._open[handle]
            self._open[handle] = (topic, min(start, since))
            return
        self._open[handle] = (topic, since)
        self._open_topics[topic] = self._open_topics.get(topic, 0) + 1

    def up(self, handle: Hashable, t: float) -> None:
        """Reconnected or closed at `t`; nothing if the handle was not down."""
        entry = self._open.pop(handle, None)
        if entry is None:
            return
        topic, since = entry
        left = self._open_topics[topic] - 1
        if left:
            self._open_topics[topic] = left
        else:
            del self._open_topics[topic]
        end = max(since, t)
        self._handle_closed_total += end - since
        ivs = self.closed.setdefault(topic, [])
        ivs.append((since, end))
        settled = union_length(ivs)
        self._settled_total += settled - self._settled.get(topic, 0.0)
        self._settled[topic] = settled

    def is_down(self, handle: Hashable) -> bool:
        return handle in self._open

    def per_topic(self, now: float) -> dict[str, float]:
        """Unavailable seconds of every topic that had a down handle, up to `now`."""
        out = dict(self._settled)
        by_topic: dict[str, list[tuple[float, float]]] = {}
        for topic, since in self._open.values():
            by_topic.setdefault(topic, []).append((since, max(since, now)))
        for topic, opens in by_topic.items():
            out[topic] = union_length([*self.closed.get(topic, ()), *opens])
        return out

    def total(self, now: float) -> float:
        """Unavailable topic-seconds up to `now`: the sum of `per_topic(now)`, kept cheap for a counter
        read at every scrape (only topics with a handle down now are merged again)."""
        total = self._settled_total
        if not self._open_topics:
            return total
        by_topic: dict[str, list[tuple[float, float]]] = {}
        for topic, since in self._open.values():
            by_topic.setdefault(topic, []).append((since, max(since, now)))
        for topic, opens in by_topic.items():
            total += union_length([*self.closed.get(topic, ()), *opens]) - self._settled.get(topic, 0.0)
        return total

    def handle_seconds(self, now: float) -> float:
        """Down time summed over handles (producer/consumer-seconds), up to `now`."""
        return self._handle_closed_total + math.fsum(max(0.0, now - s) for _, s in self._open.values())

    def still_down(self) -> int:
        return len(self._open)
