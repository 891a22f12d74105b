"""`pulsar-lb-emulator snapshot to-scenario DIR`: a snapshot folder (export.py) -> a scenario TOML.

What each part of the scenario is made from:

* `[cluster] brokers`: the active brokers' ids, as Pulsar wrote them (`GET /admin/v2/brokers/{cluster}`).
* capacities, from each broker's load report (LocalBrokerData limits, units as
  `LinuxBrokerHostUsageImpl` and `LoadManagerShared.getSystemResourceUsage` write them): cores =
  cpu.limit / 100 (percent-cores), nic_gbps = bandwidthIn.limit / 1024² (kbit/s), heap_mb =
  memory.limit, direct_mb = directMemory.limit (MB). The capacity most brokers share is
  `[cluster.capacity]`; the others are `[cluster.overrides]`. A limit <= 0 (no NIC speed found, an
  unreported resource) keeps the emulator's default. A foreign process's CPU cannot be told apart from
  the broker's own in a report, so `background_cores` is not inferred.
* `[[namespaces]]` and `[initial]`: every `tenant/ns` namespace with its exact bundle boundaries
  (`.../bundles`) and its anti-affinity group; each bundle's owner from the brokers' `ownedNamespaces`
  (the ownership nodes; a bundle nobody owns is written as "", for the `[initial] owners` generator).
* `[[topics]]`: every topic of the brokers' `broker-stats/topics`, with its own publish rate (msgRateIn),
  in groups of equal namespace, persistence, producers (producerCount), consumers and message size
  (averageMsgSize, whole bytes), each group with explicit `names` and `rate = { distribution = "explicit"
  }`. The emulator's consumer reads everything on its own subscription, so a topic's consumers are its
  subscriptions that have a consumer (what reproduces msgRateOut for subscriptions that keep up).
  A partition is a topic of its own name. No pattern, no noise: the traffic stays as it was.
* `[[isolation_policies]]` and `[[failure_domains]]` from the cluster's NamespaceIsolationData map and
  failure domains, when any.
* `[settings]`: the cluster's own load-balancing configuration from its runtime configuration (settings.py:
  the keys that differ from the emulator's defaults, and always the load manager, shedder and placement),
  so a replay runs with the cluster's shedder, thresholds and split settings. A snapshot without it (an
  older export, or a broker that refused the call) says `failureDomainsEnabled = true` with failure
  domains, as before (a domain is only worth exporting if the brokers enable them).
* The leader (`/admin/v2/brokers/leaderBroker`) is named in the description and written as `[settings]
  emulator_first_leader`, so it wins the replay's first election (an emulator switch: in Pulsar the first
  broker to create the leader node wins; which one that is depends on start-up order, not on a key).
* A namespace with no topic and no owned bundle is left out (Pulsar's `public/default` as the cluster's
  initialisation leaves it): `[initial]` would place its bundles, which had no owner.

Problems are `SnapshotError`s of one line naming the file (and the key) that is wrong.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec

from emulator.model.policies import BundlesData

from .index import FORMAT, INDEX, SnapshotIndex
from .settings import settings_from_runtime

__all__ = ["Snapshot", "SnapshotError", "read_snapshot", "scenario_dict", "to_toml"]

_NAMESPACE = re.compile(r"^[\w.-]+/[\w.-]+$")
_DEFAULT_MSG_SIZE = 1024


class SnapshotError(Exception):
    """One line: the snapshot file and what is wrong in it."""


# ------------------------------------------------------------------ Pulsar's JSON, read leniently


class _Usage(msgspec.Struct):
    usage: float = 0.0
    limit: float = 0.0


class _LoadReport(msgspec.Struct, rename="camel"):
    """The part of LocalBrokerData used here (other fields are ignored)."""

    cpu: _Usage = msgspec.field(default_factory=_Usage)
    memory: _Usage = msgspec.field(default_factory=_Usage)
    direct_memory: _Usage = msgspec.field(default_factory=_Usage)
    bandwidth_in: _Usage = msgspec.field(default_factory=_Usage)
    bandwidth_out: _Usage = msgspec.field(default_factory=_Usage)


class _Subscription(msgspec.Struct):
    consumers: list[Any] = []


class _TopicStats(msgspec.Struct):
    msgRateIn: float = 0.0  # noqa: N815 (Pulsar's names)
    msgThroughputIn: float = 0.0  # noqa: N815
    averageMsgSize: float = 0.0  # noqa: N815
    producerCount: int | None = None  # noqa: N815
    publishers: list[Any] = []
    subscriptions: dict[str, _Subscription] = {}


_BrokerTopics = dict[str, dict[str, dict[str, dict[str, _TopicStats]]]]


class _FailoverPolicy(msgspec.Struct):
    policy_type: str = "min_available"
    parameters: dict[str, str | int] = {}


class _Isolation(msgspec.Struct):
    namespaces: list[str] = []
    primary: list[str] = []
    secondary: list[str] = []
    auto_failover_policy: _FailoverPolicy | None = None


class _Domain(msgspec.Struct):
    brokers: list[str] = []


class Snapshot(msgspec.Struct, kw_only=True):
    """A snapshot folder, decoded."""

    index: SnapshotIndex
    brokers: list[str]
    leader: str | None = None
    reports: dict[str, _LoadReport] = {}
    owners: dict[str, str] = {}
    """bundle -> broker"""
    topics: dict[str, _TopicStats] = {}
    """full topic name -> stats"""
    namespaces: list[str] = []
    bundles: dict[str, list[str]] = {}
    """namespace -> boundaries"""
    anti_affinity: dict[str, str] = {}
    isolation: dict[str, _Isolation] = {}
    failure_domains: dict[str, _Domain] = {}
    runtime: dict[str, str] = {}
    """The runtime configuration (key -> String.valueOf), when the export could read it."""


# ------------------------------------------------------------------ reading the folder


def read_snapshot(folder: str | os.PathLike[str]) -> Snapshot:
    root = Path(folder)
    where = os.fspath(folder)
    if not root.is_dir():
        raise SnapshotError(f"{where}: no such snapshot folder")
    index_path = root / INDEX
    if not index_path.is_file():
        raise SnapshotError(f"{where}: no {INDEX}; not a snapshot folder, or an export that did not finish")
    try:
        index = msgspec.json.decode(index_path.read_bytes(), type=SnapshotIndex)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise SnapshotError(f"{index_path}: not a snapshot index ({e})") from None
    if index.format != FORMAT:
        raise SnapshotError(f"{index_path}: format = {index.format!r}; this version reads {FORMAT!r}")

    def load(call: Any, tp: Any) -> Any:
        path = root / call.file
        if not path.is_file():
            raise SnapshotError(f"{path}: listed in {INDEX} ({call.url}) but missing")
        data = path.read_bytes()
        if tp is str:
            return data.decode("utf-8", "replace").strip()
        try:
            return msgspec.json.decode(data, type=tp)
        except (msgspec.DecodeError, msgspec.ValidationError) as e:
            raise SnapshotError(f"{path}: not the JSON {call.url} answers ({e})") from None

    snap = Snapshot(index=index, brokers=[])
    seen_brokers = False
    for call in index.calls:
        if call.file is None:
            continue
        kind = call.kind
        if kind == "brokers":
            snap.brokers = load(call, list[str])
            seen_brokers = True
        elif kind == "leader":
            snap.leader = load(call, dict[str, Any]).get("brokerId")
        elif kind == "load_report":
            snap.reports[str(call.broker)] = load(call, _LoadReport)
        elif kind == "owned_namespaces":
            for bundle in load(call, dict[str, Any]):
                snap.owners[bundle] = str(call.broker)
        elif kind == "broker_topics":
            by_ns: _BrokerTopics = load(call, _BrokerTopics)
            for bundles in by_ns.values():
                for domains in bundles.values():
                    for topics in domains.values():
                        snap.topics.update(topics)
        elif kind == "namespaces":
            snap.namespaces.extend(load(call, list[str]))
        elif kind == "bundles":
            data: BundlesData = load(call, BundlesData)
            snap.bundles[str(call.namespace)] = list(data.boundaries)
        elif kind == "anti_affinity":
            group = load(call, str).strip('"')
            if group:
                snap.anti_affinity[str(call.namespace)] = group
        elif kind == "isolation_policies":
            snap.isolation = load(call, dict[str, _Isolation])
        elif kind == "failure_domains":
            snap.failure_domains = load(call, dict[str, _Domain])
        elif kind == "runtime_config":
            snap.runtime = load(call, dict[str, str])
    if not seen_brokers or not snap.brokers:
        raise SnapshotError(f"{index_path}: the snapshot lists no active broker")
    return snap


# ------------------------------------------------------------------ the scenario


def _capacity(report: _LoadReport) -> dict[str, float]:
    out: dict[str, float] = {}
    if report.cpu.limit > 0:
        out["cores"] = round(report.cpu.limit / 100.0, 6)
    if report.bandwidth_in.limit > 0:
        out["nic_gbps"] = round(report.bandwidth_in.limit / (1024.0 * 1024.0), 6)
    if report.memory.limit > 0:
        out["heap_mb"] = round(report.memory.limit, 6)
    if report.direct_memory.limit > 0:
        out["direct_mb"] = round(report.direct_memory.limit, 6)
    return out


def _consumers(stats: _TopicStats) -> int:
    return sum(1 for s in stats.subscriptions.values() if s.consumers)


def _producers(stats: _TopicStats) -> int:
    return stats.producerCount if stats.producerCount is not None else len(stats.publishers)


def _msg_size(stats: _TopicStats) -> int:
    size = stats.averageMsgSize
    if not size > 0 and stats.msgRateIn > 0:
        size = stats.msgThroughputIn / stats.msgRateIn
    return max(1, round(size)) if size > 0 else _DEFAULT_MSG_SIZE


def _split_topic(name: str) -> tuple[str, str, str] | None:
    """persistent://tenant/ns/local -> (persistence, namespace, local); None for other forms."""
    persistence, sep, rest = name.partition("://")
    parts = rest.split("/")
    if not sep or persistence not in ("persistent", "non-persistent") or len(parts) != 3:
        return None
    return persistence, f"{parts[0]}/{parts[1]}", parts[2]


