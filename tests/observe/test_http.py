"""The HTTP server: /metrics and the read-only admin views, answered on the loop with the clock frozen."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import anyio
import msgspec
import pytest

from emulator.model.loaddata import LocalBrokerData
from emulator.observe.attach import observe
from emulator.observe.http import ObserveServer
from emulator.observe.topics_http import PULSAR_VERSION
from emulator.observe.metrics import ClusterMetrics
from emulator.observe.monitor import broker_rows, format_broker_table, monitor
from emulator.runtime import run_external
from emulator.testing import emulated_cluster

NS = "public/default"
LOCAL_BROKER_DATA_KEYS = {
    "webServiceUrl", "webServiceUrlTls", "pulsarServiceUrl", "pulsarServiceUrlTls", "persistentTopicsEnabled",
    "nonPersistentTopicsEnabled", "cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut", "msgRateIn",
    "msgRateOut", "msgThroughputIn", "msgThroughputOut", "numTopics", "numBundles", "numConsumers", "numProducers",
    "bundles", "lastBundleGains", "lastBundleLosses", "lastStats", "lastUpdate", "brokerVersionString",
    "loadManagerClassName", "startTimestamp", "protocols", "advertisedListeners", "loadReportType",
    "bundleStats", "maxResourceUsage"}
"""LocalBrokerData's fields and Jackson's getter-derived keys (getBundleStats, getMaxResourceUsage,
getLoadReportType), as Pulsar 3.x serves GET /admin/v2/broker-stats/load-report."""


def get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.headers["Content-Type"], resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read()


def post(url: str) -> int:
    try:
        urllib.request.urlopen(urllib.request.Request(url, data=b"{}", method="POST"), timeout=10)
    except urllib.error.HTTPError as e:
        return e.code
    return 200


def get_no_redirect(url: str) -> tuple[int, dict[str, str], bytes]:
    class Stay(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None
    try:
        with urllib.request.build_opener(Stay).open(url, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


async def fetch(url: str) -> tuple[int, str, bytes]:
    return await run_external(get, url)     # a real thread: the virtual clock waits for it


@pytest.mark.asyncio
async def test_metrics_and_admin_views_show_the_clusters_state():
    async with emulated_cluster(3, seed=21, namespaces={NS: 4}) as cluster:
        async with observe(cluster, metrics_port=0) as obs:
            assert obs.url.startswith("http://127.0.0.1:")
            client = cluster.add_client()
            client.create_handles([f"persistent://{NS}/t-{i}" for i in range(20)])
            await cluster.wait_until(lambda: client.connected_count() == 20)
            await anyio.sleep(30)
            base = obs.url

            status, ctype, body = await fetch(base + "/metrics")
            assert status == 200 and ctype.startswith("text/plain")
            assert body == obs.metrics.exposition()   # nothing moved while the request was served
            for broker in cluster.live_brokers():
                assert f'pulsar_lb_cpu_usage{{broker="{broker}",cluster="cluster"'.encode() in body

            status, _, body = await fetch(base + "/admin/v2/brokers/leaderBroker")
            assert status == 200 and json.loads(body)["brokerId"] == cluster.leader()
            for path in ("/admin/v2/brokers", "/admin/v2/brokers/cluster"):
                status, _, body = await fetch(base + path)
                assert json.loads(body) == cluster.live_brokers()
            status, _, body = await fetch(base + "/admin/v2/brokers/elsewhere")
            assert status == 404 and "Cluster elsewhere does not exist" in json.loads(body)["reason"]

            broker = "broker-2:8080"
            for path in (f"/admin/v2/broker-stats/load-report?broker={broker}",
                         f"/admin/v2/broker-stats/load-report/{broker}"):
                status, _, body = await fetch(base + path)
                report = msgspec.json.decode(body, type=LocalBrokerData)
                mine = cluster.brokers[broker].local_data
                assert report == msgspec.structs.replace(mine, broker_version_string=PULSAR_VERSION)
                assert b'"bandwidthIn":{"usage"' in body and b'"msgRateIn"' in body   # Pulsar's JSON
                doc = json.loads(body)   # every key Jackson writes for a LocalBrokerData (getters too)
                assert set(doc) == LOCAL_BROKER_DATA_KEYS
                assert doc["bundleStats"] == doc["lastStats"]
                assert doc["maxResourceUsage"] == mine.max_resource_usage() > 0
                assert doc["brokerVersionString"] == PULSAR_VERSION and mine.broker_version_string == ""
            status, _, body = await fetch(base + "/admin/v2/broker-stats/load-report/nobody:8080")
            assert status == 404 and "not a live broker" in json.loads(body)["reason"]

            status, _, body = await fetch(base + "/admin/v2/namespaces/public/default/bundles")
            assert json.loads(body) == {"boundaries": ["0x00000000", "0x40000000", "0x80000000", "0xc0000000",
                                                       "0xffffffff"], "numBundles": 4}
            status, _, body = await fetch(base + "/admin/v2/namespaces/public/nothing/bundles")
            assert status == 404

            owners = cluster.ownership()
            status, _, body = await fetch(base + f"/admin/v2/brokers/cluster/{broker}/ownedNamespaces")
            owned = json.loads(body)
            assert set(owned) == {b for b, o in owners.items() if o == broker}
            assert all(v == {"broker_assignment": "shared", "is_controlled": False, "is_active": True}
                       for v in owned.values())
            status, _, body = await fetch(base + "/emulator/ownership?namespace=public/default")
            assert json.loads(body) == dict(sorted(owners.items()))

            nb = await cluster.namespace_bundles(NS)
            topic = f"persistent://{NS}/t-7"
            status, _, body = await fetch(base + "/lookup/v2/topic/persistent/public/default/t-7")
            owner = owners[nb.find_bundle(topic)]
            assert json.loads(body)["brokerUrl"] == f"pulsar://{owner.split(':')[0]}:6650"
            assert json.loads(body)["httpUrl"] == f"http://{owner}"

            status, _, body = await fetch(base + "/emulator/status")
            st = json.loads(body)
            assert st["t"] == cluster.system.clock.now() and st["leader"] == cluster.leader()

            status, _, body = await fetch(base + "/emulator/metadata?path=/loadbalance/leader")
            assert body == cluster.store.peek("/loadbalance/leader")
            status, _, body = await fetch(base + "/emulator/metadata/children?path=/loadbalance/brokers")
            assert json.loads(body) == cluster.store.peek_children("/loadbalance/brokers")
            status, _, _ = await fetch(base + "/emulator/metadata?path=/nowhere")
            assert status == 404
            status, _, body = await fetch(base + "/emulator/metadata?path=relative")
            assert status == 400 and "absolute" in json.loads(body)["reason"]

            status, _, body = await fetch(base + "/no/such/view")
            assert status == 404
            assert await run_external(post, base + "/metrics") == 405

            # the monitor reads the same nodes through the views
            text = await run_external(monitor, base)
            assert text == format_broker_table(broker_rows(cluster))
            status, _, body = await fetch(base + "/emulator/monitor")
            assert body.decode() == text + "\n"


@pytest.mark.asyncio
async def test_http_lookup_assigns_an_unowned_bundle_through_pulsars_redirects():
    """TopicLookupBase: a follower answers 307 to the leader's lookup URL (authoritative=false); the
    leader selects an owner and answers 307 to it with authoritative=true (or Connect if it chose
    itself); the owner acquires the bundle and answers LookupData. Through the emulated lookup path:
    its counters move."""
    async with emulated_cluster(3, seed=22, namespaces={NS: 4}) as cluster:
        async with observe(cluster, metrics_port=0) as obs:
            path = "/lookup/v2/topic/persistent/public/default/unowned"
            leader = cluster.leader()
            follower = next(b for b in cluster.live_brokers() if b != leader)
            assert cluster.ownership() == {}
            status, headers, body = await run_external(get_no_redirect,
                                                       f"{obs.url}/emulator/brokers/{follower}{path}")
            assert status == 307 and body == b""
            assert headers["Location"] == f"{obs.url}/emulator/brokers/{leader}{path}?authoritative=false"
            assert cluster.ownership() == {}                      # a redirect acquires nothing
            status, _, body = await fetch(headers["Location"])   # urllib follows the next 307, if any
            bundle = (await cluster.namespace_bundles(NS)).find_bundle("persistent://public/default/unowned")
            owner = cluster.ownership()[bundle]
            assert status == 200 and json.loads(body) == {
                "brokerUrl": f"pulsar://{owner.split(':')[0]}:6650", "httpUrl": f"http://{owner}",
                "nativeUrl": f"pulsar://{owner.split(':')[0]}:6650", "brokerUrlSsl": ""}
            counts = cluster.lookup_counts()
            assert counts["redirects"] == (1 if owner == leader else 2)
            assert counts["lookups"] == counts["redirects"] + 1
            status, _, body = await fetch(obs.url + path)          # owned now: answered with the owner
            assert status == 200 and json.loads(body)["httpUrl"] == f"http://{owner}"

            status, _, body = await fetch(obs.url + "/lookup/v2/topic/persistent/public/nothing/t")
            assert status == 404 and json.loads(body) == {"reason": "Policies not found for public/nothing namespace"}


@pytest.mark.asyncio
async def test_server_arguments_are_checked_and_a_stopped_cluster_answers_503():
    async with emulated_cluster(2, seed=23, namespaces={NS: 2}) as cluster:
        metrics = ClusterMetrics(cluster)
        with pytest.raises(ValueError, match="port = 70000"):
            ObserveServer(cluster, metrics, port=70000)
        with pytest.raises(ValueError, match="host = ''"):
            ObserveServer(cluster, metrics, host="")
        server = ObserveServer(cluster, metrics, port=0)
        url = server.start()
        assert (await fetch(url + "/metrics"))[0] == 200
        server._stopping = True                       # as during shutdown: no loop call any more
        status, _, body = await fetch(url + "/metrics")
        assert status == 503 and "not running" in json.loads(body)["reason"]
        server.stop()


def test_monitor_rejects_a_bad_url_and_says_so_when_nobody_listens():
    from emulator.observe.monitor import MonitorError

    with pytest.raises(ValueError, match="url = 'localhost:1'"):
        monitor("localhost:1")
    with pytest.raises(MonitorError, match="cannot read http://127.0.0.1:1"):
        monitor("http://127.0.0.1:1", timeout=2)
