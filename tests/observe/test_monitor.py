"""The monitor-brokers table: BrokerMonitor's layout, Java's number formatting and its quirks."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

from emulator.model.loaddata import LocalBrokerData, ResourceUsage, TimeAverageBrokerData
from emulator.observe.monitor import (
    BrokerRow,
    _F32,
    _java_decimal,
    broker_rows,
    broker_table,
    format_broker_table,
    make_table,
    overall_table,
)
from emulator.testing import emulated_cluster


def test_the_table_maker_pads_cuts_and_borders_like_fixed_column_length_table_maker():
    text = make_table([["A", 1.005, 2], ["LONGER-THAN-14-CHARS", None]])
    lines = text.split("\n")
    assert lines[0] == "=" * 51 and lines[-1] == "=" * 51
    assert lines[1] == "||A              |1.01           |2              ||"
    assert lines[2] == "||LONGER-THAN-14 |               |               ||"
    assert not text.endswith("\n")


@pytest.mark.parametrize("value,text", [
    (1.005, "1.01"),       # Java rounds HALF_UP on the shortest decimal form; C's printf says 1.00
    (0.125, "0.13"),
    (2.675, "2.68"),
    (-1.5, "-1.50"),
    (float("nan"), "NaN"),
    (float("inf"), "Infinity"),
])
def test_decimals_are_formatted_as_javas_string_format(value, text):
    assert _java_decimal(value) == text


def test_float32_cells_are_formatted_from_their_float32_digits():
    f = float(np.float32(1.005))           # 1.00499999523... as a double
    assert _java_decimal(f) == "1.00"
    assert _java_decimal(_F32(f)) == "1.01"  # Float.toString(1.005f) is "1.005"


def local(**kw) -> LocalBrokerData:
    return LocalBrokerData(
        cpu=ResourceUsage(usage=50.0, limit=400.0), memory=ResourceUsage(usage=1024.0, limit=4096.0),
        direct_memory=ResourceUsage(usage=256.0, limit=4096.0),
        bandwidth_in=ResourceUsage(usage=10.0, limit=1000.0), bandwidth_out=ResourceUsage(usage=30.0, limit=1000.0),
        msg_rate_in=10.0, msg_rate_out=20.0, msg_throughput_in=3 * 1024.0, msg_throughput_out=1024.0,
        num_topics=7, num_bundles=3, num_producers=7, num_consumers=2,
        last_bundle_gains={"a/b/0x00000000_0x80000000"}, **kw)


def test_a_brokers_table_has_the_modular_rows():
    avg = TimeAverageBrokerData(short_term_msg_rate_in=1.0, short_term_msg_rate_out=2.0,
                                short_term_msg_throughput_in=2048.0, short_term_msg_throughput_out=0.0,
                                long_term_msg_rate_in=100.0, long_term_msg_rate_out=50.0,
                                long_term_msg_throughput_in=0.0, long_term_msg_throughput_out=512.0)
    text = broker_table(BrokerRow("b1:8080", local(), avg))
    lines = text.split("\n")
    assert lines[0] == "Broker Data for b1:8080:"
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:-1]]
    assert cells[0] == ["SYSTEM", "CPU %", "MEMORY %", "DIRECT %", "BW IN %", "BW OUT %", "MAX %"]
    # MAX % = getMaxResourceUsage() * 100: cpu 12.5 % beats direct 6.25 % and bw 3 %; memory is excluded
    assert cells[1] == ["", "12.50", "25.00", "6.25", "1.00", "3.00", "12.50"]
    assert cells[3] == ["", "7", "3", "7", "2", "1", "0"]
    assert cells[4][0] == "LATEST" and cells[5] == ["", "10.00", "20.00", "30.00", "3.00", "1.00", "4.00"]
    assert cells[6][0] == "SHORT" and cells[7] == ["", "1.00", "2.00", "3.00", "2.00", "0.00", "2.00"]
    assert cells[8][0] == "LONG" and cells[9] == ["", "100.00", "50.00", "150.00", "0.00", "0.50", "0.50"]


def test_the_overall_table_keeps_pulsars_column_swap_and_fraction_max():
    avg = TimeAverageBrokerData(long_term_msg_rate_in=100.0, long_term_msg_rate_out=50.0)
    text = overall_table([BrokerRow("b1:8080", local(), avg), BrokerRow("b2:8080", local(), None)])
    lines = text.split("\n")
    assert lines[0] == "Overall Broker Data:" and set(lines[1]) == {"*"}
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:-1]]
    assert cells[0] == ["BROKER", "BUNDLE", "MSG/S", "LONG/S", "KB/S", "MAX %"]
    # broker rows: KB/s under LONG/S, the long-term rate under KB/S; MAX % a fraction
    assert cells[1] == ["b1:8080", "3", "30.00", "4.00", "150.00", "0.13"]
    assert cells[2] == ["b2:8080", "3", "30.00", "4.00", "0.00", "0.13"]
    # the TOTAL row follows the header
    assert cells[3] == ["TOTAL", "6", "60.00", "150.00", "8.00", "0.13"]
    assert len(lines[2]) == 2 + 61 + 5 * (1 + 13) + 2    # a 60-char broker column, 12-char others


@pytest.mark.asyncio
async def test_rows_are_the_last_written_reports_and_time_averages():
    async with emulated_cluster(3, seed=31, namespaces={"public/default": 4}) as cluster:
        client = cluster.add_client()
        client.create_handles([f"persistent://public/default/t-{i}" for i in range(12)])
        await cluster.wait_until(lambda: client.connected_count() == 12)
        rows = broker_rows(cluster)
        assert [r.broker for r in rows] == cluster.store.peek_children("/loadbalance/brokers")
        for r in rows:
            stored = cluster.store.peek(f"/loadbalance/brokers/{r.broker}")
            assert r.local == msgspec.json.decode(stored, type=LocalBrokerData)
            assert r.time_average is not None
        text = format_broker_table(rows)
        assert text.count("Broker Data for ") == 3 and text.count("Overall Broker Data:") == 1
