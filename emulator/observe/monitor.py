"""The `monitor-brokers` tables (pulsar-perf BrokerMonitor, for Modular and Simple reports; spec §B.3).

For every broker registered under `/loadbalance/brokers`, a "Broker Data for <broker>" table built from
its last written report (`LocalBrokerData`) and its `/loadbalance/broker-time-average/<broker>` node:

    SYSTEM | CPU % | MEMORY % | DIRECT % | BW IN % | BW OUT % | MAX %      (MAX = getMaxResourceUsage()*100)
    COUNT  | TOPIC | BUNDLE | PRODUCER | CONSUMER | BUNDLE + | BUNDLE -
    LATEST | MSG/S IN | MSG/S OUT | TOTAL | KB/S IN | KB/S OUT | TOTAL   (and SHORT, LONG from time averages)

then the "Overall Broker Data" table (BROKER | BUNDLE | MSG/S | LONG/S | KB/S | MAX %, plus TOTAL).
Pulsar's quirks are kept: broker rows put KB/s under LONG/S and the long-term rate under KB/s (the TOTAL
row follows the header), and the overall MAX % column holds the fraction `getMaxResourceUsage()`, not a
percentage. Cells are 14 characters (60 for the overall broker column), `%.2f` with Java's rounding
(HALF_UP on the shortest decimal representation; float32 values as Float.toString sees them). Brokers
are listed in sorted order (Java walks a ConcurrentHashMap).

A report written by SimpleLoadManagerImpl (BrokerMonitor tells it by the text "allocated" in the node)
gets the "Load Report for <broker>" table instead, from its LoadReport:

    COUNT        | TOPIC | BUNDLE | PRODUCER | CONSUMER | BUNDLE + | BUNDLE -
    RAW SYSTEM   | CPU % | MEMORY % | DIRECT % | BW IN % | BW OUT % | MAX %
    ALLOC SYSTEM | CPU % | MEMORY % |          | BW IN % | BW OUT % | MAX %   (allocated / limit, at most 100)
    RAW MSG      | MSG/S IN | MSG/S OUT | TOTAL | KB/S IN | KB/S OUT | TOTAL (KB/s from the bandwidth usage)
    ALLOC MSG    | the allocated msg rates and bandwidths

and its overall row takes the allocated msg rates as LONG/S, the allocated bandwidth as KB/S and the
largest percentUsage() as MAX % (printGlobalData). `watch(url, interval)` prints the tables again and
again, as `monitor-brokers` does on every report change.

`broker_rows(cluster)` reads the metadata store directly; `monitor(url)` reads the same nodes through a
running emulator's read-only HTTP views, so both print the same table for the same instant.

`--extensions` (BrokerMonitor's mode for the Extensible load manager, `printBrokerLoadData`): one
"Broker Data for <broker>" table per entry of the broker-load-data table view
(`non-persistent://pulsar/system/loadbalancer-broker-load-data`), from its BrokerLoadData:

    SYSTEM | CPU % | MEMORY % | DIRECT % | BW IN % | BW OUT % | MAX %      (MAX = maxResourceUsage*100)
    COUNT  | TOPIC | BUNDLE | PRODUCER | CONSUMER | BUNDLE + | BUNDLE -   (only BUNDLE: bundleCount)
    LATEST | MSG/S IN | MSG/S OUT | TOTAL | KB/S IN | KB/S OUT | TOTAL

and no overall table (pulsar-perf prints none in that mode). `extensible_load_data(cluster)` reads the
table view of the first live broker that has one; over HTTP the emulator's own JSON path
`/emulator/extensible/broker-load-data` serves the same (Pulsar has no admin path for it: its
`broker-stats/load-report` throws UnsupportedOperationException under the Extensible load manager,
and pulsar-perf reads the system topic with a client).
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import msgspec
import numpy as np

from emulator.loadmanagers.extensible.model.load_data import BrokerLoadData
from emulator.model.loaddata import LocalBrokerData, TimeAverageBrokerData
from emulator.loadmanagers.simple.model.report import LoadReport

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster

__all__ = ["BrokerRow", "MonitorError", "NoExtensibleBrokers", "broker_load_data_table", "broker_rows",
           "extensible_load_data", "format_broker_table", "format_extensions_tables", "make_table", "monitor",
           "watch"]

BROKERS_PATH = "/loadbalance/brokers"
TIME_AVERAGE_PATH = "/loadbalance/broker-time-average"
BROKER_LOAD_DATA_PATH = "/emulator/extensible/broker-load-data"
"""The emulator's JSON view of the broker-load-data table: `{broker id: BrokerLoadData}`."""
NO_EXTENSIBLE = "no live broker runs the Extensible load manager (loadManagerClassName=ExtensibleLoadManagerImpl)"

