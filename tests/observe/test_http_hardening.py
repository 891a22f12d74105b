"""The HTTP server under hostile requests (issue 32): each answered with its status, no traceback, and
writes only from the server's own origin (and with the token, when one is set)."""

from __future__ import annotations

import json
import socket
import time

import pytest
import structlog

from emulator.cli import main
from emulator.observe.attach import observe
from emulator.observe.http import ObserveServer
from emulator.observe.metrics import ClusterMetrics
from emulator.observe.summary import format_summary, summarize
from emulator.observe.summary_json import summary_object
from emulator.runtime import run_external
from emulator.testing import emulated_cluster

NS = "public/default"
SHEDDING_OFF = "/admin/v2/brokers/configuration/loadBalancerSheddingEnabled/false"


def exchange(port: int, request: bytes, *, pause: float = 0.0, rest: bytes = b"",
             timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes (and `rest` after `pause` s), read until the server closes or a whole answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        if pause:
            time.sleep(pause)
        if rest:
            sock.sendall(rest)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        length = int(headers.get("content-length", "0"))
        if not request.startswith(b"HEAD"):
            while len(body) < length:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                body += chunk
        return int(lines[0].split()[1]), headers, body


def request(method: str, path: str, port: int, headers: dict[str, str] | None = None,
            body: bytes = b"") -> bytes:
    fields = {"Host": f"127.0.0.1:{port}", "Content-Length": str(len(body)), "Connection": "close",
              **(headers or {})}
    head = "".join(f"{k}: {v}\r\n" for k, v in fields.items() if v is not None)
    return f"{method} {path} HTTP/1.1\r\n{head}\r\n".encode() + body


async def ask(port: int, raw: bytes, **kw: float | bytes) -> tuple[int, dict[str, str], bytes]:
    return await run_external(lambda: exchange(port, raw, **kw))  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_malformed_requests_are_answered_with_their_status_and_no_traceback(capfd):
    async with emulated_cluster(2, seed=31, namespaces={NS: 2}) as cluster:
        server = ObserveServer(cluster, ClusterMetrics(cluster), port=0, read_timeout=0.5)
        server.start()
        port = server.port
        try:
            bad = request("POST", SHEDDING_OFF, port, {"Content-Length": "abc"})
            status, _, body = await ask(port, bad)
            assert status == 400 and "Content-Length = 'abc'" in json.loads(body)["reason"]
            status, _, _ = await ask(port, request("POST", SHEDDING_OFF, port, {"Content-Length": "1, 2"}))
            assert status == 400
            status, _, body = await ask(port, request("POST", SHEDDING_OFF, port, {"Content-Length": "9999999"}))
            assert status == 413 and "over the limit" in json.loads(body)["reason"]
            status, _, _ = await ask(port, request("POST", SHEDDING_OFF, port,
                                                   {"Transfer-Encoding": "chunked", "Content-Length": None}))
            assert status == 411
            # a Content-Length longer than the body: 408 once the read timeout passes, never a stuck handler
            started = time.monotonic()
            status, _, body = await ask(port, request("POST", SHEDDING_OFF, port, {"Content-Length": "10"}) + b"abc")
            assert status == 408 and "3 of the 10 bytes" in json.loads(body)["reason"]
            assert time.monotonic() - started < 5
            assert cluster.conf.load_balancer_shedding_enabled     # no write went through

            status, headers, body = await ask(port, request("HEAD", "/metrics", port))
            get_status, _, get_body = await ask(port, request("GET", "/metrics", port))
            assert status == get_status == 200 and body == b""
            assert int(headers["content-length"]) == len(get_body) > 0
            status, headers, _ = await ask(port, request("OPTIONS", SHEDDING_OFF, port))
            assert status == 204 and headers["allow"] == "POST, OPTIONS"
            status, headers, _ = await ask(port, request("OPTIONS", "/metrics", port))
            assert status == 204 and headers["allow"] == "GET, HEAD, OPTIONS"
            status, headers, _ = await ask(port, request("POST", "/metrics", port))
            assert status == 405 and headers["allow"] == "GET, HEAD, OPTIONS"
            status, headers, _ = await ask(port, request("PATCH", "/metrics", port))
            assert status == 501 and headers["allow"] == "GET, HEAD, OPTIONS"
            status, headers, _ = await ask(port, request("GET", "/admin/v2/brokers/configuration/x", port))
            assert status == 405 and headers["allow"] == "DELETE, OPTIONS"
        finally:
            server.stop()
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.asyncio
async def test_bad_admin_requests_get_pulsars_status_and_reason_and_no_traceback(capfd):
    """Unknown topic or namespace, bad bundle range, wrong method, bad split arguments (issue 29): each
    answered as Pulsar answers it, `{"reason": ...}`, nothing changed, no failure, no traceback."""
    ns = "acme/a"
    async with emulated_cluster(3, seed=35, namespaces={ns: 4}) as cluster:
        async with observe(cluster, metrics_port=0) as obs:
            port = obs.server.port
            client = cluster.add_client()
            client.create_handles([f"persistent://{ns}/t-{i}" for i in range(8)])
            await cluster.wait_until(lambda: client.connected_count() == 8)
            owners = cluster.ownership()
            owned = next(b for b in owners if b.startswith(ns)).rsplit("/", 1)[1]
            base = f"/admin/v2/namespaces/{ns}"
            cases = [
                ("GET", f"/admin/v2/persistent/{ns}/nope/stats", 404, f"Topic persistent://{ns}/nope not found"),
                ("GET", "/admin/v2/persistent/acme/none", 404, "Namespace does not exist"),
                ("GET", "/admin/v2/persistent/acme/none/t/stats", 404, "Namespace does not exist"),
                ("GET", "/admin/v2/clusters/elsewhere", 404, "Cluster does not exist"),
                ("GET", "/lookup/v2/topic/persistent/acme/none/t", 404, "Policies not found for acme/none namespace"),
                ("PUT", "/admin/v2/namespaces/acme/none/unload", 404, "Namespace does not exist"),
                ("PUT", f"{base}/nonsense/unload", 412, "Invalid bundle range: nonsense"),
                ("PUT", f"{base}/0x00000000_0xzz/unload", 412, "Invalid bundle range: 0x00000000_0xzz"),
                ("PUT", f"{base}/0x00000000_0x20000000/split", 412, "Invalid bundle range: 0x00000000_0x20000000"),
                ("PUT", f"{base}/{owned}/unload?destinationBroker=nobody:8080", 500,
                 "Not allowed unload namespace bundle to inactive destination broker"),
                ("PUT", f"{base}/{owned}/split?splitAlgorithmName=halves", 412,
                 "Unsupported namespace bundle split algorithm, supported algorithms are [range_equally_divide"),
                ("PUT", f"{base}/{owned}/split?splitAlgorithmName=specified_positions_divide", 412,
                 "With specified_positions_divide split algorithm, splitBoundaries must not be empty"),
                ("PUT", "/admin/v2/namespaces/public/default/0x00000000_0x10000000/split", 412,
                 "Failed to find ownership for ServiceUnit:public/default/0x00000000_0x10000000"),
                ("GET", f"{base}/{owned}/unload", 405, "expected PUT"),
                ("DELETE", f"{base}/{owned}/split", 405, "expected PUT"),
                ("POST", f"/admin/v2/persistent/{ns}", 405, "read-only view"),
                ("PUT", "/lookup/v2/topic/persistent/acme/a/t-0", 405, "expected GET"),
            ]
            for method, path, want, reason in cases:
                status, headers, body = await ask(port, request(method, path, port))
                assert status == want, (method, path, body)
                assert reason in json.loads(body)["reason"], (method, path, body)
                if want == 405:
                    assert headers["allow"] in ("PUT, OPTIONS", "GET, HEAD, OPTIONS"), (method, path)
            status, _, body = await ask(port, request("PUT", f"{base}/{owned}/split", port, body=b"[1, 2"))
            assert status == 400 and "splitBoundaries" in json.loads(body)["reason"]
            # a write from another origin is refused before it reaches the cluster
            status, _, _ = await ask(port, request("PUT", f"{base}/{owned}/unload", port,
                                                   {"Origin": "http://evil.example"}))
            assert status == 403
            assert cluster.ownership() == owners and obs.admin_writes == [] and cluster.system.failures == []
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.asyncio
async def test_foreign_origin_and_rebinding_host_are_refused_and_accepted_writes_are_listed():
    async with emulated_cluster(2, seed=32, namespaces={NS: 2}) as cluster:
        async with observe(cluster, metrics_port=0) as obs:
            port = obs.server.port
            for headers in ({"Origin": "http://evil.example"}, {"Origin": "null"},
                            {"Origin": f"http://127.0.0.1:{port + 1}"},
                            {"Host": f"evil.example:{port}"}, {"Host": "127.0.0.1:1"}, {"Host": None}):
                status, _, body = await ask(port, request("POST", SHEDDING_OFF, port, headers))
                assert status == 403, headers
                reason = json.loads(body)["reason"]
                assert "refused" in reason and "\n" not in reason
            assert cluster.conf.load_balancer_shedding_enabled and obs.admin_writes == []
            # reads stay open to any origin (Prometheus, Grafana)
            status, _, _ = await ask(port, request("GET", "/metrics", port, {"Origin": "http://evil.example"}))
            assert status == 200

            t = cluster.system.clock.now()
            status, _, _ = await ask(port, request("POST", SHEDDING_OFF, port,
                                                   {"Origin": f"http://localhost:{port}"}))
            assert status == 200 and not cluster.conf.load_balancer_shedding_enabled
            [write] = obs.admin_writes
            assert (write.t, write.method, write.path, write.status) == (t, "POST", SHEDDING_OFF, 200)

            summary = summarize(cluster, admin_writes=obs.admin_writes)
            assert f"admin write        t={t:.1f} s POST {SHEDDING_OFF} -> 200" in format_summary(summary)
            assert summary_object(summary, None)["admin_writes"][0]["path"] == SHEDDING_OFF
            assert summary_object(summarize(cluster), None)["admin_writes"] == []   # none: an empty list


@pytest.mark.asyncio
async def test_an_admin_token_is_required_for_every_write():
    async with emulated_cluster(2, seed=33, namespaces={NS: 2}) as cluster:
        async with observe(cluster, metrics_port=0, admin_token="s3cret") as obs:
            port = obs.server.port
            for auth in (None, "Bearer wrong", "Basic s3cret", "Bearer"):
                status, headers, body = await ask(port, request("POST", SHEDDING_OFF, port,
                                                                {"Authorization": auth}))
                assert status == 401 and headers["www-authenticate"].startswith("Bearer")
                assert "Authorization: Bearer" in json.loads(body)["reason"]
            assert cluster.conf.load_balancer_shedding_enabled
            status, _, _ = await ask(port, request("GET", "/admin/v2/brokers/configuration/values", port))
            assert status == 200                                           # reads need no token
            status, _, _ = await ask(port, request("POST", SHEDDING_OFF, port, {"Authorization": "Bearer s3cret"}))
            assert status == 200 and len(obs.admin_writes) == 1


def _hang_up(port: int) -> None:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(request("GET", "/metrics", port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    sock.close()                                   # a reset before the answer is written


@pytest.mark.asyncio
async def test_a_client_hanging_up_is_logged_at_debug_without_a_traceback(capfd):
    async with emulated_cluster(2, seed=34, namespaces={NS: 2}) as cluster:
        async with observe(cluster, metrics_port=0) as obs:
            with structlog.testing.capture_logs() as logs:
                for _ in range(5):
                    await run_external(_hang_up, obs.server.port)
                deadline = time.monotonic() + 5
                while not logs and time.monotonic() < deadline:
                    await run_external(time.sleep, 0.05)
            status, _, _ = await ask(obs.server.port, request("GET", "/metrics", obs.server.port))
            assert status == 200                                         # still serving
    gone = [e for e in logs if e["event"] == "observe_http_client_gone"]
    assert gone and all(e["log_level"] == "debug" for e in gone)
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.asyncio
async def test_connections_are_capped_and_idle_ones_closed():
    async with emulated_cluster(2, seed=35, namespaces={NS: 2}) as cluster:
        server = ObserveServer(cluster, ClusterMetrics(cluster), port=0, max_connections=2, idle_timeout=0.3,
                               read_timeout=0.5)
        server.start()
        port = server.port

        def scenario() -> tuple[int, bytes, bytes]:
            held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(2)]
            time.sleep(0.1)
            status, _, _ = exchange(port, request("GET", "/metrics", port))    # the third: refused
            time.sleep(1.0)                                                     # the idle ones closed
            idle = [s.recv(1) for s in held]
            # a client dripping its headers is cut at the read timeout
            with socket.create_connection(("127.0.0.1", port), timeout=5) as drip:
                drip.sendall(b"GET /metrics HTTP/1.1\r\n")
                started = time.monotonic()
                try:
                    while time.monotonic() - started < 4 and drip.send(b"X") and not time.sleep(0.3):
                        pass
                    cut = drip.recv(1)
                except ConnectionError:   # reset or broken pipe: cut (a recv timeout is not)
                    cut = b""
                cut_after = time.monotonic() - started
            for s in held:
                s.close()
            return status, b"".join(idle), (cut, cut_after)

        try:
            status, idle, cut = await run_external(scenario)
        finally:
            server.stop()
        assert status == 503 and idle == b"" and cut[0] == b""
        assert cut[1] < 3.0, "cut at the 0.5 s read timeout, not after the client gave up"


def test_an_empty_metrics_host_is_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "default", "--metrics-port", "0", "--metrics-host", ""])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--metrics-host = ''" in err and "Traceback" not in err


def test_the_write_guard_reads_header_names_in_any_case():
    """HTTP header names are case-insensitive: `host:` and `authorization:` in lower case are the same
    headers (the guard once read a plain dict of them and refused such a write)."""
    from email.message import Message

    from emulator.observe.write_guard import WriteGuard

    headers = Message()
    headers["host"] = "127.0.0.1:8080"
    headers["authorization"] = "Bearer secret"
    assert WriteGuard("127.0.0.1", 8080, "secret").check(headers) is None
