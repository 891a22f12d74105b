"""`--pulsar-port` checked before anything starts (no heavy import: the protocol's modules load only
when the option is on)."""

from __future__ import annotations

import socket

__all__ = ["check_pulsar_port", "free_base_port"]


def check_pulsar_port(port: int | None, clock: str, source: str = "--pulsar-port") -> str | None:
    """None if fine, else the one-line reason (`source`: the flag or the scenario key it came from)."""
    if port is None:
        return None
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        return f"{source} = {port!r}: expected a port number 1..65535"
    if clock != "wall":
        return (f"{source} = {port}: real clients need the wall clock (add --clock wall); "
                f"the clock is {clock!r}")
    return None


def free_base_port(span: int = 8, host: str = "127.0.0.1") -> int:
    """A port P such that P .. P + span - 1 are free on `host` now (tests and benches: each broker
    listens on its own port from a base)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind((host, 0))
            base = int(s.getsockname()[1])
        if base + span >= 65535:
            continue
        socks: list[socket.socket] = []
        try:
            for p in range(base, base + span):
                t = socket.socket()
                socks.append(t)
                t.bind((host, p))
            return base
        except OSError:
            continue
        finally:
            for t in socks:
                t.close()
    raise RuntimeError(f"no free range of {span} ports on {host}")
