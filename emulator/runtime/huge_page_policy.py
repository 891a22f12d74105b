"""Back a large run's heap with 2 MiB pages: Linux's MADV_COLLAPSE, from a thread beside the run.

Why: pymalloc takes memory in 1 MiB arenas of 4 KiB pages, which the kernel's transparent huge pages
never back (an arena is faulted in before its neighbours exist to make a 2 MiB span). At a million
topics the heap is 6 GB, and its page tables (12 MB) no longer fit the caches: an access to an object
that is not hot costs a page walk from memory. Measured on the 2-core VM (bench/README.md, "Round 4"):
a random read and write of a small object's attributes (`python -m bench.random_access`) costs 1.1-1.2
us in a 0.5 GB heap, 1.3 us in 1.5 GB and 1.8-2.5 us in 5 GB; after collapsing the 5 GB heap into huge
pages, 1.4-2.2 us (the machine's noise is wide). So the same work costs more per topic the larger the
cluster, whatever the emulator's algorithms. pulsar-large at full size, a run with and one without
side by side: -10 % and -18 % of CPU in two pairs, the same decisions; run alone one after the other
("Round 5"): 710.1 -> 635.8 s, -10.5 %.

`huge_pages()` starts a daemon thread that wakes every `every` seconds of wall time and, once the
process's resident set passes `min_rss`, asks the kernel to collapse each private, writable, anonymous
mapping's 2 MiB-aligned chunks not collapsed before (a chunk that left the maps is forgotten: pymalloc
may map a new arena there). It reads nothing of the run and writes nothing into it, so no decision
depends on it; the collector may run in that thread instead of the loop's, and no decision depends on
when it runs either (the recorded outputs hold both). Off where the kernel refuses a probe of its own
(not Linux, a kernel before 6.1, THP set to `never`), with one debug log line. A mapping the kernel
refuses alone (EINVAL: one marked MADV_NOHUGEPAGE, as glibc marks thread stacks) is left as it is.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import mmap
import os
import threading
from collections.abc import Callable, Iterator

import structlog

__all__ = ["HUGE_PAGE", "MIN_RSS", "Collapser", "anonymous_spans", "huge_pages", "libc_madvise", "probe"]

HUGE_PAGE = 2 << 20
"""x86-64's and arm64's (4 KiB granule) transparent huge page: 2 MiB."""

MIN_RSS = 1 << 30
"""Resident bytes below which nothing is collapsed: up to ~1.5 GB the page tables still fit the caches
(random access +10 % from 0.5 to 1.5 GB against +100 % at 5 GB), and the small runs of the tests stay
as they were."""

EVERY = 2.0
"""Wall seconds between two passes: the heap of `pulsar-large` grows by ~6 GB over its first minutes."""

MADV_COLLAPSE = 25   # include/uapi/asm-generic/mman-common.h, Linux >= 6.1

_REFUSED = {errno.EINVAL, errno.ENOSYS, errno.EPERM, errno.EOPNOTSUPP}
"""What a kernel without MADV_COLLAPSE (or with THP off) answers: for the probe, the end of it; for one
mapping, that mapping is left alone."""

Madvise = Callable[[int, int], int]
"""madvise(start, length) with MADV_COLLAPSE: 0, or the errno of the failure."""


def anonymous_spans(maps: str) -> list[tuple[int, int]]:
    """The (first chunk, end chunk) of each private, writable, anonymous mapping of /proc/self/maps
    text (the brk heap included), in 2 MiB chunks wholly inside it; spans shorter than one chunk
    are left out."""
    spans = []
    for line in maps.splitlines():
        fields = line.split()
        if len(fields) < 5 or not fields[1].startswith("rw") or fields[1][3] != "p":
            continue
        if len(fields) > 5 and fields[5] != "[heap]":
            continue   # a file, the stack, vdso
        start, end = (int(x, 16) for x in fields[0].split("-"))
        first, last = -(-start // HUGE_PAGE), end // HUGE_PAGE
        if last > first:
            spans.append((first, last))
    return spans


class Collapser:
    """One pass at a time: `collapse(maps)` collapses the chunks of `maps` not done before (a chunk
    the kernel refuses counts as done: it is not asked again while it stays mapped)."""

    def __init__(self, madvise: Madvise) -> None:
        self.madvise = madvise
        self.done: set[int] = set()
        self.collapsed_bytes = 0
        self.refused_bytes = 0
        self.passes = 0

    def collapse(self, maps: str) -> int:
        """Collapse what is new in `maps`; the bytes asked for in this pass."""
        spans = anonymous_spans(maps)
        mapped: set[int] = set()
        asked = 0
        for first, last in spans:
            mapped.update(range(first, last))
            run_start = None
            for chunk in range(first, last + 1):
                new = chunk < last and chunk not in self.done
                if new and run_start is None:
                    run_start = chunk
                elif not new and run_start is not None:
                    asked += self._collapse_run(run_start, chunk)
                    run_start = None
        self.done &= mapped   # chunks unmapped since: a new arena there starts in 4 KiB pages
        self.passes += 1
        return asked

    def collapse_self(self) -> int:
        """`collapse` this process's own mappings (/proc/self/maps)."""
        with open("/proc/self/maps", encoding="ascii") as f:
            return self.collapse(f.read())

    def _collapse_run(self, first: int, end: int) -> int:
        length = (end - first) * HUGE_PAGE
        failure = self.madvise(first * HUGE_PAGE, length)
        if failure == 0:
            self.collapsed_bytes += length
        elif failure in _REFUSED:
            self.refused_bytes += length
        else:
            return length   # EAGAIN, ENOMEM: tried again next pass
        self.done.update(range(first, end))
        return length


