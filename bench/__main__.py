"""`python -m bench [--quick] [--only NAME] [--out FILE]`: every benchmark, one table, the same as JSON.

Each benchmark runs in a fresh child process by default, so that its peak RSS and its garbage
collector are its own and one crash cannot take the suite down (the row then says what broke);
its ratios still compare against baselines measured inside that child, in the same run.
`--in-process` runs them all here instead (what a child does).

Exit status: 0 when no target failed and nothing crashed (--quick never judges time, so it only
fails on a crash), 1 otherwise, 2 on a bad command line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable

import msgspec

from .harness import Options, Row, judge, render_table, report

# under the repository's bench/ folder whatever the caller's directory; bench/results/ is gitignored,
# since the JSON holds a machine's details and temporary paths
DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "bench-results.json")
# wall-clock limits of one child (s): a benchmark that has not finished by then gets a FAIL row
# rather than holding the suite (and a shared machine) for ever
TIME_LIMITS = {"restart": 2400.0, "restart_extensible": 3600.0, "restart_recorded": 3600.0, "scaling": 2400.0,
               "large": 7200.0}   # large: 1,000,000 topics for an emulated hour, plus 4 smaller children
DEFAULT_TIME_LIMIT = 1200.0
DEFAULT_MEMORY_LIMIT_GIB = 14.0
# address-space limits of the benchmarks that need more than the default (an --memory-limit given on the
# command line wins): `large`'s 1,000,000-topic child peaks at ~6-8 GiB of RSS and reserves more
MEMORY_LIMITS = {"large": 20.0}
# a JVM reserves far more address space than it uses: an address-space cap stops Spark starting
UNCAPPED = {"rollup"}


def _registry() -> dict[str, Callable[..., list[Row]]]:
    """Name -> run function, in the order of the table (imports are deferred to each child)."""

    def lazy(module: str) -> Callable[..., list[Row]]:
        def call(opts: Options, **kw: object) -> list[Row]:
            import importlib

            return importlib.import_module(f"bench.{module}").run_bench(opts, **kw)

        return call

    def lazy_attr(module: str, attr: str) -> Callable[..., list[Row]]:
        def call(opts: Options, **kw: object) -> list[Row]:
            import importlib

            return getattr(importlib.import_module(f"bench.{module}"), attr)(opts, **kw)  # type: ignore[no-any-return]

        return call

    return {
        "mailbox": lazy("mailbox"),
        "lookup_storm": lazy("lookup_storm"),
        "standard_day": lazy("standard_day"),
        "restart": lazy("restart"),
        "restart_extensible": lazy_attr("restart", "run_bench_extensible"),
        "restart_recorded": lazy("restart_recorded"),
        "scaling": lazy("scaling"),
        "decision_cost": lazy("decision_cost"),
        "rollup": lazy("rollup"),
        "large": lazy("large"),
    }


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="small sizes, no verdict on time (the CI smoke test)")
    p.add_argument("--only", action="append", default=[], metavar="NAME",
                   help="run only this benchmark (repeatable, or comma-separated): "
                        + ", ".join(_registry()))
    p.add_argument("--out", default=DEFAULT_OUT, metavar="FILE",
                   help="where to write the JSON (default bench/results/bench-results.json)")
    p.add_argument("--reps", type=int, default=None, metavar="N",
                   help="repetitions per figure (default: each benchmark's own)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--memory-limit", type=float, default=None, metavar="GIB",
                   help=f"address-space limit of each child, GiB (default {DEFAULT_MEMORY_LIMIT_GIB:g}, "
                        f"large: {MEMORY_LIMITS['large']:g}; 0 = none): a benchmark that needs more dies "
                        "with MemoryError instead of the machine")
    p.add_argument("--in-process", action="store_true",
                   help="run the benchmarks in this process instead of one child each")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--asked", action="append", default=[], help=argparse.SUPPRESS)
    return p


def _selected(only: list[str]) -> list[str]:
    known = list(_registry())
    names = [n.strip() for item in only for n in item.split(",") if n.strip()]
    bad = [n for n in names if n not in known]
    if bad:
        raise SystemExit(f"python -m bench: error: --only {bad[0]!r}: unknown benchmark; known: "
                         + ", ".join(known))
    return [n for n in known if n in names] if names else known


def _memory_cap(gib: float) -> Callable[[], None] | None:
    """A child's preexec hook limiting its address space (Linux; None: no limit)."""
    if not gib or gib <= 0 or sys.platform != "linux":
        return None

    def cap() -> None:
        import resource

        limit = int(gib * 1024 ** 3)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return cap


