"""Recorded outputs: run a case, render what it recorded as text, compare it with the checked-in files.

`render` runs one case in-process through `emulator.runner.run` (what `python3 -m emulator run` calls)
with a recording folder, and turns the recording into the files held under `tests/recorded/<case>/`:

* `summary.txt`: the summary `run` prints (`format_summary`), byte for byte;
* `run.json`: the recording's run.json, indented with sorted keys, without what is not the run's own:
  the wall-clock `started_at` / `ended_at`, the package `versions` of the machine and the
  `scenario_text` (the scenario file itself, in `emulator/scenarios/`). It keeps the effective config
  and the summary with every KPI and expectation;
* `decisions.jsonl`: the recording's decisions.jsonl as the recorder wrote it (level `decisions`: every
  assignment, shedding plan, unload, split and their skips with emulated time and numbers). A case
  with `counted` kinds (pulsar3-restart: 56,071 assignments, ~17 MB) keeps those kinds' lines out of it
  and counts them in `decisions-counted.txt` instead: per kind, per broker and per emulated minute,
  with the sha256 of the whole decision log, so a moved decision still fails (and the counts show
  roughly where);
* `events.jsonl`: the recording's events.jsonl (keys sorted) but for the client handles' lines
  (`handle_*`: one per producer or consumer cut off; tens of thousands in a pulsar3 run, and counted in
  the summary): scenario events, broker starts, stops and crashes, leader elections after the first
  (the first is before the recorder starts; the summary counts them all).

`compare` holds those against a folder: a difference fails with the first lines of a unified diff and
the command that rewrites the folder (`--rewrite`); with `rewrite=True` it writes them instead.
"""

from __future__ import annotations

import difflib
import io
import json
import sys
from pathlib import Path
from typing import Any

import msgspec

__all__ = ["DIFF_LINES", "FILES", "HERE", "REWRITE_HINT", "STRIPPED", "Case", "Mismatch", "compare", "render"]

HERE = Path(__file__).resolve().parent
FILES = ("summary.txt", "decisions.jsonl", "decisions-counted.txt", "events.jsonl", "run.json")
"""The files of a case's folder, in the order a difference shows them (decisions-counted.txt only for a
case with `counted` kinds)."""
STRIPPED = ("started_at", "ended_at", "versions", "scenario_text")
"""run.json keys left out of the recorded run.json: wall clock, the machine, the scenario file."""
DIFF_LINES = 60
REWRITE_HINT = ("if the change is intended, rewrite the recordings and review the diff:\n"
                "    python3 -m pytest tests/recorded --rewrite && git diff tests/recorded")
_LINE_WIDTH = 300     # a shedding plan of 20 brokers is one 3 KB line: cut in the failure message only


class Case(msgspec.Struct, frozen=True, kw_only=True):
    """One recorded run."""

    name: str                               # its folder under tests/recorded/
    scenario: str                           # a built-in scenario (with `text`: the name its text gives)
    duration: float                         # emulated seconds
    shows: str                              # what the window holds, for a reader of the recording
    seed: int | None = None                 # None: the scenario's own
    overrides: dict[str, str] = {}          # --set / --load-manager, by Pulsar's key names
    slow: bool = False                      # in CI's second pass (`-m slow`), not the default run
    huge: bool = False                      # by hand only (`-m huge`): its folder may not be recorded yet
    text: str | None = None                 # the scenario's TOML when it is not a built-in file (generated)
    counted: tuple[str, ...] = ()           # decision kinds counted in decisions-counted.txt, not kept whole

    def files(self) -> tuple[str, ...]:
        return tuple(f for f in FILES if f != "decisions-counted.txt" or self.counted)


class Mismatch(AssertionError):
    """The recorded outputs differ from the files in the folder (or the folder lacks some)."""


