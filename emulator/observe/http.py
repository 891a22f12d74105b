"""The observability HTTP server: `/metrics` and read-only admin views of one emulated cluster.

A stdlib `ThreadingHTTPServer` in a daemon thread, bound to 127.0.0.1 unless a host is given. Every
request is answered ON THE EVENT LOOP'S THREAD (handed over with `call_soon_threadsafe`): the registry's
collect and the views walk live actor state, which only that thread may read consistently, and on the
virtual clock no emulated time passes while a request is served. The GET views change nothing (the store is
read with `peek`); the writes and the HTTP lookup, listed at the end, are cluster operations.

Paths (GET; errors are `{"reason": "..."}` JSON as Pulsar's REST API answers):

`/metrics`, `/metrics/`
    Prometheus text exposition of the cluster's registry (Pulsar serves it on the web port).
`/admin/v2/clusters`, `/admin/v2/clusters/<cluster>`
    `["<cluster>"]`; ClusterData (topics_http.py).
`/admin/v2/brokers/health`, `/admin/v2/brokers/ready`, `/admin/v2/brokers/version`
    `ok`, `ok` (500 while not started), the Pulsar release the emulator follows (topics_http.py).
`/admin/v2/<persistent|non-persistent>/<tenant>/<ns>[/partitioned]`,
`/admin/v2/<domain>/<tenant>/<ns>/<topic>/stats|partitioned-stats|partitions`
    Topic lists, TopicStats (rates as the last stats period's means), PartitionedTopicStats,
    PartitionedTopicMetadata (topics_http.py, topic_stats.py).
`/admin/v2/brokers`, `/admin/v2/brokers/<cluster>`
    Active brokers: the sorted children of `/loadbalance/brokers` (`["broker-1:8080", ...]`).
`/admin/v2/brokers/leaderBroker`
    The `/loadbalance/leader` value: `{"brokerId": ..., "serviceUrl": ...}`; 404 while there is none.
`/admin/v2/brokers/<cluster>/<broker>/ownedNamespaces`
    `{bundle: {"broker_assignment": "shared", "is_controlled": false, "is_active": bool}}` from the
    ownership nodes that name `<broker>`.
`/admin/v2/broker-stats/load-report?broker=<id>`, `/admin/v2/broker-stats/load-report/<id>`
    The broker's latest LocalBrokerData (Pulsar's JSON, as generateLoadReport returns it, with the keys
    Jackson adds from getters: `bundleStats`, `maxResourceUsage`). Without a broker, the leader's
    (Pulsar answers for the broker you talk to; here one server speaks for all).
`/admin/v2/namespaces/<tenant>/<ns>/bundles`
    BundlesData `{"boundaries": ["0x00000000", ...], "numBundles": n}` from the namespace's policies.
`/admin/v2/tenants`, `/admin/v2/namespaces/<tenant>`, `/admin/v2/namespaces/<tenant>/<ns>`
    Tenants, a tenant's namespaces, a namespace's Policies (pulsar_admin.py says how each is made).
    `public/default` is always there (Pulsar's cluster initialisation makes it, 16 bundles).
`/admin/v2/broker-stats/topics?broker=<id>`
    The broker's topic stats, `{namespace: {bundle range: {"persistent": {topic: TopicStats}}}}`
    (PulsarStats' JSON); without a broker, the leader's, as for the load report.
`/admin/v2/clusters/<cluster>/namespaceIsolationPolicies`, `/admin/v2/clusters/<cluster>/failureDomains`,
`/admin/v2/namespaces/<tenant>/<ns>/antiAffinity`
    GET, POST, DELETE with Pulsar's JSON and status codes: policy_http.py
`/admin/v2/brokers/configuration[/values|/runtime]`, `/admin/v2/brokers/configuration/<name>[/<value>]`
    Dynamic configuration, GET, POST and DELETE as BrokersBase answers them: config_http.py.
`/emulator/brokers/<id>/<any path above>`
    The path as broker `<id>`'s own web service answers it. In Pulsar the load report, the topic stats and
    owned namespaces are per broker (each answers for itself on its own host); one emulator server speaks
    for every broker, so `snapshot export` reaches broker `<id>` under this prefix (404 if not live).
`/emulator/status`
    `{"cluster", "t", "clock", "leader", "brokers", "live_brokers"}`.
`/emulator/ownership[?namespace=<tenant>/<ns>]`
    `{bundle: broker}`.
`/emulator/metadata?path=<p>`, `/emulator/metadata/children?path=<p>`
    A metadata node's raw data (404 if absent) / its sorted children, as `zkCli get` / `ls` would show;
    `pulsar-lb-emulator monitor` reads `/loadbalance/*` through these.
`/emulator/monitor`
    The monitor-brokers table as text.
`/emulator/extensible/broker-load-data`
    The Extensible load manager's broker-load-data table view, `{broker: BrokerLoadData}` (Pulsar's
    JSON; Pulsar itself has no admin path for it): what `monitor --extensions` prints. 404 when no
    live broker runs the Extensible load manager.

Placement policies (issue 16; GET, POST and DELETE, in policy_http.py): isolation policies, failure
domains and anti-affinity groups at Pulsar's admin paths; dynamic configuration (config_http.py); and
(ops_http.py) `PUT /admin/v2/namespaces/<tenant>/<ns>/unload`, `.../<bundle>/unload` and
`.../<bundle>/split`. These are the server's writes (the write guard checks them, the summary lists
them); they go through the cluster's admin operations, as pulsar-admin's calls go through a broker.

`GET /lookup/v2/topic/<persistent|non-persistent>/<tenant>/<ns>/<topic>[?authoritative=]` (ops_http.py)
    LookupData (`brokerUrl`, `httpUrl`, `nativeUrl`, `brokerUrlSsl`) from the owner, or 307 to the next
    broker's lookup URL (under `/emulator/brokers/<id>/`). Not read-only: as Pulsar's TopicLookupBase it
    assigns an unowned bundle through the emulated lookup path; it is no admin write (any client may
    look a topic up in Pulsar), so it needs no token and is not listed among the writes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import http.server
import math
import re
import socket
import sys
import threading
import time
import urllib.parse
from typing import TYPE_CHECKING, Any, Callable

import msgspec
import structlog
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from emulator.cluster.cluster import DEFAULT_NAMESPACE, DEFAULT_NAMESPACE_BUNDLES
from emulator.model.bundles import NamespaceBundles
from emulator.model.policies import LocalPolicies

from . import monitor as monitor_table
from . import pulsar_admin
from .config_http import DynamicConfigRoutes
from .http_gate import GateClosed, GateFull, LoopGate
from .ops_http import ClusterOpRoutes
from .policy_http import PolicyRoutes
from .topics_http import PULSAR_VERSION, TopicViews, default_namespace_exists
from .write_guard import AdminWrite, WriteGuard

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster
    from emulator.observe.metrics import ClusterMetrics

__all__ = ["AdminViews", "ObserveServer"]

_JSON = "application/json"
_TEXT = "text/plain; charset=utf-8"
Response = tuple[int, str, bytes]
Answer = tuple[int, str, bytes] | tuple[int, str, bytes, dict[str, str]]
"""A Response, or one with extra headers (a lookup's 307 and its Location)."""
_log = structlog.get_logger("observe.http")


class _NotFound(Exception):
    pass


_PER_BROKER = re.compile(r"/emulator/brokers/(?P<broker>[^/]+)(?P<rest>/.*)")


def _json(value: Any, status: int = 200) -> Response:
    return status, _JSON, msgspec.json.encode(value)


def _error(status: int, reason: str) -> Response:
    return _json({"reason": reason}, status)


class AdminViews:
    """Answers one GET (path and query) from the cluster's state; call it on the loop's thread."""

    def __init__(self, cluster: "Cluster", metrics: "ClusterMetrics") -> None:
        self.cluster = cluster
        self.metrics = metrics
        self.web_url = ""
        """The server's own URL (ClusterData's serviceUrl), set when it is bound."""
        c = re.escape(cluster.name)
        topics = TopicViews(cluster, lambda: self.web_url, lambda ns: default_namespace_exists(cluster, ns))
        self._routes: list[tuple[re.Pattern[str], Callable[..., Response]]] = [
            *topics.routes(),   # topics, clusters/<cluster>, brokers/health|ready|version (topics_http.py)
            (re.compile(r"/metrics/?"), self.metrics_text),
            (re.compile(r"/admin/v2/clusters/?"), self.clusters),
            (re.compile(r"/admin/v2/brokers/leaderBroker/?"), self.leader_broker),
            (re.compile(r"/admin/v2/brokers/?"), self.active_brokers),
            (re.compile(rf"/admin/v2/brokers/{c}/?"), self.active_brokers),
            (re.compile(rf"/admin/v2/brokers/{c}/(?P<broker>[^/]+)/ownedNamespaces/?"), self.owned_namespaces),
            (re.compile(r"/admin/v2/brokers/(?P<other>[^/]+)(?:/.*)?"), self.unknown_cluster),
            (re.compile(r"/admin/v2/broker-stats/load-report/?"), self.load_report),
            (re.compile(r"/admin/v2/broker-stats/load-report/(?P<broker>[^/]+)/?"), self.load_report),
            (re.compile(r"/admin/v2/namespaces/(?P<tenant>[^/]+)/(?P<ns>[^/]+)/bundles/?"), self.bundles),
            # snapshot export (pulsar_admin.py)
            (re.compile(r"/admin/v2/tenants/?"), self.tenants),
            (re.compile(r"/admin/v2/namespaces/(?P<tenant>[^/]+)/?"), self.tenant_namespaces),
            (re.compile(r"/admin/v2/namespaces/(?P<tenant>[^/]+)/(?P<ns>[^/]+)/?"), self.namespace_policies),
            (re.compile(r"/admin/v2/broker-stats/topics/?"), self.broker_topics),
            (re.compile(r"/emulator/status/?"), self.status),
            (re.compile(r"/emulator/ownership/?"), self.ownership),
            (re.compile(r"/emulator/metadata/children/?"), self.metadata_children),
            (re.compile(r"/emulator/metadata/?"), self.metadata),
            (re.compile(r"/emulator/monitor/?"), self.monitor),
            (re.compile(r"/emulator/extensible/broker-load-data/?"), self.broker_load_data),
        ]

    def handle(self, raw_path: str) -> Response:
        parts = urllib.parse.urlsplit(raw_path)
        path = urllib.parse.unquote(parts.path)
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(parts.query).items()}
        per_broker = _PER_BROKER.fullmatch(path)
        if per_broker is not None:   # as that broker's own web service (see the module docstring)
            broker, path = per_broker.group("broker"), per_broker.group("rest")
            b = self.cluster.brokers.get(broker)
            if b is None or not b.alive:
                live = ", ".join(self.cluster.live_brokers()) or "none"
                return _error(404, f"broker {broker!r} is not a live broker (live: {live})")
            query["broker"] = broker
        for pattern, view in self._routes:
            m = pattern.fullmatch(path)
            if m is not None:
                try:
                    return view(query, **m.groupdict())
                except _NotFound as e:
                    return _error(404, str(e))
        return _error(404, f"no such path {path!r}; see emulator.observe.http for the views")

    # ------------------------------------------------------------------ metrics

    def metrics_text(self, query: dict[str, str]) -> Response:
        return 200, CONTENT_TYPE_LATEST, self.metrics.exposition()

    # ------------------------------------------------------------------ brokers

    def clusters(self, query: dict[str, str]) -> Response:
        return _json([self.cluster.name])

    def unknown_cluster(self, query: dict[str, str], other: str) -> Response:
        if other == self.cluster.name:
            return _error(404, "no such broker view; see emulator.observe.http for the views")
        return _error(404, f"Cluster {other} does not exist (this emulator runs {self.cluster.name!r})")

    def leader_broker(self, query: dict[str, str]) -> Response:
        data = self.cluster.store.peek("/loadbalance/leader")
        if data is None:
            raise _NotFound("Couldn't find leader broker")
        return 200, _JSON, data

    def active_brokers(self, query: dict[str, str]) -> Response:
        return _json(self.cluster.store.peek_children("/loadbalance/brokers"))

    def owned_namespaces(self, query: dict[str, str], broker: str) -> Response:
        out = {}
        for path, data in self.cluster.store.peek_prefix("/namespace/"):
            if path.count("/") < 4:
                continue
            node = msgspec.json.decode(data)
            if node.get("httpUrl", "").split("://")[-1] == broker:
                out[path[len("/namespace/"):]] = {"broker_assignment": "shared", "is_controlled": False,
                                                  "is_active": not node.get("disabled", False)}
        return _json(out)

    def load_report(self, query: dict[str, str], broker: str | None = None) -> Response:
        """BrokerStatsBase.getLoadReport: the load manager's generateLoadReport(); null (Noop) is 204.

        Jackson writes a LocalBrokerData's getters as well as its fields: `bundleStats` (getBundleStats,
        the last stats) and `maxResourceUsage` (getMaxResourceUsage) are added here, and an empty
        `brokerVersionString` is the emulated release (PULSAR_VERSION), as a broker's Maven version
        never is empty. Only the served JSON: the report written to the store, which the leader reads,
        stays as it was."""
        report = self._answering_broker(query, broker).load_manager.generate_load_report()
        if report is None:
            return 204, _JSON, b""
        out = msgspec.to_builtins(report)
        if isinstance(out, dict) and "lastStats" in out:   # LocalBrokerData (Simple's LoadReport has none)
            out["bundleStats"] = out["lastStats"]
            out["maxResourceUsage"] = report.max_resource_usage()
            out["brokerVersionString"] = out.get("brokerVersionString") or PULSAR_VERSION
        return _json(out)

    def broker_topics(self, query: dict[str, str]) -> Response:
        return _json(pulsar_admin.broker_topic_stats(self._answering_broker(query)))

    def _answering_broker(self, query: dict[str, str], broker: str | None = None) -> Any:
        """The broker a per-broker view answers for: named, else the leader."""
        broker = broker or query.get("broker") or self.cluster.leader()
        b = self.cluster.brokers.get(broker) if broker else None
        if b is None or not b.alive:
            live = ", ".join(self.cluster.live_brokers()) or "none"
            raise _NotFound(f"broker {broker!r} is not a live broker (live: {live})")
        return b

    # ------------------------------------------------------------------ namespaces and lookups

    def _policies(self, namespace: str) -> LocalPolicies:
        data = self.cluster.store.peek(f"/admin/local-policies/{namespace}")
        if data is None and namespace == DEFAULT_NAMESPACE:   # as Pulsar's initialisation makes it
            return LocalPolicies.from_namespace_bundles(NamespaceBundles.default(namespace, DEFAULT_NAMESPACE_BUNDLES))
        if data is None:
            raise _NotFound(f"Namespace {namespace} does not exist")
        return msgspec.json.decode(data, type=LocalPolicies)

    def bundles(self, query: dict[str, str], tenant: str, ns: str) -> Response:
        nb = self._policies(f"{tenant}/{ns}").to_namespace_bundles(f"{tenant}/{ns}")
        bounds = list(nb.boundaries)
        return _json({"boundaries": [f"0x{b:08x}" for b in bounds], "numBundles": len(bounds) - 1})

    def tenants(self, query: dict[str, str]) -> Response:
        return _json(pulsar_admin.tenants(self.cluster))

    def tenant_namespaces(self, query: dict[str, str], tenant: str) -> Response:
        namespaces = pulsar_admin.tenant_namespaces(self.cluster, tenant)
        if namespaces is None:
            raise _NotFound("Tenant does not exist")
        return _json(namespaces)

    def namespace_policies(self, query: dict[str, str], tenant: str, ns: str) -> Response:
        namespace = f"{tenant}/{ns}"
        return _json(pulsar_admin.namespace_policies(self.cluster.name, namespace, self._policies(namespace)))

    def _check_cluster(self, cluster: str) -> None:
        if cluster != self.cluster.name:
            raise _NotFound(f"Cluster {cluster} does not exist.")

    # ------------------------------------------------------------------ emulator views

    def status(self, query: dict[str, str]) -> Response:
        c = self.cluster
        return _json({"cluster": c.name, "t": c.system.clock.now(), "clock": getattr(c.system.clock, "kind", ""),
                      "leader": c.leader(), "brokers": c.store.peek_children("/loadbalance/brokers"),
                      "live_brokers": c.live_brokers()})

    def ownership(self, query: dict[str, str]) -> Response:
        owners = self.cluster.ownership()
        ns = query.get("namespace")
        if ns:
            owners = {b: o for b, o in owners.items() if b.rsplit("/", 1)[0] == ns}
        return _json(dict(sorted(owners.items())))

    def metadata(self, query: dict[str, str]) -> Response:
        path = query.get("path")
        if not path or not path.startswith("/"):
            return _error(400, f"path = {path!r}: give an absolute metadata path, e.g. ?path=/loadbalance/leader")
        data = self.cluster.store.peek(path)
        if data is None:
            raise _NotFound(f"NoNode for {path}")
        return 200, _JSON if data[:1] in (b"{", b"[") else "application/octet-stream", data

    def metadata_children(self, query: dict[str, str]) -> Response:
        path = query.get("path")
        if not path or not path.startswith("/"):
            return _error(400, f"path = {path!r}: give an absolute metadata path, e.g. ?path=/loadbalance/brokers")
        return _json(self.cluster.store.peek_children(path))

    def monitor(self, query: dict[str, str]) -> Response:
        text = monitor_table.format_broker_table(monitor_table.broker_rows(self.cluster))
        return 200, _TEXT, (text + "\n").encode()

    def broker_load_data(self, query: dict[str, str]) -> Response:
        try:
            data = monitor_table.extensible_load_data(self.cluster)
        except monitor_table.NoExtensibleBrokers as e:
            raise _NotFound(str(e)) from None
        return _json({broker: data[broker] for broker in sorted(data)})


