"""`--pulsar-port` checked before anything starts (no heavy import: the protocol's modules load only
when the option is on)."""

from __future__ import annotations

__all__ = ["check_pulsar_port"]


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
