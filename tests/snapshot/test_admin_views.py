"""The admin paths `snapshot export` reads, as the emulator's HTTP server answers them (Pulsar's JSON)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import anyio
import pytest

from emulator.cluster.messages import HandleKind
from emulator.observe.attach import observe
from emulator.runtime import run_external
from emulator.testing import emulated_cluster

NS = "public/default"


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


async def fetch(url: str) -> tuple[int, object]:
    status, body = await run_external(get, url)
    return status, json.loads(body)


@pytest.mark.asyncio
async def test_tenants_namespaces_policies_topic_stats_and_cluster_policies():
    async with emulated_cluster(3, seed=31, namespaces={NS: 4, "acme/a": 2}) as cluster:
        async with observe(cluster, metrics_port=0) as obs:
            client = cluster.add_client()
            topics = [f"persistent://{NS}/t-{i}" for i in range(12)]
            client.create_handles(topics)                 # a producer and a consumer each (FlatLoad)
            client.create_handles(topics, HandleKind.CONSUMER)
            await cluster.wait_until(lambda: client.connected_count() == 24)
            base = obs.url
            b = cluster.live_brokers()[0]
            status, stats = await fetch(f"{base}/admin/v2/broker-stats/topics?broker={b}")
            # Pulsar's rates are the last stats period's: 0 for topics loaded since the last update
            assert all(s["msgRateIn"] == 0.0 for bundles in stats.values() for domains in bundles.values()
                       for s in domains["persistent"].values())
            await anyio.sleep(125)    # two stats updates (statsUpdateFrequencyInSecs = 60) later

            assert await fetch(base + "/admin/v2/tenants") == (200, ["acme", "public"])
            assert await fetch(base + "/admin/v2/namespaces/public") == (200, ["public/default"])
            status, body = await fetch(base + "/admin/v2/namespaces/nobody")
            assert status == 404 and body["reason"] == "Tenant does not exist"
            status, policies = await fetch(base + "/admin/v2/namespaces/acme/a")
            assert policies["bundles"] == {"boundaries": ["0x00000000", "0x80000000", "0xffffffff"], "numBundles": 2}
            assert policies["replication_clusters"] == ["cluster"] and policies["deleted"] is False
            assert (await fetch(base + "/admin/v2/namespaces/acme/none"))[0] == 404

            owners = cluster.ownership()
            seen: dict[str, str] = {}
            for b in cluster.live_brokers():
                for url in (f"{base}/admin/v2/broker-stats/topics?broker={b}",
                            f"{base}/emulator/brokers/{b}/admin/v2/broker-stats/topics"):
                    status, stats = await fetch(url)
                    assert status == 200
                for ns, bundles in stats.items():
                    for rng, domains in bundles.items():
                        assert owners[f"{ns}/{rng}"] == b                  # only the broker's own bundles
                        for topic, s in domains["persistent"].items():
                            seen[topic] = b
                            assert s["producerCount"] == 1 and len(s["publishers"]) == 1
                            assert list(s["subscriptions"]) == ["sub-0"]
                            assert s["msgRateOut"] == s["msgRateIn"] > 0
                            assert s["averageMsgSize"] == pytest.approx(s["msgThroughputIn"] / s["msgRateIn"])
                # the per-broker prefix answers as that broker: its load report, not the leader's
                status, report = await fetch(f"{base}/emulator/brokers/{b}/admin/v2/broker-stats/load-report")
                assert report["webServiceUrl"] == f"http://{b}"
            assert sorted(seen) == sorted(topics)

            status, body = await fetch(base + "/admin/v2/clusters/cluster/namespaceIsolationPolicies")
            assert status == 404 and body["reason"] == "NamespaceIsolationPolicies for cluster cluster does not exist"
            assert await fetch(base + "/admin/v2/clusters/cluster/failureDomains") == (200, {})
            status, body = await fetch(base + "/admin/v2/clusters/other/failureDomains")
            assert status == 404 and body["reason"].startswith("Cluster other does not exist.")

            cluster.kill_broker("broker-3:8080")
            status, body = await fetch(base + "/emulator/brokers/broker-3:8080/admin/v2/tenants")
            assert status == 404 and "not a live broker" in body["reason"]
