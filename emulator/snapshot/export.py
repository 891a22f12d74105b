"""`pulsar-lb-emulator snapshot export --url URL DIR`: a cluster's state through Pulsar's admin REST API.

The calls are those `pulsar-admin` makes (pulsar-client-admin `BrokersImpl`, `BrokerStatsImpl`,
`TenantsImpl`, `NamespacesImpl`, `ClustersImpl`), in this order:

    GET /admin/v2/clusters                                   the cluster (or --cluster when several)
    GET /admin/v2/brokers/{cluster}                          active brokers
    GET /admin/v2/brokers/leaderBroker                       the load-manager leader
    GET /admin/v2/brokers/configuration/runtime              the brokers' configuration (every key as
                                                             String.valueOf renders it; to-scenario's
                                                             [settings])
    per broker, on that broker's own web service:
      GET /admin/v2/broker-stats/load-report                 its LocalBrokerData
      GET /admin/v2/brokers/{cluster}/{broker}/ownedNamespaces   its bundles
      GET /admin/v2/broker-stats/topics                      its topics' stats
    GET /admin/v2/tenants, /admin/v2/namespaces/{tenant}
    per namespace: GET /admin/v2/namespaces/{tenant}/{ns}  (Policies), .../bundles, .../antiAffinity
    GET /admin/v2/clusters/{cluster}/namespaceIsolationPolicies, .../failureDomains

Each answer is written unchanged, one file per call, and `index.json` says which URL went to which file
(index.py). Load reports and topic stats exist only per broker in Pulsar (`BrokerStatsBase.getLoadReport`
answers `generateLoadReport()` of the broker asked), so every broker is asked on its own web service:
`--broker-url` is a template, `{broker}` being the broker id (host:port of its web service) and `{url}`
the --url; by default `http://{broker}` for Pulsar, and `{url}/emulator/brokers/{broker}` when --url is
the emulator's server (it answers GET /emulator/status), which serves each broker under that prefix.

Any failure (unreachable, 4xx/5xx, not JSON) is an `ExportError` of one line naming the URL; a 404 for
isolation policies ("... does not exist", Pulsar's answer when none was ever set) or for an anti-affinity
group, and a 204 for the latter (no group), are recorded as "nothing set".
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import msgspec

from .index import FORMAT, INDEX, Call, CallKind, SnapshotIndex

__all__ = ["ExportError", "export"]

EMULATOR_BROKER_URL = "{url}/emulator/brokers/{broker}"
PULSAR_BROKER_URL = "http://{broker}"
_OPTIONAL: dict[str, tuple[int, ...]] = {"isolation_policies": (404,), "anti_affinity": (204, 404),
                                         "leader": (404,), "runtime_config": (401, 403, 404)}
"""Answers recorded as "nothing set"; the runtime configuration needs super-user access on a Pulsar
broker with authorization (401/403): without it the scenario keeps the emulator's defaults."""
_TEXT_KINDS = ("anti_affinity",)


class ExportError(Exception):
    """One line: which call failed and why."""


def _check_url(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"--url = {url!r}: expected http(s)://HOST:PORT of a Pulsar broker or of the "
                         "emulator's server (run --metrics-port)")
    return url.rstrip("/")


