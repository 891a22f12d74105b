"""Upper bounds on what a scenario may ask for, checked before anything is built.

Without them a typo (`count = 1000000000000`) does not fail: it allocates until the machine swaps, or
iterates for hours before the first event. The limits are about memory, and come from the one case
we have measured at scale, the restart benchmark (`bench/restart.py`, bench/README.md): 100 brokers,
65 namespaces of 1,000 bundles (65,000 bundles), 100,000 topics with one producer each, peaks at
3.66 GiB RSS. Memory grows about linearly in each of brokers × bundles (every broker keeps a view of
every bundle's load data), topics and client handles, so each limit is 10-20 times the bench's figure
for that dimension: at the limit of any one of them the linear extrapolation is 40-70 GiB, past any
machine the emulator is meant for, and well clear of the bench and of every built-in scenario.

A scenario over a limit gets one line naming the key, the value and the limit; nothing starts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["MAX_BROKERS", "MAX_BUNDLES", "MAX_CLIENTS", "MAX_EVENTS", "MAX_HANDLES", "MAX_MSG_SIZE", "MAX_NAMESPACES",
           "MAX_TOML_BYTES", "MAX_TOML_DEPTH", "MAX_TOPICS", "check_finite", "check_sizes"]

MAX_BROKERS = 2_000
"""Brokers at any time (initial + added by events): 20 × the bench's 100."""
MAX_BUNDLES = 1_000_000
"""Initial bundles over all namespaces: ~15 × the bench's 65,000."""
MAX_NAMESPACES = 100_000
"""[[namespaces]] entries: every namespace holds at least one bundle and its policies."""
MAX_TOPICS = 2_000_000
"""Topics over all groups, a partitioned topic counting one per partition: 20 × the bench's 100,000."""
MAX_HANDLES = 2_000_000
"""Producers + consumers over all topics (and partitions): 20 × the bench's 100,000 producers."""
MAX_CLIENTS = 100_000
"""PulsarClient instances (one actor each)."""
MAX_MSG_SIZE = 5 * 1024 * 1024
"""Bytes per message: Pulsar's maxMessageSize default (ServiceConfiguration.maxMessageSize, 5 MiB), the
largest message a broker accepts unless reconfigured; a bigger one here is a unit slip (kB vs bytes)."""
MAX_EVENTS = 100_000
"""[[events]] entries (each one is a task of the event driver)."""
MAX_TOML_BYTES = 16 * 1024 * 1024
"""A scenario file larger than this is not a hand-written scenario (the largest built-in is a few KiB)."""
MAX_TOML_DEPTH = 64
"""Nested arrays/tables deeper than this: the scenario schema nests at most 5 levels, and Python's
TOML parser recurses once per level (a deep enough file is a RecursionError, not an error message)."""

Fail = Callable[[list[Any], str, Any], Exception]


