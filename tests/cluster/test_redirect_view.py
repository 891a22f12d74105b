"""RedirectView's counters give the newest class the full walk in name order gives (redirect_manager.py)."""

from __future__ import annotations

import random

import msgspec
import pytest

from emulator.cluster.redirect_manager import RedirectView, ServiceLookupData

CLASSES = [None, "", "Modular", "Extensible"]


def _walk(data: dict[str, ServiceLookupData]) -> tuple[str | None, list[str]]:
    """findRedirectLookupResultAsync as written: the last registration in name order with a class
    and `last <= startTimestamp`; the candidates are every registration of that class."""
    newest = None
    last = 0
    for broker in sorted(data):
        d = data[broker]
        if d.load_manager_class_name and last <= d.start_timestamp:
            last, newest = d.start_timestamp, d
    name = newest.load_manager_class_name if newest is not None else None
    return name, [b for b in sorted(data) if data[b].load_manager_class_name == name]


@pytest.mark.parametrize("seed", range(30))
def test_the_counters_and_the_walk_agree(seed: int) -> None:
    rng = random.Random(seed)
    view = RedirectView()
    data: dict[str, ServiceLookupData] = {}
    two_classes = seed % 3 == 0   # a third of the runs migrate: two classes at once
    for _ in range(60):
        brokers = set(data)
        for b in rng.sample(sorted(brokers), k=min(len(brokers), rng.randint(0, 2))):
            brokers.discard(b)
            del data[b]
        read = {}
        for _ in range(rng.randint(0, 3)):
            b = f"b{rng.randint(0, 12)}"
            name = rng.choice(CLASSES if two_classes else [None, "Modular"])
            d = ServiceLookupData(name, rng.choice([-5, 0, rng.randint(1, 50)]))
            data[b] = d
            brokers.add(b)
            read[b] = msgspec.json.encode({"loadManagerClassName": d.load_manager_class_name,
                                           "startTimestamp": d.start_timestamp})
        view.update(frozenset(brokers), read)
        newest, candidates = _walk(data)
        assert view.newest_class == newest
        configured = "Other"
        target = view.target(configured, random.Random(7))
        if newest is None:
            assert target is None
        else:
            assert target == candidates[int(random.Random(7).random() * len(candidates))]
