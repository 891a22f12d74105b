"""What a random access to a small object costs as the heap grows, with and without huge pages.

    python -m bench.random_access 500 1500 5000          # heap sizes in MB
    python -m bench.random_access --collapse 5000        # after collapsing the heap (MADV_COLLAPSE)

The evidence behind `emulator/runtime/huge_page_policy.py`: per heap size, objects of ~300 bytes fill
it, then 2,000,000 reads and writes of a random one's attributes are timed (process time), and as a
control the same operations on 10,000 of them (hot in the caches). Each size runs in its own child, so
one size's heap does not shape the next. Not a bench group: a fixed-size probe of the machine.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import resource
import subprocess
import sys
import time

OPS = 2_000_000
OBJECT_BYTES = 300


class _Handle:
    def __init__(self, i: int) -> None:
        self.a = i
        self.b = float(i)
        self.c = None
        self.d = str(i)


def _probe(megabytes: int, collapse: bool) -> dict[str, float]:
    gc.disable()
    n = megabytes * (1 << 20) // OBJECT_BYTES
    objects = [_Handle(i) for i in range(n)]
    collapsed = 0
    if collapse:
        from emulator.runtime.huge_page_policy import Collapser, libc_madvise
        madvise = libc_madvise()
        if madvise is not None:
            collapser = Collapser(madvise)
            collapser.collapse_self()
            collapsed = collapser.collapsed_bytes
    rng = random.Random(1)
    picks = [rng.randrange(n) for _ in range(OPS)]
    hot = [i % 10_000 for i in picks]
    timings = []
    for order in (picks, hot):
        total = 0.0
        started = time.process_time()
        for i in order:
            o = objects[i]
            o.a += 1
            total += o.b
        timings.append((time.process_time() - started) / OPS * 1e9)
    return {"heap_mb": megabytes, "random_ns": round(timings[0]), "hot_ns": round(timings[1]),
            "collapsed_mb": collapsed >> 20,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.random_access", description=__doc__.split("\n")[0])
    parser.add_argument("sizes", nargs="+", type=int, metavar="MB", help="heap sizes, MB")
    parser.add_argument("--collapse", action="store_true", help="collapse the heap into huge pages first")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_probe(args.sizes[0], args.collapse)))
        return 0
    for size in args.sizes:
        cmd = [sys.executable, "-m", "bench.random_access", "--child", str(size)]
        cmd += ["--collapse"] if args.collapse else []
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        row = json.loads(out)
        print(f"{row['heap_mb']:>6} MB: random {row['random_ns']:>5} ns/op, hot {row['hot_ns']:>4} ns/op, "
              f"collapsed {row['collapsed_mb']} MB, peak RSS {row['peak_rss_mb']} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
