"""Pulsar's topic admin JSON: topic lists, TopicStats and PartitionedTopicStats of the emulated topics.

Pure functions of the cluster's state, read on the loop's thread (http.py's `AdminViews`, through
topics_http.py), each after the Pulsar code that makes the same document:

* **Rates are Pulsar's stats-period means.** `PersistentTopic.getStats` reports the rates its producers'
  and subscriptions' `Rate` objects computed at the last `BrokerService.updateRates` (every
  `statsUpdateFrequencyInSecs`, 60 s): the mean over the last period, not the traffic of the instant.
  The emulator keeps those means per bundle (stats_window.py, `BrokerWindows.bundle_stats`), not per
  topic, so a topic's rate is its bundle's period mean times the topic's share of the bundle's traffic
  now (each of the four rates apart). Equal to the per-topic mean for steady traffic and for traffic
  scaled alike over a bundle (the scenario's spikes and curves scale groups of topics, which the share
  follows at once: a choice). A bundle that was not on this broker at the last stats update (acquired
  since) shows 0 for every rate, as a topic whose `Rate` has not been computed yet does in Pulsar.
  Producer and consumer counts are those of the instant (Pulsar lists the live producers). With
  `emulator_instant_stats` the rates are those of the instant, as the load reports'.
* **TopicStatsImpl's keys** (pulsar-common `policies/data/stats/TopicStatsImpl.java`, and
  PublisherStatsImpl, SubscriptionStatsImpl, ConsumerStatsImpl), with Pulsar's mapper leaving out
  nulls (`topicEpoch`). Counters the emulator does not keep (storage, backlog, message counters) are 0;
  every emulated consumer reads everything on its own subscription, so a topic with N consumers shows N
  Exclusive subscriptions `sub-0` .. `sub-{N-1}` of one consumer each; a topic's producers share its
  rates evenly.
* **Topic lists** (`PersistentTopicsBase.internalGetListAsync`): a namespace's persistent topics are the
  children of `/managed-ledgers/<tenant>/<ns>/persistent` (written when a topic is first opened, unless
  bookies are off: `[capacity.bookkeeper] bookies = 0`) together with the topics loaded on a live
  broker now; non-persistent topics exist only while loaded (NonPersistentTopics lists the owners'
  loaded topics). Partitions are listed by their own names (`x-partition-0`), as Pulsar's list does.
* **Partitioned topics.** The emulator keeps no `/admin/partitioned-topics` metadata: a partitioned topic
  is the base name of topics named `<base>-partition-<n>` in the list above, of `max(n) + 1`
  partitions (a choice: what a scenario's `partitions = N` makes). Its stats
  (`PartitionedTopicStatsImpl`: `metadata.partitions`, the per-partition `partitions` map with
  `perPartition`, Pulsar's default true) add the loaded partitions' stats as `TopicStatsImpl.add` does
  (rates summed, `averageMsgSize` averaged, publishers added by index, subscriptions by name);
  partitions not loaded now are left out (Pulsar would load them).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import msgspec

from emulator.model.bundles import topic_namespace
from emulator.model.loaddata import NamespaceBundleStats
from emulator.model.policies import LocalPolicies

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.broker import Broker
    from emulator.cluster.cluster import Cluster

__all__ = ["broker_topic_rates", "list_topics", "loaded_topics", "locate_topics", "partitioned_stats",
           "partitioned_topics", "topic_stats_json"]

_PARTITION = re.compile(r"(?P<base>.+)-partition-(?P<n>\d+)")
_RATES = ("msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out")


def broker_topic_rates(broker: "Broker",
                       only: set[str] | None = None) -> dict[str, tuple[str, NamespaceBundleStats]]:
    """topic -> (bundle, its stats) for the topics of `broker`'s active bundles (of the bundles `only`,
    when given), rates as the last stats period's means (see the module docstring), counts of the instant."""
    now = broker.now
    windows = getattr(broker, "windows", None)
    period = None if windows is None else windows.bundle_stats
    out: dict[str, tuple[str, NamespaceBundleStats]] = {}
    for bundle in sorted(broker.owned if only is None else only & broker.owned.keys()):
        owned = broker.owned[bundle]
        if not owned.active or owned.actor is None or not owned.actor.topics:
            continue
        topics = owned.actor.topics
        # one topic per "bundle" gives per-topic sums (as Broker._topic_stats does for the splitters)
        instant = broker.load_source.bundle_stats(broker.broker_id, now,
                                                  {t: {t: load} for t, load in topics.items()})
        if period is None:
            for topic in sorted(topics):
                out[topic] = (bundle, instant[topic])
            continue
        mean = period.get(bundle)
        totals = {f: sum(getattr(instant[t], f) for t in topics) for f in _RATES}
        for topic in sorted(topics):
            s = instant[topic]
            r = [0.0 if mean is None else getattr(mean, f) * getattr(s, f) / totals[f] if totals[f] > 0.0
                 else getattr(mean, f) / len(topics) for f in _RATES]
            out[topic] = (bundle, NamespaceBundleStats(
                msg_rate_in=r[0], msg_rate_out=r[1], msg_throughput_in=r[2], msg_throughput_out=r[3],
                producer_count=s.producer_count, consumer_count=s.consumer_count, topics=1))
    return out


