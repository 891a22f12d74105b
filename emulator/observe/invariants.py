"""Invariant checks run continuously against a live cluster (DESIGN.md "Runtime rules").

1. At most one owner per bundle: no bundle is active on two brokers, and no two actively owned bundles of a
   namespace overlap in hash range (a split parent and its child, say).
2. Every namespace's bundles cover [0x00000000, 0xffffffff] without gap or overlap (local policies).
3. Every ownership node names a live broker, or a broker whose metadata session has not yet expired.
4. Every client lookup ends: none is in flight longer than its redirect budget of operation timeouts.

The checker only reads; it is an observer, so `cluster/` does not import it. A failure reads like a report:
which invariant, at what emulated time, with the values that broke it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import msgspec

from emulator.model.bundles import FULL_LOWER, FULL_UPPER, parse_bundle
from emulator.model.policies import LocalPolicies

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster


class Violation(msgspec.Struct, frozen=True):
    invariant: str
    time: float
    detail: str
    brokers: tuple[str, ...] = ()      # the brokers and bundles involved, for a failure report
    bundles: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"invariant {self.invariant} violated at t={self.time:.3f}s: {self.detail}"


class InvariantViolation(AssertionError):
    """`report`: the test harness's account of the first violation (decisions, seed, command)."""

    def __init__(self, violations: list[Violation], report: str | None = None) -> None:
        lines = [str(v) for v in violations[:20]]
        more = len(violations) - len(lines)
        if more > 0:
            lines.append(f"... and {more} more")
        if report:
            lines.append(report)
        super().__init__("\n".join(lines))
        self.violations = violations
        self.report = report


def _splitting(broker: object, b1: str, b2: str) -> bool:
    """A parent and its child on the one broker that is splitting the parent: splitAndOwnBundle holds
    the children's locks before it releases the parent, as Pulsar's OwnershipCache does."""
    splitting = getattr(broker, "splitting", None)
    if not splitting:
        return False
    return b1 in splitting or b2 in splitting


