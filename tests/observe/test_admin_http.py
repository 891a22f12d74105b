"""The admin paths a `pulsar-admin` user reaches for (issue 29): topics, clusters, health, unload and split,
with Pulsar's JSON, paths and status codes (topics_http.py, topic_stats.py, ops_http.py)."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from typing import Any

import anyio
import pytest

from emulator.cluster import load_manager as lm
from emulator.cluster.load_source import FlatLoad
from emulator.cluster.messages import HandleKind
from emulator.model.config import ServiceConfig
from emulator.observe.attach import observe
from emulator.observe.topics_http import PULSAR_VERSION
from emulator.runtime import run_external
from emulator.testing import emulated_cluster

NS = "acme/a"
TRANSFER = "org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder"
TOPIC_STATS_KEYS = {
    "msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut", "bytesInCounter", "msgInCounter",
    "bytesOutCounter", "msgOutCounter", "averageMsgSize", "msgChunkPublished", "storageSize", "backlogSize",
    "publishRateLimitedTimes", "earliestMsgPublishTimeInBacklogs", "offloadedStorageSize", "lastOffloadLedgerId",
    "lastOffloadSuccessTimeStamp", "lastOffloadFailureTimeStamp", "ongoingTxnCount", "abortedTxnCount",
    "committedTxnCount", "publishers", "waitingPublishers", "subscriptions", "replication", "deduplicationStatus",
    "nonContiguousDeletedMessagesRanges", "nonContiguousDeletedMessagesRangesSerializedSize",
    "delayedMessageIndexSizeInBytes", "compaction", "ownerBroker"}
"""TopicStatsImpl's public fields and getters (pulsar-common policies/data/stats/TopicStatsImpl.java); the
null `topicEpoch` is left out as Pulsar's mapper leaves nulls out."""


class Dial(FlatLoad):
    """FlatLoad whose rate can be turned mid-run (no per-table cache)."""

    def bundle_stats(self, broker_id: str, now: float, bundles: Any) -> Any:
        return {bundle: self._stats_of(topics) for bundle, topics in bundles.items()}


def call(method: str, url: str, body: bytes | None = None) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


async def get(url: str) -> tuple[int, Any]:
    status, _, body = await run_external(call, "GET", url)
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body


async def put(cluster: Any, url: str, body: bytes | None = None, method: str = "PUT") -> tuple[int, bytes]:
    """A request whose answer needs emulated time (an unload closes topics, a split writes metadata, an
    Extensible lookup writes the channel): it runs in a plain thread while the virtual clock goes on,
    until it is answered."""
    box: dict[str, tuple[int, dict[str, str], bytes]] = {}
    data = body if body is not None else (b"" if method == "PUT" else None)
    thread = threading.Thread(target=lambda: box.update(r=call(method, url, data)), daemon=True)
    thread.start()
    # the virtual clock does not wait for a real thread: give it a moment of real time at each step, so
    # the request reaches the server's gate before emulated time has raced past the whole window
    # (on a loaded machine the clock ran the 2 h before the request came in)
    for _ in range(14_400):
        thread.join(0.002)
        if "r" in box:
            break
        await anyio.sleep(0.5)
    assert "r" in box, "the PUT's answer not reached within 2 emulated hours"
    status, _, answer = box["r"]
    return status, answer


