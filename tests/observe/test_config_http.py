"""Pulsar's dynamic-configuration admin paths on the emulator's HTTP server (BrokersBase): the values an
operator sets, Pulsar's 412 refusals, the runtime view, and the /admin/configuration node behind them."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from emulator.model.config import LOAD_MANAGER_CLASSES
from emulator.observe.attach import observe
from emulator.runtime import run_external
from emulator.testing import emulated_cluster

SIMPLE = "org.apache.pulsar.broker.loadbalance.impl.SimpleLoadManagerImpl"


def call(method: str, url: str) -> tuple[int, bytes]:
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


async def http(method: str, url: str) -> tuple[int, bytes]:
    return await run_external(call, method, url)     # a real thread: the virtual clock waits


@pytest.mark.asyncio
async def test_update_dynamic_config_sets_values_and_the_metadata_node():
    async with emulated_cluster(2, seed=3) as cluster:
        async with observe(cluster, metrics_port=0) as obs:
            base = obs.url + "/admin/v2/brokers/configuration"
            status, body = await http("GET", base + "/values")
            assert (status, json.loads(body)) == (200, {})           # nothing set dynamically yet
            assert cluster.store.peek("/admin/configuration") is None

            status, body = await http("POST", base + "/loadBalancerSheddingEnabled/false")
            assert (status, body) == (200, b"")
            status, body = await http("POST", base + "/loadBalancerBrokerOverloadedThresholdPercentage/70")
            assert status == 200
            status, body = await http("POST", base + "/loadManagerClassName/" + SIMPLE)
            assert status == 200

            expected = {"loadBalancerSheddingEnabled": "false",
                        "loadBalancerBrokerOverloadedThresholdPercentage": "70",
                        "loadManagerClassName": SIMPLE}
            status, body = await http("GET", base + "/values")
            assert (status, json.loads(body)) == (200, expected)
            # the node Pulsar keeps them in, as the metadata view shows it: a JSON map name -> string
            node = cluster.store.peek("/admin/configuration")
            assert node is not None and json.loads(node) == expected
            status, body = await http("GET", obs.url + "/emulator/metadata?path=/admin/configuration")
            assert json.loads(body) == expected
            # applied to the configuration the brokers read
            assert cluster.conf.load_balancer_shedding_enabled is False
            assert cluster.conf.load_balancer_broker_overloaded_threshold_percentage == 70
            assert cluster.conf.load_manager_class_name == SIMPLE

            # delete-dynamic-config: the key leaves the node, the value goes back to the start-up one
            status, body = await http("DELETE", base + "/loadBalancerBrokerOverloadedThresholdPercentage")
            assert (status, body) == (200, b"")
            del expected["loadBalancerBrokerOverloadedThresholdPercentage"]
            status, body = await http("GET", base + "/values")
            assert json.loads(body) == expected
            assert json.loads(cluster.store.peek("/admin/configuration")) == expected
            assert cluster.conf.load_balancer_broker_overloaded_threshold_percentage == 85


@pytest.mark.asyncio
async def test_refusals_are_pulsars_412_and_change_nothing():
    async with emulated_cluster(2, seed=4) as cluster:
        async with observe(cluster, metrics_port=0) as obs:
            base = obs.url + "/admin/v2/brokers/configuration"
            cases = [
                ("POST", "/loadBalancerEnabled/false", "Can't update non-dynamic configuration"),
                ("POST", "/lowerBoundarySheddingEnabled/true", "Can't update non-dynamic configuration"),
                ("POST", "/noSuchKey/1", "Can't update non-dynamic configuration"),
                ("POST", "/load_balancer_shedding_enabled/false", "Can't update non-dynamic configuration"),
                ("POST", "/loadManagerClassName/org.example.MyLoadManager", " Invalid dynamic-config value"),
                ("POST", "/loadManagerClassName/ModularLoadManagerImpl", " Invalid dynamic-config value"),
                ("DELETE", "/loadBalancerEnabled", "Can't delete non-dynamic configuration"),
            ]
            for method, path, reason in cases:
                status, body = await http(method, base + path)
                assert (status, json.loads(body)) == (412, {"reason": reason}), path
            # a value the emulator cannot parse: the same status, the reason says why
            status, body = await http("POST", base + "/loadBalancerSheddingIntervalMinutes/soon")
            assert status == 412
            reason = json.loads(body)["reason"]
            assert reason.startswith(" Invalid dynamic-config value") and "expected an integer" in reason

            status, body = await http("GET", base + "/values")
            assert json.loads(body) == {}
            assert cluster.store.peek("/admin/configuration") is None
            assert cluster.conf.load_balancer_enabled is True
            assert cluster.conf.load_manager_class_name == LOAD_MANAGER_CLASSES[0]
            assert cluster.conf.load_balancer_shedding_interval_minutes == 1

            status, body = await http("PUT", base + "/loadBalancerSheddingEnabled/false")
            assert status == 405


@pytest.mark.asyncio
async def test_names_and_runtime_views():
    async with emulated_cluster(2, seed=5) as cluster:
        async with observe(cluster, metrics_port=0) as obs:
            base = obs.url + "/admin/v2/brokers/configuration"
            status, body = await http("GET", base)
            names = json.loads(body)
            assert status == 200
            assert "loadManagerClassName" in names and "loadBalancerSheddingEnabled" in names
            assert "loadBalancerEnabled" not in names and "loadBalancerLoadPlacementStrategy" not in names

            status, body = await http("GET", base + "/runtime")
            runtime = json.loads(body)
            assert status == 200 and all(isinstance(v, str) for v in runtime.values())
            assert runtime["loadBalancerSheddingEnabled"] == "true"           # Pulsar's camelCase names
            assert runtime["loadBalancerBrokerOverloadedThresholdPercentage"] == "85"
            assert runtime["loadBalancerCPUResourceWeight"] == "1.0"
            assert runtime["loadManagerClassName"] == LOAD_MANAGER_CLASSES[0]
            assert not any("_" in k for k in runtime)
            await http("POST", base + "/loadBalancerSheddingEnabled/false")
            status, body = await http("GET", base + "/runtime")
            assert json.loads(body)["loadBalancerSheddingEnabled"] == "false"


@pytest.mark.asyncio
async def test_set_config_from_a_scenario_or_code_writes_the_node_too():
    async with emulated_cluster(2, seed=6) as cluster:
        cluster.set_config("load_balancer_auto_bundle_split_enabled", False)   # snake_case, a bool
        cluster.set_config("loadBalancerSheddingExcludedNamespaces", ["a/x", "b/y"])
        await cluster.dynamic_configuration_written()
        assert cluster.dynamic_configuration() == {"loadBalancerAutoBundleSplitEnabled": "false",
                                                   "loadBalancerSheddingExcludedNamespaces": "a/x,b/y"}
        assert cluster.conf.load_balancer_shedding_excluded_namespaces == ["a/x", "b/y"]
        with pytest.raises(ValueError, match="Can't update non-dynamic configuration"):
            cluster.set_config("keepAliveIntervalSeconds", 10)
        assert cluster.conf.keep_alive_interval_seconds == 30