def scenario_dict(snap: Snapshot, *, name: str | None = None, duration: str = "30m",
                  seed: int = 1) -> tuple[dict[str, Any], list[str]]:
    """The scenario as a TOML-ready dict, and one line per thing left out (to tell the user)."""
    skipped: list[str] = []
    brokers = list(snap.brokers)
    cluster = snap.index.cluster

    capacities = {b: _capacity(snap.reports[b]) for b in brokers if b in snap.reports}
    cluster_table: dict[str, Any] = {"brokers": brokers}
    if capacities:
        common = Counter(tuple(sorted(c.items())) for c in capacities.values()).most_common(1)[0][0]
        if common:
            cluster_table["capacity"] = dict(common)
        overrides = {b: {k: v for k, v in c.items() if dict(common).get(k) != v}
                     for b, c in capacities.items() if tuple(sorted(c.items())) != common}
        if overrides:
            cluster_table["overrides"] = overrides

    namespaces: list[dict[str, Any]] = []
    initial: list[dict[str, Any]] = []
    with_topics = {parts[1] for parts in map(_split_topic, snap.topics) if parts is not None}
    owned = {bundle.rsplit("/", 1)[0] for bundle, owner in snap.owners.items() if owner in brokers}
    for ns in sorted(set(snap.namespaces) | set(snap.bundles)):
        if not _NAMESPACE.match(ns):
            skipped.append(f"namespace {ns}: not a tenant/namespace name the emulator models")
            continue
        if ns not in with_topics and ns not in owned:
            if ns != "public/default":   # every cluster has it, most leave it empty: not worth a line
                skipped.append(f"namespace {ns}: no topic and no owned bundle; left out, as the replay's "
                               "[initial] would give its bundles owners")
            continue
        bounds = snap.bundles.get(ns)
        entry: dict[str, Any] = {"name": ns}
        if bounds is not None:
            entry["bundles"] = len(bounds) - 1
        if ns in snap.anti_affinity:
            entry["anti_affinity_group"] = snap.anti_affinity[ns]
        namespaces.append(entry)
        if bounds is not None:
            owners = [snap.owners.get(f"{ns}/{lo}_{up}", "") for lo, up in zip(bounds, bounds[1:])]
            owners = [o if o in brokers else "" for o in owners]
            item: dict[str, Any] = {"name": ns, "boundaries": bounds}
            if any(owners):
                item["owners"] = owners
            initial.append(item)
    known = {n["name"] for n in namespaces}

    groups: dict[tuple[str, str, int, int, int], list[tuple[str, float]]] = {}
    for topic in sorted(snap.topics):
        parts = _split_topic(topic)
        if parts is None or parts[1] not in known:
            skipped.append(f"topic {topic}: its namespace is not in the snapshot's namespaces")
            continue
        persistence, ns, local = parts
        stats = snap.topics[topic]
        key = (ns, persistence, _producers(stats), _consumers(stats), _msg_size(stats))
        groups.setdefault(key, []).append((local, float(stats.msgRateIn)))
    topics: list[dict[str, Any]] = []
    for k, ((ns, persistence, producers, consumers, size), members) in enumerate(sorted(groups.items())):
        group: dict[str, Any] = {"namespace": ns, "group": f"snapshot-{k + 1}"}
        if persistence != "persistent":
            group["persistence"] = persistence
        group.update(names=[m[0] for m in members], producers=producers, consumers=consumers, msg_size=size,
                     rate={"distribution": "explicit", "rates": [m[1] for m in members]})
        topics.append(group)

    n_topics = sum(len(g["names"]) for g in topics)
    out: dict[str, Any] = {
        "scenario": {
            "name": name or f"snapshot-{cluster}",
            "description": (f"Snapshot of cluster {cluster} at {snap.index.url}: {len(brokers)} brokers, "
                            f"{len(namespaces)} namespaces, {n_topics} topics"
                            + (f", leader {snap.leader}" if snap.leader else "")),
            "duration": duration,
            "seed": seed,
        },
        "cluster": cluster_table,
    }
    settings, unparsed = settings_from_runtime(snap.runtime)
    skipped.extend(unparsed)
    if snap.failure_domains and "failureDomainsEnabled" not in snap.runtime:
        settings["failureDomainsEnabled"] = True
    if snap.leader in brokers:
        settings["emulator_first_leader"] = snap.leader
    if settings:
        out["settings"] = dict(sorted(settings.items()))
    out["namespaces"] = namespaces
    if initial:
        out["initial"] = {"namespaces": initial}
    if topics:
        out["topics"] = topics
    if snap.isolation:
        policies = []
        for pname, p in sorted(snap.isolation.items()):
            item = {"name": pname, "namespaces": p.namespaces, "primary": p.primary, "secondary": p.secondary}
            if p.auto_failover_policy is not None:
                item["auto_failover_policy"] = {"policy_type": p.auto_failover_policy.policy_type,
                                                "parameters": dict(p.auto_failover_policy.parameters)}
            policies.append(item)
        out["isolation_policies"] = policies
    if snap.failure_domains:
        out["failure_domains"] = [{"name": d, "brokers": list(v.brokers)}
                                  for d, v in sorted(snap.failure_domains.items())]
    return out, skipped


def to_toml(scenario: dict[str, Any]) -> str:
    import tomli_w

    return tomli_w.dumps(scenario)
