"""`python -m emulator.soak`: the seeded fault soak.

    python -m emulator.soak --seeds 1-200 --jobs 2 [--timeout 120] [--rerun-sample 5]
                            [--keep DIR] [--failures DIR]
    python -m emulator.soak --show 17          # print seed 17's scenario file

Each seed's random scenario (emulator/soak/generate.py) runs in a child process and is checked
(emulator/soak/check.py): exit code, invariant violations, actor failures, hangs, a readable recording,
and, on an evenly spread sample of seeds, a byte-identical rerun. One progress line per seed, a table at
the end; a failing seed's scenario file, stdout and stderr go to --failures (default ./soak-failures) so
`python -m emulator run soak-failures/soak-N.toml` reproduces it. Exit 0 when every seed passed, 1 when
any failed, 2 on bad flags.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import shutil
import sys
import tempfile
from pathlib import Path
from typing import NoReturn, Sequence

from .check import PROBLEMS, SeedResult, run_seed
from .generate import scenario_toml

EXIT_USAGE = 2
MAX_SEEDS = 100_000


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2, like the main CLI
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def parse_seeds(text: str) -> list[int]:
    """'1-200', '7', '1-5,9,20-22' -> the seeds, in order, without repeats."""
    seeds: list[int] = []
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        try:
            a = int(lo)
            b = int(hi) if sep else a
        except ValueError:
            raise argparse.ArgumentTypeError(f"--seeds = {text!r}: expected N, A-B or a comma list of "
                                             f"them (e.g. 1-200)") from None
        if a < 0 or b < a:
            raise argparse.ArgumentTypeError(f"--seeds = {text!r}: {part.strip()!r} is not a range "
                                             f"A-B with 0 <= A <= B")
        if len(seeds) + (b - a + 1) > MAX_SEEDS:
            raise argparse.ArgumentTypeError(f"--seeds = {text!r}: more than {MAX_SEEDS} seeds")
        seeds.extend(range(a, b + 1))
    return list(dict.fromkeys(seeds))


def _positive(flag: str, kind: type = int):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} = {text!r}: expected a number") from None
        if not 0 < value < float("inf"):
            raise argparse.ArgumentTypeError(f"{flag} = {text!r}: must be > 0")
        return value

    return parse


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--rerun-sample = {text!r}: expected an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"--rerun-sample = {text!r}: must be >= 0")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m emulator.soak", description="Seeded fault soak of the emulator.")
    p.add_argument("--seeds", type=parse_seeds, default=parse_seeds("1-20"),
                   help="seeds to run: N, A-B or a comma list (default 1-20)")
    p.add_argument("--jobs", type=_positive("--jobs"), default=1, help="runs at once (default 1)")
    p.add_argument("--timeout", type=_positive("--timeout", float), default=120.0,
                   help="wall seconds per run before it counts as a hang (default 120)")
    p.add_argument("--rerun-sample", type=_non_negative_int, default=5, metavar="K",
                   help="rerun K seeds spread over the list and compare byte for byte (default 5)")
    p.add_argument("--keep", metavar="DIR", help="keep every seed's scenario, output and recording here")
    p.add_argument("--failures", metavar="DIR", default="soak-failures",
                   help="failing seeds' scenario files and output go here (default ./soak-failures)")
    p.add_argument("--show", type=int, metavar="SEED", help="print SEED's scenario file and exit")
    return p


def rerun_sample(seeds: Sequence[int], k: int) -> set[int]:
    """k seeds spread evenly over the list (first one included), deterministic."""
    if k <= 0 or not seeds:
        return set()
    k = min(k, len(seeds))
    return {seeds[i * len(seeds) // k] for i in range(k)}


def _line(result: SeedResult, done: int, total: int) -> str:
    head = f"[{done:>{len(str(total))}}/{total}] seed {result.seed:<6}"
    tail = f"{result.wall_seconds:6.1f} s" + (" (+rerun)" if result.reran else "")
    if result.ok:
        return f"{head} ok    {tail}"
    return f"{head} FAIL  {tail}  " + "; ".join(f"{k}: {v}" for k, v in result.problems.items())


def _save_failure(result: SeedResult, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"soak-{result.seed}.toml"
    path.write_text(scenario_toml(result.seed), encoding="utf-8")
    (folder / f"soak-{result.seed}.stdout").write_text(result.stdout, encoding="utf-8")
    (folder / f"soak-{result.seed}.stderr").write_text(result.stderr, encoding="utf-8")
    return path


def table(results: list[SeedResult], reruns: int) -> str:
    """The closing table: runs, then one row per problem class with its count and seeds."""
    walls = sorted(r.wall_seconds for r in results)
    rows = [("seeds run", str(len(results)), ""),
            ("passed", str(sum(r.ok for r in results)), "")]
    for problem in PROBLEMS:
        bad = [r.seed for r in results if problem in r.problems]
        of = f" of {reruns}" if problem == "nondeterministic" else ""
        shown = ", ".join(map(str, bad[:20])) + (" ..." if len(bad) > 20 else "")
        rows.append((problem, f"{len(bad)}{of}", shown))
    if walls:
        rows.append(("wall s p50 / max", f"{walls[len(walls) // 2]:.1f} / {walls[-1]:.1f}", ""))
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"  {a:<{width}}  {b:>10}  {c}".rstrip() for a, b, c in rows)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.show is not None:
        sys.stdout.write(scenario_toml(args.show))
        return 0
    seeds: list[int] = args.seeds
    sample = rerun_sample(seeds, args.rerun_sample)
    keep = Path(args.keep) if args.keep else None
    base = keep if keep is not None else Path(tempfile.mkdtemp(prefix="emulator-soak-"))
    failures = Path(args.failures)
    results: list[SeedResult] = []
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = {pool.submit(run_seed, s, base / f"seed-{s}", timeout=args.timeout,
                                   rerun=s in sample): s for s in seeds}
            for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
                result = future.result()
                results.append(result)
                sys.stdout.write(_line(result, done, len(seeds)) + "\n")
                if not result.ok:
                    path = _save_failure(result, failures)
                    for crash in result.crashes[:1]:
                        sys.stdout.write("    " + crash.replace("\n", "\n    ") + "\n")
                    sys.stdout.write(f"    reproduce: python -m emulator run {path}\n")
                sys.stdout.flush()
                if keep is None:
                    shutil.rmtree(base / f"seed-{result.seed}", ignore_errors=True)
    except KeyboardInterrupt:
        sys.stdout.write("interrupted\n")
        return 130
    finally:
        if keep is None:
            shutil.rmtree(base, ignore_errors=True)
    results.sort(key=lambda r: r.seed)
    sys.stdout.write(f"soak of {len(seeds)} seeds ({len(sample)} rerun):\n"
                     + table(results, len(sample)) + "\n")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
