"""Isolation policies, failure domains and anti-affinity groups in a running cluster (virtual clock,
invariants on): set through the admin operations, stored at Pulsar's paths, applied by the leader's
selection pipeline and by a follower's local decision.

Vectors: ModularLoadManagerImplTest.testNamespaceIsolationPoliciesForPrimaryAndSecondaryBrokers
(primaries while enough are up, secondaries below min_limit, shared brokers never),
AntiAffinityNamespaceGroupTest.testBrokerSelectionForAntiAffinityGroup (two namespaces of a group, one
broker per domain, on different brokers) and testAntiAffinityNamespaceFilteringWithDomain (four
brokers in two domains: the group alternates domains, then brokers).
"""

from __future__ import annotations

import anyio
import msgspec
import pytest

from emulator.cluster import paths
from emulator.cluster.policy_admin import PolicyAdminError
from emulator.model.config import ServiceConfig
from emulator.model.policies import AutoFailoverPolicyData, NamespaceIsolationPolicy
from emulator.testing import emulated_cluster

ISO = "iso/ns"
SHARED = "public/default"


def topics(n: int, ns: str, prefix: str = "t") -> list[str]:
    return [f"persistent://{ns}/{prefix}-{i}" for i in range(n)]


def policy(primary: list[str], secondary: list[str], min_limit: int) -> NamespaceIsolationPolicy:
    return NamespaceIsolationPolicy(
        namespaces=["iso/.*"], primary=primary, secondary=secondary,
        auto_failover_policy=AutoFailoverPolicyData(parameters={"min_limit": str(min_limit),
                                                                "usage_threshold": "80"}))


def owners_of(cluster, ns: str) -> dict[str, str]:
    return {b: o for b, o in cluster.ownership().items() if b.rsplit("/", 1)[0] == ns}


def assigned(cluster, ns: str) -> list[tuple[float, str]]:
    return [(e["t"], e["broker"]) for e in cluster.decision_log.of("assignment")
            if e["bundle"].rsplit("/", 1)[0] == ns]


async def policies_reached_the_leader(cluster) -> None:
    await cluster.wait_until(lambda: cluster._leader_actor() is not None
                             and cluster._leader_actor()._policies.isolation_policy(ISO) is not None,
                             what="the leader's policy view")


@pytest.mark.asyncio
async def test_isolated_bundles_on_primaries_then_secondaries_after_failover_never_elsewhere():
    """primary = broker-1, broker-2; secondary = broker-3; min_limit = 2; broker-4 shared."""
    async with emulated_cluster(4, seed=5, namespaces={ISO: 8, SHARED: 8}) as cluster:
        await cluster.policies.set_isolation_policy("iso-policy", policy(["broker-[12]"], ["broker-3"], 2))
        stored = msgspec.json.decode(cluster.store.peek(paths.isolation_policies_path("cluster")))
        assert stored["iso-policy"]["auto_failover_policy"]["parameters"]["min_limit"] == "2"
        await policies_reached_the_leader(cluster)

        client = cluster.add_client()
        client.create_handles(topics(80, ISO) + topics(80, SHARED))
        await cluster.wait_until(lambda: client.connected_count() == 160)
        assert set(owners_of(cluster, ISO).values()) <= {"broker-1:8080", "broker-2:8080"}
        assert len(owners_of(cluster, ISO)) == 8
        # primaries of a policy are not shared: other namespaces go to broker-3 and broker-4 only
        assert set(owners_of(cluster, SHARED).values()) <= {"broker-3:8080", "broker-4:8080"}

        # one primary left < min_limit 2: the secondary joins, broker-4 never
        before = len(assigned(cluster, ISO))
        cluster.kill_broker("broker-1:8080")
        await cluster.wait_until(lambda: "broker-1:8080" not in cluster.ownership().values()
                                 and client.connected_count() == 160, timeout=600)
        after = [b for _, b in assigned(cluster, ISO)[before:]]
        assert after and set(after) <= {"broker-2:8080", "broker-3:8080"}
        assert "broker-3:8080" in after, after
        assert set(owners_of(cluster, ISO).values()) <= {"broker-2:8080", "broker-3:8080"}
        assert all(b in {"broker-1:8080", "broker-2:8080", "broker-3:8080"} for _, b in assigned(cluster, ISO))


@pytest.mark.asyncio
async def test_min_limit_1_keeps_the_namespace_on_its_only_primary_and_deleting_the_policy_frees_it():
    async with emulated_cluster(3, seed=8, namespaces={ISO: 4}) as cluster:
        admin = cluster.policies
        await admin.set_isolation_policy("p", policy(["broker-2"], ["broker-3"], 1))
        await policies_reached_the_leader(cluster)
        client = cluster.add_client()
        client.create_handles(topics(40, ISO))
        await cluster.wait_until(lambda: client.connected_count() == 40)
        assert set(owners_of(cluster, ISO).values()) == {"broker-2:8080"}
        await anyio.sleep(60)   # reports written: the leader forgets its preallocations

        await admin.delete_isolation_policy("p")
        assert await admin.get_isolation_policies() == {}
        await cluster.wait_until(lambda: cluster._leader_actor()._policies.isolation_policy(ISO) is None)
        await cluster.unload_namespace(ISO)
        await cluster.wait_until(lambda: client.connected_count() == 40)
        await anyio.sleep(5)
        assert len(set(owners_of(cluster, ISO).values())) > 1   # free to spread again


