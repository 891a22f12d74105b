"""Isolation policies, failure domains and anti-affinity groups stated in a scenario file and changed by
its events; bad policy input is one line and exit 2 from the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulator.cli import main
from emulator.workload import loader
from tests.workload.harness import observed

MIN = 60.0

SCENARIO = """
[scenario]
name = "isolation"
description = "an isolated namespace, its failover, a policy change and a group spread over domains"
duration = "10m"
seed = 3

[cluster]
brokers = 4

[settings]
failureDomainsEnabled = true

[clients]
connect_over = "5s"

[[namespaces]]
name = "iso/ns"
bundles = 4

[[namespaces]]
name = "public/default"
bundles = 4

[[namespaces]]
name = "grp/a"
bundles = 1
anti_affinity_group = "g"

[[namespaces]]
name = "grp/b"
bundles = 1

[[topics]]
namespace = "iso/ns"
count = 40

[[topics]]
namespace = "public/default"
count = 40

[[isolation_policies]]
name = "iso"
namespaces = ["iso/.*"]
primary = ["broker-1"]
secondary = ["broker-2"]
auto_failover_policy = { policy_type = "min_available", parameters = { min_limit = "1", usage_threshold = "80" } }

[[failure_domains]]
name = "rack-a"
brokers = ["broker-3", "broker-4:8080"]

[[failure_domains]]
name = "rack-b"
brokers = ["broker-1"]

[[events]]
at = "2m"
do = "set_isolation_policy"
name = "iso"
namespaces = ["iso/.*"]
primary = ["broker-4"]

[[events]]
at = "4m"
do = "set_anti_affinity_group"
namespace = "grp/b"
group = "g"

[[events]]
at = "5m"
do = "set_failure_domain"
name = "rack-c"
brokers = ["broker-2"]

[[events]]
at = "6m"
do = "delete_isolation_policy"
name = "iso"

[[events]]
at = "7m"
do = "delete_failure_domain"
name = "rack-c"