def _memory_limit(name: str, given: float | None) -> float:
    """GiB: the command line's --memory-limit, else the benchmark's own, else the default."""
    return given if given is not None else MEMORY_LIMITS.get(name, DEFAULT_MEMORY_LIMIT_GIB)


def _crash_row(name: str, why: str) -> Row:
    return Row(name=name, figure=None, unit="", passed=False, note=f"crashed: {why}")


def _run_here(name: str, opts: Options, asked_by_name: bool) -> list[Row]:
    fn = _registry()[name]
    try:
        if name in ("rollup", "large"):   # skipped in --quick unless named
            return fn(opts, asked_by_name=asked_by_name)
        return fn(opts)
    except Exception as e:  # noqa: BLE001 - a crashed benchmark is a row, not the end of the suite
        traceback.print_exc()
        return [_crash_row(name, f"{type(e).__name__}: {e}")]


def _run_child(name: str, args: argparse.Namespace) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        out = os.path.join(tmp, "rows.json")
        cmd = [sys.executable, "-m", "bench", "--in-process", "--child", "--only", name,
               "--out", out, "--seed", str(args.seed)]
        if args.quick:
            cmd.append("--quick")
        if args.reps is not None:
            cmd += ["--reps", str(args.reps)]
        if args.only:  # the child always gets --only: tell it whether the user named this one
            if name in _selected(args.only):
                cmd += ["--asked", name]
        # the repository root, so `-m bench` resolves whatever the caller's directory
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        limit = TIME_LIMITS.get(name, DEFAULT_TIME_LIMIT)
        try:
            proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                  cwd=root, timeout=limit,
                                  preexec_fn=_memory_cap(0 if name in UNCAPPED
                                                         else _memory_limit(name, args.memory_limit)))
        except subprocess.TimeoutExpired:
            return [_crash_row(name, f"did not finish within {limit:.0f} s wall (killed)")]
        try:
            with open(out, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError):
            tail = (proc.stderr or "").strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
            return [_crash_row(name, tail[0])]
        rows = msgspec.convert(doc["rows"], type=list[Row])
        for row in rows:
            row.details = {**row.details, "child_peak_rss_bytes": doc["peak_rss_bytes"]}
        return rows


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _parser().parse_args(argv)
    if args.reps is not None and args.reps < 1:
        _parser().error(f"--reps = {args.reps}: must be >= 1")
    names = _selected(args.only)
    # benchmarks the user named (a child learns it through --asked, since it always gets --only)
    asked = set(args.asked) if args.child else set(names) if args.only else set()
    opts = Options(quick=args.quick, reps=args.reps, seed=args.seed)
    started = time.time()
    rows: list[Row] = []
    for name in names:
        if not args.in_process:
            print(f"[bench] {name} ...", file=sys.stderr, flush=True)
        t = time.perf_counter()
        got = _run_here(name, opts, name in asked) if args.in_process else _run_child(name, args)
        for row in got:
            row.details = {**row.details, "bench_wall_s": time.perf_counter() - t}
        rows.extend(got)
    crashed = [r for r in rows if r.note.startswith("crashed:")]
    judge(rows, args.quick)
    for r in crashed:
        r.passed = False
    doc = report(rows, opts, argv, started)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2, default=str)
        f.write("\n")
    if not args.in_process:
        print(render_table(rows))
        print(f"\n{'quick' if args.quick else 'full'} run, {time.time() - started:.0f} s; JSON: "
              f"{args.out}")
    return 0 if doc["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