@pytest.mark.asyncio
async def test_topic_lists_stats_and_partitioned_stats_answer_with_pulsars_json():
    load = Dial(rate=10.0, msg_size=1000)
    async with emulated_cluster(3, seed=41, namespaces={NS: 4}, load_source=load) as cluster:
        async with observe(cluster, metrics_port=0) as obs:
            client = cluster.add_client()
            plain = [f"persistent://{NS}/t-{i}" for i in range(4)]
            parts = [f"persistent://{NS}/p-partition-{i}" for i in range(3)]
            client.create_handles(plain + parts)
            client.create_handles(plain + parts, HandleKind.CONSUMER)
            await cluster.wait_until(lambda: client.connected_count() == 14)
            base = obs.url + "/admin/v2/persistent/" + NS

            assert await get(base) == (200, sorted(plain + parts))
            assert await get(obs.url + f"/admin/v2/non-persistent/{NS}") == (200, [])
            assert await get(base + "/partitioned") == (200, [f"persistent://{NS}/p"])
            assert await get(base + "/p/partitions") == (200, {"partitions": 3})
            assert await get(base + "/t-0/partitions") == (200, {"partitions": 0})
            ns_topics = obs.url + f"/admin/v2/namespaces/{NS}/topics"
            assert await get(ns_topics) == await get(ns_topics + "?mode=ALL") == (200, sorted(plain + parts))
            assert await get(ns_topics + "?mode=NON_PERSISTENT") == (200, [])
            assert (await get(ns_topics + "?mode=SOME"))[0] == 400
            rng = (await cluster.namespace_bundles(NS)).find_bundle(plain[0]).rsplit("/", 1)[1]
            lookup = obs.url + f"/lookup/v2/topic/persistent/{NS}/t-0"
            assert await get(lookup + "/bundle") == (200, rng.encode())   # pulsar-admin topics bundle-range

            # Pulsar's rates are the last stats period's means: 0 until a period has passed with the topic
            status, stats = await get(base + "/t-0/stats")
            assert status == 200 and set(stats) == TOPIC_STATS_KEYS and stats["msgRateIn"] == 0.0
            await anyio.sleep(125)
            status, stats = await get(base + "/t-0/stats")
            owner = cluster.ownership()[(await cluster.namespace_bundles(NS)).find_bundle(plain[0])]
            assert stats["ownerBroker"] == owner
            assert stats["msgRateIn"] == pytest.approx(10.0) and stats["msgThroughputIn"] == pytest.approx(10_000.0)
            assert stats["averageMsgSize"] == pytest.approx(1000.0) and stats["msgRateOut"] == pytest.approx(10.0)
            [publisher] = stats["publishers"]
            assert publisher["msgRateIn"] == pytest.approx(10.0) and publisher["accessMode"] == "Shared"
            assert list(stats["subscriptions"]) == ["sub-0"]
            assert stats["subscriptions"]["sub-0"]["consumers"][0]["msgRateOut"] == pytest.approx(10.0)

            # the traffic triples: the stats keep the last period's mean until the next update
            load.rate = 30.0
            await anyio.sleep(1)
            assert (await get(base + "/t-0/stats"))[1]["msgRateIn"] == pytest.approx(10.0)
            await anyio.sleep(125)
            assert (await get(base + "/t-0/stats"))[1]["msgRateIn"] == pytest.approx(30.0)

            status, agg = await get(base + "/p/partitioned-stats")
            assert status == 200 and set(agg) == TOPIC_STATS_KEYS - {"ownerBroker"} | {"metadata", "partitions"}
            assert agg["metadata"] == {"partitions": 3} and sorted(agg["partitions"]) == parts
            assert agg["msgRateIn"] == pytest.approx(90.0)
            assert agg["msgRateIn"] == pytest.approx(sum(s["msgRateIn"] for s in agg["partitions"].values()))
            assert len(agg["publishers"]) == 1 and agg["publishers"][0]["msgRateIn"] == pytest.approx(90.0)
            status, agg = await get(base + "/p/partitioned-stats?perPartition=false")
            assert agg["partitions"] == {} and agg["msgRateIn"] == pytest.approx(90.0)

            # the broker-stats buffer (snapshot export) carries the same period means
            status, by_ns = await get(obs.url + f"/emulator/brokers/{owner}/admin/v2/broker-stats/topics")
            assert by_ns[NS][rng]["persistent"][plain[0]]["msgRateIn"] == pytest.approx(30.0)

            # Pulsar's errors
            assert await get(base + "/nope/stats") == (404, {"reason": f"Topic persistent://{NS}/nope not found"})
            assert await get(base + "/t-0/partitioned-stats") == (
                404, {"reason": f"Partitioned Topic not found: persistent://{NS}/t-0 has zero partitions"})
            missing = (404, {"reason": "Namespace does not exist"})
            assert await get(obs.url + "/admin/v2/persistent/acme/none") == missing
            # public/default exists in every cluster (Pulsar's initialisation), without topics here
            assert await get(obs.url + "/admin/v2/persistent/public/default") == (200, [])
            assert cluster.system.failures == []


@pytest.mark.asyncio
async def test_clusters_health_ready_and_version():
    async with emulated_cluster(3, seed=42, namespaces={NS: 2}) as cluster:
        async with observe(cluster, metrics_port=0) as obs:
            status, data = await get(obs.url + "/admin/v2/clusters/cluster")
            assert status == 200 and data == {
                "serviceUrl": obs.url, "brokerServiceUrl": "pulsar://broker-1:6650,broker-2:6650,broker-3:6650",
                "brokerClientTlsEnabled": False, "tlsAllowInsecureConnection": False,
                "brokerClientTlsEnabledWithKeyStore": False, "brokerClientTlsTrustStoreType": "JKS",
                "brokerClientTlsKeyStoreType": "JKS", "migrated": False}
            assert await get(obs.url + "/admin/v2/clusters/other") == (404, {"reason": "Cluster does not exist"})
            assert await get(obs.url + "/admin/v2/clusters") == (200, ["cluster"])
            for path in ("/admin/v2/brokers/health", "/admin/v2/brokers/ready",
                         "/emulator/brokers/broker-2:8080/admin/v2/brokers/ready"):
                assert await get(obs.url + path) == (200, b"ok")
            assert await get(obs.url + "/admin/v2/brokers/version") == (200, PULSAR_VERSION.encode())
            cluster.kill_broker("broker-2:8080")
            status, body = await get(obs.url + "/emulator/brokers/broker-2:8080/admin/v2/brokers/health")
            assert status == 404 and "not a live broker" in body["reason"]
            assert await get(obs.url + "/admin/v2/brokers/health") == (200, b"ok")   # the leader answers


