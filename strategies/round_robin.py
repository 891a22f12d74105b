"""RoundRobinBrokerSelector (§5.3): places PIP-380 shedding-excluded namespaces.

Java's `List.copyOf(candidates)` takes the HashSet's order; we take sorted broker ids. The counter
wraps at Integer.MAX_VALUE exactly like Java's AtomicInteger update.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from strategies.base import BasePlacementStrategy

if TYPE_CHECKING:
    from emulator.model.config import ServiceConfig
    from emulator.model.loaddata import BundleData, LoadData

__all__ = ["RoundRobinBrokerSelector"]

INTEGER_MAX_VALUE = 2**31 - 1


class RoundRobinBrokerSelector(BasePlacementStrategy):
    """Cycles through the candidates; the cached list survives as long as its size and members fit."""

    placement_reads_bundle_data = False  # broker data and the bundle to assign only

    def __init__(self, rng: random.Random) -> None:
        super().__init__(rng)
        self.count = 0
        self.cache: list[str] = []

    def select_broker(
        self,
        candidates: set[str],
        bundle_to_assign: BundleData,
        load_data: LoadData,
        conf: ServiceConfig,
    ) -> str | None:
        size = len(candidates)
        if size == 0:
            return None
        cache = self.cache
        index = self.count % size
        self.count = 0 if self.count == INTEGER_MAX_VALUE else self.count + 1
        if len(cache) <= index or size != len(cache):
            cache = sorted(candidates)
        selected = cache[index]
        if selected not in candidates:
            cache = sorted(candidates)
            selected = cache[index]
        self.cache = cache
        return selected
