"""What a random access costs as the data grows, with and without huge pages.

    python -m bench.random_access 500 1500 5000          # heap sizes in MB
    python -m bench.random_access --collapse 5000        # after collapsing the heap (MADV_COLLAPSE)
    python -m bench.random_access --topics 100000 1000000 [--collapse]

The evidence behind `emulator/runtime/huge_page_policy.py`: per heap size, objects of ~300 bytes fill
it, then 2,000,000 reads and writes of a random one's attributes are timed (process time), and as a
control the same operations on 10,000 of them (hot in the caches).

`--topics N ...`: the emulator's commonest per-topic step instead, a lookup by topic name
(`persistent://tenant/ns/t-i`) in a dict of N topics, 1,000,000 random lookups timed, against the same
lookups among 10,000 of them. What a per-topic operation pays at 1/10 and at full `pulsar-large` size
(100,000 and 1,000,000 topics) whatever the emulator's algorithm: issue 31's cost ratio.

Each size runs in its own child, so one size's heap does not shape the next. Not a bench group: a
fixed-size probe of the machine.
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
LOOKUPS = 1_000_000
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
    collapsed = _collapse() if collapse else 0
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


def _topic_probe(topics: int, collapse: bool) -> dict[str, float]:
    gc.disable()
    names = [f"persistent://tenant-{i // 100_000}/ns-{i // 1000}/t-{i}" for i in range(topics)]
    index = {name: i for i, name in enumerate(names)}
    collapsed = _collapse() if collapse else 0
    rng = random.Random(1)
    picks = [names[rng.randrange(topics)] for _ in range(LOOKUPS)]
    hot = [names[rng.randrange(min(topics, 10_000))] for _ in range(LOOKUPS)]
    timings = []
    for order in (picks, hot):
        total = 0
        started = time.process_time()
        for name in order:
            total += index[name]
        timings.append((time.process_time() - started) / LOOKUPS * 1e9)
    return {"topics": topics, "random_ns": round(timings[0]), "hot_ns": round(timings[1]),
            "collapsed_mb": collapsed >> 20,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10}


def _collapse() -> int:
    """Collapse this process's heap into huge pages; the bytes collapsed (0 where unsupported)."""
    from emulator.runtime.huge_page_policy import Collapser, libc_madvise
    madvise = libc_madvise()
    if madvise is None:
        return 0
    collapser = Collapser(madvise)
    collapser.collapse_self()
    return collapser.collapsed_bytes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.random_access", description=__doc__.split("\n")[0])
    parser.add_argument("sizes", nargs="+", type=int, metavar="N",
                        help="heap sizes in MB (or, with --topics, topic counts)")
    parser.add_argument("--topics", action="store_true", help="time lookups by topic name in a dict of N topics")
    parser.add_argument("--collapse", action="store_true", help="collapse the heap into huge pages first")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if min(args.sizes) < 1:
        parser.error(f"sizes = {min(args.sizes)}; expected every N >= 1")
    if args.child:
        probe = _topic_probe if args.topics else _probe
        print(json.dumps(probe(args.sizes[0], args.collapse)))
        return 0
    for size in args.sizes:
        cmd = [sys.executable, "-m", "bench.random_access", "--child", str(size)]
        cmd += ["--collapse"] * args.collapse + ["--topics"] * args.topics
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        row = json.loads(out)
        what = f"{row['topics']:>9} topics" if args.topics else f"{row['heap_mb']:>6} MB"
        print(f"{what}: random {row['random_ns']:>5} ns/op, hot {row['hot_ns']:>4} ns/op, "
              f"collapsed {row['collapsed_mb']} MB, peak RSS {row['peak_rss_mb']} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