def render(case: Case, workdir: Path) -> dict[str, str]:
    """Run `case` into a recording under `workdir`; its recorded files as text, by file name.

    The invariant checker is on (the runner's default); a violation or an actor failure (an emulator
    bug) fails here, before any comparison."""
    from emulator.observe.logs import configure_logging
    from emulator.runner import RunOptions, run
    from emulator.runtime import VirtualClock

    configure_logging(VirtualClock(), level="warning", stream=sys.stderr)   # as `run` by default
    scenario = case.scenario
    if case.text is not None:               # a generated scenario: run from a file beside the recording
        source = workdir / "scenario" / f"{case.name}.toml"
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(case.text, encoding="utf-8")
        scenario = str(source)
    opts = RunOptions(scenario=scenario, seed=case.seed, duration=case.duration,
                      overrides=dict(case.overrides), record_dir=str(workdir), record_compress=False,
                      record_decisions="decisions", check_invariants=True)
    result = run(opts, out=io.StringIO(), err=io.StringIO())
    assert not result.actor_failures, f"{case.name}: actor failures (emulator bugs): {result.actor_failures[:5]}"
    assert not result.violations, f"{case.name}: invariant violations: {result.violations[:5]}"
    assert result.record_path is not None
    folder = Path(result.record_path)

    info: dict[str, Any] = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert info.get("complete") is True, f"{case.name}: the recording is not complete"
    for key in STRIPPED:
        info.pop(key, None)
    if case.text is not None:               # the generated file's path is this run's temporary folder
        info["scenario_file"] = f"<generated>/{case.name}.toml"
    run_json = json.dumps(info, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"

    events = "".join(line for line in _lines(folder / "events.jsonl")
                     if not json.loads(line)["kind"].startswith("handle_"))
    decisions = _lines(folder / "decisions.jsonl")
    out = {
        "summary.txt": result.summary_text.rstrip("\n") + "\n",
        "run.json": run_json,
        "decisions.jsonl": "".join(decisions),
        "events.jsonl": events,
    }
    if case.counted:
        kept = [line for line in decisions if json.loads(line)["decision"] not in case.counted]
        out["decisions.jsonl"] = "".join(kept)
        out["decisions-counted.txt"] = _counted(decisions, case.counted, float(info["emulated_start"]))
    return out


def _counted(lines: list[str], kinds: tuple[str, ...], t0: float) -> str:
    """The decisions of `kinds` as counts: per kind, per broker and per emulated minute; and the
    sha256 of the whole decision log (every line, every kind), which any moved decision changes."""
    import collections
    import hashlib

    digest = hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()
    per_kind: collections.Counter[str] = collections.Counter()
    per_broker: collections.Counter[tuple[str, str]] = collections.Counter()
    per_minute: collections.Counter[tuple[str, int]] = collections.Counter()
    for line in lines:
        record = json.loads(line)
        kind = record["decision"]
        if kind not in kinds:
            continue
        per_kind[kind] += 1
        per_broker[kind, str(record.get("broker"))] += 1
        per_minute[kind, int((record["t"] - t0) // 60)] += 1
    out = [f"decisions.jsonl of this run: {len(lines)} lines, sha256 {digest}",
           f"counted here, not kept whole in decisions.jsonl: {', '.join(kinds)}", "", "per kind"]
    out += [f"  {kind:<24} {per_kind[kind]:>8}" for kind in kinds]
    out += ["", "per broker (the assignment's destination, the unload's source)"]
    out += [f"  {kind:<24} {broker:<24} {n:>8}" for (kind, broker), n in sorted(per_broker.items(), key=_broker_order)]
    out += ["", "per emulated minute (from the run's start)"]
    out += [f"  {kind:<24} {minute:>4}m {n:>8}" for (kind, minute), n in sorted(per_minute.items())]
    return "\n".join(out) + "\n"


def _broker_order(item: tuple[tuple[str, str], int]) -> tuple[str, int, str]:
    """broker-2 before broker-10."""
    (kind, broker), _ = item
    digits = "".join(c for c in broker.split(":")[0] if c.isdigit())
    return (kind, int(digits) if digits else -1, broker)


def _lines(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    return text.splitlines(keepends=True)


def compare(name: str, got: dict[str, str], folder: Path, *, rewrite: bool = False) -> list[str]:
    """Hold `got` (file name -> text) against `folder`; with `rewrite`, write it there instead.

    Returns the names of the files that differed (rewritten, with `rewrite`); raises `Mismatch` with a
    readable diff when some differ and `rewrite` is off."""
    differ = [f for f in sorted(got, key=_order) if _read(folder / f) != got[f]]
    if rewrite:
        folder.mkdir(parents=True, exist_ok=True)
        for f in differ:
            (folder / f).write_bytes(got[f].encode("utf-8"))
        return differ
    if not differ:
        return []
    where = _shown(folder)
    if not folder.is_dir():
        raise Mismatch(f"{name}: no recorded outputs yet ({where}/ does not exist)\n{REWRITE_HINT}")
    # the first lines of each file's diff, DIFF_LINES in all: a summary's diff does not hide the decisions'
    budget = max(15, DIFF_LINES // len(differ))
    shown: list[str] = []
    hidden = 0
    for f in differ:
        old = _read(folder / f)
        diff = list(difflib.unified_diff((old or "").splitlines(), got[f].splitlines(), lineterm="",
                                         fromfile=f"{where}/{f} (recorded)" if old is not None else "/dev/null",
                                         tofile=f"{where}/{f} (this run)"))
        shown += [line if len(line) <= _LINE_WIDTH else line[:_LINE_WIDTH] + f" ... ({len(line)} chars)"
                  for line in diff[:budget]]
        hidden += max(0, len(diff) - budget)
    more = f"\n... {hidden} more diff lines" if hidden else ""
    raise Mismatch(f"{name}: recorded outputs differ in {', '.join(differ)}\n" + "\n".join(shown) + more
                   + "\n" + REWRITE_HINT)


def _order(name: str) -> tuple[int, str]:
    return (FILES.index(name) if name in FILES else len(FILES), name)


def _read(path: Path) -> str | None:
    return path.read_bytes().decode("utf-8") if path.is_file() else None


def _shown(folder: Path) -> str:
    """`folder` relative to the repository when it is in it (tests/recorded/x), else as given."""
    try:
        return str(folder.resolve().relative_to(HERE.parent.parent))
    except ValueError:
        return str(folder)
