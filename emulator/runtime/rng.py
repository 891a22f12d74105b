"""Per-actor random streams derived from the run seed.

Each actor (or component) gets its own `random.Random`, seeded from a stable hash of
`f"{seed}/{name}"`: adding an actor does not reshuffle any other actor's stream, and the streams do
not depend on PYTHONHASHSEED (Python's `hash()` of a str is salted per process).
"""

from __future__ import annotations

import hashlib
import random

__all__ = ["derive_rng", "derive_seed"]


def derive_seed(seed: int, name: str) -> int:
    """A 64-bit seed for `name` (for numpy's `default_rng` and other non-`random` generators)."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {seed!r}")
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {name!r}")
    digest = hashlib.blake2b(f"{seed}/{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def derive_rng(seed: int, name: str) -> random.Random:
    """The random stream of `name` in the run seeded with `seed`."""
    return random.Random(derive_seed(seed, name))