class _LoopGone(Exception):
    pass


_READ_ONLY_ALLOW = "GET, HEAD, OPTIONS"
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"})
_WRITES = frozenset({"POST", "PUT", "DELETE"})
_CONNECTION_ERRORS = (ConnectionError, TimeoutError, OSError)


class _Server(http.server.ThreadingHTTPServer):
    """ThreadingHTTPServer with a cap on connections and a deadline per connection.

    Each connection's handler sets its deadline (the idle timeout while it waits for a request line,
    the read timeout while it reads headers and body); `service_actions`, run by `serve_forever` every
    poll, shuts the socket of any connection past it, which ends a client that drips its headers
    or holds a connection open. Over `max_connections`, a new connection gets 503 and is closed."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], handler: type[http.server.BaseHTTPRequestHandler],
                 max_connections: int) -> None:
        self.max_connections = max_connections
        self._lock = threading.Lock()
        self.deadlines: dict[socket.socket, float] = {}
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            full = len(self.deadlines) >= self.max_connections
            if not full:
                self.deadlines[request] = time.monotonic() + 5.0
        if full:
            _log.debug("observe_http_connection_refused", reason="connection cap", cap=self.max_connections)
            body = msgspec.json.encode({"reason": f"too many connections (cap {self.max_connections})"})
            try:
                request.settimeout(1.0)
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                                b"Retry-After: 1\r\nConnection: close\r\n"
                                + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def set_deadline(self, request: socket.socket, seconds: float | None) -> None:
        with self._lock:
            if request in self.deadlines:
                self.deadlines[request] = math.inf if seconds is None else time.monotonic() + seconds

    def shutdown_request(self, request: Any) -> None:
        with self._lock:
            self.deadlines.pop(request, None)
        super().shutdown_request(request)

    def service_actions(self) -> None:
        now = time.monotonic()
        with self._lock:
            late = [s for s, deadline in self.deadlines.items() if deadline < now]
        for sock in late:
            self.set_deadline(sock, None)
            _log.debug("observe_http_connection_timed_out")
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line, never a traceback: a client hanging up is routine (debug), anything else a warning."""
        error = sys.exc_info()[1]
        if isinstance(error, _CONNECTION_ERRORS):
            _log.debug("observe_http_client_gone", client=str(client_address), error=repr(error))
        else:
            _log.warning("observe_http_handler_failed", client=str(client_address), error=repr(error))


