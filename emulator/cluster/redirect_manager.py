"""RedirectManager: during a change of load manager, lookups go to the brokers of the newest one.

Follows apache/pulsar `loadbalance/extensions/manager/RedirectManager.java`
(`findRedirectLookupResultAsync`, PIP-192 PR #20058 "Redirect the request to current load manager"),
which NamespaceService.getBrokerServiceUrlAsync runs first on every lookup, whichever load manager the
broker runs, before its own ownership check (`findRedirectLookupResultAsync(bundle)`; the heartbeat and
SLA-monitor namespaces are exempt, and not emulated):

1. read every registration under `/loadbalance/brokers` (the lock values: Modular's LocalBrokerData,
   Simple's LoadReport, Extensible's BrokerLookupData, each with `loadManagerClassName` and
   `startTimestamp`);
2. the registration with the latest `startTimestamp` names the cluster's current load manager
   (`lastStartTimestamp <= value.getStartTimestamp()`: among equal timestamps the last one iterated);
3. equal to this broker's configured `loadManagerClassName` -> no redirect: the lookup goes on;
4. otherwise Redirect(a random broker registered with that class, authoritative = true)
   (`new LookupResult(..., true)`), so a broker not yet migrated sends every lookup to the migrated
   ones, and a migrated one to the others during a rollback. Pulsar's docs ("Migration"): "During the
   migration, the lookup and assignment will be redirected to the brokers with the extensible load
   balancer."

The redirect does not move what a broker already owns: a bundle a Modular broker holds in
`/namespace/<bundle>` stays served there while an Extensible broker assigns it afresh in its channel on
the next lookup, so two brokers serve it until the Modular one unloads it or restarts (the managed
ledger's fencing, which ends that in Pulsar, is not emulated here).

Choices: Java iterates a ConcurrentHashMap (no set order); here the brokers in name order, so among
equal timestamps the last name wins. `Math.random()` is the broker's seeded RNG. The registrations are
this broker's view, refreshed when `/loadbalance/brokers` children are created or deleted (Pulsar's
metadata cache of the locks, refreshed by the same notifications); a registration without a class
(NoopLoadManager writes none) is left out, where Java would dereference null.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from emulator.cluster.decoded import DecodeCache

__all__ = ["RedirectView", "ServiceLookupData"]


class ServiceLookupData(msgspec.Struct, rename="camel"):
    """The two fields RedirectManager reads of a registration, whatever the manager that wrote it."""

    load_manager_class_name: str | None = None
    start_timestamp: int = 0


_DECODER = msgspec.json.Decoder(ServiceLookupData)


class RedirectView:
    """One broker's view of the registrations and the decision of `findRedirectLookupResultAsync`.

    The newest class is found when a lookup asks after a change, not on each of the N x N
    registration notifications of a large cluster's start or rolling restart. While every
    registration names one class (any cluster not migrating), that is the newest one, from two
    counters kept as registrations come and go; the full walk in name order runs only while two
    classes are registered, and the redirect candidates only when a lookup is redirected."""

    __slots__ = ("_data", "_newest_class", "_candidates", "_stale", "_classes", "_dated",
                 "_changes", "_listing", "_unread")

    def __init__(self, changes: DecodeCache | None = None) -> None:
        self._data: dict[str, ServiceLookupData] = {}
        # the listing of the last update, and its brokers without a registration here: with the
        # cluster's shared listing changes, an update costs what changed, not a set operation over
        # every broker (each of 1,000 brokers updates on each registration)
        self._changes = changes
        self._listing: frozenset[str] | None = None
        self._unread: set[str] = set()
        self._newest_class: str | None = None
        self._candidates: tuple[str, ...] | None = None
        self._stale = False
        self._classes: dict[str, int] = {}   # registrations per (non-empty) class name
        self._dated = 0   # registrations with a class and start_timestamp >= 0 (the walk's `0 <= ts`)

    def _count(self, data: ServiceLookupData, step: int) -> None:
        name = data.load_manager_class_name
        if not name:
            return
        left = self._classes.get(name, 0) + step
        if left:
            self._classes[name] = left
        else:
            del self._classes[name]
        if data.start_timestamp >= 0:
            self._dated += step

    def update(self, brokers: frozenset[str], read: dict[str, bytes]) -> None:
        """A children listing `brokers` and the registrations `read` since (new or re-created ones):
        the view follows them."""
        data = self._data
        change = self._change(brokers)
        if change is None:
            gone = data.keys() - brokers
        else:
            gone = {broker for broker in change[1] if broker in data}
        if gone:
            for broker in gone:
                self._count(data.pop(broker), -1)
            self._stale = True
        for broker, value in read.items():
            try:
                decoded = _DECODER.decode(value)
            except msgspec.DecodeError:
                continue
            old = data.get(broker)
            if old is not None:
                self._count(old, -1)
            data[broker] = decoded
            self._count(decoded, 1)
            self._stale = True
        if change is None or not read.keys() <= brokers:
            self._unread = set(brokers - data.keys())
        else:
            self._unread = {b for b in (*self._unread, *change[0]) if b in brokers and b not in data}
        # the view's registrations stay within the listing (those gone left with `removed`): the
        # next update may start from it, unless a read named a broker the listing does not hold
        self._listing = brokers if read.keys() <= brokers else None

    def _change(self, brokers: frozenset[str]) -> tuple[frozenset[str], frozenset[str]] | None:
        """(added, removed) since the last update's listing; None: unknown (the set operations then)."""
        listing = self._listing
        if listing is None or self._changes is None:
            return None
        if listing is brokers:
            return frozenset(), frozenset()
        return self._changes.listing_change(listing, brokers)

    def put(self, broker: str, value: bytes) -> None:
        self.update(frozenset(self._data) | {broker}, {broker: value})

    def keep_only(self, brokers: frozenset[str]) -> None:
        """Drop the registrations that are gone (a children listing)."""
        self.update(brokers, {})

    def known(self, broker: str) -> bool:
        return broker in self._data

    def unknown_of(self, brokers: frozenset[str]) -> frozenset[str]:
        """The brokers of `brokers` without a registration in the view."""
        change = self._change(brokers)
        if change is None:
            return brokers - self._data.keys()
        return frozenset({b for b in self._unread if b in brokers}) | change[0]

    @property
    def newest_class(self) -> str | None:
        if self._stale:
            self._recompute()
        return self._newest_class

    def _recompute(self) -> None:
        self._stale = False
        self._candidates = None
        if len(self._classes) <= 1:
            # one class (or none): the walk's newest is a registration of it, if one has `0 <= ts`
            self._newest_class = next(iter(self._classes)) if self._classes and self._dated else None
            return
        newest: ServiceLookupData | None = None
        last = 0
        for broker in sorted(self._data):
            data = self._data[broker]
            if data.load_manager_class_name and last <= data.start_timestamp:
                last = data.start_timestamp
                newest = data
        self._newest_class = newest.load_manager_class_name if newest is not None else None

    def target(self, configured_class: str, rng: random.Random) -> str | None:
        """The broker to redirect a lookup to, or None: no registration yet (Pulsar fails the lookup
        with "No available broker found."; here it goes on), or the newest class is this broker's."""
        newest = self.newest_class
        if newest is None or newest == configured_class:
            return None
        candidates = self._candidates
        if candidates is None:
            candidates = self._candidates = tuple(
                b for b in sorted(self._data) if self._data[b].load_manager_class_name == newest)
        return candidates[int(rng.random() * len(candidates))]