_MESSAGE_FIELDS = ("MSG/S IN", "MSG/S OUT", "TOTAL", "KB/S IN", "KB/S OUT", "TOTAL")
_SYSTEM_ROW = ("SYSTEM", "CPU %", "MEMORY %", "DIRECT %", "BW IN %", "BW OUT %", "MAX %")
_COUNT_ROW = ("COUNT", "TOPIC", "BUNDLE", "PRODUCER", "CONSUMER", "BUNDLE +", "BUNDLE -")
_SIMPLE_SYSTEM_FIELDS = ("CPU %", "MEMORY %", "DIRECT %", "BW IN %", "BW OUT %", "MAX %")
_GLOBAL_HEADER = ("BROKER", "BUNDLE", "MSG/S", "LONG/S", "KB/S", "MAX %")


class MonitorError(RuntimeError):
    """The emulator at the given URL could not be read."""


class NoExtensibleBrokers(MonitorError):
    """`--extensions` on a cluster without an Extensible broker: nothing to monitor."""


class BrokerRow(msgspec.Struct):
    """One broker as BrokerMonitor sees it: its report and its time averages (None if not written).

    `report`: the LoadReport when the broker runs SimpleLoadManagerImpl (`local` then holds the same
    JSON read as LocalBrokerData, whose rates and counts have the same names)."""

    broker: str
    local: LocalBrokerData
    time_average: TimeAverageBrokerData | None = None
    report: LoadReport | None = None


class _F32(float):
    """A Java `float` cell: formatted from its float32 shortest representation."""


# --------------------------------------------------------------------------- reading


def rows_from_nodes(children: Sequence[str], get: Callable[[str], bytes | None]) -> list[BrokerRow]:
    """Rows from `/loadbalance/brokers` children and a node reader (the store, or the HTTP view)."""
    rows = []
    for broker in sorted(children):
        data = get(f"{BROKERS_PATH}/{broker}")
        if data is None:          # gone between the listing and the read: "Lost broker"
            continue
        local = msgspec.json.decode(data, type=LocalBrokerData)
        if b"allocated" in data:   # printData: a SimpleLoadManagerImpl LoadReport
            rows.append(BrokerRow(broker, local, report=msgspec.json.decode(data, type=LoadReport)))
            continue
        avg = get(f"{TIME_AVERAGE_PATH}/{broker}")
        rows.append(BrokerRow(broker, local,
                              None if avg is None else msgspec.json.decode(avg, type=TimeAverageBrokerData)))
    return rows


def broker_rows(cluster: "Cluster") -> list[BrokerRow]:
    """The table's inputs read straight from the cluster's metadata store (no message, no latency)."""
    store = cluster.store
    return rows_from_nodes(store.peek_children(BROKERS_PATH), store.peek)


def extensible_load_data(cluster: "Cluster") -> dict[str, BrokerLoadData]:
    """The broker-load-data table view as the first live broker (by id) with one holds it: the
    ExtensibleMetrics capability's `broker_load_data_view()` (a mapping). NoExtensibleBrokers when no
    live broker has one."""
    for broker_id in sorted(cluster.live_brokers()):
        metrics = cluster.brokers[broker_id].capabilities.extensible_metrics
        if metrics is not None:
            return dict(metrics.broker_load_data_view())
    raise NoExtensibleBrokers(NO_EXTENSIBLE)


def watch(url: str, interval: float, *, count: int | None = None, timeout: float = 10.0,
          write: Callable[[str], object] | None = None,
          sleep: Callable[[float], object] | None = None, extensions: bool = False) -> int:
    """`monitor --watch INTERVAL`: the tables every `interval` real seconds (`count` times, or until
    interrupted), as monitor-brokers prints them again on every report change. Returns how many."""
    import sys
    import time

    out = write or sys.stdout.write
    pause = sleep or time.sleep
    printed = 0
    while count is None or printed < count:
        if printed:
            pause(interval)
        out(monitor(url, timeout=timeout, extensions=extensions) + "\n")
        printed += 1
    return printed


def monitor(url: str, *, timeout: float = 10.0, extensions: bool = False) -> str:
    """`pulsar-lb-emulator monitor --url http://127.0.0.1:PORT [--extensions]`: the tables of a running
    emulator (NoExtensibleBrokers with `extensions` when it has no Extensible broker)."""
    parts = urllib.parse.urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"url = {url!r}: expected http://HOST:PORT of an emulator started with --metrics-port")
    base = url.rstrip("/")

    def fetch(view: str, path: str | None) -> bytes | None:
        query = "?" + urllib.parse.urlencode({"path": path}) if path is not None else ""
        try:
            with urllib.request.urlopen(f"{base}{view}{query}", timeout=timeout) as resp:
                return resp.read()
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise MonitorError(f"{base}{view}: HTTP {e.code} {e.reason}") from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise MonitorError(f"cannot read {base}: {reason}") from None

    if extensions:
        body = fetch(BROKER_LOAD_DATA_PATH, None)
        if body is None:
            raise NoExtensibleBrokers(NO_EXTENSIBLE)
        return format_extensions_tables(msgspec.json.decode(body, type=dict[str, BrokerLoadData]))

    listing = fetch("/emulator/metadata/children", BROKERS_PATH)
    children = json.loads(listing) if listing is not None else []
    return format_broker_table(rows_from_nodes(children, lambda p: fetch("/emulator/metadata", p)))