def check_sizes(scenario: Any, fail: Fail) -> None:
    """Raise `fail(path, reason, value)` for the first size over its limit. Runs before any check that
    enumerates topics, so an absurd count fails at once instead of after minutes of work."""
    s = scenario
    if len(s.namespaces) > MAX_NAMESPACES:
        raise fail(["namespaces"], f"{len(s.namespaces):,} namespaces; at most {MAX_NAMESPACES:,} fit "
                   "in memory", f"[... {len(s.namespaces)} tables]")
    if len(s.events) > MAX_EVENTS:
        raise fail(["events"], f"{len(s.events):,} events; at most {MAX_EVENTS:,}",
                   f"[... {len(s.events)} tables]")
    if s.cluster.broker_count > MAX_BROKERS:
        raise fail(["cluster", "brokers"], _over(MAX_BROKERS, "brokers"),
                   s.cluster.brokers if isinstance(s.cluster.brokers, int)
                   else f"[... {s.cluster.broker_count} names]")
    if s.clients.count > MAX_CLIENTS:
        raise fail(["clients", "count"], _over(MAX_CLIENTS, "clients"), s.clients.count)
    brokers = s.cluster.broker_count
    for i, e in enumerate(s.events):
        for key in ("count", "batch"):
            value = getattr(e, key, None)
            if isinstance(value, int) and value > MAX_BROKERS:
                raise fail(["events", i, key], _over(MAX_BROKERS, "brokers"), value)
        if type(e).__name__ == "AddBrokers":
            added = e.count if e.count is not None else (0 if e.brokers else 1)  # named: back, not new
            brokers += added
            if brokers > MAX_BROKERS:
                raise fail(["events", i, "count"], f"brings the cluster to {brokers:,} brokers; "
                           + _over(MAX_BROKERS, "brokers"), added)
    default_bundles = _default_bundles(s)
    bundles = 0
    for i, ns in enumerate(s.namespaces):
        n = ns.bundles if ns.bundles is not None else default_bundles
        if n > MAX_BUNDLES:
            raise fail(["namespaces", i, "bundles"], _over(MAX_BUNDLES, "bundles"), n)
        bundles += n
        if bundles > MAX_BUNDLES:
            raise fail(["namespaces", i, "bundles"], f"brings the scenario to {bundles:,} bundles; "
                       + _over(MAX_BUNDLES, "bundles"), n)
    topics = handles = 0
    for i, g in enumerate(s.topics):
        for key, limit, what in (("count", MAX_TOPICS, "topics"), ("partitions", MAX_TOPICS, "partitions"),
                                 ("producers", MAX_HANDLES, "producers"),
                                 ("consumers", MAX_HANDLES, "consumers")):
            value = getattr(g, key)
            if value > limit:
                raise fail(["topics", i, key], _over(limit, what), value)
        if g.msg_size > MAX_MSG_SIZE:
            raise fail(["topics", i, "msg_size"], f"over Pulsar's maxMessageSize default of {MAX_MSG_SIZE:,} "
                       "bytes (msg_size is bytes per message)", g.msg_size)
        n = g.size * max(1, g.partitions)
        topics += n
        if topics > MAX_TOPICS:
            raise fail(["topics", i, "count"], f"brings the scenario to {topics:,} topics (partitions "
                       "count one each); " + _over(MAX_TOPICS, "topics"), g.size)
        handles += n * (g.producers + g.consumers)
        if handles > MAX_HANDLES:
            raise fail(["topics", i, "producers"], f"brings the scenario to {handles:,} producers + "
                       "consumers; " + _over(MAX_HANDLES, "producers + consumers"), g.producers)


def check_finite(raw: Any, fail: Fail, path: list[Any] | None = None) -> None:
    """Raise `fail(path, reason, value)` at the first NaN or infinity anywhere in the TOML (TOML has
    `inf` and `nan`; no rate, time, capacity or factor of a scenario means anything infinite)."""
    path = path or []
    if isinstance(raw, float) and not math.isfinite(raw):
        raise fail(path, "must be a finite number", raw)
    if isinstance(raw, dict):
        for key, value in raw.items():
            check_finite(value, fail, path + [key])
    elif isinstance(raw, list):
        for i, value in enumerate(raw):
            check_finite(value, fail, path + [i])


def toml_depth_exceeded(text: str) -> int | None:
    """The 1-based line of the first bracket nested deeper than MAX_TOML_DEPTH, or None. Counts `[`/`{`
    outside strings and comments: cheap, and enough to keep the recursive parser away from it."""
    depth = 0
    line = 1
    quote: str | None = None
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            if quote is not None and len(quote) == 1:
                quote = None  # an unterminated one-line string: the parser will say so
        if quote is not None:
            if c == "\\" and quote[0] == '"':
                i += 2
                continue
            if text.startswith(quote, i):
                i += len(quote)
                quote = None
                continue
            i += 1
            continue
        if c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if c in "\"'":
            quote = c * 3 if text.startswith(c * 3, i) else c
            i += len(quote)
            continue
        if c in "[{":
            depth += 1
            if depth > MAX_TOML_DEPTH:
                return line
        elif c in "]}":
            depth = max(0, depth - 1)
        i += 1
    return None


def _default_bundles(s: Any) -> int:
    value = s.settings.get("defaultNumberOfNamespaceBundles", 4)
    try:
        return int(value)
    except (TypeError, ValueError):
        return 4


def _over(limit: int, what: str) -> str:
    return f"over the limit of {limit:,} {what} (more cannot fit in memory; see emulator/workload/limits.py)"
