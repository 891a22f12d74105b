"""Failure reports for emulated tests: what broke, when, where, what decided it, and how to rerun it.

A failing emulated test should read like CockroachDB's asim (`failed assertion ... max/mean=1.08 tick=0`):
the emulated time, the brokers and bundles involved, the last decisions that touched them (from the
cluster's decision log), and the seed with one command that reproduces the run. Only reads the cluster.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable
from typing import Any

import msgspec

__all__ = ["failure_report", "names_in", "reproduce_command"]

_BUNDLE = re.compile(r"[\w.-]+/[\w.-]+/0x[0-9a-fA-F]{8}_0x[0-9a-fA-F]{8}")
_SKIP_FIELDS = ("kind", "t", "decision")
_MAX_FIELD = 90


def names_in(cluster: Any, text: str) -> tuple[list[str], list[str]]:
    """The cluster's brokers and the bundle names that `text` (an error, an actor name) mentions."""
    brokers = [b for b in sorted(cluster.brokers) if b in text]
    bundles = list(dict.fromkeys(_BUNDLE.findall(text)))
    return brokers, bundles


def reproduce_command(nodeid: str | None = None) -> str | None:
    """`python -m pytest '<test id>'` for the test running now (pytest's PYTEST_CURRENT_TEST)."""
    if nodeid is None:
        current = os.environ.get("PYTEST_CURRENT_TEST", "")
        nodeid = current.rsplit(" (", 1)[0] if current else None
    return f"python -m pytest {shlex.quote(nodeid)}" if nodeid else None


def failure_report(cluster: Any, headline: str, *, time: float | None = None,
                   brokers: Iterable[str] = (), bundles: Iterable[str] = (),
                   context: dict[str, Any] | None = None, limit: int = 8) -> str:
    """The text a failing test shows: `headline`, then time, brokers, bundles, the last `limit`
    decisions up to `time` that name any of them (when the failure names none: the brokers and bundles
    of the latest decisions about bundles), who owns what now, the seed and the commands.

    `context`: what reproduces the run beyond the seed (scenario, placement, shedder, `repro`: a
    command; default: rerun the current pytest test)."""
    brokers, bundles = list(dict.fromkeys(brokers)), list(dict.fromkeys(bundles))
    now = cluster.system.clock.now() if time is None else time
    named = "involved"
    if not brokers and not bundles:   # nothing named by the failure: those of the latest decisions
        brokers, bundles = _named_by_decisions(cluster, now, limit)
        named = "in the last decisions"
    ctx = dict(context or {})
    lines = [headline, f"  emulated time: t={now:.3f}s ({_clock_text(now)})"]
    lines.append(f"  broker(s) {named}: {', '.join(brokers) if brokers else '-'}"
                 f"  (now live: {', '.join(cluster.live_brokers()) or 'none'}; leader: {cluster.leader() or 'none'})")
    lines.append(f"  bundle(s) {named}: {', '.join(bundles) if bundles else '-'}")
    touched, scope = _decisions(cluster, brokers + bundles, limit, until=now)
    lines.append(f"  last decisions{scope} (newest last):")
    lines.extend(f"    {line}" for line in touched or ["(none)"])
    owned: dict[str, int] = {}
    for owner in cluster.ownership().values():
        owned[owner] = owned.get(owner, 0) + 1
    lines.append("  bundles owned now: " + (" ".join(f"{b}={n}" for b, n in sorted(owned.items())) or "none"))
    seed = ctx.pop("seed", getattr(cluster.system, "seed", None))
    repro = ctx.pop("repro", None) or reproduce_command()
    cli = ctx.pop("cli", None)
    extra = "".join(f", {k}={v}" for k, v in ctx.items() if v is not None)
    lines.append(f"  seed: {seed}{extra}")
    if repro:
        lines.append(f"  reproduce: {repro}")
    if cli:
        lines.append(f"  the run alone: {cli}")
    return "\n".join(lines)


def _named_by_decisions(cluster: Any, until: float, limit: int) -> tuple[list[str], list[str]]:
    """Those of the latest decisions about a bundle (assignments, unloads, splits); periodic shedding
    plans that moved nothing would otherwise crowd them out."""
    log = getattr(cluster, "decision_log", None)
    entries = [e for e in getattr(log, "entries", ())
               if e.get("t", 0.0) <= until and isinstance(e.get("bundle"), str)][-limit:]
    brokers = [e["broker"] for e in entries if isinstance(e.get("broker"), str)]
    bundles = [e["bundle"] for e in entries if isinstance(e.get("bundle"), str)]
    return list(dict.fromkeys(brokers)), list(dict.fromkeys(bundles))


def _decisions(cluster: Any, names: list[str], limit: int, until: float) -> tuple[list[str], str]:
    """Decisions up to `until` (the failure's time): later ones cannot have caused it."""
    log = getattr(cluster, "decision_log", None)
    entries = [e for e in getattr(log, "entries", ()) if e.get("t", 0.0) <= until]
    if not names:
        return [_entry_text(e) for e in entries[-limit:]], ""
    encoded = [(e, msgspec.json.encode(e, order="deterministic").decode()) for e in entries]
    hits = [e for e, text in encoded if any(n in text for n in names)]
    return [_entry_text(e) for e in hits[-limit:]], " touching them"


def _entry_text(entry: dict[str, Any]) -> str:
    fields = []
    for key, value in entry.items():
        if key in _SKIP_FIELDS or value is None:
            continue
        text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
        fields.append(f"{key}={text if len(text) <= _MAX_FIELD else text[:_MAX_FIELD - 3] + '...'}")
    return f"t={entry.get('t', float('nan')):.3f}s {entry.get('decision', entry.get('kind'))} " + " ".join(fields)


def _clock_text(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 3600:02d}:{whole % 3600 // 60:02d}:{whole % 60:02d} emulated"
