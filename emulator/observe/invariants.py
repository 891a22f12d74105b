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

    def __str__(self) -> str:
        return f"invariant {self.invariant} violated at t={self.time:.3f}s: {self.detail}"


class InvariantViolation(AssertionError):
    def __init__(self, violations: list[Violation]) -> None:
        lines = [str(v) for v in violations[:20]]
        more = len(violations) - len(lines)
        if more > 0:
            lines.append(f"... and {more} more")
        super().__init__("\n".join(lines))
        self.violations = violations


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

    def raise_if_violated(self) -> None:
        if self.violations:
            raise InvariantViolation(self.violations)

    # ------------------------------------------------------------------ the checks

    def _single_owner(self, now: float) -> list[Violation]:
        out: list[Violation] = []
        holder: dict[str, str] = {}
        by_ns: dict[str, list[tuple[int, int, str, str]]] = {}
        for broker_id, broker in sorted(self.cluster.brokers.items()):
            if not broker.alive:
                continue
            for bundle in broker.owned_bundle_names():
                other = holder.get(bundle)
                if other is not None:
                    out.append(Violation("single-owner", now,
                                         f"bundle {bundle} active on {other} and {broker_id}"))
                holder[bundle] = broker_id
                ns, lower, upper = parse_bundle(bundle)
                by_ns.setdefault(ns, []).append((lower, upper, bundle, broker_id))
        for ns, ranges in by_ns.items():
            ranges.sort()
            for (l1, u1, b1, o1), (l2, u2, b2, o2) in zip(ranges, ranges[1:]):
                if l2 < u1 and b1 != b2:
                    out.append(Violation("single-owner", now,
                                         f"overlapping bundles {b1} ({o1}) and {b2} ({o2})"))
        return out

    def _coverage(self, now: float) -> list[Violation]:
        out: list[Violation] = []
        prefix = "/admin/local-policies/"
        for path, data in self.cluster.store.peek_prefix(prefix):
            ns = path[len(prefix):]
            if ns.count("/") < 1:
                continue
            try:
                pol = msgspec.json.decode(data, type=LocalPolicies)
                bounds = list(pol.bundles.boundary_values()) if pol.bundles else [FULL_LOWER, FULL_UPPER]
            except (msgspec.DecodeError, ValueError) as e:
                out.append(Violation("coverage", now, f"{path}: unreadable policies ({e})"))
                continue
            if not bounds or bounds[0] != FULL_LOWER or bounds[-1] != FULL_UPPER:
                out.append(Violation("coverage", now,
                                     f"{ns}: boundaries {bounds[:1]}..{bounds[-1:]} do not span "
                                     f"[0x00000000, 0xffffffff]"))
            elif any(b >= a for a, b in zip(bounds[1:], bounds)):
                out.append(Violation("coverage", now, f"{ns}: boundaries not strictly increasing"))
        return out

    def _owners_alive(self, now: float) -> list[Violation]:
        out: list[Violation] = []
        store = self.cluster.store
        for path, data in store.peek_prefix("/namespace/"):
            if path.count("/") < 4:
                continue
            owner = msgspec.json.decode(data).get("httpUrl", "").split("://")[-1]
            if self.cluster.network.is_listening(owner):
                continue
            session = store.ephemeral_owner(path)
            if session is None or not store.session_alive(session):
                out.append(Violation("owner-alive", now,
                                     f"{path} owned by dead broker {owner} whose session is gone"))
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
