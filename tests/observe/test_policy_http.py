"""Pulsar's admin paths for isolation policies, failure domains and anti-affinity groups on the emulator's
HTTP server: a policy set through them changes the placement of later lookups."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import anyio
import pytest

from emulator.observe.attach import observe
from emulator.runtime import run_external
from emulator.testing import emulated_cluster

ISO = "iso/ns"
POLICY = {"namespaces": ["iso/.*"], "primary": ["broker-2"], "secondary": [],
          "auto_failover_policy": {"policy_type": "min_available",
                                   "parameters": {"min_limit": "1", "usage_threshold": "80"}}}


def call(method: str, url: str, body: bytes | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, method=method,
                                 headers={"Content-Type": "application/json"} if body is not None else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


async def http(method: str, url: str, body: bytes | None = None) -> tuple[int, bytes]:
    return await run_external(call, method, url, body)     # a real thread: the virtual clock waits


def owners(cluster, ns: str) -> set[str]:
    return {o for b, o in cluster.ownership().items() if b.rsplit("/", 1)[0] == ns}


@pytest.mark.asyncio
async def test_an_isolation_policy_posted_to_the_admin_path_places_later_lookups():
    async with emulated_cluster(3, seed=6, namespaces={ISO: 4, "public/default": 4}) as cluster:
        async with observe(cluster, metrics_port=0) as obs:
            base = obs.url + "/admin/v2/clusters/cluster/namespaceIsolationPolicies"
            status, body = await http("GET", base)
            assert status == 404 and b"does not exist" in body

            status, _ = await http("POST", base + "/iso-policy", json.dumps(POLICY).encode())
            assert status == 204
            status, body = await http("GET", base)
            assert status == 200 and json.loads(body) == {"iso-policy": POLICY}   # Pulsar's JSON
            status, body = await http("GET", base + "/iso-policy")
            assert json.loads(body) == POLICY
            await cluster.wait_until(lambda: cluster.leader_policies().isolation_policy(ISO) is not None)

            client = cluster.add_client()
            client.create_handles([f"persistent://{ISO}/t-{i}" for i in range(30)]
                                  + [f"persistent://public/default/t-{i}" for i in range(30)])
            await cluster.wait_until(lambda: client.connected_count() == 60)
            assert owners(cluster, ISO) == {"broker-2:8080"}
            assert "broker-2:8080" not in owners(cluster, "public/default")

            status, _ = await http("DELETE", base + "/iso-policy")
            assert status == 204
            status, body = await http("GET", base)
            assert json.loads(body) == {}

            # bad input: Pulsar's 400 for invalid policy data, 412 for another cluster
            bad = dict(POLICY, primary=["broker-["])
            status, body = await http("POST", base + "/p", json.dumps(bad).encode())
            assert status == 400 and "bad regex" in json.loads(body)["reason"]
            bad = dict(POLICY, auto_failover_policy={"policy_type": "max_available", "parameters": {}})
            status, body = await http("POST", base + "/p", json.dumps(bad).encode())
            assert status == 400 and "min_available" in json.loads(body)["reason"]
            status, body = await http("POST", base + "/p", b"{not json")
            assert status == 400
            status, body = await http("POST", obs.url + "/admin/v2/clusters/other/namespaceIsolationPolicies/p",
                                      json.dumps(POLICY).encode())
            assert status == 412 and "Cluster other does not exist" in json.loads(body)["reason"]


@pytest.mark.asyncio
async def test_failure_domains_and_anti_affinity_groups_through_the_admin_paths():
    from emulator.model.config import ServiceConfig

    conf = ServiceConfig(failure_domains_enabled=True)
    async with emulated_cluster(2, seed=4, conf=conf, namespaces={"t/ns1": 1, "t/ns2": 1}) as cluster:
        async with observe(cluster, metrics_port=0) as obs:
            domains = obs.url + "/admin/v2/clusters/cluster/failureDomains"
            assert await http("GET", domains) == (200, b"{}")
            assert (await http("POST", domains + "/domain1", b'{"brokers": ["broker-1:8080"]}'))[0] == 204
            assert (await http("POST", domains + "/domain2", b'{"brokers": ["broker-2:8080"]}'))[0] == 204
            status, body = await http("POST", domains + "/domain3", b'{"brokers": ["broker-2:8080"]}')
            assert status == 409 and "already exists in domain2" in json.loads(body)["reason"]
            status, body = await http("GET", domains)
            assert json.loads(body) == {"domain1": {"brokers": ["broker-1:8080"]},
                                        "domain2": {"brokers": ["broker-2:8080"]}}
            for ns in ("t/ns1", "t/ns2"):
                assert (await http("POST", obs.url + f"/admin/v2/namespaces/{ns}/antiAffinity", b"group"))[0] == 204
            assert await http("GET", obs.url + "/admin/v2/namespaces/t/ns1/antiAffinity") == (200, b"group")
            status, body = await http("POST", obs.url + "/admin/v2/namespaces/t/ns1/antiAffinity", b"  ")
            assert status == 412 and "can't be empty" in json.loads(body)["reason"]
            status, _ = await http("POST", obs.url + "/admin/v2/namespaces/no/such/antiAffinity", b"g")
            assert status == 404
            await cluster.wait_until(lambda: cluster.leader_policies().failure_domain("broker-2:8080") == "domain2"
                                     and cluster.leader_policies().anti_affinity_group("t/ns2") == "group")

            client = cluster.add_client()
            client.create_handles(["persistent://t/ns1/a"])
            await cluster.wait_until(lambda: client.connected_count() == 1)
            client.create_handles(["persistent://t/ns2/a"])
            await cluster.wait_until(lambda: client.connected_count() == 2)
            owner = cluster.ownership()
            assert owner["t/ns1/0x00000000_0xffffffff"] != owner["t/ns2/0x00000000_0xffffffff"]

            assert (await http("DELETE", obs.url + "/admin/v2/namespaces/t/ns1/antiAffinity"))[0] == 204
            assert (await http("GET", obs.url + "/admin/v2/namespaces/t/ns1/antiAffinity"))[0] == 204
            assert (await http("DELETE", domains + "/domain2"))[0] == 200
            assert (await http("DELETE", domains + "/domain2"))[0] == 404
            await anyio.sleep(1)


@pytest.mark.asyncio
async def test_a_fault_in_a_policy_route_is_an_emulator_failure_not_a_quiet_500():
    """A route that raises something other than Pulsar's refusals answers 500 and is counted as the
    emulator's own fault (system.failures: the summary's EMULATOR BUG line and exit 3)."""
    from emulator.observe.policy_http import PolicyRoutes

    async with emulated_cluster(2, seed=3, namespaces={"t/ns": 2}, strict=False) as cluster:
        routes = PolicyRoutes(cluster)

        async def broken(method, body, **args):
            raise KeyError("boom")

        routes.isolation = broken   # type: ignore[method-assign]
        status, _, body = await routes.handle("GET", "/admin/v2/clusters/cluster/namespaceIsolationPolicies", b"")
        assert status == 500 and b"emulator fault: KeyError" in body
        assert [f.actor for f in cluster.system.failures] == ["http:broken"]
