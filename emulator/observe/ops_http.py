"""The HTTP paths that change the run: Pulsar's namespace and bundle unload and split, and the HTTP lookup.

Served by http.py on the event loop (coroutines, through the gate's task queue), each as Pulsar answers it:

    PUT /admin/v2/namespaces/<tenant>/<ns>/unload            NamespacesBase.internalUnloadNamespaceAsync: 204
    PUT /admin/v2/namespaces/<tenant>/<ns>/<bundle>/unload   internalUnloadNamespaceBundleAsync: 204;
        ?destinationBroker=<broker id> (an `http://` prefix is stripped, as Pulsar does)
    PUT /admin/v2/namespaces/<tenant>/<ns>/<bundle>/split    internalSplitNamespaceBundleAsync: 204;
        ?unload=true|false (default false), ?splitAlgorithmName=<name>; body: the split boundaries as a
        JSON list of longs (`splitBoundaries`, for specified_positions_divide)
    GET /lookup/v2/topic/<persistent|non-persistent>/<tenant>/<ns>/<topic>[?authoritative=true]
        TopicLookupBase.internalLookupTopicAsync: LookupData, or 307 to the broker to ask next
    GET /lookup/v2/topic/<persistent|non-persistent>/<tenant>/<ns>/<topic>/bundle
        internalGetNamespaceBundle: the bundle range, as text (read-only)

The writes go through the cluster's admin operations (`Cluster.unload_namespace`, `unload_bundle`,
`split_bundle`, as a scenario's `unload` and `split` events do), so they take emulated time and the answer
comes once the owner has unloaded or split; the write guard checks them and the run's summary lists them.
Statuses: an unknown namespace 404 "Namespace does not exist"; a bundle range that does not parse or is
not one of the namespace's bundles 412 "Invalid bundle range: ..." (PulsarWebResource
.validateNamespaceBundleRange); an unsupported split algorithm 412 with Pulsar's message; a bundle no
broker owns is unloaded as a no-op (204, as Pulsar's isBundleOwnedByAnyBroker check); a failed
operation 500 with its reason (RestException of a non-REST cause). Choice: splitting a bundle no broker
owns is 412 "Failed to find ownership for ServiceUnit:<bundle>" where Pulsar would first assign the bundle
(validateNamespaceBundleOwnershipAsync with readOnly false); the bundle names `LARGEST` and `HOT` are not
resolved (412 as any other range that does not parse).

**The lookup assigns, as Pulsar's does.** Pulsar's HTTP lookup calls `getBrokerServiceUrlAsync` like the
binary one: a bundle no broker owns is assigned by the load manager (a follower redirects to the leader,
the leader picks a broker and redirects there with `authoritative=true`, which acquires it). So this
lookup is a cluster operation: it asks a broker `LookupTopic` through the emulated lookup path (its
latencies, permits and counters), through the gate as writes are. It is not an admin write: Pulsar lets
any client look up a topic, so it needs no token and passes no Origin check, and it is not listed among
the admin writes. A Redirect is answered as Pulsar answers it: 307 with `Location` set to the target
broker's lookup URL with the new authoritative flag; that broker's web service is this server under
`/emulator/brokers/<id>/` (http.py), so an HTTP client that follows redirects (curl -L, Pulsar's HTTP
lookup client) ends at the owner. The first hop is the broker named by that prefix, else the leader,
else the first live broker. `public/default` is written on first use (`Cluster.ensure_default_namespace`).
Failures: no live broker 503; ServiceNotReady and TooManyRequests 503 (the lookup semaphore's answer);
MetadataError 500; TopicNotFound 404 "Topic not found."; an unknown namespace 404 "Policies not found for
<ns> namespace" (checkLocalOrGetPeerReplicationCluster).
"""

from __future__ import annotations

import re
import urllib.parse
from typing import TYPE_CHECKING, Any, Callable

import msgspec
import structlog

from emulator.cluster import paths
from emulator.cluster.cluster import DEFAULT_NAMESPACE, DEFAULT_NAMESPACE_BUNDLES
from emulator.cluster.messages import LookupTopic, LookupType, ServerError
from emulator.cluster.network import web_url_of
from emulator.model.bundles import NamespaceBundles
from emulator.model.policies import LocalPolicies
from emulator.runtime import ActorDead, AskTimeout
from emulator.runtime.supervision import report_failure

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster

__all__ = ["ClusterOpRoutes"]

Response = tuple[int, str, bytes] | tuple[int, str, bytes, dict[str, str]]
"""Status, content type, body, and the extra headers of a redirect."""
_JSON = "application/json"
_NO_CONTENT: Response = (204, _JSON, b"")
_PREFIX = re.compile(r"/emulator/brokers/(?P<broker>[^/]+)(?P<rest>/.*)")
_NS = r"/admin/v2/namespaces/(?P<tenant>[^/]+)/(?P<ns>[^/]+)"
_PATTERNS = [
    ("unload_namespace", re.compile(_NS + r"/unload/?")),
    ("unload_bundle", re.compile(_NS + r"/(?P<bundle>[^/]+)/unload/?")),
    ("split_bundle", re.compile(_NS + r"/(?P<bundle>[^/]+)/split/?")),
    ("bundle_range", re.compile(r"/lookup/v2/topic/(?P<domain>persistent|non-persistent)/(?P<tenant>[^/]+)/"
                                r"(?P<ns>[^/]+)/(?P<topic>[^/]+)/bundle/?")),
    ("lookup", re.compile(r"/lookup/v2/topic/(?P<domain>persistent|non-persistent)/(?P<tenant>[^/]+)/"
                          r"(?P<ns>[^/]+)/(?P<topic>.+)")),
]
_METHOD = {"unload_namespace": "PUT", "unload_bundle": "PUT", "split_bundle": "PUT", "lookup": "GET",
           "bundle_range": "GET"}