[[events]]
at = "8m"
do = "set_anti_affinity_group"
namespace = "grp/b"
"""


def owners(cluster, ns: str) -> set[str]:
    return {o for b, o in cluster.ownership().items() if b.rsplit("/", 1)[0] == ns}


@pytest.mark.asyncio
async def test_scenario_policies_and_policy_events_steer_placement():
    scenario = loader.loads(SCENARIO, "isolation.toml")
    async with observed(scenario) as run:
        c = run.cluster
        await run.sleep_until(1 * MIN)
        stored = json.loads(c.store.peek("/admin/clusters/cluster/namespaceIsolationPolicies"))
        assert stored["iso"]["primary"] == ["broker-1"]
        assert json.loads(c.store.peek("/admin/clusters/cluster/failureDomain/rack-a")) == {
            "brokers": ["broker-3:8080", "broker-4:8080"]}
        assert owners(c, "iso/ns") == {"broker-1:8080"}
        assert "broker-1:8080" not in owners(c, "public/default")

        # the event replaces the policy and unloads the namespace: it moves to broker-4
        await run.sleep_until(3 * MIN)
        assert owners(c, "iso/ns") == {"broker-4:8080"}

        await run.sleep_until(4.5 * MIN)
        local = json.loads(c.store.peek("/admin/local-policies/grp/b"))
        assert local["namespaceAntiAffinityGroup"] == "g" and local["bundles"]["numBundles"] == 1
        await run.sleep_until(5.5 * MIN)
        assert json.loads(c.store.peek("/admin/clusters/cluster/failureDomain/rack-c")) == {
            "brokers": ["broker-2:8080"]}
        await run.sleep_until(6.5 * MIN)
        assert json.loads(c.store.peek("/admin/clusters/cluster/namespaceIsolationPolicies")) == {}
        await run.sleep_until(7.5 * MIN)
        assert c.store.peek("/admin/clusters/cluster/failureDomain/rack-c") is None
        await run.sleep_until(8.5 * MIN)
        assert "namespaceAntiAffinityGroup" not in json.loads(c.store.peek("/admin/local-policies/grp/b"))
        assert run.workload.errors == []
        leader = c._leader_actor()
        assert leader._policies.failure_domain("broker-1:8080") == "rack-b"


@pytest.mark.asyncio
async def test_a_refused_policy_event_is_reported_and_the_run_goes_on():
    text = SCENARIO.replace('name = "rack-c"\nbrokers = ["broker-2"]', 'name = "rack-c"\nbrokers = ["broker-3"]')
    scenario = loader.loads(text, "isolation.toml")
    async with observed(scenario) as run:
        await run.sleep_until(5.5 * MIN)
        assert run.workload.errors == ["events[2] (set_failure_domain): [broker-3:8080] already exists in rack-a"]


HEAD = "[scenario]\nname = 'x'\ndescription = 'd'\nduration = '10m'\n[[namespaces]]\nname = 'a/b'\n"
POLICY = "[[isolation_policies]]\nname = 'p'\nnamespaces = ['a/.*']\n"

BAD = {
    "bad_regex": (POLICY + "primary = ['broker-[']\n",
                  ["isolation_policies[0].primary", "broker-[", "bad regex"]),
    "bad_namespace_regex": ("[[isolation_policies]]\nname = 'p'\nnamespaces = ['a/(']\nprimary = ['b']\n",
                            ["isolation_policies[0].namespaces", "bad regex"]),
    "unknown_policy_type": (POLICY + "primary = ['b']\nauto_failover_policy = { policy_type = 'max_available' }\n",
                            ["isolation_policies[0].auto_failover_policy.policy_type", "max_available",
                             "min_available"]),
    "min_limit_not_int": (POLICY + "primary = ['b']\n"
                          "auto_failover_policy = { parameters = { min_limit = 'one' } }\n",
                          ["auto_failover_policy.parameters.min_limit", "one", "integer"]),
    "no_primary": (POLICY + "primary = []\n", ["isolation_policies[0].primary", "empty"]),
    "unknown_key": (POLICY + "primary = ['b']\nprimaries = ['c']\n",
                    ["isolation_policies[0].primaries", "unknown key"]),
    "twice": (POLICY + "primary = ['b']\n" + POLICY + "primary = ['c']\n",
              ["isolation_policies[1].name", "declared twice"]),
    "unknown_broker_in_domain": ("[[failure_domains]]\nname = 'd'\nbrokers = ['broker-9']\n",
                                 ["failure_domains[0].brokers[0]", "broker-9", "no such broker"]),
    "broker_in_two_domains": ("[[failure_domains]]\nname = 'd'\nbrokers = ['broker-1']\n"
                              "[[failure_domains]]\nname = 'e'\nbrokers = ['broker-1:8080']\n",
                              ["failure_domains[1].brokers[0]", "already in failure domain 'd'"]),
    "event_unknown_broker": ("[[events]]\nat = '1m'\ndo = 'set_failure_domain'\nname = 'd'\nbrokers = ['b-1']\n",
                             ["events[0].brokers[0]", "b-1"]),
    "event_bad_regex": ("[[events]]\nat = '1m'\ndo = 'set_isolation_policy'\nname = 'p'\n"
                        "namespaces = ['a/.*']\nprimary = ['(']\n", ["events[0].primary", "bad regex"]),
    "event_unknown_namespace": ("[[events]]\nat = '1m'\ndo = 'set_anti_affinity_group'\nnamespace = 'x/y'\n"
                                "group = 'g'\n", ["events[0].namespace", "x/y", "not declared"]),
    "event_blank_group": ("[[events]]\nat = '1m'\ndo = 'set_anti_affinity_group'\nnamespace = 'a/b'\n"
                          "group = ' '\n", ["events[0].group", "blank"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_policy_input_is_one_line_and_exit_2(tmp_path: Path, capsys, case: str):
    body, needles = BAD[case]
    path = tmp_path / "s.toml"
    path.write_text(HEAD + body)
    code = main(["run", str(path)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for needle in [str(path)] + needles:
        assert needle in lines[0], (needle, lines[0])
