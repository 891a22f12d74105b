"""The client's reconnection backoff (org.apache.pulsar.client.impl.Backoff): one per producer or
consumer, apart from the client actor that schedules with it."""

from __future__ import annotations

import random


class Backoff:
    """org.apache.pulsar.client.impl.Backoff in milliseconds, with the injected RNG for the jitter."""

    def __init__(self, initial_ms: int, max_ms: int, mandatory_stop_ms: int, rng: random.Random) -> None:
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
