"""The files of a recording folder and how they are encoded: one place for their names and readers.

The recorder writes `samples.jsonl.gz`, `decisions.jsonl.gz`, `events.jsonl.gz` and
`publish.jsonl.gz`: JSON lines, gzip-compressed. Each file starts as one empty gzip member and each
flush appends one whole member (RFC 1952 allows a file of several members, and Python's `gzip`,
pandas' `read_json(..., lines=True)` and Spark's / Hadoop's gzip codec read them as one stream), so
the file is valid gzip at any moment of the run, as the plain files were valid JSON lines. The member
headers carry mtime 0 and no file name: the same lines give the same bytes. A process killed in the
middle of a write leaves its last member cut: `iter_lines` reads the members before it, `is_cut`
tells such a file.

Recordings made before the compression (plain `samples.jsonl` ...) stay readable: `find` takes
whichever of the two names the folder holds, the compressed one first.

    import pandas as pd
    pd.read_json("run/samples.jsonl.gz", lines=True)      # compression inferred from the name
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from pathlib import Path

__all__ = ["COMPRESSED", "COMPRESS_LEVEL", "DECISIONS", "EVENTS", "PUBLISH", "SAMPLES", "compress",
           "find", "is_cut", "iter_lines", "open_text"]

SAMPLES = "samples.jsonl"
DECISIONS = "decisions.jsonl"
EVENTS = "events.jsonl"
PUBLISH = "publish.jsonl"
COMPRESSED = ".gz"
"""The suffix of a compressed file: `samples.jsonl.gz`."""

COMPRESS_LEVEL = 3
"""zlib level: ~250 MB/s and 11x on samples, where level 6 is ~70 MB/s for 13x (measured on a
`default` recording); the recorder's cost, not the disk's, is what limits big runs."""


def compress(data: bytes, level: int = COMPRESS_LEVEL) -> bytes:
    """One whole gzip member holding `data`, its header with mtime 0 (deterministic bytes)."""
    return gzip.compress(data, compresslevel=level, mtime=0)


def find(folder: str | Path, name: str) -> Path | None:
    """`folder/name.gz` if it is there, else `folder/name`, else None."""
    folder = Path(folder)
    for candidate in (folder / (name + COMPRESSED), folder / name):
        if candidate.is_file():
            return candidate
    return None


def open_text(path: str | Path) -> io.TextIOBase:
    """A text reader of a recording file, compressed or not (by its name)."""
    path = Path(path)
    if path.name.endswith(COMPRESSED):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")  # noqa: SIM115 - the caller closes it


def iter_lines(folder: str | Path, name: str) -> Iterator[str]:
    """The non-blank lines of `name` in `folder` (compressed or plain; none if neither is there).

    A run killed while a member was being written leaves it cut short: the whole members before it
    are read and the rest is dropped, as a half line of a plain file was."""
    path = find(folder, name)
    if path is None:
        return
    with open_text(path) as f:
        try:
            for line in f:
                if line.endswith("\n") and line.strip():   # a last line without its end: cut short
                    yield line
        except EOFError:   # a member cut short by a kill: what came before it stands
            return


def is_cut(path: str | Path) -> bool:
    """True when compressed `path` ends inside a gzip member (a run killed while writing it). It reads
    the whole file: ask it of the files of runs whose run.json says `"complete": false`."""
    path = Path(path)
    if not path.name.endswith(COMPRESSED):
        return False
    try:
        with gzip.open(path, "rb") as f:
            while f.read(1 << 20):
                pass
    except EOFError:
        return True
    return False
