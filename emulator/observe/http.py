"""The observability HTTP server: `/metrics` and read-only admin views of one emulated cluster.

A stdlib `ThreadingHTTPServer` in a daemon thread, bound to 127.0.0.1 unless a host is given. Every
request is answered ON THE EVENT LOOP'S THREAD (handed over with `call_soon_threadsafe`): the registry's
collect and the views walk live actor state, which only that thread may read consistently, and on the
virtual clock no emulated time passes while a request is served. Nothing here changes the cluster: no
lookup acquires a bundle, no metadata operation is sent (the store is read with `peek`).

Paths (GET only; errors are `{"reason": "..."}` JSON as Pulsar's REST API answers):

`/metrics`, `/metrics/`
    Prometheus text exposition of the cluster's registry (Pulsar serves it on the web port).
`/admin/v2/clusters`
    `["<cluster>"]`.
`/admin/v2/brokers`, `/admin/v2/brokers/<cluster>`
    Active brokers: the sorted children of `/loadbalance/brokers` (`["broker-1:8080", ...]`).
`/admin/v2/brokers/leaderBroker`
    The `/loadbalance/leader` value: `{"brokerId": ..., "serviceUrl": ...}`; 404 while there is none.
`/admin/v2/brokers/<cluster>/<broker>/ownedNamespaces`
    `{bundle: {"broker_assignment": "shared", "is_controlled": false, "is_active": bool}}` from the
    ownership nodes that name `<broker>`.
`/admin/v2/broker-stats/load-report?broker=<id>`, `/admin/v2/broker-stats/load-report/<id>`
    The broker's latest LocalBrokerData (Pulsar's JSON, as generateLoadReport returns it). Without a
    broker, the leader's (Pulsar answers for the broker you talk to; here one server speaks for all).
`/admin/v2/namespaces/<tenant>/<ns>/bundles`
    BundlesData `{"boundaries": ["0x00000000", ...], "numBundles": n}` from the namespace's policies.
`/admin/v2/tenants`, `/admin/v2/namespaces/<tenant>`, `/admin/v2/namespaces/<tenant>/<ns>`
    Tenants, a tenant's namespaces, a namespace's Policies (pulsar_admin.py says how each is made).
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
`/lookup/v2/topic/<persistent|non-persistent>/<tenant>/<ns>/<topic>`
    LookupData of the topic's current owner (`brokerUrl`, `httpUrl`, `nativeUrl`, ...). Read-only: an
    unowned bundle is 404, never assigned.
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
domains and anti-affinity groups at Pulsar's admin paths; and dynamic configuration (config_http.py).
These are the server's only writes; they go through the cluster's admin operations, as pulsar-admin's
calls go through a broker.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import http.server
import re
import threading
import urllib.parse
from typing import TYPE_CHECKING, Any, Callable

import msgspec
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from emulator.model.bundles import topic_namespace
from emulator.model.policies import LocalPolicies

from . import monitor as monitor_table
from . import pulsar_admin
from .config_http import DynamicConfigRoutes
from .policy_http import PolicyRoutes

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster
    from emulator.observe.metrics import ClusterMetrics

__all__ = ["AdminViews", "ObserveServer"]

_JSON = "application/json"
_TEXT = "text/plain; charset=utf-8"
Response = tuple[int, str, bytes]


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
        c = re.escape(cluster.name)
        self._routes: list[tuple[re.Pattern[str], Callable[..., Response]]] = [
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
            (re.compile(r"/lookup/v2/topic/(?P<domain>persistent|non-persistent)/(?P<tenant>[^/]+)/"
                        r"(?P<ns>[^/]+)/(?P<topic>.+)"), self.lookup),
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
        """BrokerStatsBase.getLoadReport: the load manager's generateLoadReport(); null (Noop) is 204."""
        report = self._answering_broker(query, broker).load_manager.generate_load_report()
        return (204, _JSON, b"") if report is None else _json(report)

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

    def lookup(self, query: dict[str, str], domain: str, tenant: str, ns: str, topic: str) -> Response:
        name = f"{domain}://{tenant}/{ns}/{topic}"
        namespace = topic_namespace(name)
        bundle = self._policies(namespace).to_namespace_bundles(namespace).find_bundle(name)
        data = self.cluster.store.peek(f"/namespace/{bundle}")
        if data is None:
            raise _NotFound(f"Bundle {bundle} of {name} is not owned (read-only view: no assignment)")
        node = msgspec.json.decode(data)
        return _json({"brokerUrl": node.get("nativeUrl", ""), "brokerUrlTls": node.get("nativeUrlTls", ""),
                      "httpUrl": node.get("httpUrl", ""), "httpUrlTls": node.get("httpUrlTls", ""),
                      "nativeUrl": node.get("nativeUrl", "")})

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