class ObserveServer:
    """`/metrics` and the admin views of `cluster` on `host:port` (port 0: any free port).

    `start()` and `stop()` are called on the loop's thread (`emulator.observe.attach.observe` does).
    The requests are answered on the loop through a `LoopGate` (http_gate.py), which bounds the loop
    time they take to `loop_share`. Limits: `max_connections` open at once; `idle_timeout` wall seconds
    between two requests of one connection; `read_timeout` to read a request's headers and body;
    `request_timeout` for the loop's answer; `max_body` bytes of request body. Writes pass the
    `WriteGuard` (write_guard.py; `admin_token` makes a Bearer token necessary) and are kept in `writes`.
    """

    def __init__(self, cluster: "Cluster", metrics: "ClusterMetrics", *, host: str = "127.0.0.1",
                 port: int = 0, request_timeout: float = 30.0, admin_token: str | None = None,
                 max_connections: int = 64, idle_timeout: float = 15.0, read_timeout: float = 10.0,
                 max_body: int = 1 << 20, loop_share: float = 0.2) -> None:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port = {port!r}: expected an integer in 0..65535 (0 picks a free port)")
        if not isinstance(host, str) or not host:
            raise ValueError(f"host = {host!r}: expected an address to bind, e.g. 127.0.0.1")
        if admin_token is not None and (not admin_token or admin_token != admin_token.strip()):
            raise ValueError("admin token: expected a non-empty token without surrounding spaces")
        self.cluster = cluster
        self.views = AdminViews(cluster, metrics)
        self.policy_routes = PolicyRoutes(cluster)   # the writable policy paths (policy_http.py)
        self.config_routes = DynamicConfigRoutes(cluster)   # dynamic configuration (config_http.py)
        self.op_routes = ClusterOpRoutes(cluster, lambda: self.url)   # unload, split, lookup (ops_http.py)
        self.host = host
        self.port = port
        self.request_timeout = request_timeout
        self.admin_token = admin_token
        self.max_connections = max_connections
        self.idle_timeout = idle_timeout
        self.read_timeout = read_timeout
        self.max_body = max_body
        self.loop_share = loop_share
        self.writes: list[AdminWrite] = []
        """Every write accepted (a 2xx answer), in the order the loop applied them."""
        self.guard = WriteGuard(host, port, admin_token)
        self.gate: LoopGate | None = None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False

    @property
    def url(self) -> str:
        host = self.host if ":" not in self.host else f"[{self.host}]"
        return f"http://{host}:{self.port}"

    def start(self) -> str:
        """Bind and serve in a daemon thread; returns the URL."""
        self.gate = LoopGate(asyncio.get_running_loop(), share=self.loop_share)
        server = _Server((self.host, self.port), self._handler_class(), self.max_connections)
        self._server = server
        self.port = server.server_address[1]
        self.views.web_url = self.url
        self.guard = WriteGuard(self.host, self.port, self.admin_token)
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"observe-http-{self.port}", daemon=True)
        self._thread.start()
        return self.url

    def stop(self) -> None:
        self._stopping = True
        if self.gate is not None:
            self.gate.close()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None

    # ------------------------------------------------------------------ routing

    def allow(self, raw_path: str) -> str:
        """The methods `raw_path` answers (the `Allow` header of 405 and OPTIONS)."""
        if self.policy_routes.match(raw_path) is not None:
            return "GET, HEAD, POST, DELETE, OPTIONS"
        ops = self.op_routes.allow(raw_path)
        if ops is not None:
            return ops
        args = self.config_routes.match(raw_path)
        if args is not None:
            if args["key"] in (None, "values", "runtime") and args["value"] is None:
                return _READ_ONLY_ALLOW
            return "POST, OPTIONS" if args["value"] is not None else "DELETE, OPTIONS"
        return _READ_ONLY_ALLOW

    def _routes(self, raw_path: str) -> PolicyRoutes | DynamicConfigRoutes | ClusterOpRoutes | None:
        if self.op_routes.match(raw_path) is not None:
            return self.op_routes
        if self.policy_routes.match(raw_path) is not None:
            return self.policy_routes
        if self.config_routes.match(raw_path) is not None:
            return self.config_routes
        return None

    def answer(self, method: str, raw_path: str, body: bytes) -> Answer:
        """The answer to a parsed request (GET for HEAD), from the loop through the gate."""
        gate = self.gate
        if gate is None or self._stopping:
            raise _LoopGone()
        routes = self._routes(raw_path)
        if routes is None and method != "GET":
            return _error(405, f"{method} {urllib.parse.urlsplit(raw_path).path}: read-only view "
                               f"(allowed: {_READ_ONLY_ALLOW}; writes: the placement-policy, "
                               "dynamic-configuration, unload and split paths)")
        try:
            if routes is None:
                future = gate.read(raw_path, lambda: self.views.handle(raw_path))
            else:
                future = gate.task(lambda: self._route(routes, method, raw_path, body))
        except GateClosed:
            raise _LoopGone() from None
        try:
            return future.result(timeout=self.request_timeout)
        except GateClosed:
            raise _LoopGone() from None

    async def _route(self, routes: PolicyRoutes | DynamicConfigRoutes | ClusterOpRoutes, method: str,
                     raw_path: str, body: bytes) -> Answer:
        """On the loop: a writable route's answer; an accepted write is logged."""
        t = self.cluster.system.clock.now()
        answer = await routes.handle(method, raw_path, body)
        if answer is None:   # pragma: no cover - matched above
            return _error(404, f"no such path {raw_path!r}")
        if method in _WRITES and 200 <= answer[0] < 300:
            self.writes.append(AdminWrite(t=t, method=method, path=raw_path,
                                          body=body.decode("utf-8", "replace"), status=answer[0]))
            _log.info("admin_write", t=t, method=method, path=raw_path, status=answer[0])
        return answer

    def _handler_class(self) -> type[http.server.BaseHTTPRequestHandler]:
        return _handler_for(self)