@functools.cache
def libc_madvise() -> Madvise | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    fn.restype = ctypes.c_int

    def madvise(start: int, length: int) -> int:
        return 0 if fn(start, length, MADV_COLLAPSE) == 0 else ctypes.get_errno()

    return madvise


def probe(madvise: Madvise) -> int:
    """0 if the kernel collapses a private anonymous mapping of 4 MiB, faulted in 4 KiB pages, else
    the errno it answers."""
    region = mmap.mmap(-1, 2 * HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        region.write(b"\1" * len(region))
        view = ctypes.c_char.from_buffer(region)
        try:
            start = ctypes.addressof(view)
        finally:
            del view
        first = -(-start // HUGE_PAGE) * HUGE_PAGE   # the whole 2 MiB chunk inside it
        return madvise(first, HUGE_PAGE)
    finally:
        region.close()


@functools.cache
def _kernel_answer(madvise: Madvise) -> int:
    """`probe` once per process and madvise (the kernel's answer does not change; a test suite runs
    thousands of runs)."""
    return probe(madvise)


def _resident_bytes() -> int:
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@contextlib.contextmanager
def huge_pages(enabled: bool = True, *, every: float = EVERY, min_rss: int = MIN_RSS) -> Iterator[Collapser | None]:
    """Collapse the heap into huge pages in a thread for the duration of the block (see the module
    docstring); yields the `Collapser` (None when off or unsupported)."""
    madvise = libc_madvise() if enabled and os.path.exists("/proc/self/maps") else None
    refused = None if madvise is None else _kernel_answer(madvise)
    if madvise is None or refused:
        if refused:
            structlog.get_logger().debug("huge_pages_refused", errno=refused)
        yield None
        return
    collapser = Collapser(madvise)
    stop = threading.Event()

    def passes() -> None:
        while not stop.wait(every):
            if _resident_bytes() >= min_rss:
                collapser.collapse_self()

    thread = threading.Thread(target=passes, name="huge-pages", daemon=True)
    thread.start()
    try:
        yield collapser
    finally:
        stop.set()
        thread.join()