class InvariantChecker:
    """Checks `cluster` every `interval` emulated seconds from a task, and once more on `check_now()`."""

    def __init__(self, cluster: "Cluster", interval: float = 1.0, *, stop_on_first: bool = False) -> None:
        if interval <= 0:
            raise ValueError(f"interval = {interval}; must be > 0 emulated seconds")
        self.cluster = cluster
        self.interval = interval
        self.stop_on_first = stop_on_first
        self.violations: list[Violation] = []
        self.checks = 0
        # Memos of pure functions of what the checks read, rebuilt from the live names/data at every
        # check (so they hold only what still exists): a check runs every few emulated seconds over
        # every bundle, and names and node contents rarely change between two checks.
        self._parsed: dict[str, tuple[str, int, int]] = {}
        self._owned: list[tuple[str, str]] = []
        self._overlaps: list[tuple[str, str, str, str, str]] = []
        self._owner_of: dict[bytes, str] = {}
        self._coverage_of: dict[tuple[str, bytes], str | None] = {}

    async def run(self) -> None:
        while True:
            await anyio.sleep(self.interval)
            self.check_now()

    def check_now(self) -> list[Violation]:
        self.checks += 1
        now = self.cluster.system.clock.now()
        found = [
            *self._single_owner(now),
            *self._coverage(now),
            *self._owners_alive(now),
            *self._lookups_end(now),
        ]
        self.violations.extend(found)
        if found and self.stop_on_first:
            raise InvariantViolation(found)
        return found

    # ------------------------------------------------------------------ the checks

    def _single_owner(self, now: float) -> list[Violation]:
        out: list[Violation] = []
        holder: dict[str, str] = {}
        owned: list[tuple[str, str]] = []
        for broker_id, broker in sorted(self.cluster.brokers.items()):
            if not broker.alive:
                continue
            for bundle in broker.owned_bundle_names():
                other = holder.get(bundle)
                if other is not None:
                    out.append(Violation("single-owner", now,
                                         f"bundle {bundle} active on {other} and {broker_id}",
                                         brokers=(other, broker_id), bundles=(bundle,)))
                holder[bundle] = broker_id
                owned.append((bundle, broker_id))
        if owned != self._owned:         # overlaps depend on nothing else: same ownership, same ones
            self._owned, self._overlaps = owned, self._find_overlaps(owned)
        brokers = self.cluster.brokers
        out.extend(Violation("single-owner", now, detail, brokers=(o1, o2), bundles=(b1, b2))
                   for detail, b1, o1, b2, o2 in self._overlaps
                   if not (o1 == o2 and _splitting(brokers.get(o1), b1, b2)))
        return out

    def _find_overlaps(self, owned: list[tuple[str, str]]) -> list[tuple[str, str, str, str, str]]:
        """Actively owned bundles of a namespace whose hash ranges overlap (a split parent and child):
        (detail, bundle, owner, other bundle, its owner)."""
        out: list[tuple[str, str, str, str, str]] = []
        by_ns: dict[str, list[tuple[int, int, str, str]]] = {}
        old, parsed = self._parsed, {}
        for bundle, broker_id in owned:
            p = old.get(bundle)
            if p is None:
                p = parse_bundle(bundle)
            parsed[bundle] = p
            ns, lower, upper = p
            by_ns.setdefault(ns, []).append((lower, upper, bundle, broker_id))
        self._parsed = parsed
        for ranges in by_ns.values():
            ranges.sort()
            for (_l1, u1, b1, o1), (l2, _u2, b2, o2) in zip(ranges, ranges[1:]):
                if l2 < u1 and b1 != b2:
                    out.append((f"overlapping bundles {b1} ({o1}) and {b2} ({o2})", b1, o1, b2, o2))
        return out

    def _coverage(self, now: float) -> list[Violation]:
        out: list[Violation] = []
        prefix = "/admin/local-policies/"
        old, memo = self._coverage_of, {}
        for path, data in self.cluster.store.peek_prefix(prefix):
            ns = path[len(prefix):]
            if ns.count("/") < 1:
                continue
            key = (path, data)
            detail = old[key] if key in old else _coverage_problem(path, ns, data)
            memo[key] = detail
            if detail is not None:
                out.append(Violation("coverage", now, detail))
        self._coverage_of = memo
        return out

    def _owners_alive(self, now: float) -> list[Violation]:
        out: list[Violation] = []
        store = self.cluster.store
        is_listening = self.cluster.network.is_listening
        old, memo = self._owner_of, {}
        for path, data in store.peek_prefix("/namespace/"):
            if path.count("/") < 4:
                continue
            owner = old.get(data)
            if owner is None:
                owner = msgspec.json.decode(data).get("httpUrl", "").split("://")[-1]
            memo[data] = owner
            if is_listening(owner):
                continue
            session = store.ephemeral_owner(path)
            if session is None or not store.session_alive(session):
                out.append(Violation("owner-alive", now,
                                     f"{path} owned by dead broker {owner} whose session is gone",
                                     brokers=(owner,), bundles=(path[len("/namespace/"):],)))
        self._owner_of = memo
        return out

    def _lookups_end(self, now: float) -> list[Violation]:
        out: list[Violation] = []
        for name, client in sorted(self.cluster.clients.items()):
            s = client.settings
            bound = s.operation_timeout * (s.max_lookup_redirects + 2)
            for record in client.in_flight.values():
                if now - record.start > bound:
                    out.append(Violation("lookup-ends", now,
                                         f"{name}: lookup of {record.topic} in flight for "
                                         f"{now - record.start:.1f}s (hops {record.hops})"))
        return out


def _coverage_problem(path: str, ns: str, data: bytes) -> str | None:
    """What is wrong with a namespace's bundle boundaries (its local-policies node), or None."""
    try:
        pol = msgspec.json.decode(data, type=LocalPolicies)
        bounds = list(pol.bundles.boundary_values()) if pol.bundles else [FULL_LOWER, FULL_UPPER]
    except (msgspec.DecodeError, ValueError) as e:
        return f"{path}: unreadable policies ({e})"
    if not bounds or bounds[0] != FULL_LOWER or bounds[-1] != FULL_UPPER:
        return (f"{ns}: boundaries {bounds[:1]}..{bounds[-1:]} do not span "
                f"[0x00000000, 0xffffffff]")
    if any(b >= a for a, b in zip(bounds[1:], bounds)):
        return f"{ns}: boundaries not strictly increasing"
    return None