@pytest.mark.asyncio
async def test_unload_and_split_through_the_admin_paths_change_ownership_and_are_listed_as_writes():
    async with emulated_cluster(3, seed=43, namespaces={NS: 4}) as cluster:
        async with observe(cluster, metrics_port=0) as obs:
            client = cluster.add_client()
            topics = [f"persistent://{NS}/t-{i}" for i in range(40)]
            client.create_handles(topics)
            await cluster.wait_until(lambda: client.connected_count() == 40)
            bundles = await cluster.namespace_bundles(NS)
            first = bundles.names[0]
            rng = first.rsplit("/", 1)[1]
            before = cluster.owner_of(first)
            other = next(b for b in cluster.live_brokers() if b != before)

            # bundle unload with a destination (Modular: the leader's affinity map)
            status, body = await put(cluster, f"{obs.url}/admin/v2/namespaces/{NS}/{rng}/unload"
                                              f"?destinationBroker=http://{other}")
            assert (status, body) == (204, b"")
            await cluster.wait_until(lambda: client.connected_count() == 40)
            assert cluster.owner_of(first) == other

            # split: the parent's range becomes two children (range_equally_divide), unloaded
            second = bundles.names[1]
            status, _ = await put(cluster, f"{obs.url}/admin/v2/namespaces/{NS}/{second.rsplit('/', 1)[1]}/split"
                                           "?unload=true&splitAlgorithmName=range_equally_divide")
            assert status == 204
            after = await cluster.namespace_bundles(NS)
            assert second not in after.names and len(after.names) == 5
            lo, hi = (int(x, 16) for x in second.rsplit("/", 1)[1].split("_"))
            assert f"{NS}/0x{lo:08x}_0x{(lo + hi) // 2:08x}" in after.names

            # namespace unload: every owned bundle
            await cluster.wait_until(lambda: client.connected_count() == 40)
            status, _ = await put(cluster, f"{obs.url}/admin/v2/namespaces/{NS}/unload")
            assert status == 204
            # an unowned bundle's unload is a no-op (Pulsar's isBundleOwnedByAnyBroker check)
            status, _ = await put(cluster, f"{obs.url}/admin/v2/namespaces/public/default/0x00000000_0x10000000/unload")
            assert status == 204

            writes = [(w.method, w.path.split("/admin/v2/namespaces/")[1], w.status) for w in obs.admin_writes]
            assert writes == [("PUT", f"{NS}/{rng}/unload?destinationBroker=http://{other}", 204),
                              ("PUT", f"{NS}/{second.rsplit('/', 1)[1]}/split?unload=true&splitAlgorithmName="
                                      "range_equally_divide", 204),
                              ("PUT", f"{NS}/unload", 204),
                              ("PUT", "public/default/0x00000000_0x10000000/unload", 204)]
            assert cluster.system.failures == []


@pytest.mark.asyncio
async def test_under_the_extensible_manager_the_lookup_assigns_without_redirect_and_unload_transfers():
    """ExtensibleLoadManagerImpl: any broker assigns through the channel, so the HTTP lookup answers the
    owner at once; an admin unload with a destination transfers the bundle there."""
    conf = ServiceConfig(load_manager_class_name=lm.EXTENSIBLE, load_balancer_load_shedding_strategy=TRANSFER)
    async with emulated_cluster(3, seed=44, conf=conf, namespaces={NS: 4}) as cluster:
        async with observe(cluster, metrics_port=0) as obs:
            status, raw = await put(cluster, obs.url + f"/lookup/v2/topic/persistent/{NS}/t-1", method="GET")
            bundle = (await cluster.namespace_bundles(NS)).find_bundle(f"persistent://{NS}/t-1")
            owner = cluster.ownership()[bundle]
            body = json.loads(raw)
            assert status == 200 and body["brokerUrl"] == f"pulsar://{owner.split(':')[0]}:6650"
            assert cluster.lookup_counts()["redirects"] == 0
            other = next(b for b in cluster.live_brokers() if b != owner)
            status, _ = await put(cluster, f"{obs.url}/admin/v2/namespaces/{NS}/{bundle.rsplit('/', 1)[1]}/unload"
                                           f"?destinationBroker={other}")
            assert status == 204
            await cluster.wait_until(lambda: cluster.ownership().get(bundle) == other, timeout="1m")
            assert cluster.system.failures == []