def loaded_topics(cluster: "Cluster") -> dict[str, tuple[str, str]]:
    """topic -> (the live broker it is loaded on, its bundle there: an active bundle owned there)."""
    out: dict[str, tuple[str, str]] = {}
    for broker_id in cluster.live_brokers():
        b = cluster.brokers[broker_id]
        for bundle, owned in b.owned.items():
            if owned.active and owned.actor is not None:
                for topic in owned.actor.topics:
                    out[topic] = (broker_id, bundle)
    return out


def locate_topics(cluster: "Cluster", names: list[str]) -> dict[str, tuple[str, str]]:
    """name -> (broker, bundle) of those of `names` loaded on a live broker: each topic's bundle from its
    namespace's ranges, then that bundle's live owner (no walk over every loaded topic)."""
    out: dict[str, tuple[str, str]] = {}
    layouts: dict[str, Any] = {}
    live = [(b, cluster.brokers[b]) for b in cluster.live_brokers()]
    for name in names:
        namespace = topic_namespace(name)
        if namespace not in layouts:
            data = cluster.store.peek(f"/admin/local-policies/{namespace}")
            layouts[namespace] = None if data is None else msgspec.json.decode(
                data, type=LocalPolicies).to_namespace_bundles(namespace)
        nb = layouts[namespace]
        if nb is None:
            continue
        bundle = nb.find_bundle(name)
        for broker_id, b in live:
            owned = b.owned.get(bundle)
            if owned is not None and owned.active and owned.actor is not None and name in owned.actor.topics:
                out[name] = (broker_id, bundle)
                break
    return out


def _domain(topic: str) -> str:
    return "non-persistent" if topic.startswith("non-persistent://") else "persistent"


def list_topics(cluster: "Cluster", namespace: str, domain: str,
                loaded: dict[str, tuple[str, str]] | None = None) -> list[str]:
    """`GET /admin/v2/<domain>/<tenant>/<ns>`: the namespace's topics of that domain, sorted."""
    loaded = loaded_topics(cluster) if loaded is None else loaded
    prefix = f"{domain}://{namespace}/"
    names = {t for t in loaded if t.startswith(prefix)}
    if domain == "persistent":
        names.update(prefix + local for local in cluster.store.peek_children(
            f"/managed-ledgers/{namespace}/persistent"))
    return sorted(names)


def partitioned_topics(topics: list[str]) -> dict[str, int]:
    """Partitioned topic -> its partition count, from the partitions' names (module docstring)."""
    out: dict[str, int] = {}
    for topic in topics:
        m = _PARTITION.fullmatch(topic)
        if m is not None:
            base = m.group("base")
            out[base] = max(out.get(base, 0), int(m.group("n")) + 1)
    return out


def _publishers(s: NamespaceBundleStats, avg: float) -> list[dict[str, Any]]:
    n = s.producer_count
    return [{"accessMode": "Shared", "msgRateIn": s.msg_rate_in / n, "msgThroughputIn": s.msg_throughput_in / n,
             "averageMsgSize": avg, "chunkedMessageRate": 0.0, "producerId": k, "supportsPartialProducer": False,
             "producerName": f"producer-{k}", "metadata": {}} for k in range(n)]


