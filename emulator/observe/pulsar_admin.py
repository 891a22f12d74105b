"""Pulsar's admin JSON for the views `snapshot export` reads: tenants, namespaces, policies, topic stats.

Pure functions of the cluster's state (read on the loop's thread by `http.AdminViews`), each written
after the Pulsar code that produces the same document:

* `namespace_policies`: `NamespacesBase.getPolicies` -> `AdminResource.getNamespacePoliciesAsync`, a
  `Policies` (pulsar-client-admin-api `common/policies/data/Policies.java`) whose `bundles` is replaced
  by the namespace's current bundle layout from its local policies, as Pulsar does. Pulsar's JSON mapper
  omits nulls, so only the non-null defaults of `Policies` are written, with the emulator's values.
* `broker_topic_stats`: `BrokerStats.getTopics2` (GET /admin/v2/broker-stats/topics) streams
  `PulsarStats.updateStats`'s buffer: `{namespace: {bundle range: {"persistent": {topic: stats},
  "non-persistent": {...}}}}` of the topics loaded on the broker answering, each topic's object as
  `PersistentTopic.updateRates` writes it (publishers, replication, subscriptions, producerCount,
  averageMsgSize, msgRateIn/Out, msgThroughputIn/Out). The rates are the means of the broker's last
  stats period, as Pulsar's buffer holds them (topic_stats.py `broker_topic_rates` says how); every
  emulated consumer reads everything on its own subscription, so a topic with N consumers shows N
  Exclusive subscriptions `sub-0` .. `sub-{N-1}` of one consumer each; a topic's producers share its
  rate evenly; counters the emulator does not keep (storage, backlog, message counts) are left out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emulator.cluster.cluster import DEFAULT_NAMESPACE
from emulator.model.loaddata import NamespaceBundleStats
from emulator.model.policies import LocalPolicies

from .topic_stats import broker_topic_rates

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.broker import Broker
    from emulator.cluster.cluster import Cluster

__all__ = ["broker_topic_stats", "namespace_policies", "tenant_namespaces", "tenants"]

_LOCAL_POLICIES = "/admin/local-policies"
_PUBLIC = DEFAULT_NAMESPACE.split("/", 1)[0]


def tenants(cluster: "Cluster") -> list[str]:
    """TenantsBase.getTenants: the tenants (here: those with a namespace, and `public`, whose
    `public/default` Pulsar's cluster initialisation makes: `Cluster.ensure_default_namespace`), sorted."""
    return sorted({*cluster.store.peek_children(_LOCAL_POLICIES), _PUBLIC})


def tenant_namespaces(cluster: "Cluster", tenant: str) -> list[str] | None:
    """NamespacesBase.getTenantNamespaces: `["tenant/ns", ...]`, or None for an unknown tenant."""
    if tenant not in tenants(cluster):
        return None
    names = set(cluster.store.peek_children(f"{_LOCAL_POLICIES}/{tenant}"))
    if tenant == _PUBLIC:
        names.add(DEFAULT_NAMESPACE.split("/", 1)[1])
    return [f"{tenant}/{ns}" for ns in sorted(names)]


def namespace_policies(cluster_name: str, namespace: str, local: LocalPolicies) -> dict[str, Any]:
    """The `Policies` document of a namespace, with its current bundles."""
    bounds = list(local.to_namespace_bundles(namespace).boundaries)
    return {
        "auth_policies": {"namespace_auth": {}, "destination_auth": {}, "subscription_auth_roles": {}},
        "replication_clusters": [cluster_name],
        "bundles": {"boundaries": [f"0x{b:08x}" for b in bounds], "numBundles": len(bounds) - 1},
        "backlog_quota_map": {},
        "clusterDispatchRate": {},
        "topicDispatchRate": {},
        "subscriptionDispatchRate": {},
        "replicatorDispatchRate": {},
        "clusterSubscribeRate": {},
        "publishMaxMessageRate": {},
        "latency_stats_sample_rate": {},
        "deleted": False,
        "encryption_required": False,
        "subscription_auth_mode": "None",
        "offload_threshold": -1,
        "schema_auto_update_compatibility_strategy": "Full",
        "schema_compatibility_strategy": "UNDEFINED",
        "is_allow_auto_update_schema": True,
        "schema_validation_enforced": False,
        "subscription_types_enabled": [],
        "properties": {},
    }


def _topic_json(s: NamespaceBundleStats) -> dict[str, Any]:
    rate_in, thr_in = s.msg_rate_in, s.msg_throughput_in
    avg = 0.0 if rate_in == 0.0 else thr_in / rate_in      # PersistentTopic.updateRates
    producers, consumers = s.producer_count, s.consumer_count
    per_sub_rate = s.msg_rate_out / consumers if consumers else 0.0
    per_sub_thr = s.msg_throughput_out / consumers if consumers else 0.0
    publishers = [{"msgRateIn": rate_in / producers, "msgThroughputIn": thr_in / producers,
                   "averageMsgSize": avg, "producerId": k, "metadata": {}} for k in range(producers)]
    subscriptions = {
        f"sub-{k}": {
            "consumers": [{"consumerName": f"consumer-{k}", "msgRateOut": per_sub_rate,
                           "msgThroughputOut": per_sub_thr, "msgRateRedeliver": 0.0, "metadata": {}}],
            "msgBacklog": 0, "msgRateExpired": 0.0, "msgRateOut": per_sub_rate,
            "messageAckRate": per_sub_rate, "msgThroughputOut": per_sub_thr, "msgRateRedeliver": 0.0,
            "type": "Exclusive",
        }
        for k in range(consumers)
    }
    return {"publishers": publishers, "replication": {}, "subscriptions": subscriptions,
            "producerCount": producers, "averageMsgSize": avg, "msgRateIn": rate_in,
            "msgRateOut": s.msg_rate_out, "msgThroughputIn": thr_in, "msgThroughputOut": s.msg_throughput_out}


def broker_topic_stats(broker: "Broker") -> dict[str, Any]:
    """GET /admin/v2/broker-stats/topics as `broker` answers it: the topics of its active bundles."""
    out: dict[str, Any] = {}
    for topic, (bundle, stats) in broker_topic_rates(broker).items():
        namespace, bundle_range = bundle.rsplit("/", 1)
        section = out.setdefault(namespace, {}).setdefault(bundle_range, {"persistent": {}})
        domain = "non-persistent" if topic.startswith("non-persistent://") else "persistent"
        section.setdefault(domain, {})[topic] = _topic_json(stats)
    return out