@pytest.mark.asyncio
async def test_setting_a_policy_unloads_matching_namespaces_and_later_lookups_follow_it():
    """setNamespaceIsolationPolicy's default unloadBundles=true: the namespace moves under the policy."""
    async with emulated_cluster(3, seed=11, namespaces={ISO: 4, SHARED: 4}) as cluster:
        client = cluster.add_client()
        client.create_handles(topics(40, ISO) + topics(40, SHARED))
        await cluster.wait_until(lambda: client.connected_count() == 80)
        assert len(set(owners_of(cluster, ISO).values())) > 1
        shared_before = owners_of(cluster, SHARED)
        await anyio.sleep(60)   # reports written: the leader forgets its preallocations

        unloaded = await cluster.policies.set_isolation_policy("p", policy(["broker-3"], [], 1))
        assert unloaded == [ISO]
        await cluster.wait_until(lambda: client.connected_count() == 80
                                 and set(owners_of(cluster, ISO).values()) == {"broker-3:8080"}, timeout=120)
        # the unload touched only the matching namespace
        assert set(owners_of(cluster, SHARED)) == set(shared_before)


@pytest.mark.asyncio
async def test_a_followers_local_decision_applies_the_policies():
    """No leader reachable: NamespaceService decides on the broker the lookup reached, with the same
    policies (its own ModularLoadManagerImpl and caches)."""
    async with emulated_cluster(3, seed=3, namespaces={ISO: 4}) as cluster:
        await cluster.policies.set_isolation_policy("p", policy(["broker-3"], [], 1), unload=False)
        leader = cluster.leader()
        follower = next(cluster.brokers[b] for b in cluster.live_brokers() if b != leader)
        bundles = (await cluster.namespace_bundles(ISO)).names
        chosen = {await follower.load_manager._select_locally(b, False) for b in bundles}
        assert chosen == {"broker-3:8080"}
        assert cluster.decision_log.of("assignment")[-1]["local"] is True
        # a change reaches the follower's view through its watch
        await cluster.policies.set_isolation_policy("p", policy(["broker-1"], [], 1), unload=False)
        await anyio.sleep(1)
        follower.load_manager._local_lm = None
        assert {await follower.load_manager._select_locally(b, False) for b in bundles} == {"broker-1:8080"}


async def _place_group(seed: int, domains_enabled: bool) -> list[str]:
    """Four brokers, domain-0 = broker-1, broker-2 and domain-1 = broker-3, broker-4; eight namespaces
    of one anti-affinity group placed one after the other. Returns each namespace's broker."""
    conf = ServiceConfig(failure_domains_enabled=domains_enabled)
    names = [f"grp/ns{i}" for i in range(8)]
    async with emulated_cluster(4, seed=seed, conf=conf, namespaces={}) as cluster:
        admin = cluster.policies
        await admin.set_failure_domain("domain-0", ["broker-1:8080", "broker-2:8080"])
        await admin.set_failure_domain("domain-1", ["broker-3:8080", "broker-4:8080"])
        for ns in names:
            await cluster.create_namespace(ns, 1)
            await admin.set_anti_affinity_group(ns, "my-antiaffinity")
        await anyio.sleep(1)
        client = cluster.add_client()
        placed = []
        for i, ns in enumerate(names):
            client.create_handles(topics(1, ns))
            await cluster.wait_until(lambda i=i: client.connected_count() == i + 1)
            placed.append(cluster.ownership()[f"{ns}/0x00000000_0xffffffff"])
        return placed


DOMAIN = {"broker-1:8080": 0, "broker-2:8080": 0, "broker-3:8080": 1, "broker-4:8080": 1}


@pytest.mark.asyncio
@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_failure_domains_spread_an_anti_affinity_group_across_domains(seed):
    placed = await _place_group(seed, domains_enabled=True)
    for k in range(1, len(placed) + 1):
        counts = [sum(DOMAIN[b] == d for b in placed[:k]) for d in (0, 1)]
        assert abs(counts[0] - counts[1]) <= 1, (k, placed)
    # ...and over brokers: the first four on four brokers, the next four again one per broker
    assert len(set(placed[:4])) == 4 and len(set(placed[4:])) == 4, placed


