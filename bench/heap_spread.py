"""The same run in its own heap and scattered through a heap ten times larger: how much of issue 31's cost
ratio the heap's size alone explains.

    python -m bench.heap_spread                    # pulsar-large at 1/10, in ~0.5 GB and in ~6.5 GB
    python -m bench.heap_spread --scale 0.03 --ballast-gb 1 --repeat 3

Each run is a fresh child. A `plain` child runs `render(scale)` as `python -m emulator run` does. A
`spread` child first fills its heap with `--ballast-gb` of small bytes objects (sizes over pymalloc's
classes; bytes are never tracked by the collector), frees `--holes` of them at random, freezes the
collector on the rest, and then runs the same scenario: the run's own objects land in the holes, scattered
over the whole heap, as the objects of a run with ten times the topics are scattered over its own. The
figure is each child's CPU (user + sys) after the ballast is made, so the two differ only in where the
run's objects live. Both kinds must make the same decisions: their KPIs are compared, and a difference
exits 1; a run that broke (its exit code neither 0 nor 1) exits 3, with no comparison.

What it does not reproduce: a larger run's larger dicts and arrays (a lookup among 1,000,000 topics
instead of 100,000), which `python -m bench.random_access --topics` times on its own.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
from typing import Any

__all__ = ["make_ballast", "main", "same_decisions"]

SMALLEST, LARGEST = 2, 480   # bytes payloads: objects of 35-513 bytes, pymalloc's size classes


def make_ballast(gigabytes: float, holes: float, seed: int = 7) -> list[bytes | None]:
    """Small bytes objects summing to ~`gigabytes`, a `holes` fraction of them freed at random."""
    rng = random.Random(seed)
    target = gigabytes * (1 << 30)
    ballast: list[bytes | None] = []
    total = 0
    while total < target:
        n = rng.randrange(SMALLEST, LARGEST)
        ballast.append(bytes(n))
        total += n + 33   # a bytes object's header
    for i in rng.sample(range(len(ballast)), int(len(ballast) * holes)):
        ballast[i] = None
    return ballast


def same_decisions(runs: list[dict[str, Any]]) -> list[str]:
    """The KPIs on which some run differs from the first (empty: every run decided the same)."""
    first = runs[0]["kpis"]
    return sorted({k for run in runs[1:] for k in set(first) | set(run["kpis"])
                   if run["kpis"].get(k) != first.get(k)})


def _child(scenario: str, out: str, gigabytes: float, holes: float) -> int:
    from emulator.cli import main as emulator_main
    ballast = make_ballast(gigabytes, holes) if gigabytes > 0 else []
    gc.collect()
    gc.freeze()
    before = resource.getrusage(resource.RUSAGE_SELF)
    summary = out + ".summary.json"
    code = emulator_main(["run", scenario, "--quiet", "--no-memory-check", "--summary-json", summary])
    after = resource.getrusage(resource.RUSAGE_SELF)
    kpis: dict[str, Any] = {}
    if os.path.exists(summary):   # none when the run broke (exit 3): the parent reports its exit code
        with open(summary, encoding="utf-8") as f:
            kpis = json.load(f).get("kpis", {})
    doc = {"ballast_gb": gigabytes, "holes": holes, "ballast_objects": len(ballast), "exit_code": code,
           "user_s": after.ru_utime - before.ru_utime, "sys_s": after.ru_stime - before.ru_stime,
           "peak_rss_mb": after.ru_maxrss >> 10, "kpis": kpis}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return 0


def _run_child(scenario: str, out: str, gigabytes: float, holes: float) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.heap_spread", "--child", scenario, out,
           "--ballast-gb", str(gigabytes), "--holes", str(holes)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out, encoding="utf-8") as f:
        doc: dict[str, Any] = json.load(f)
    return doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.heap_spread", description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=0.1, help="pulsar-large's size (default 0.1)")
    parser.add_argument("--ballast-gb", type=float, default=6.0, help="the spread heap's ballast, GB")
    parser.add_argument("--holes", type=float, default=0.5, help="fraction of the ballast freed")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each kind, alternating")
    parser.add_argument("--child", nargs=2, metavar=("SCENARIO", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(args.child[0], args.child[1], args.ballast_gb, args.holes)
    if not 0 <= args.holes < 1 or args.ballast_gb <= 0 or args.repeat < 1 or args.scale <= 0:
        parser.error("expected --holes in [0, 1), --ballast-gb > 0, --repeat >= 1, --scale > 0")
    from .large_scenario import render
    with tempfile.TemporaryDirectory(prefix="bench-spread-") as tmp:
        scenario = os.path.join(tmp, "scenario.toml")
        with open(scenario, "w", encoding="utf-8") as f:
            f.write(render(args.scale))
        runs: dict[str, list[dict[str, Any]]] = {"plain": [], "spread": []}
        for k in range(args.repeat):
            for kind, gb in (("plain", 0.0), ("spread", args.ballast_gb)):
                doc = _run_child(scenario, os.path.join(tmp, f"{kind}-{k}.json"), gb, args.holes)
                runs[kind].append(doc)
                print(f"{kind:>6}: user {doc['user_s']:6.1f} s, sys {doc['sys_s']:5.1f} s, "
                      f"peak RSS {doc['peak_rss_mb']:>6} MB, exit {doc['exit_code']}", flush=True)
    broken = [d["exit_code"] for docs in runs.values() for d in docs if d["exit_code"] not in (0, 1)]
    if broken:
        print(f"a run broke (exit {broken[0]}): no comparison")
        return 3
    cpu = {kind: statistics.median(d["user_s"] + d["sys_s"] for d in docs) for kind, docs in runs.items()}
    user = {kind: statistics.median(d["user_s"] for d in docs) for kind, docs in runs.items()}
    print(f"median CPU: plain {cpu['plain']:.1f} s, spread {cpu['spread']:.1f} s "
          f"(x{cpu['spread'] / cpu['plain']:.2f}; user alone x{user['spread'] / user['plain']:.2f})")
    differing = same_decisions(runs["plain"] + runs["spread"])
    if differing:
        print(f"the runs decided differently: {', '.join(differing)}")
        return 1
    print("every run made the same decisions (KPIs identical)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