# --------------------------------------------------------------------------- formatting


def _java_decimal(value: float) -> str:
    """String.format("%.2f", value): HALF_UP on the shortest decimal representation."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    digits = str(np.float32(value)) if isinstance(value, _F32) else repr(float(value))
    try:
        return str(Decimal(digits).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))
    except InvalidOperation:    # beyond Decimal's 28 digits: rounding no longer shows
        return f"{value:.2f}"


def _cell(element: object) -> str:
    if element is None:
        return ""
    if isinstance(element, bool):
        return "true" if element else "false"
    if isinstance(element, float):
        return _java_decimal(element)
    return str(element)


def make_table(rows: Sequence[Sequence[object]], *, length: Callable[[int], int] = lambda column: 14,
               top: str = "=", bottom: str = "=", left: str = "||", right: str = "||",
               separator: str = "|", left_padding: int = 0, right_padding: int = 1) -> str:
    """pulsar-testclient's FixedColumnLengthTableMaker.make: fixed-width cells, long ones cut."""
    columns = max((len(r) for r in rows), default=0)
    total = (columns * (left_padding + right_padding + len(separator)) - len(separator)
             + len(left) + len(right) + sum(length(i) for i in range(columns)))
    out = [top * total, "\n"]
    for row in rows:
        out.append(left)
        for i in range(columns):
            text = _cell(row[i]) if i < len(row) else ""
            width = length(i)
            text = text[:width]
            out.append(" " * left_padding + text + " " * (width - len(text) + right_padding))
            if i != columns - 1:
                out.append(separator)
        out.append(right)
        out.append("\n")
    out.append(bottom * total)
    return "".join(out)


def _message_row(rate_in: float, rate_out: float, thr_in: float, thr_out: float) -> list[object]:
    return [None, float(rate_in), float(rate_out), float(rate_in + rate_out), thr_in / 1024,
            thr_out / 1024, (thr_in + thr_out) / 1024]


def _alloc_percent(usage: float, limit: float) -> float:
    """BrokerDataWatcher.percentUsage: allocated / limit in %, at most 100 (0 without a limit)."""
    return 100 * min(1.0, usage / limit) if limit > 0 and usage >= 0 else 0.0


def _raw_max(report: LoadReport) -> float:
    """The largest of the five percentUsage() (a Java float)."""
    u = report.system_resource_usage
    return max(float(np.float32(r.percent_usage()))
               for r in (u.cpu, u.memory, u.direct_memory, u.bandwidth_in, u.bandwidth_out))


def load_report_table(broker: str, report: LoadReport) -> str:
    """BrokerDataWatcher.printLoadReport: COUNT, RAW SYSTEM, ALLOC SYSTEM, RAW MSG, ALLOC MSG."""
    u = report.system_resource_usage
    alloc = [_alloc_percent(report.allocated_cpu, u.cpu.limit),
             _alloc_percent(report.allocated_memory, u.memory.limit),
             _alloc_percent(report.allocated_bandwidth_in, u.bandwidth_in.limit),
             _alloc_percent(report.allocated_bandwidth_out, u.bandwidth_out.limit)]
    rows: list[Sequence[object]] = [
        _COUNT_ROW,
        [None, report.num_topics, report.num_bundles, report.num_producers, report.num_consumers,
         len(report.bundle_gains), len(report.bundle_losses)],
        ("RAW SYSTEM",) + _SIMPLE_SYSTEM_FIELDS,
        [None, _F32(u.cpu.percent_usage()), _F32(u.memory.percent_usage()),
         _F32(u.direct_memory.percent_usage()), _F32(u.bandwidth_in.percent_usage()),
         _F32(u.bandwidth_out.percent_usage()), _F32(_raw_max(report))],
        ("ALLOC SYSTEM",) + _SIMPLE_SYSTEM_FIELDS,
        [None, alloc[0], alloc[1], None, alloc[2], alloc[3], max(alloc)],
        ("RAW MSG",) + _MESSAGE_FIELDS,
        _message_row(report.msg_rate_in, report.msg_rate_out, u.bandwidth_in.usage, u.bandwidth_out.usage),
        ("ALLOC MSG",) + _MESSAGE_FIELDS,
        _message_row(report.allocated_msg_rate_in, report.allocated_msg_rate_out,
                     report.allocated_bandwidth_in, report.allocated_bandwidth_out),
    ]
    return f"Load Report for {broker}:\n{make_table(rows)}"


