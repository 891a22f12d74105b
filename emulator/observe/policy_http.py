"""Pulsar's admin paths for placement policies, served by the emulator's HTTP server (http.py).

Each route calls the cluster's admin operations (emulator/cluster/policy_admin.py), which read and
write Pulsar's nodes, so a `pulsar-admin`-style call changes placement exactly as on a broker.

    GET    /admin/v2/clusters/<cluster>/namespaceIsolationPolicies            {name: NamespaceIsolationData}
    GET    /admin/v2/clusters/<cluster>/namespaceIsolationPolicies/<name>     NamespaceIsolationData
    POST   /admin/v2/clusters/<cluster>/namespaceIsolationPolicies/<name>     body NamespaceIsolationData;
           ?unloadBundles=false keeps the matching namespaces where they are (default true, 204)
    DELETE /admin/v2/clusters/<cluster>/namespaceIsolationPolicies/<name>     204
    GET    /admin/v2/clusters/<cluster>/failureDomains                        {name: {"brokers": [...]}}
    GET    /admin/v2/clusters/<cluster>/failureDomains/<name>                 {"brokers": [...]}
    POST   /admin/v2/clusters/<cluster>/failureDomains/<name>                 body {"brokers": [...]} (204)
    DELETE /admin/v2/clusters/<cluster>/failureDomains/<name>                 200
    GET    /admin/v2/namespaces/<tenant>/<ns>/antiAffinity                    the group as text (204: none)
    POST   /admin/v2/namespaces/<tenant>/<ns>/antiAffinity                    body: the group (204)
    DELETE /admin/v2/namespaces/<tenant>/<ns>/antiAffinity                    204

Statuses and messages are Pulsar's (policy_admin.py). A cluster other than the emulated one is 412 on
writes and 404 on reads, as ClustersBase's `validateClusterExistAsync`. Pulsar's client sends the
anti-affinity group as the raw request body; a JSON string (`"g"`) is accepted too. Unlike the read-only
views, these take emulated time: their metadata operations have the store's latency.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import TYPE_CHECKING, Any, Awaitable, Callable

import msgspec
import structlog

from emulator.cluster.policy_admin import PolicyAdminError
from emulator.runtime.supervision import report_failure
from emulator.model.policies import FailureDomain

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster

__all__ = ["PolicyRoutes"]

Response = tuple[int, str, bytes]
_JSON = "application/json"
_TEXT = "text/plain; charset=utf-8"


def _json(value: Any, status: int = 200) -> Response:
    return status, _JSON, msgspec.json.encode(value)


def _error(status: int, reason: str) -> Response:
    return _json({"reason": reason}, status)


_NO_CONTENT: Response = (204, _JSON, b"")


class PolicyRoutes:
    """Matches a path; `handle` runs on the event loop (a coroutine) and never raises for bad input."""

    _PATTERNS = [
        ("isolation", re.compile(r"/admin/v2/clusters/(?P<cluster>[^/]+)/namespaceIsolationPolicies"
                                 r"(?:/(?P<name>[^/]+))?/?")),
        ("domains", re.compile(r"/admin/v2/clusters/(?P<cluster>[^/]+)/failureDomains(?:/(?P<name>[^/]+))?/?")),
        ("anti_affinity", re.compile(r"/admin/v2/namespaces/(?P<tenant>[^/]+)/(?P<ns>[^/]+)/antiAffinity/?")),
    ]

    def __init__(self, cluster: "Cluster") -> None:
        self.cluster = cluster

    def match(self, raw_path: str) -> tuple[Callable[..., Awaitable[Response]], dict[str, Any]] | None:
        parts = urllib.parse.urlsplit(raw_path)
        path = urllib.parse.unquote(parts.path)
        for kind, pattern in self._PATTERNS:
            m = pattern.fullmatch(path)
            if m is not None:
                args = {k: v for k, v in m.groupdict().items()}
                args["query"] = {k: v[-1] for k, v in urllib.parse.parse_qs(parts.query).items()}
                return getattr(self, kind), args
        return None

    async def handle(self, method: str, raw_path: str, body: bytes) -> Response | None:
        """The answer, or None if the path is not one of these routes."""
        found = self.match(raw_path)
        if found is None:
            return None
        view, args = found
        try:
            return await view(method, body, **args)
        except PolicyAdminError as e:
            return _error(e.status, e.reason)
        except Exception as e:
            # not a refusal Pulsar would give: the emulator's own fault, counted as an actor failure
            # (summary, run.json, exit 3) as well as answered with a 500
            system = self.cluster.system
            report_failure(system.failures, system.on_failure, structlog.get_logger("policy_http"),
                           "http:" + getattr(view, "__name__", "policy"), system.clock.now(), e)
            return _error(500, f"emulator fault: {type(e).__name__}: {e}")

    def _check_cluster(self, method: str, cluster: str) -> Response | None:
        if cluster != self.cluster.name:
            return _error(404 if method == "GET" else 412,
                          f"Cluster {cluster} does not exist. (this emulator runs {self.cluster.name!r})")
        return None

    # ------------------------------------------------------------------ isolation policies

    async def isolation(self, method: str, body: bytes, *, cluster: str, name: str | None,
                        query: dict[str, str]) -> Response:
        wrong = self._check_cluster(method, cluster)
        if wrong is not None:
            return wrong
        admin = self.cluster.policies
        if method == "GET":
            return _json(admin.peek("isolation", name))
        if name is None:
            return _error(405, f"{method} needs a policy name: .../namespaceIsolationPolicies/<policyName>")
        if method == "POST":
            unload = query.get("unloadBundles", "true").lower() != "false"
            await admin.set_isolation_policy(name, body, unload=unload)
            return _NO_CONTENT
        await admin.delete_isolation_policy(name)
        return _NO_CONTENT

    # ------------------------------------------------------------------ failure domains

    async def domains(self, method: str, body: bytes, *, cluster: str, name: str | None,
                      query: dict[str, str]) -> Response:
        wrong = self._check_cluster(method, cluster)
        if wrong is not None:
            return wrong
        admin = self.cluster.policies
        if method == "GET":
            return _json(admin.peek("domains", name))
        if name is None:
            return _error(405, f"{method} needs a domain name: .../failureDomains/<domainName>")
        if method == "POST":
            try:
                domain = msgspec.json.decode(body, type=FailureDomain)
            except (msgspec.ValidationError, msgspec.DecodeError) as e:
                return _error(400, f'FailureDomain: expected {{"brokers": ["host:port", ...]}} ({e})')
            await admin.set_failure_domain(name, domain)
            return _NO_CONTENT
        await admin.delete_failure_domain(name)
        return 200, _JSON, b""

    # ------------------------------------------------------------------ anti-affinity groups

    async def anti_affinity(self, method: str, body: bytes, *, tenant: str, ns: str,
                            query: dict[str, str]) -> Response:
        admin = self.cluster.policies
        namespace = f"{tenant}/{ns}"
        if method == "GET":
            group = admin.peek("anti_affinity", namespace)
            return _NO_CONTENT if group is None else (200, _TEXT, group.encode())
        if method == "POST":
            text = body.decode("utf-8", errors="replace").strip()
            if text.startswith('"'):
                try:
                    text = msgspec.json.decode(text, type=str)
                except (msgspec.ValidationError, msgspec.DecodeError):
                    return _error(400, f"antiAffinityGroup = {text!r}: not a JSON string")
            await admin.set_anti_affinity_group(namespace, text)
            return _NO_CONTENT
        await admin.set_anti_affinity_group(namespace, None)
        return _NO_CONTENT
