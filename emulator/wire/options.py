"""`--pulsar-port` checked before anything starts (no heavy import: the protocol's modules load only
when the option is on)."""

from __future__ import annotations

import socket

__all__ = ["check_pulsar_port", "free_base_port"]


def check_pulsar_port(port: int | None, clock: str, source: str = "--pulsar-port", *, brokers: int = 0,
                      host: str = "127.0.0.1", metrics_port: int | None = None) -> str | None:
    """None if fine, else the one-line reason (`source`: the flag or the scenario key it came from).
    With `brokers`, each of the ports BASE .. BASE + brokers - 1 must be free on `host` now and apart
    from the metrics port: a busy port is bad input before the cluster starts, as `--metrics-port`'s."""
    if port is None:
        return None
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        return f"{source} = {port!r}: expected a port number 1..65535"
    if clock != "wall":
        return (f"{source} = {port}: real clients need the wall clock (add --clock wall); "
                f"the clock is {clock!r}")
    if port + brokers - 1 > 65535:
        return f"{source} = {port}: its {brokers} brokers need ports up to {port + brokers - 1}, past 65535"
    for k in range(brokers):
        if port + k == metrics_port:
            return (f"{source} = {port}: broker-{k + 1} would listen on {port + k}, the metrics port; "
                    "choose ports apart")
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((host or "127.0.0.1", port + k))
            except OSError as e:
                return (f"{source} = {port}: broker-{k + 1}'s port {port + k} on {host} is not free "
                        f"({e.strerror or e})")
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
