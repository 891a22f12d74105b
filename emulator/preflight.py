"""Checks of the run's outside world before anything starts: the broker.conf file's bytes, the metrics
address, the recording folder and whether the run fits the machine's memory. Each failure is one line
naming the flag and the value (RunError), so a run never builds a cluster only to fail when the HTTP
server binds, the recorder writes, or the machine runs out of memory hours in.
"""

from __future__ import annotations

import errno
import os
import socket
import tempfile
from pathlib import Path
from typing import Any

import msgspec

__all__ = ["MAX_BROKER_CONF_BYTES", "MemoryEstimate", "available_memory", "check_memory",
           "check_metrics_address", "check_record_dir", "estimate_memory", "read_broker_conf"]

MAX_BROKER_CONF_BYTES = 16 * 1024 * 1024
"""Pulsar's own conf/broker.conf is ~80 KB; a file 200 times that is not a broker.conf."""


class PreflightError(ValueError):
    """One line naming the flag, the value and what is wrong (the runner re-raises it as RunError)."""


def read_broker_conf(path: str) -> str:
    """The text of a broker.conf, or PreflightError: missing, unreadable, too large, binary, not UTF-8.

    Pulsar reads the file with java.util.Properties.load(InputStream), i.e. as ISO-8859-1, so any bytes
    load there; UTF-8 is what every shipped broker.conf is written in (comments hold UTF-8 text), and a
    file that is not UTF-8 here is almost always the wrong file, so it is refused rather than guessed."""
    flag = f"--broker-conf = {path!r}"
    try:
        if Path(path).stat().st_size > MAX_BROKER_CONF_BYTES:
            raise PreflightError(f"{flag}: larger than {MAX_BROKER_CONF_BYTES:,} bytes; not a broker.conf")
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise PreflightError(f"{flag}: no such file") from None
    except IsADirectoryError:
        raise PreflightError(f"{flag}: is a directory, not a broker.conf") from None
    except OSError as e:
        raise PreflightError(f"{flag}: {e.strerror}") from None
    nul = data.find(b"\x00")
    if nul >= 0:
        raise PreflightError(f"{flag}: contains a NUL byte (offset {nul}): a binary file, not a broker.conf")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise PreflightError(f"{flag}: not UTF-8 text (byte 0x{data[e.start]:02x} on line {line})") from None


def check_metrics_address(host: str, port: int) -> None:
    """Bind the metrics address once, now: a busy port or a host that is not this machine's fails here,
    not after the cluster has started. Port 0 (any free port) only checks the host."""
    if not 0 <= port <= 65535:
        raise PreflightError(f"--metrics-port = {port}: expected 0..65535 (0 picks a free port)")
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as e:
        reason = e.strerror if isinstance(e, socket.gaierror) else str(e)
        raise PreflightError(f"--metrics-host = {host!r}: cannot resolve ({reason})") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise PreflightError(f"--metrics-port = {port}: already in use on {host}") from None
            if e.errno == errno.EACCES:
                raise PreflightError(f"--metrics-port = {port}: permission denied (ports below 1024 need "
                                     "privileges)") from None
            raise PreflightError(f"--metrics-host = {host!r}: cannot bind port {port} ({e.strerror})") from None


def check_record_dir(parent: str) -> None:
    """The recording's parent folder exists (or can be made) and is writable: checked by writing a
    temporary file, the only test that also catches read-only mounts and full quotas."""
    flag = f"--record = {parent!r}"
    path = Path(parent)
    if path.exists() and not path.is_dir():
        raise PreflightError(f"{flag}: exists and is not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-check-"):
            pass
    except OSError as e:
        raise PreflightError(f"{flag}: not writable ({e.strerror or e})") from None


# --------------------------------------------------------------------------- memory

