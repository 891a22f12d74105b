"""Read-only admin views a `pulsar-admin` user reaches for: topics, clusters, broker health and version.

Routed by http.py's `AdminViews` (GET, on the loop's thread, no emulated time); the JSON of the topic
views is topic_stats.py's. Paths, as Pulsar's admin classes serve them:

    /admin/v2/<persistent|non-persistent>/<tenant>/<ns>              PersistentTopicsBase.internalGetListAsync:
                                                                     ["persistent://t/ns/x", ...]
    /admin/v2/namespaces/<tenant>/<ns>/topics[?mode=]                NamespacesBase.getTopics (PERSISTENT,
                                                                     NON_PERSISTENT or ALL)
    /admin/v2/<domain>/<tenant>/<ns>/partitioned                     internalGetPartitionedTopicListAsync
    /admin/v2/<domain>/<tenant>/<ns>/<topic>/partitions              PartitionedTopicMetadata
                                                                     {"partitions": n} (0: not partitioned)
    /admin/v2/<domain>/<tenant>/<ns>/<topic>/stats                   TopicStats (404 "Topic <name> not found"
                                                                     unless loaded on a live broker)
    /admin/v2/<domain>/<tenant>/<ns>/<topic>/partitioned-stats       PartitionedTopicStats; ?perPartition=false
                                                                     leaves out `partitions`
    /admin/v2/clusters/<cluster>                                     ClusterData (404 "Cluster does not exist")
    /admin/v2/brokers/health                                         BrokersBase.healthCheck: "ok"
    /admin/v2/brokers/ready                                          BrokersBase.isReady: "ok", else 500
    /admin/v2/brokers/version                                        BrokersBase.version: PULSAR_VERSION

A namespace that does not exist is 404 "Namespace does not exist" (`public/default` always exists:
Pulsar's cluster initialisation makes it; ops_http.py says when its node is written). Health, ready and
version answer for the broker named by the `/emulator/brokers/<id>/` prefix, else the leader, else the
first live broker: ready is "ok" for a broker that has started and is not shutting down (Pulsar's
State.Started), else 500 with an empty body; health is "ok" for a ready broker, else 500 with a reason
(Pulsar's check produces and consumes on a heartbeat topic; the emulator does not). Both are written as
Pulsar's resource writes a String: the bare text with a JSON content type. The topic stats choice of
Pulsar (validateTopicOwnership: a topic whose bundle no broker owns is assigned and loaded first) is not
followed: a read never assigns (404 instead).

ClusterData (pulsar-client-admin-api ClusterDataImpl, nulls left out): `serviceUrl` is this server (the
cluster's web service), `brokerServiceUrl` the live brokers' service URLs as one multi-host URL
(`pulsar://h1:p1,h2:p2`, which Pulsar's clients accept).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable

import msgspec

from emulator.cluster.cluster import DEFAULT_NAMESPACE

from . import topic_stats

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster

__all__ = ["PULSAR_VERSION", "TopicViews"]

PULSAR_VERSION = "4.0.0"
"""What `brokers/version` and an empty `brokerVersionString` say: the Pulsar release whose load-balancing
code the emulator follows (its newest ported features, PIP-358's weighted usage and PIP-364, are in 4.0)."""

Response = tuple[int, str, bytes]
_JSON = "application/json"


def _json(value: Any, status: int = 200) -> Response:
    return status, _JSON, msgspec.json.encode(value)


def _error(status: int, reason: str) -> Response:
    return _json({"reason": reason}, status)


_DOMAIN = r"(?P<domain>persistent|non-persistent)"
_NS = rf"/admin/v2/{_DOMAIN}/(?P<tenant>[^/]+)/(?P<ns>[^/]+)"


class TopicViews:
    """The views; `routes()` lists (pattern, view) pairs for http.py's `AdminViews` to match first."""

    def __init__(self, cluster: "Cluster", base_url: Callable[[], str],
                 namespace_exists: Callable[[str], bool]) -> None:
        self.cluster = cluster
        self.base_url = base_url
        self.namespace_exists = namespace_exists

    def routes(self) -> list[tuple[re.Pattern[str], Callable[..., Response]]]:
        return [
            (re.compile(r"/admin/v2/brokers/health/?"), self.health),
            (re.compile(r"/admin/v2/brokers/ready/?"), self.ready),
            (re.compile(r"/admin/v2/brokers/version/?"), self.version),
            (re.compile(r"/admin/v2/clusters/(?P<name>[^/]+)/?"), self.cluster_data),
            (re.compile(r"/admin/v2/namespaces/(?P<tenant>[^/]+)/(?P<ns>[^/]+)/topics/?"), self.namespace_topics),
            (re.compile(_NS + r"/?"), self.topic_list),
            (re.compile(_NS + r"/partitioned/?"), self.partitioned_list),
            (re.compile(_NS + r"/(?P<topic>[^/]+)/partitions/?"), self.partitions),
            (re.compile(_NS + r"/(?P<topic>[^/]+)/stats/?"), self.stats),
            (re.compile(_NS + r"/(?P<topic>[^/]+)/partitioned-stats/?"), self.partitioned_stats),
        ]

    # ------------------------------------------------------------------ brokers and clusters

    def _broker(self, query: dict[str, str]) -> Any:
        live = self.cluster.live_brokers()
        name = query.get("broker") or self.cluster.leader()
        if name not in live:
            name = live[0] if live else None
        return None if name is None else self.cluster.brokers[name]

    @staticmethod
    def _started(b: Any) -> bool:
        return b is not None and b.alive and b.started.is_set() and not b.closing

    def ready(self, query: dict[str, str]) -> Response:
        return (200, _JSON, b"ok") if self._started(self._broker(query)) else (500, _JSON, b"")

    def health(self, query: dict[str, str]) -> Response:
        b = self._broker(query)
        if self._started(b):
            return 200, _JSON, b"ok"
        return _error(500, "no live broker" if b is None else f"broker {b.broker_id} is not in started state")

    def version(self, query: dict[str, str]) -> Response:
        b = self._broker(query)
        text = b.local_data.broker_version_string if b is not None else ""
        return 200, _JSON, (text or PULSAR_VERSION).encode()

    def cluster_data(self, query: dict[str, str], name: str) -> Response:
        if name != self.cluster.name:
            return _error(404, "Cluster does not exist")
        urls = [self.cluster.brokers[b].local_data.pulsar_service_url for b in self.cluster.live_brokers()]
        hosts = [u.split("://", 1)[-1] for u in urls if u]
        return _json({"serviceUrl": self.base_url(), "brokerServiceUrl": "pulsar://" + ",".join(hosts),
                      "brokerClientTlsEnabled": False, "tlsAllowInsecureConnection": False,
                      "brokerClientTlsEnabledWithKeyStore": False, "brokerClientTlsTrustStoreType": "JKS",
                      "brokerClientTlsKeyStoreType": "JKS", "migrated": False})

    # ------------------------------------------------------------------ topics

    def _topics(self, tenant: str, ns: str, domain: str) -> list[str] | Response:
        namespace = f"{tenant}/{ns}"
        if not self.namespace_exists(namespace):
            return _error(404, "Namespace does not exist")
        return topic_stats.list_topics(self.cluster, namespace, domain)

    def topic_list(self, query: dict[str, str], domain: str, tenant: str, ns: str) -> Response:
        topics = self._topics(tenant, ns, domain)
        return topics if isinstance(topics, tuple) else _json(topics)

    def namespace_topics(self, query: dict[str, str], tenant: str, ns: str) -> Response:
        """NamespacesBase.getTopics: `?mode=PERSISTENT` (the default), `NON_PERSISTENT` or `ALL`."""
        mode = query.get("mode", "PERSISTENT").strip().upper()
        domains = {"PERSISTENT": ["persistent"], "NON_PERSISTENT": ["non-persistent"],
                   "ALL": ["persistent", "non-persistent"]}.get(mode)
        if domains is None:
            return _error(400, f"mode = {query.get('mode')!r}: expected PERSISTENT, NON_PERSISTENT or ALL")
        out: list[str] = []
        for domain in domains:
            topics = self._topics(tenant, ns, domain)
            if isinstance(topics, tuple):
                return topics
            out += topics
        return _json(out)

    def partitioned_list(self, query: dict[str, str], domain: str, tenant: str, ns: str) -> Response:
        topics = self._topics(tenant, ns, domain)
        return topics if isinstance(topics, tuple) else _json(sorted(topic_stats.partitioned_topics(topics)))

    def partitions(self, query: dict[str, str], domain: str, tenant: str, ns: str, topic: str) -> Response:
        topics = self._topics(tenant, ns, domain)
        if isinstance(topics, tuple):
            return topics
        n = topic_stats.partitioned_topics(topics).get(f"{domain}://{tenant}/{ns}/{topic}", 0)
        return _json({"partitions": n})

    def _loaded_stats(self, names: list[str]) -> dict[str, dict[str, Any]]:
        """TopicStats of those of `names` loaded on a live broker."""
        loaded = topic_stats.locate_topics(self.cluster, names)
        wanted: dict[str, set[str]] = {}          # broker -> the bundles of the topics asked
        for name in names:
            if name in loaded:
                broker, bundle = loaded[name]
                wanted.setdefault(broker, set()).add(bundle)
        out: dict[str, dict[str, Any]] = {}
        for broker, bundles in wanted.items():
            rates = topic_stats.broker_topic_rates(self.cluster.brokers[broker], bundles)
            for name in names:
                if name in rates:
                    out[name] = topic_stats.topic_stats_json(rates[name][1], broker)
        return out

    def stats(self, query: dict[str, str], domain: str, tenant: str, ns: str, topic: str) -> Response:
        if not self.namespace_exists(f"{tenant}/{ns}"):
            return _error(404, "Namespace does not exist")
        name = f"{domain}://{tenant}/{ns}/{topic}"
        found = self._loaded_stats([name])
        if name not in found:
            return _error(404, f"Topic {name} not found")
        return _json(found[name])

    def partitioned_stats(self, query: dict[str, str], domain: str, tenant: str, ns: str,
                          topic: str) -> Response:
        topics = self._topics(tenant, ns, domain)
        if isinstance(topics, tuple):
            return topics
        name = f"{domain}://{tenant}/{ns}/{topic}"
        n = topic_stats.partitioned_topics(topics).get(name, 0)
        if n == 0:
            return _error(404, f"Partitioned Topic not found: {name} has zero partitions")
        prefix = f"{name}-partition-"   # the partitions that exist (n comes from the highest suffix seen)
        stats = self._loaded_stats([t for t in topics if t.startswith(prefix) and t[len(prefix):].isdigit()])
        per_partition = query.get("perPartition", "true").strip().lower() != "false"
        return _json(topic_stats.partitioned_stats(n, stats, per_partition))


def default_namespace_exists(cluster: "Cluster", namespace: str) -> bool:
    """True for a namespace with local policies, and for `public/default` (see the module docstring)."""
    return namespace == DEFAULT_NAMESPACE or cluster.store.peek(f"/admin/local-policies/{namespace}") is not None