def _handler_for(outer: ObserveServer) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        server_version = "pulsar-lb-emulator"
        protocol_version = "HTTP/1.1"
        timeout = outer.read_timeout   # every socket read and write: a backstop to the deadlines
        server: _Server

        def handle(self) -> None:
            try:
                super().handle()
            except _CONNECTION_ERRORS as e:   # the client hung up or timed out: routine
                _log.debug("observe_http_client_gone", client=str(self.client_address), error=repr(e))
                self.close_connection = True

        def handle_one_request(self) -> None:
            """BaseHTTPRequestHandler's, with the idle and read deadlines and strict methods."""
            self.server.set_deadline(self.connection, outer.idle_timeout)
            self.raw_requestline = self.rfile.readline(65537)
            # a second after the socket's own timeout: a stalled read answers 408 first
            self.server.set_deadline(self.connection, outer.read_timeout + 1.0)
            if len(self.raw_requestline) > 65536:
                self.requestline = self.request_version = self.command = ""
                self.send_error(414)
                return
            if not self.raw_requestline:
                self.close_connection = True
                return
            if not self.parse_request():   # a 400 (or 431, 505) has been sent
                return
            self._serve()
            self.wfile.flush()
            self.server.set_deadline(self.connection, None)

        def _serve(self) -> None:
            method, path = self.command, self.path
            if method not in _METHODS:
                return self._reply(_error(501, f"method {method!r} is not implemented "
                                               f"(allowed here: {outer.allow(path)})"),
                                   {"Allow": outer.allow(path)})
            body = self._read_body()
            if body is None:
                return
            self.server.set_deadline(self.connection, outer.request_timeout + outer.read_timeout)
            if method == "OPTIONS":
                return self._reply((204, _JSON, b""), {"Allow": outer.allow(path)})
            if method in _WRITES:
                refusal = outer.guard.check(self.headers)   # case-insensitive, as HTTP header names are
                if refusal is not None:
                    status, reason, headers = refusal
                    _log.info("admin_write_refused", method=method, path=path, status=status, reason=reason)
                    return self._reply(_error(status, reason), headers)
            try:
                answer = outer.answer("GET" if method == "HEAD" else method, path, body)
            except _LoopGone:
                answer = _error(503, "the emulated cluster is not running")
            except GateFull:
                return self._reply(_error(503, "too many requests wait for the emulated cluster"),
                                   {"Retry-After": "1"})
            except (concurrent.futures.TimeoutError, TimeoutError):
                answer = _error(503, "the event loop did not answer in time")
            except Exception as e:  # a view failed: say so, keep serving
                answer = _error(500, f"{type(e).__name__}: {e}")
            extra = {"Allow": outer.allow(path)} if answer[0] == 405 else {}
            if len(answer) == 4:   # a redirect's Location (ops_http.py)
                extra.update(answer[3])
            self._reply(answer[:3], extra, head=method == "HEAD")

        def _read_body(self) -> bytes | None:
            """The request's body, strictly framed; None when an error has been answered instead."""
            if self.headers.get("Transfer-Encoding") is not None:
                self.close_connection = True
                self._reply(_error(411, "Transfer-Encoding is not supported: send a Content-Length"))
                return None
            lengths = self.headers.get_all("Content-Length") or []
            values = {v.strip() for value in lengths for v in value.split(",")}
            if not values:
                return b""
            text = values.pop() if len(values) == 1 else ""
            if not text.isascii() or not text.isdigit():
                self.close_connection = True
                self._reply(_error(400, f"Content-Length = {', '.join(lengths)!r}: expected one "
                                        "non-negative integer"))
                return None
            length = int(text)
            if length > outer.max_body:
                self.close_connection = True
                self._reply(_error(413, f"request body of {length} bytes is over the limit of "
                                        f"{outer.max_body} bytes"))
                return None
            body = self._read_exactly(length)
            if len(body) < length:
                self.close_connection = True
                _log.debug("observe_http_short_body", expected=length, got=len(body))
                self._reply(_error(408, f"request body: {len(body)} of the {length} bytes of its "
                                        f"Content-Length came within {outer.read_timeout:g} s"))
                return None
            return body

        def _read_exactly(self, length: int) -> bytes:
            """Up to `length` bytes, within the read timeout (fewer: the client stopped sending)."""
            chunks, got = [], 0
            deadline = time.monotonic() + outer.read_timeout
            try:
                while got < length:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self.connection.settimeout(left)
                    chunk = self.rfile.read1(length - got)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    got += len(chunk)
            except TimeoutError:
                pass
            finally:
                self.connection.settimeout(outer.read_timeout)
            return b"".join(chunks)

        def _reply(self, answer: Response, headers: dict[str, str] | None = None, head: bool = False) -> None:
            status, ctype, body = answer
            self.send_response(status)
            if status != 204:
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            if not head and status != 204:
                self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # quiet: scrapes every second
            pass

    return Handler
