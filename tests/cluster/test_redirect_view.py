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


@pytest.mark.parametrize("seed", range(30))
def test_views_following_the_shared_listing_changes_match_the_set_operations(seed: int) -> None:
    """Views that start each update from the cluster's shared listing changes (DecodeCache) answer
    `unknown_of` and keep the registrations a view doing the plain set operations keeps, on the same
    inputs: listings shared by every view (one view skips some), brokers coming and going,
    registrations unreadable or read again, a read naming a broker the listing does not hold, `put`."""
    from emulator.cluster.decoded import DecodeCache

    rng = random.Random(seed)
    shared = DecodeCache()
    plain, follower, lagging = RedirectView(), RedirectView(shared), RedirectView(shared)
    listing: frozenset[str] = frozenset()
    for _ in range(80):
        names = set(listing)
        for b in rng.sample(sorted(names), k=min(len(names), rng.randint(0, 2))):
            names.discard(b)
        names.update(f"b{rng.randint(0, 15)}" for _ in range(rng.randint(0, 2)))
        listing = frozenset(names)   # one object, handed to every view (the store's children_set)
        unknown = plain.unknown_of(listing)
        assert follower.unknown_of(listing) == unknown == listing - plain._data.keys()
        read = {}
        for b in sorted(unknown | set(rng.sample(sorted(listing), k=min(len(listing), 1)))):
            if rng.random() < 0.8:   # the rest unreadable for now: unknown next time too
                read[b] = b"{bad" if rng.random() < 0.1 else msgspec.json.encode(
                    {"loadManagerClassName": rng.choice(["Modular", "Extensible"]),
                     "startTimestamp": rng.randint(0, 9)})
        if rng.random() < 0.05:
            read["stray"] = b'{"loadManagerClassName": "Modular"}'   # not in the listing
        for view in (plain, follower):
            view.update(listing, read)
        assert follower._data == plain._data and follower.newest_class == plain.newest_class
        if rng.random() < 0.05:
            for view in (plain, follower):
                view.put("b3", b'{"loadManagerClassName": "Extensible", "startTimestamp": 99}')
        if rng.random() < 0.6:   # a view that misses listings: what it knows is still exact
            lag_unknown = lagging.unknown_of(listing)
            assert lag_unknown == listing - lagging._data.keys()
            lagging.update(listing, {b: b'{"loadManagerClassName": "Modular"}' for b in lag_unknown})
            assert lagging._data.keys() == listing