def broker_table(row: BrokerRow) -> str:
    """BrokerDataWatcher.printBrokerData: the five label rows, each followed by its values (a
    SimpleLoadManagerImpl report: `load_report_table`)."""
    if row.report is not None:
        return load_report_table(row.broker, row.report)
    local = row.local
    avg = row.time_average or TimeAverageBrokerData()
    rows: list[Sequence[object]] = [
        _SYSTEM_ROW,
        [None, _F32(local.cpu.percent_usage()), _F32(local.memory.percent_usage()),
         _F32(local.direct_memory.percent_usage()), _F32(local.bandwidth_in.percent_usage()),
         _F32(local.bandwidth_out.percent_usage()), _F32(np.float32(local.max_resource_usage()) * np.float32(100))],
        _COUNT_ROW,
        [None, local.num_topics, local.num_bundles, local.num_producers, local.num_consumers,
         len(local.last_bundle_gains), len(local.last_bundle_losses)],
        ("LATEST",) + _MESSAGE_FIELDS,
        _message_row(local.msg_rate_in, local.msg_rate_out, local.msg_throughput_in, local.msg_throughput_out),
        ("SHORT",) + _MESSAGE_FIELDS,
        _message_row(avg.short_term_msg_rate_in, avg.short_term_msg_rate_out,
                     avg.short_term_msg_throughput_in, avg.short_term_msg_throughput_out),
        ("LONG",) + _MESSAGE_FIELDS,
        _message_row(avg.long_term_msg_rate_in, avg.long_term_msg_rate_out,
                     avg.long_term_msg_throughput_in, avg.long_term_msg_throughput_out),
    ]
    return f"Broker Data for {row.broker}:\n{make_table(rows)}"


def overall_table(rows: Sequence[BrokerRow]) -> str:
    """BrokerMonitor.printGlobalData, column swap and fraction-valued MAX % included."""
    table: list[Sequence[object]] = [_GLOBAL_HEADER]
    bundles = 0
    total_rate = total_long = total_kb = max_max = 0.0
    for row in rows:
        local = row.local
        if row.report is not None:
            r = row.report
            num_bundles = r.num_bundles
            rate = r.msg_rate_in + r.msg_rate_out
            long_rate = r.allocated_msg_rate_in + r.allocated_msg_rate_out
            kb = (r.allocated_bandwidth_in + r.allocated_bandwidth_out) / 1024
            max_usage = _raw_max(r)
        else:
            avg = row.time_average or TimeAverageBrokerData()
            num_bundles = local.num_bundles
            rate = local.msg_rate_in + local.msg_rate_out
            long_rate = avg.long_term_msg_rate_in + avg.long_term_msg_rate_out
            kb = (local.msg_throughput_in + local.msg_throughput_out) / 1024
            max_usage = float(local.max_resource_usage())
        table.append([row.broker, num_bundles, float(rate), float(kb), float(long_rate), max_usage])
        bundles += num_bundles
        total_rate += rate
        total_long += long_rate
        total_kb += kb
        max_max = max(max_usage, max_max)
    table.append(["TOTAL", bundles, total_rate, total_long, total_kb, max_max])
    text = make_table(table, length=lambda column: 60 if column == 0 else 12, top="*", bottom="*")
    return f"Overall Broker Data:\n{text}"


def format_broker_table(rows: Sequence[BrokerRow]) -> str:
    """Every broker's table, then the overall one (what `run --monitor-interval` prints)."""
    return "\n\n".join([broker_table(r) for r in rows] + [overall_table(rows)])


def broker_load_data_table(broker: str, data: BrokerLoadData) -> str:
    """BrokerMonitor.printBrokerLoadData: SYSTEM, COUNT (the bundle count alone), LATEST."""
    rows: list[Sequence[object]] = [
        _SYSTEM_ROW,
        [None, _F32(data.cpu.percent_usage()), _F32(data.memory.percent_usage()),
         _F32(data.direct_memory.percent_usage()), _F32(data.bandwidth_in.percent_usage()),
         _F32(data.bandwidth_out.percent_usage()), float(data.max_resource_usage) * 100],
        _COUNT_ROW,
        [None, None, data.bundle_count, None, None, None, None],
        ("LATEST",) + _MESSAGE_FIELDS,
        _message_row(data.msg_rate_in, data.msg_rate_out, data.msg_throughput_in, data.msg_throughput_out),
    ]
    return f"Broker Data for {broker}:\n{make_table(rows)}"


def format_extensions_tables(data: Mapping[str, BrokerLoadData]) -> str:
    """`monitor --extensions`: every broker's table, brokers sorted (the table view is a hash map)."""
    return "\n\n".join(broker_load_data_table(broker, data[broker]) for broker in sorted(data))