_LOOKUP_STATUS = {ServerError.SERVICE_NOT_READY: 503, ServerError.TOO_MANY_REQUESTS: 503,
                  ServerError.METADATA_ERROR: 500, ServerError.TOPIC_NOT_FOUND: 404}


def _json(value: Any, status: int = 200) -> Response:
    return status, _JSON, msgspec.json.encode(value)


def _error(status: int, reason: str) -> Response:
    return _json({"reason": reason}, status)


class _Refused(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class ClusterOpRoutes:
    """Matches a path; `handle` runs on the event loop (a coroutine) and never raises for bad input.

    `base_url()` is the server's own URL (for a redirect's Location)."""

    def __init__(self, cluster: "Cluster", base_url: Callable[[], str]) -> None:
        self.cluster = cluster
        self.base_url = base_url

    @staticmethod
    def match(raw_path: str) -> tuple[str, dict[str, Any]] | None:
        parts = urllib.parse.urlsplit(raw_path)
        path = urllib.parse.unquote(parts.path)
        broker = None
        prefixed = _PREFIX.fullmatch(path)
        if prefixed is not None:
            broker, path = prefixed.group("broker"), prefixed.group("rest")
        for kind, pattern in _PATTERNS:
            m = pattern.fullmatch(path)
            if m is not None:
                args: dict[str, Any] = dict(m.groupdict())
                args["query"] = {k: v[-1] for k, v in urllib.parse.parse_qs(parts.query).items()}
                args["broker"] = broker
                return kind, args
        return None

    @classmethod
    def allow(cls, raw_path: str) -> str | None:
        found = cls.match(raw_path)
        if found is None:
            return None
        return "PUT, OPTIONS" if _METHOD[found[0]] == "PUT" else "GET, HEAD, OPTIONS"

    async def handle(self, method: str, raw_path: str, body: bytes) -> Response | None:
        found = self.match(raw_path)
        if found is None:
            return None
        kind, args = found
        if method != _METHOD[kind]:
            return _error(405, f"{method} {urllib.parse.urlsplit(raw_path).path}: expected {_METHOD[kind]}")
        try:
            return await getattr(self, kind)(body, **args)
        except _Refused as e:
            return _error(e.status, e.reason)
        except Exception as e:
            # not a refusal Pulsar would give: the emulator's own fault, counted as an actor failure
            system = self.cluster.system
            report_failure(system.failures, system.on_failure, structlog.get_logger("ops_http"),
                           "http:" + kind, system.clock.now(), e)
            return _error(500, f"emulator fault: {type(e).__name__}: {e}")

    # ------------------------------------------------------------------ namespaces and bundles

    def _bundles(self, namespace: str, missing: str = "Namespace does not exist") -> NamespaceBundles:
        data = self.cluster.store.peek(paths.local_policies_path(namespace))
        if data is None:
            if namespace == DEFAULT_NAMESPACE:   # as initialised, not yet written (nothing owned)
                return NamespaceBundles.default(namespace, DEFAULT_NAMESPACE_BUNDLES)
            raise _Refused(404, missing)
        return msgspec.json.decode(data, type=LocalPolicies).to_namespace_bundles(namespace)

    def _bundle(self, namespace: str, bundle_range: str) -> str:
        """`<namespace>/<range>` of one of the namespace's bundles, else 412 as Pulsar."""
        nb = self._bundles(namespace)
        low, sep, high = bundle_range.partition("_")
        try:
            if not sep:
                raise ValueError
            lo, hi = int(low, 16 if low.lower().startswith("0x") else 10), \
                int(high, 16 if high.lower().startswith("0x") else 10)
        except ValueError:
            raise _Refused(412, f"Invalid bundle range: {bundle_range}") from None
        name = f"{namespace}/0x{lo:08x}_0x{hi:08x}"
        if name not in nb.names:
            raise _Refused(412, f"Invalid bundle range: {bundle_range} is not a bundle of {namespace} "
                                f"(its bundles: {', '.join(n.rsplit('/', 1)[1] for n in nb.names)})")
        return name

    async def unload_namespace(self, body: bytes, *, tenant: str, ns: str, query: dict[str, str],
                               broker: str | None) -> Response:
        namespace = f"{tenant}/{ns}"
        self._bundles(namespace)
        if self.cluster.store.peek(paths.local_policies_path(namespace)) is None:
            return _NO_CONTENT   # public/default as initialised: nothing is owned
        failed = [r.message for r in await self.cluster.unload_namespace(namespace) if not r.ok]
        return _error(500, failed[0]) if failed else _NO_CONTENT

    async def unload_bundle(self, body: bytes, *, tenant: str, ns: str, bundle: str, query: dict[str, str],
                            broker: str | None) -> Response:
        name = self._bundle(f"{tenant}/{ns}", bundle)
        destination = re.sub(r"^https?://", "", query.get("destinationBroker", "")).strip() or None
        if destination is not None and destination not in self.cluster.store.peek_children(paths.BROKERS):
            return _error(500, "Not allowed unload namespace bundle to inactive destination broker")
        if self.cluster.owner_of(name) is None:
            return _NO_CONTENT   # "Namespace bundle is not owned by any broker": nothing to do
        result = await self.cluster.unload_bundle(name, destination)
        return _NO_CONTENT if result.ok else _error(500, result.message)

    async def split_bundle(self, body: bytes, *, tenant: str, ns: str, bundle: str, query: dict[str, str],
                           broker: str | None) -> Response:
        algorithm = query.get("splitAlgorithmName", "").strip() or None
        unload = query.get("unload", "false").strip().lower() == "true"   # Jersey's boolean
        boundaries: list[int] | None = None
        if body.strip():
            try:
                boundaries = msgspec.json.decode(body, type=list[int]) or None
            except (msgspec.ValidationError, msgspec.DecodeError) as e:
                return _error(400, f"splitBoundaries: expected a JSON list of integers ({e})")
        supported = list(self.cluster.conf.supported_namespace_bundle_split_algorithms)
        if algorithm is not None:
            if algorithm not in supported:
                return _error(412, "Unsupported namespace bundle split algorithm, supported algorithms are "
                                   f"[{', '.join(supported)}]")
            if algorithm.lower() == "specified_positions_divide" and not boundaries:
                return _error(412, "With specified_positions_divide split algorithm, splitBoundaries must "
                                   "not be empty")
        name = self._bundle(f"{tenant}/{ns}", bundle)
        if self.cluster.owner_of(name) is None:
            return _error(412, f"Failed to find ownership for ServiceUnit:{name}")
        result = await self.cluster.split_bundle(name, algorithm, unload=unload, boundaries=boundaries)
        return _NO_CONTENT if result.ok else _error(500, result.message)

    # ------------------------------------------------------------------ lookup

    async def bundle_range(self, body: bytes, *, domain: str, tenant: str, ns: str, topic: str,
                           query: dict[str, str], broker: str | None) -> Response:
        """TopicLookupBase.internalGetNamespaceBundle (`pulsar-admin topics bundle-range`): the range of
        the bundle the topic hashes to, as text; reads only (no assignment)."""
        nb = self._bundles(f"{tenant}/{ns}")
        return 200, _JSON, nb.find_bundle(f"{domain}://{tenant}/{ns}/{topic}").rsplit("/", 1)[1].encode()

    def _first_hop(self, broker: str | None) -> str:
        live = self.cluster.live_brokers()
        if broker is not None:
            if broker not in live:
                raise _Refused(404, f"broker {broker!r} is not a live broker (live: {', '.join(live) or 'none'})")
            return broker
        leader = self.cluster.leader()
        if leader in live:
            return leader
        if not live:
            raise _Refused(503, "No broker was found available")
        return live[0]

    async def lookup(self, body: bytes, *, domain: str, tenant: str, ns: str, topic: str,
                     query: dict[str, str], broker: str | None) -> Response:
        namespace = f"{tenant}/{ns}"
        name = f"{domain}://{namespace}/{topic}"
        hop = self._first_hop(broker)      # no live broker to ask: refused before anything is written
        if namespace == DEFAULT_NAMESPACE:
            await self.cluster.ensure_default_namespace()
        self._bundles(namespace, f"Policies not found for {namespace} namespace")
        authoritative = query.get("authoritative", "false").strip().lower() == "true"
        try:
            answer = await self.cluster.network.broker(hop).ask(
                LookupTopic(name, authoritative=authoritative, client="http-lookup"), timeout=300.0)
        except (ActorDead, AskTimeout) as e:
            return _error(503, f"broker {hop}: {e}")
        if answer.response is LookupType.CONNECT:
            owner = answer.broker_id
            return _json({"brokerUrl": answer.broker_service_url, "httpUrl": web_url_of(owner),
                          "nativeUrl": answer.broker_service_url, "brokerUrlSsl": ""})
        if answer.response is LookupType.REDIRECT:
            flag = "true" if answer.authoritative else "false"
            target = urllib.parse.quote(answer.broker_id, safe=":")
            local = urllib.parse.quote(f"{domain}/{tenant}/{ns}/{topic}")
            location = f"{self.base_url()}/emulator/brokers/{target}/lookup/v2/topic/{local}?authoritative={flag}"
            return 307, _JSON, b"", {"Location": location}
        error = answer.error
        status = _LOOKUP_STATUS.get(error, 500) if error is not None else 500
        reason = "Topic not found." if error is ServerError.TOPIC_NOT_FOUND else (answer.message or str(error))
        return _error(status, reason)
