"""A selector that hands registration to a real one and lets a subclass decide how long to wait.

Both emulated clocks work by changing one thing about the event loop: how long `select()` really
blocks (not at all and jump, for virtual time; the emulated timeout divided by the speed, for the
scaled wall clock). Everything else (file descriptors, the loop's self-pipe) stays real.
"""

from __future__ import annotations

import selectors
from collections.abc import Mapping
from typing import Any

from selectors import SelectorKey

__all__ = ["DelegatingSelector"]


class DelegatingSelector(selectors.BaseSelector):
    """Forwards every call to `real`; subclasses override `select`."""

    def __init__(self, real: selectors.BaseSelector) -> None:
        self._real = real

    def register(self, fileobj: Any, events: int, data: Any = None) -> SelectorKey:
        return self._real.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> SelectorKey:
        return self._real.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> SelectorKey:
        return self._real.modify(fileobj, events, data)

    def select(self, timeout: float | None = None) -> list[tuple[SelectorKey, int]]:
        return self._real.select(timeout)

    def get_key(self, fileobj: Any) -> SelectorKey:
        return self._real.get_key(fileobj)

    def get_map(self) -> Mapping[Any, SelectorKey]:
        return self._real.get_map()

    def close(self) -> None:
        self._real.close()
