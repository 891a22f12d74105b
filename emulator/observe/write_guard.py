"""Who may write through the admin paths: the checks Grafana and Prometheus make, and the write log.

Any web page the user visits can send a POST to 127.0.0.1 (a "simple" cross-origin request needs no
preflight), and a page on a domain that re-resolves to 127.0.0.1 (DNS rebinding) can even read the
answer. So a write (POST, PUT, DELETE) is refused with 403 when

- its `Origin` header is present and is not this server's own (`http://<bound host>:<port>`, or a
  loopback alias when bound to loopback), or is `null` (a sandboxed page);
- its `Host` header is not the bound address (a rebinding page sends its own domain name); a server
  bound to every interface (`0.0.0.0`, `::`) takes any IP literal, `localhost` and this machine's name.

With a token (`--admin-token TOKEN`) every write must also carry `Authorization: Bearer TOKEN`
(Pulsar's token authentication header), else 401. Reads stay open, as Pulsar's metrics are.

Every accepted write is kept as an `AdminWrite` (emulated time, method, path, body, status): the run's
summary and run.json list them.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
import urllib.parse
from typing import Protocol

import msgspec

__all__ = ["AdminWrite", "WriteGuard"]

_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


class AdminWrite(msgspec.Struct, frozen=True, kw_only=True):
    """One write the HTTP server accepted, as the summary lists it."""
    t: float
    """Emulated seconds when it reached the cluster."""
    method: str
    path: str
    body: str
    status: int

    def line(self) -> str:
        body = self.body if len(self.body) <= 120 else self.body[:117] + "..."
        return f"t={self.t:.1f} s {self.method} {self.path}" + (f" {body}" if body else "") + f" -> {self.status}"


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _split_host(value: str) -> tuple[str, int | None] | None:
    """`host[:port]` or `[v6][:port]` of a Host header or an origin's netloc; None if malformed."""
    try:
        parts = urllib.parse.urlsplit("//" + value)
        return (parts.hostname or "").lower(), parts.port
    except ValueError:
        return None


class _Headers(Protocol):
    """A request's headers: `get` by name, case-insensitively (http.server's `email.message.Message`)."""

    def get(self, name: str, default: None = None) -> str | None: ...


class WriteGuard:
    """Decides whether a write may go on: None, or (status, reason, extra headers) to refuse it."""

    def __init__(self, host: str, port: int, token: str | None = None) -> None:
        self.host = host.strip("[]").lower()
        self.port = port
        self.token = token
        wildcard = self.host in ("0.0.0.0", "::")
        loopback = self.host in _LOOPBACK_NAMES or (_is_ip(self.host) and ipaddress.ip_address(self.host).is_loopback)
        self._any_ip = wildcard
        names = {self.host}
        if loopback or wildcard:
            names.update(_LOOPBACK_NAMES)
        if wildcard:
            names.update({socket.gethostname().lower(), socket.getfqdn().lower()})
        self._names = names

    def _own(self, host: str, port: int | None, default_port: int = 80) -> bool:
        if (port if port is not None else default_port) != self.port:
            return False
        return host in self._names or (self._any_ip and _is_ip(host))

    def check(self, headers: "_Headers") -> tuple[int, str, dict[str, str]] | None:
        host_header = headers.get("Host")
        where = _split_host(host_header) if host_header else None
        if where is None or not self._own(*where):
            return 403, (f"Host {host_header!r} is not this server's address ({self.host}:{self.port}): "
                         "writes refused (DNS rebinding guard)"), {}
        origin = headers.get("Origin")
        if origin is not None:
            parts = urllib.parse.urlsplit(origin) if origin != "null" else None
            own = False
            if parts is not None and parts.scheme == "http":
                split = _split_host(parts.netloc)
                own = split is not None and self._own(*split)
            if not own:
                return 403, (f"Origin {origin!r} is not this server's (http://{self.host}:{self.port}): "
                             "cross-origin writes refused"), {}
        if self.token is not None:
            auth = headers.get("Authorization") or ""
            scheme, _, given = auth.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), self.token.encode()):
                why = "no Authorization header" if not auth else "the Bearer token does not match"
                return 401, f"writes need Authorization: Bearer <--admin-token> ({why})", \
                    {"WWW-Authenticate": 'Bearer realm="pulsar-lb-emulator"'}
        return None
