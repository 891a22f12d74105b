"""The client's reconnection backoff (org.apache.pulsar.client.impl.Backoff): one per producer or
consumer, apart from the client actor that schedules with it."""

from __future__ import annotations

import random
from typing import Protocol


class JitterSource(Protocol):
    """What a Backoff draws its jitter from: the client's `random.Random`, or a `LockstepJitter` stream."""

    def randrange(self, n: int, /) -> int: ...


class Backoff:
    """org.apache.pulsar.client.impl.Backoff in milliseconds, with the injected RNG for the jitter."""

    def __init__(self, initial_ms: int, max_ms: int, mandatory_stop_ms: int, rng: JitterSource) -> None:
        self.initial = initial_ms
        self.max = max_ms
        self.mandatory_stop = mandatory_stop_ms
        self._next = initial_ms
        self._rng = rng
        self._first_backoff_ms = 0
        self._mandatory_stop_made = False

    def next(self, now_ms: int) -> int:
        current = self._next
        if current < self.max:
            self._next = min(self._next * 2, self.max)
        if not self._mandatory_stop_made:
            elapsed = 0
            if self.initial == current:
                self._first_backoff_ms = now_ms
            else:
                elapsed = now_ms - self._first_backoff_ms
            if elapsed + current > self.mandatory_stop:
                current = max(self.initial, self.mandatory_stop - elapsed)
                self._mandatory_stop_made = True
        if current > 10:
            current -= self._rng.randrange(current // 10) if current // 10 > 0 else 0
        return max(self.initial, current)

    def reset(self) -> None:
        self._next = self.initial
        self._mandatory_stop_made = False


class LockstepJitter:
    """The C++ client's jitter (pulsar-client-cpp lib/Backoff.cc): each Backoff seeds its own RNG with
    `time(NULL)`, so every producer and consumer created in the same second draws the same jitter
    sequence and, after a common disconnect, retries at the same instants (their lookups of one topic
    then share one request). `stream(second)` is a Backoff's RNG: the k-th draw of every stream of
    one second is the same number, drawn once from the client's RNG. For `ClientSettings.lockstep_jitter`
    only; without it each Backoff draws from the client's RNG, as Java's Backoff does."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._draws: dict[int, list[float]] = {}

    def stream(self, second: int) -> "_Stream":
        draws = self._draws.get(second)
        if draws is None:
            draws = self._draws[second] = []
        return _Stream(draws, self._rng)


class _Stream:
    """One Backoff's jitter draws, shared position by position with the other streams of its second."""

    __slots__ = ("_draws", "_i", "_rng")

    def __init__(self, draws: list[float], rng: random.Random) -> None:
        self._draws, self._i, self._rng = draws, 0, rng

    def randrange(self, n: int) -> int:
        if self._i == len(self._draws):
            self._draws.append(self._rng.random())
        u = self._draws[self._i]
        self._i += 1
        return int(u * n)