@pytest.mark.asyncio
async def test_without_failure_domains_enabled_the_domains_are_ignored():
    """The same cluster with failureDomainsEnabled=false (Pulsar's default): brokers are spread, domains
    are not (refreshBrokerToFailureDomainMap leaves the map empty); seed 1 puts ns0 and ns1 together."""
    placed = await _place_group(1, domains_enabled=False)
    assert len(set(placed[:4])) == 4
    assert any(abs(sum(DOMAIN[b] == 0 for b in placed[:k]) - sum(DOMAIN[b] == 1 for b in placed[:k])) > 1
               for k in range(1, 9)), placed


@pytest.mark.asyncio
async def test_two_domains_of_one_broker_each_keep_a_group_apart():
    """AntiAffinityNamespaceGroupTest.testBrokerSelectionForAntiAffinityGroup."""
    conf = ServiceConfig(failure_domains_enabled=True)
    async with emulated_cluster(2, seed=4, conf=conf, namespaces={}) as cluster:
        admin = cluster.policies
        await admin.set_failure_domain("domain1", ["broker-1:8080"])
        await admin.set_failure_domain("domain2", ["broker-2:8080"])
        for ns in ("tenant/ns1", "tenant/ns2"):
            await cluster.create_namespace(ns, 1)
            await admin.set_anti_affinity_group(ns, "group")
        await cluster.wait_until(lambda: dict(cluster._leader_actor()._policies.failure_domains) == {
            "broker-1:8080": "domain1", "broker-2:8080": "domain2"})
        client = cluster.add_client()
        client.create_handles(topics(1, "tenant/ns1"))
        await cluster.wait_until(lambda: client.connected_count() == 1)
        client.create_handles(topics(1, "tenant/ns2"))
        await cluster.wait_until(lambda: client.connected_count() == 2)
        owners = cluster.ownership()
        assert owners["tenant/ns1/0x00000000_0xffffffff"] != owners["tenant/ns2/0x00000000_0xffffffff"]


@pytest.mark.asyncio
async def test_admin_operations_answer_as_pulsar():
    async with emulated_cluster(2, seed=1, namespaces={SHARED: 1}) as cluster:
        admin = cluster.policies
        with pytest.raises(PolicyAdminError) as e:
            await admin.get_isolation_policies()
        assert e.value.status == 404
        with pytest.raises(PolicyAdminError) as e:
            await admin.set_isolation_policy("p", {"namespaces": ["a/.*"], "primary": ["b["]})
        assert e.value.status == 400 and "bad regex" in e.value.reason
        with pytest.raises(PolicyAdminError) as e:
            await admin.set_isolation_policy("p", {"namespaces": ["a/.*"], "primary": ["b"],
                                                   "auto_failover_policy": {"policy_type": "max_available",
                                                                            "parameters": {"min_limit": "1"}}})
        assert e.value.status == 400 and "min_available" in e.value.reason
        await admin.set_failure_domain("d1", ["broker-1:8080"])
        with pytest.raises(PolicyAdminError) as e:
            await admin.set_failure_domain("d2", ["broker-2:8080", "broker-1:8080"])
        assert e.value.status == 409 and "already exists in d1" in e.value.reason
        with pytest.raises(PolicyAdminError) as e:
            await admin.delete_failure_domain("nope")
        assert e.value.status == 404
        with pytest.raises(PolicyAdminError) as e:
            await admin.set_anti_affinity_group(SHARED, "  ")
        assert e.value.status == 412
        with pytest.raises(PolicyAdminError) as e:
            await admin.set_anti_affinity_group("no/such", "g")
        assert e.value.status == 404
        await admin.set_anti_affinity_group(SHARED, "g")
        assert await admin.get_anti_affinity_group(SHARED) == "g"
        # the group sits in the namespace's local policies next to its bundles, as Pulsar stores it
        stored = msgspec.json.decode(cluster.store.peek(paths.local_policies_path(SHARED)))
        assert stored["namespaceAntiAffinityGroup"] == "g" and stored["bundles"]["numBundles"] == 1
        await admin.set_anti_affinity_group(SHARED, None)
        assert await admin.get_anti_affinity_group(SHARED) is None


@pytest.mark.asyncio
async def test_a_watch_answers_with_the_children_so_an_absent_policy_costs_no_read():
    """Watch is ZooKeeper's getChildren(path, watch): without /admin/clusters the caches read nothing
    of the cluster policies until a Created notification says there is something."""
    async with emulated_cluster(2, seed=1, namespaces={SHARED: 1}) as cluster:
        assert await cluster._admin.watch("/admin") == ["local-policies"]
        cache = cluster._leader_actor().policy_cache
        assert not cache.stale and cache.view.isolation_policies == ()
        await cluster.policies.set_failure_domain("d", ["broker-1:8080"])
        await cluster.policies.set_isolation_policy("p", policy(["broker-2"], [], 1), unload=False)
        assert await cluster._admin.watch("/admin") == ["clusters", "local-policies"]
        await cluster.wait_until(lambda: cluster.leader_policies().isolation_policy(ISO) is not None)