class _Client:
    def __init__(self, timeout: float, token: str | None) -> None:
        self.timeout = timeout
        self.headers = {"Accept": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"

    def get(self, url: str) -> tuple[int, bytes]:
        """(status, body); raises ExportError when nothing answered."""
        request = urllib.request.Request(url, headers=self.headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()
        except (urllib.error.URLError, OSError) as e:
            raise ExportError(f"GET {url}: cannot reach it ({getattr(e, 'reason', e)})") from None


def _reason(body: bytes) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace").strip()[:200]
    return str(data.get("reason", data)) if isinstance(data, dict) else str(data)[:200]


def _slug(url: str, base: str) -> str:
    path = urllib.parse.unquote(url[len(base):] if url.startswith(base) else urllib.parse.urlsplit(url).path)
    path = path.replace("/admin/v2/", "/").replace("/emulator/brokers/", "/")
    return re.sub(r"[^A-Za-z0-9._-]+", "_", path).strip("_") or "root"


class _Exporter:
    def __init__(self, url: str, out: Path, client: _Client) -> None:
        self.base = url
        self.out = out
        self.client = client
        self.calls: list[Call] = []

    def get(self, kind: CallKind, url: str, *, hint: str = "", **where: str) -> Any:
        """GET url, write the body, list the call; the decoded JSON (None when "nothing set")."""
        status, body = self.client.get(url)
        if status in _OPTIONAL.get(kind, ()) or (kind in _TEXT_KINDS and status == 200 and not body.strip()):
            self.calls.append(Call(kind=kind, url=url, status=status, **where))
            return None
        if status >= 300:
            raise ExportError(f"GET {url}: HTTP {status}: {_reason(body)}{hint}")
        text = kind in _TEXT_KINDS
        if not text:
            try:
                value = json.loads(body)
            except ValueError:
                raise ExportError(f"GET {url}: the answer is not JSON ({body[:60]!r}...); is this a "
                                  f"Pulsar admin endpoint?{hint}") from None
        else:
            value = body.decode("utf-8", "replace")
        name = f"{len(self.calls) + 1:03d}-{_slug(url, self.base)}.{'txt' if text else 'json'}"
        (self.out / name).write_bytes(body)
        self.calls.append(Call(kind=kind, url=url, status=status, file=name, **where))
        return value


def _is_emulator(client: _Client, base: str) -> bool:
    try:
        status, body = client.get(f"{base}/emulator/status")
        return status == 200 and isinstance(json.loads(body), dict) and "cluster" in json.loads(body)
    except (ExportError, ValueError):
        return False


def _list_of_str(value: Any, url: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ExportError(f"GET {url}: expected a JSON list of names, got {str(value)[:80]}")
    return value


def export(url: str, out_dir: str | os.PathLike[str], *, cluster: str | None = None,
           broker_url: str | None = None, timeout: float = 30.0, token: str | None = None) -> SnapshotIndex:
    """Read the cluster at `url` into `out_dir` (created; must be empty). Returns the index written."""
    base = _check_url(url)
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"DIR = {os.fspath(out_dir)!r}: exists and is not an empty folder; a snapshot "
                         "goes into a new folder")
    if broker_url is not None and "{broker}" not in broker_url:
        raise ValueError(f"--broker-url = {broker_url!r}: needs {{broker}} where the broker id goes, "
                         "e.g. http://{broker} or https://{broker}")
    client = _Client(timeout, token)
    out.mkdir(parents=True, exist_ok=True)
    ex = _Exporter(base, out, client)

    clusters_url = f"{base}/admin/v2/clusters"
    clusters = _list_of_str(ex.get("clusters", clusters_url), clusters_url)
    if cluster is None:
        if len(clusters) != 1:
            raise ExportError(f"GET {clusters_url}: {len(clusters)} clusters ({', '.join(clusters)}); "
                              "say which with --cluster")
        cluster = clusters[0]
    elif cluster not in clusters:
        raise ExportError(f"--cluster = {cluster!r}: not one of {', '.join(clusters) or 'none'}")
    def q(part: str) -> str:
        return urllib.parse.quote(part, safe=":")
    brokers_url = f"{base}/admin/v2/brokers/{q(cluster)}"
    brokers = _list_of_str(ex.get("brokers", brokers_url), brokers_url)
    ex.get("leader", f"{base}/admin/v2/brokers/leaderBroker")
    ex.get("runtime_config", f"{base}/admin/v2/brokers/configuration/runtime")

    template = broker_url or (EMULATOR_BROKER_URL if _is_emulator(client, base) else PULSAR_BROKER_URL)
    hint = "" if broker_url else "; if brokers are not reachable at their ids from here, give --broker-url"
    for broker in brokers:
        at = template.format(broker=broker, url=base).rstrip("/")
        ex.get("load_report", f"{at}/admin/v2/broker-stats/load-report", hint=hint, broker=broker)
        ex.get("owned_namespaces", f"{at}/admin/v2/brokers/{q(cluster)}/{q(broker)}/ownedNamespaces",
               hint=hint, broker=broker)
        ex.get("broker_topics", f"{at}/admin/v2/broker-stats/topics", hint=hint, broker=broker)

    tenants_url = f"{base}/admin/v2/tenants"
    for tenant in _list_of_str(ex.get("tenants", tenants_url), tenants_url):
        ns_url = f"{base}/admin/v2/namespaces/{q(tenant)}"
        for namespace in _list_of_str(ex.get("namespaces", ns_url, tenant=tenant), ns_url):
            path = f"{base}/admin/v2/namespaces/{'/'.join(q(p) for p in namespace.split('/'))}"
            ex.get("policies", path, namespace=namespace)
            ex.get("bundles", f"{path}/bundles", namespace=namespace)
            ex.get("anti_affinity", f"{path}/antiAffinity", namespace=namespace)
    ex.get("isolation_policies", f"{base}/admin/v2/clusters/{q(cluster)}/namespaceIsolationPolicies")
    ex.get("failure_domains", f"{base}/admin/v2/clusters/{q(cluster)}/failureDomains")

    index = SnapshotIndex(format=FORMAT, url=base, cluster=cluster, broker_url=template, calls=ex.calls)
    (out / INDEX).write_bytes(msgspec.json.format(msgspec.json.encode(index), indent=2) + b"\n")
    return index
