"""The roll-up bench's baseline: a Spark job that only reads a recording's files and counts their lines.

    python -m bench.read_count RUN_DIR      # prints "<lines> lines"

It starts its session as the roll-up does (`emulator.pipeline.session`, sized to the same input: the same JVM
and SQL settings), reads the four recorded files the roll-up reads as text (gzip decompressed by
Spark) and counts the lines in one job. Timed start to exit by `bench/rollup.py`, against `rollup`.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    from emulator.observe.recording_files import find
    from emulator.pipeline.recording import DECISIONS_FILE, EVENTS_FILE, PUBLISH_FILE, SAMPLES_FILE
    from emulator.pipeline.session import launch_conf, sized_to, spark_session

    (run,) = argv
    paths = [p for p in (find(run, n) for n in (SAMPLES_FILE, DECISIONS_FILE, EVENTS_FILE, PUBLISH_FILE))
             if p is not None]
    size = sum(p.stat().st_size for p in paths)
    with spark_session("local[*]", conf=launch_conf("local[*]", size)) as spark, sized_to(spark, size):
        lines = spark.read.text([str(p) for p in paths]).count()
    print(f"{lines} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