def _subscriptions(s: NamespaceBundleStats) -> dict[str, Any]:
    n = s.consumer_count
    rate = s.msg_rate_out / n if n else 0.0
    thr = s.msg_throughput_out / n if n else 0.0
    return {
        f"sub-{k}": {
            "msgRateOut": rate, "msgThroughputOut": thr, "bytesOutCounter": 0, "msgOutCounter": 0,
            "msgRateRedeliver": 0.0, "messageAckRate": rate, "chunkedMessageRate": 0, "msgBacklog": 0,
            "backlogSize": 0, "earliestMsgPublishTimeInBacklog": 0, "msgBacklogNoDelayed": 0,
            "blockedSubscriptionOnUnackedMsgs": False, "msgDelayed": 0, "unackedMessages": 0,
            "type": "Exclusive", "activeConsumerName": f"consumer-{k}", "msgRateExpired": 0.0,
            "totalMsgExpired": 0, "lastExpireTimestamp": 0, "lastConsumedFlowTimestamp": 0,
            "lastConsumedTimestamp": 0, "lastAckedTimestamp": 0, "lastMarkDeleteAdvancedTimestamp": 0,
            "consumers": [{"msgRateOut": rate, "msgThroughputOut": thr, "bytesOutCounter": 0,
                           "msgOutCounter": 0, "msgRateRedeliver": 0.0, "messageAckRate": rate,
                           "chunkedMessageRate": 0.0, "consumerName": f"consumer-{k}", "availablePermits": 0,
                           "unackedMessages": 0, "avgMessagesPerEntry": 0,
                           "blockedConsumerOnUnackedMsgs": False, "lastAckedTimestamp": 0,
                           "lastConsumedTimestamp": 0, "lastConsumedFlowTimestamp": 0, "metadata": {}}],
            "isDurable": True, "isReplicated": False, "allowOutOfOrderDelivery": False,
            "consumersAfterMarkDeletePosition": {}, "nonContiguousDeletedMessagesRanges": 0,
            "nonContiguousDeletedMessagesRangesSerializedSize": 0, "subscriptionProperties": {},
        }
        for k in range(n)
    }


def topic_stats_json(s: NamespaceBundleStats, owner: str | None = None) -> dict[str, Any]:
    """TopicStatsImpl of one topic whose rates and counts are `s`; `ownerBroker` when given."""
    rate_in, thr_in = s.msg_rate_in, s.msg_throughput_in
    avg = 0.0 if rate_in == 0.0 else thr_in / rate_in      # PersistentTopic.updateRates
    out: dict[str, Any] = {
        "msgRateIn": rate_in, "msgThroughputIn": thr_in, "msgRateOut": s.msg_rate_out,
        "msgThroughputOut": s.msg_throughput_out, "bytesInCounter": 0, "msgInCounter": 0,
        "bytesOutCounter": 0, "msgOutCounter": 0, "averageMsgSize": avg, "msgChunkPublished": False,
        "storageSize": 0, "backlogSize": 0, "publishRateLimitedTimes": 0, "earliestMsgPublishTimeInBacklogs": 0,
        "offloadedStorageSize": 0, "lastOffloadLedgerId": 0, "lastOffloadSuccessTimeStamp": 0,
        "lastOffloadFailureTimeStamp": 0, "ongoingTxnCount": 0, "abortedTxnCount": 0, "committedTxnCount": 0,
        "publishers": _publishers(s, avg), "waitingPublishers": 0, "subscriptions": _subscriptions(s),
        "replication": {}, "deduplicationStatus": "Disabled", "nonContiguousDeletedMessagesRanges": 0,
        "nonContiguousDeletedMessagesRangesSerializedSize": 0, "delayedMessageIndexSizeInBytes": 0,
        "compaction": {"lastCompactionRemovedEventCount": 0, "lastCompactionSucceedTimestamp": 0,
                       "lastCompactionFailedTimestamp": 0, "lastCompactionDurationTimeInMills": 0},
    }
    if owner is not None:
        out["ownerBroker"] = owner
    return out


_SUMMED = ("msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut")


def partitioned_stats(partitions: int, stats: dict[str, dict[str, Any]], per_partition: bool) -> dict[str, Any]:
    """PartitionedTopicStatsImpl over the loaded partitions' TopicStats (`stats`: name -> stats)."""
    out = topic_stats_json(NamespaceBundleStats())
    count = 0
    for name in sorted(stats):
        s = stats[name]
        count += 1
        for key in _SUMMED:
            out[key] += s[key]
        out["averageMsgSize"] = (out["averageMsgSize"] * (count - 1) + s["averageMsgSize"]) / count
        for i, p in enumerate(s["publishers"]):   # TopicStatsImpl.add: publishers by index
            if i == len(out["publishers"]):
                out["publishers"].append({**p, "msgRateIn": 0.0, "msgThroughputIn": 0.0})
            mine = out["publishers"][i]
            mine["msgRateIn"] += p["msgRateIn"]
            mine["msgThroughputIn"] += p["msgThroughputIn"]
        for sub, v in s["subscriptions"].items():   # subscriptions by name
            mine = out["subscriptions"].setdefault(sub, {**v, "msgRateOut": 0.0, "msgThroughputOut": 0.0,
                                                         "messageAckRate": 0.0, "consumers": []})
            for key in ("msgRateOut", "msgThroughputOut", "messageAckRate"):
                mine[key] += v[key]
            mine["consumers"] = mine["consumers"] + v["consumers"]
    out["metadata"] = {"partitions": partitions}
    out["partitions"] = {name: stats[name] for name in sorted(stats)} if per_partition else {}
    return out
