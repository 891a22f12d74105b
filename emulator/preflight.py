"""Checks of the run's outside world before anything starts: the broker.conf file's bytes, the metrics
address and the recording folder. Each failure is one line naming the flag and the value (RunError),
so a run never builds a cluster only to fail when the HTTP server binds or the recorder writes.
"""

from __future__ import annotations

import errno
import socket
import tempfile
from pathlib import Path

__all__ = ["MAX_BROKER_CONF_BYTES", "check_metrics_address", "check_record_dir", "read_broker_conf"]

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