class ObserveServer:
    """`/metrics` and the admin views of `cluster` on `host:port` (port 0: any free port).

    `start()` and `stop()` are called on the loop's thread (`emulator.observe.attach.observe` does)."""

    def __init__(self, cluster: "Cluster", metrics: "ClusterMetrics", *, host: str = "127.0.0.1",
                 port: int = 0, request_timeout: float = 30.0) -> None:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port = {port!r}: expected an integer in 0..65535 (0 picks a free port)")
        if not isinstance(host, str) or not host:
            raise ValueError(f"host = {host!r}: expected an address to bind, e.g. 127.0.0.1")
        self.views = AdminViews(cluster, metrics)
        self.policy_routes = PolicyRoutes(cluster)   # the writable policy paths (policy_http.py)
        self.config_routes = DynamicConfigRoutes(cluster)   # dynamic configuration (config_http.py)
        self.host = host
        self.port = port
        self.request_timeout = request_timeout
        self._server: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = False

    @property
    def url(self) -> str:
        host = self.host if ":" not in self.host else f"[{self.host}]"
        return f"http://{host}:{self.port}"

    def start(self) -> str:
        """Bind and serve in a daemon thread; returns the URL."""
        self._loop = asyncio.get_running_loop()
        server = http.server.ThreadingHTTPServer((self.host, self.port), self._handler_class())
        server.daemon_threads = True
        self._server = server
        self.port = server.server_address[1]
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"observe-http-{self.port}", daemon=True)
        self._thread.start()
        return self.url

    def stop(self) -> None:
        self._stopping = True
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None

    def _on_loop(self, fn: Callable[[], Response]) -> Response:
        """Run `fn` on the event loop's thread and wait for its answer."""
        loop = self._loop
        if loop is None or self._stopping or loop.is_closed():
            raise _LoopGone()
        future: concurrent.futures.Future[Response] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn())
            except BaseException as e:  # reported to the HTTP thread, never raised into the loop
                future.set_exception(e)

        try:
            loop.call_soon_threadsafe(run)
        except RuntimeError:   # loop closed meanwhile
            raise _LoopGone() from None
        return future.result(timeout=self.request_timeout)

    # ------------------------------------------------------------------ writable paths (policies, config)

    def _policy_request(self, method: str, path: str, body: bytes) -> Response | None:
        """A writable route's answer (placement policies or dynamic configuration; its coroutine runs on
        the loop), or None for another path."""
        if self.policy_routes.match(path) is not None:
            routes: PolicyRoutes | DynamicConfigRoutes = self.policy_routes
        elif self.config_routes.match(path) is not None:
            routes = self.config_routes
        else:
            return None
        loop = self._loop
        if loop is None or self._stopping or loop.is_closed():
            raise _LoopGone()
        try:
            future = asyncio.run_coroutine_threadsafe(routes.handle(method, path, body), loop)
        except RuntimeError:   # loop closed meanwhile
            raise _LoopGone() from None
        return future.result(timeout=self.request_timeout)

    def _handler_class(self) -> type[http.server.BaseHTTPRequestHandler]:
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            server_version = "pulsar-lb-emulator"
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (stdlib name)
                try:
                    answer = outer._policy_request("GET", self.path, b"")
                    status, ctype, body = answer if answer is not None else outer._on_loop(
                        lambda: outer.views.handle(self.path))
                except _LoopGone:
                    status, ctype, body = _error(503, "the emulated cluster is not running")
                except concurrent.futures.TimeoutError:
                    status, ctype, body = _error(503, "the event loop did not answer in time")
                except Exception as e:  # a view failed: say so, keep serving
                    status, ctype, body = _error(500, f"{type(e).__name__}: {e}")
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802
                try:
                    length = int(self.headers.get("Content-Length") or 0)
                    request = self.rfile.read(length) if 0 < length <= 1 << 20 else b""
                    answer = outer._policy_request(self.command, self.path, request)
                except _LoopGone:
                    answer = _error(503, "the emulated cluster is not running")
                except (concurrent.futures.TimeoutError, TimeoutError):
                    answer = _error(503, "the event loop did not answer in time")
                except Exception as e:  # noqa: BLE001 - a route failed: say so, keep serving
                    answer = _error(500, f"{type(e).__name__}: {e}")
                status, ctype, body = answer if answer is not None else _error(
                    405, "read-only views: only GET is served "
                         "(writes: the placement-policy and dynamic-configuration paths)")
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_PUT = do_DELETE = do_POST

            def log_message(self, format: str, *args: Any) -> None:  # quiet: scrapes every second
                pass

        return Handler