# Per-item costs (bytes), measured on short runs of generated scenarios (peak RSS by getrusage, virtual
# clock, 2 emulated minutes, one namespace group per 1,000 topics; issue 32): 10 -> 100 brokers +136 KiB
# each; 128 -> 4,096 bundles +10 KiB each; 10 -> 40 brokers over 4,096 bundles +67 B per broker and
# bundle (every broker's view of every bundle's load); 1,000 -> 20,000 topics +7.4 KiB each with one
# producer and one consumer, of which 2.2 KiB per handle (20,000 topics with 1 -> 4 consumers).
MEM_FIXED = 72 << 20            # the interpreter, the emulator's modules, an empty run
MEM_PER_BROKER = 136 << 10
MEM_PER_BUNDLE = 10 << 10
MEM_PER_BROKER_BUNDLE = 67
MEM_PER_TOPIC = 3 << 10
MEM_PER_HANDLE = 2250
MEM_PER_BROKER_SAMPLE = 24
"""The KPI timeline (a recording, [[expect]] or --summary-json) keeps per-tick figures and per-broker
usage, not the samples: a 24-emulated-hour recorded `default` run (20 brokers, 8,640 samples) grows
from 116 MiB after its first hour to 120 MiB (issue 32; it grew from 133 to 406 MiB while the timeline
kept every sample)."""
MEM_PEAK_FACTOR = 1.85
"""Peak over the steady state the costs above give: the restart case (bench/restart.py: 100 brokers,
65,000 bundles, 100,000 producers) peaks at 3.0 GiB where they give 1.60 GiB (the storm's reconnects,
unloads and queued reports). The timeline's samples are added after it: they only grow."""


class MemoryEstimate(msgspec.Struct, frozen=True, kw_only=True):
    """A run's dimensions together and the peak memory they need (bytes)."""

    brokers: int
    bundles: int
    topics: int
    handles: int
    samples: int
    bytes: int

    def describe(self) -> str:
        return (f"{self.brokers:,} brokers, {self.bundles:,} bundles, {self.topics:,} topics, "
                f"{self.handles:,} producers + consumers"
                + (f", {self.samples:,} KPI samples" if self.samples else ""))


def estimate_memory(scenario: Any, *, duration: float, record_interval: float, timeline: bool,
                    default_bundles: int | None = None) -> MemoryEstimate:
    """The peak memory of a run of `scenario`, from its dimensions together: brokers (the most there
    will be), bundles (initial; splits add more), topics (a partition counts one), handles and, when a
    KPI timeline is kept, its samples. Linear per item as measured, times MEM_PEAK_FACTOR.
    `default_bundles`: the run's defaultNumberOfNamespaceBundles (broker.conf, [settings] and --set
    together, as the runner's effective config has it); None reads the scenario's [settings] alone."""
    brokers = scenario.cluster.broker_count
    for e in scenario.events:
        if type(e).__name__ == "AddBrokers":
            brokers += e.count if e.count is not None else (0 if e.brokers else 1)
    if default_bundles is None:
        default = scenario.settings.get("defaultNumberOfNamespaceBundles", 4)
        default = int(default) if str(default).strip().isdigit() else 4
    else:
        default = default_bundles
    bundles = sum(ns.bundles if ns.bundles is not None else default for ns in scenario.namespaces)
    topics = sum(g.size * max(1, g.partitions) for g in scenario.topics)
    handles = sum(g.size * max(1, g.partitions) * (g.producers + g.consumers) for g in scenario.topics)
    samples = int(duration / record_interval) + 1 if timeline else 0
    steady = (MEM_FIXED + MEM_PER_BROKER * brokers + MEM_PER_BUNDLE * bundles
              + MEM_PER_BROKER_BUNDLE * brokers * bundles + MEM_PER_TOPIC * topics + MEM_PER_HANDLE * handles)
    return MemoryEstimate(brokers=brokers, bundles=bundles, topics=topics, handles=handles, samples=samples,
                          bytes=int(steady * MEM_PEAK_FACTOR) + MEM_PER_BROKER_SAMPLE * brokers * samples)


def available_memory() -> int | None:
    """Bytes the machine can give a new process without swapping: Linux's MemAvailable, else the free
    physical pages; None when neither is known (then nothing is refused)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def _gib(n: int) -> str:
    return f"{n / (1 << 30):,.1f} GiB"


def check_memory(name: str, estimate: MemoryEstimate, available: int | None) -> None:
    """PreflightError (one line) when the estimate exceeds the available memory."""
    if available is None or estimate.bytes <= available:
        return
    raise PreflightError(f"scenario {name}: needs about {_gib(estimate.bytes)} ({estimate.describe()}), more "
                         f"than the {_gib(available)} this machine has available; --no-memory-check runs "
                         "it anyway")
