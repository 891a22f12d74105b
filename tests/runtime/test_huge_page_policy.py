"""huge_pages: which spans of /proc/self/maps are collapsed, once each, and what a refusal stops; on
this machine's kernel, a real collapse puts a buffer on huge pages."""

from __future__ import annotations

import ctypes
import errno
import mmap
import re
import threading

import pytest

from emulator.runtime.huge_page_policy import HUGE_PAGE, Collapser, anonymous_spans, huge_pages, libc_madvise, probe

MiB = 1 << 20


def _line(start: int, end: int, perms: str = "rw-p", path: str = "") -> str:
    return f"{start:x}-{end:x} {perms} 00000000 00:00 0 {path}".rstrip()


def test_only_private_writable_anonymous_whole_chunks():
    maps = "\n".join([
        _line(0x4000_0000, 0x4060_0000),                               # 3 chunks
        _line(0x5010_0000, 0x5050_0000),                               # 1 whole chunk inside
        _line(0x6000_0000, 0x6010_0000),                               # under one chunk
        _line(0x7000_0000, 0x7040_0000, path="[heap]"),                # the brk heap counts
        _line(0x8000_0000, 0x8040_0000, path="[stack]"),
        _line(0x9000_0000, 0x9040_0000, path="/usr/lib/libc.so.6"),
        _line(0xA000_0000, 0xA040_0000, perms="r--p"),
        _line(0xB000_0000, 0xB040_0000, perms="rw-s"),
    ])
    c = HUGE_PAGE
    assert anonymous_spans(maps) == [(0x4000_0000 // c, 0x4060_0000 // c), (0x5020_0000 // c, 0x5040_0000 // c),
                                     (0x7000_0000 // c, 0x7040_0000 // c)]


def test_each_chunk_once_and_new_ones_in_runs():
    calls = []
    collapser = Collapser(lambda start, length: calls.append((start, length)) or 0)
    first = _line(0x4000_0000, 0x4040_0000)
    collapser.collapse(first)
    assert calls == [(0x4000_0000, 2 * HUGE_PAGE)]
    calls.clear()
    # the mapping grew at both ends: only the new chunks, as two runs
    assert collapser.collapse(_line(0x3FE0_0000, 0x4080_0000)) == 3 * HUGE_PAGE
    assert calls == [(0x3FE0_0000, HUGE_PAGE), (0x4040_0000, 2 * HUGE_PAGE)]
    calls.clear()
    assert collapser.collapse(_line(0x3FE0_0000, 0x4080_0000)) == 0
    assert calls == []
    assert collapser.collapsed_bytes == 5 * HUGE_PAGE


def test_unmapped_chunks_are_forgotten():
    calls = []
    collapser = Collapser(lambda start, length: calls.append(start) or 0)
    collapser.collapse(_line(0x4000_0000, 0x4040_0000))
    collapser.collapse(_line(0x4000_0000, 0x4020_0000))   # the second chunk left the maps
    calls.clear()
    collapser.collapse(_line(0x4000_0000, 0x4040_0000))   # mapped again: 4 KiB pages again
    assert calls == [0x4020_0000]


def test_a_refused_mapping_is_left_alone_and_a_transient_failure_is_retried():
    results = iter([errno.EAGAIN, 0])
    collapser = Collapser(lambda start, length: next(results))
    collapser.collapse(_line(0x4000_0000, 0x4020_0000))
    assert collapser.done == set()
    collapser.collapse(_line(0x4000_0000, 0x4020_0000))
    assert collapser.done == {0x4000_0000 // HUGE_PAGE}

    calls = []
    refusing = Collapser(lambda start, length: calls.append(start) or (errno.EINVAL if start < 0x5000_0000 else 0))
    maps = _line(0x4000_0000, 0x4060_0000) + "\n" + _line(0x5000_0000, 0x5020_0000)
    refusing.collapse(maps)
    assert calls == [0x4000_0000, 0x5000_0000]   # the refusal stopped nothing
    assert (refusing.refused_bytes, refusing.collapsed_bytes) == (3 * HUGE_PAGE, HUGE_PAGE)
    refusing.collapse(maps)
    assert calls == [0x4000_0000, 0x5000_0000]   # neither asked again


def test_off_when_the_kernel_refuses_the_probe(monkeypatch):
    import emulator.runtime.huge_page_policy as hp  # the module, not the function
    monkeypatch.setattr(hp, "libc_madvise", lambda: (lambda start, length: errno.EINVAL))
    with huge_pages() as collapser:
        assert collapser is None
    assert not any(t.name == "huge-pages" for t in threading.enumerate())
    with huge_pages(False) as collapser:
        assert collapser is None


def _huge_kib(start: int, end: int) -> int:
    """AnonHugePages of the smaps entries overlapping [start, end)."""
    total, overlaps = 0, False
    with open("/proc/self/smaps", encoding="ascii") as f:
        for line in f:
            m = re.match(r"([0-9a-f]+)-([0-9a-f]+) ", line)
            if m:
                overlaps = int(m.group(1), 16) < end and start < int(m.group(2), 16)
            elif overlaps and line.startswith("AnonHugePages:"):
                total += int(line.split()[1])
    return total


def test_a_real_collapse_backs_a_buffer_with_huge_pages():
    madvise = libc_madvise()
    if madvise is None or probe(madvise):
        pytest.skip("no MADV_COLLAPSE here (not Linux, a kernel before 6.1, or THP `never`)")
    buf = mmap.mmap(-1, 16 * MiB, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)   # faulted in 4 KiB pages
    buf.write(b"x" * len(buf))
    view = ctypes.c_char.from_buffer(buf)
    start = ctypes.addressof(view)
    del view
    before = _huge_kib(start, start + len(buf))
    collapser = Collapser(madvise)
    collapser.collapse_self()
    assert _huge_kib(start, start + len(buf)) - before >= 8 * 1024   # at least 4 of its 2 MiB chunks
    assert collapser.collapsed_bytes >= 8 * MiB
    buf.close()


def test_the_thread_passes_past_min_rss_and_ends_with_the_block(monkeypatch):
    import emulator.runtime.huge_page_policy as hp  # the module, not the function
    if libc_madvise() is None or probe(libc_madvise()):
        pytest.skip("no MADV_COLLAPSE here")
    rss = iter([0, 0, 1 << 40])   # below min_rss twice, then above: the third wake makes the first pass
    passed = threading.Event()
    resident_reads = []

    def resident() -> int:
        resident_reads.append(1)
        return next(rss, 1 << 40)

    real = hp.Collapser.collapse_self
    monkeypatch.setattr(hp, "_resident_bytes", resident)
    monkeypatch.setattr(hp.Collapser, "collapse_self", lambda self: (real(self), passed.set())[0])
    with huge_pages(every=0.001, min_rss=1 << 30) as collapser:
        assert collapser is not None
        assert passed.wait(10)   # synchronisation with the thread, not a wait for time to pass
        assert len(resident_reads) >= 3 and collapser.passes >= 1
    assert not any(t.name == "huge-pages" for t in threading.enumerate())
