"""`monitor --extensions`: BrokerMonitor's printBrokerLoadData tables, from the broker-load-data table
view of a cluster (fake Extensible load managers) and through the emulator's JSON path."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from emulator.cli import main
from emulator.cluster.load_manager import ExtensibleMetrics
from emulator.model.config import ServiceConfig
from emulator.loadmanagers.extensible.model.load_data import BrokerLoadData
from emulator.model.loaddata import ResourceUsage
from emulator.observe.attach import observe
from emulator.observe.monitor import (
    BROKER_LOAD_DATA_PATH,
    NoExtensibleBrokers,
    broker_load_data_table,
    extensible_load_data,
    format_extensions_tables,
    monitor,
)
from emulator.runtime import run_external
from emulator.testing import emulated_cluster

from .test_http import fetch


def load_data(bundles: int = 3, cpu: float = 12.5) -> BrokerLoadData:
    data = BrokerLoadData()
    data.update(cpu=ResourceUsage(cpu, 100.0), memory=ResourceUsage(25.0, 100.0),
                direct_memory=ResourceUsage(6.25, 100.0), bandwidth_in=ResourceUsage(1.0, 100.0),
                bandwidth_out=ResourceUsage(3.0, 100.0), msg_throughput_in=3072.0, msg_throughput_out=1024.0,
                msg_rate_in=10.0, msg_rate_out=20.0, bundle_count=bundles, topics=7, conf=ServiceConfig(),
                now_ms=1000)
    return data


def cells(text: str) -> list[list[str]]:
    lines = text.split("\n")
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:-1]]


def test_a_brokers_table_is_printbrokerloaddata():
    text = broker_load_data_table("b1:8080", load_data())
    lines = text.split("\n")
    assert lines[0] == "Broker Data for b1:8080:"
    assert set(lines[1]) == {"="} and lines[-1] == lines[1] and len(lines) == 2 + 6 + 1
    rows = cells(text)
    assert rows[0] == ["SYSTEM", "CPU %", "MEMORY %", "DIRECT %", "BW IN %", "BW OUT %", "MAX %"]
    # MAX % = maxResourceUsage * 100: cpu 12.5 % beats direct 6.25 % and bw 3 %; memory is left out
    assert rows[1] == ["", "12.50", "25.00", "6.25", "1.00", "3.00", "12.50"]
    assert rows[2] == ["COUNT", "TOPIC", "BUNDLE", "PRODUCER", "CONSUMER", "BUNDLE +", "BUNDLE -"]
    assert rows[3] == ["", "", "3", "", "", "", ""]          # only the bundle count is known
    assert rows[4][0] == "LATEST" and rows[5] == ["", "10.00", "20.00", "30.00", "3.00", "1.00", "4.00"]


def test_every_broker_of_the_view_in_order_and_no_overall_table():
    text = format_extensions_tables({"b2:8080": load_data(5), "b1:8080": load_data(3)})
    assert [line for line in text.split("\n") if line.startswith("Broker Data for ")] == [
        "Broker Data for b1:8080:", "Broker Data for b2:8080:"]
    assert "Overall" not in text
    assert text == broker_load_data_table("b1:8080", load_data(3)) + "\n\n" + broker_load_data_table(
        "b2:8080", load_data(5))


class _WithView(ExtensibleMetrics):
    """The ExtensibleMetrics capability answering with a given view, given to a broker whose real load
    manager has none (the observers read only the broker's resolved capabilities)."""

    def __init__(self, view: dict[str, BrokerLoadData]) -> None:
        self._view = view

    def extensible_metrics(self) -> Any:
        return None

    def broker_load_data_view(self) -> dict[str, BrokerLoadData]:
        return dict(self._view)


@pytest.mark.asyncio
async def test_the_view_comes_from_the_first_live_broker_and_over_http(capsys):
    async with emulated_cluster(3, seed=7) as cluster:
        async with observe(cluster, metrics_port=0) as obs:
            base = obs.url
            with pytest.raises(NoExtensibleBrokers):
                extensible_load_data(cluster)
            status, _, body = await fetch(base + BROKER_LOAD_DATA_PATH)
            assert status == 404 and "Extensible" in json.loads(body)["reason"]
            with pytest.raises(NoExtensibleBrokers):
                await run_external(lambda: monitor(base, extensions=True))
            assert await run_external(main, ["monitor", "--url", base, "--extensions"]) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and "no live broker runs the Extensible load manager" in err

            first, second, third = sorted(cluster.live_brokers())
            views = {second: {"x:8080": load_data(1)},
                     third: {b: load_data(i + 1, cpu=10.0 * (i + 1)) for i, b in enumerate((first, second, third))}}
            for broker, view in views.items():
                b = cluster.brokers[broker]
                b.capabilities = dataclasses.replace(b.capabilities, extensible_metrics=_WithView(view))
            assert extensible_load_data(cluster) == views[second]   # the first live one with a view
            cluster.kill_broker(second)
            assert extensible_load_data(cluster) == views[third]

            status, ctype, body = await fetch(base + BROKER_LOAD_DATA_PATH)
            assert status == 200 and ctype == "application/json"
            assert list(json.loads(body)) == [first, second, third]
            assert json.loads(body)[first]["weightedMaxEMA"] == views[third][first].weighted_max_ema
            text = await run_external(lambda: monitor(base, extensions=True))
            assert text == format_extensions_tables(views[third])
            assert await run_external(main, ["monitor", "--url", base, "--extensions"]) == 0
            assert capsys.readouterr().out == text + "\n"
