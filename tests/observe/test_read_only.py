"""Observation is read-only (issue 32): reading the metrics, the admin views and the summary mid-run
changes no figure of the run.

The same scenario, config and seed is run recorded twice: once plain, once with an observer that reads
everything an outside reader can (the `/metrics` exposition, every GET admin view through the HTTP
handler's code path without sockets, the dynamic configuration and placement policies, the monitor table,
the summary) every emulated second, or from another thread on the wall clock as the HTTP server does.
The recordings (decisions, events, samples, publish, run.json but for its wall-clock fields) and the
summaries must be the same bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import io
import json
import threading
from pathlib import Path
from typing import Any, AsyncIterator, Callable

import anyio
import pytest

import emulator.observe.attach as attach
from emulator.observe.config_http import DynamicConfigRoutes
from emulator.observe.http import AdminViews
from emulator.observe.monitor import broker_rows, format_broker_table
from emulator.observe.policy_http import PolicyRoutes
from emulator.observe.publish import summary_lines
from emulator.observe.summary import UnavailabilityTracker, format_summary, summarize
from emulator.runner import RunOptions, run

CASES = [("hot-topic", 600.0),      # a split storm from 5 m: producers cut off and back (outage windows)
         ("broker-crash", 720.0)]   # a crash at 10 m: sends time out until the session expires
WALL_CLOCK_FIELDS = ("started_at", "ended_at", "versions")
"""run.json keys that are the machine's, not the run's."""


def _views(cluster: Any) -> list[str]:
    """Every GET path of the admin server, for this cluster's brokers, namespaces and topics."""
    name = cluster.name
    paths = ["/metrics", "/admin/v2/clusters", "/admin/v2/brokers", f"/admin/v2/brokers/{name}",
             "/admin/v2/brokers/leaderBroker", "/admin/v2/broker-stats/load-report",
             "/admin/v2/broker-stats/topics", "/admin/v2/tenants", "/emulator/status", "/emulator/ownership",
             "/emulator/monitor", "/emulator/extensible/broker-load-data",
             "/emulator/metadata/children?path=/loadbalance/brokers", "/emulator/metadata?path=/loadbalance/leader",
             "/emulator/metadata/children?path=/loadbalance/bundle-data"]
    for broker in sorted(cluster.brokers):
        paths += [f"/admin/v2/brokers/{name}/{broker}/ownedNamespaces",
                  f"/admin/v2/broker-stats/load-report/{broker}",
                  f"/emulator/brokers/{broker}/admin/v2/broker-stats/topics",
                  f"/emulator/metadata?path=/loadbalance/brokers/{broker}"]
    for ns in sorted({bundle.split("/0x")[0] for bundle in cluster.ownership()}):
        tenant = ns.split("/")[0]
        paths += [f"/admin/v2/namespaces/{tenant}", f"/admin/v2/namespaces/{ns}",
                  f"/admin/v2/namespaces/{ns}/bundles", f"/emulator/ownership?namespace={ns}"]
    paths += ["/admin/v2/brokers/health", "/admin/v2/brokers/ready", "/admin/v2/brokers/version",
              f"/admin/v2/clusters/{name}", "/admin/v2/namespaces/public/default",
              "/admin/v2/persistent/public/default"]
    for ns in sorted({bundle.split("/0x")[0] for bundle in cluster.ownership()}):
        paths += [f"/admin/v2/persistent/{ns}", f"/admin/v2/persistent/{ns}/partitioned",
                  f"/admin/v2/non-persistent/{ns}"]
    # topic stats (not the HTTP lookup: it assigns bundles, as Pulsar's does: ops_http.py)
    topics = sorted({h.topic for c in cluster.clients.values() for h in c.handles.values()})
    for topic in topics[:: max(1, len(topics) // 20)]:
        local = topic.replace("://", "/")
        paths += [f"/admin/v2/{local}/stats", f"/admin/v2/{local}/partitions",
                  f"/admin/v2/{local}/partitioned-stats"]
    return paths


def _writable_gets(cluster: Any) -> list[tuple[Any, str]]:
    name = cluster.name
    config, policies = DynamicConfigRoutes(cluster), PolicyRoutes(cluster)
    base = "/admin/v2/brokers/configuration"
    out: list[tuple[Any, str]] = [(config, p) for p in (base, f"{base}/values", f"{base}/runtime")]
    out += [(policies, f"/admin/v2/clusters/{name}/namespaceIsolationPolicies"),
            (policies, f"/admin/v2/clusters/{name}/failureDomains")]
    out += [(policies, f"/admin/v2/namespaces/{ns}/antiAffinity")
            for ns in sorted({bundle.split("/0x")[0] for bundle in cluster.ownership()})]
    return out


class Reader:
    """Reads everything once per call (`read_sync`: the loop-thread part the HTTP server hands over)."""

    def __init__(self, cluster: Any, obs: Any) -> None:
        self.cluster, self.obs = cluster, obs
        self.views = AdminViews(cluster, obs.metrics)
        self.tracker = UnavailabilityTracker(cluster.events)
        self.reads = 0

    def read_sync(self) -> None:
        cluster = self.cluster
        for path in _views(cluster):
            status, _, body = self.views.handle(path)
            assert status < 500, (path, body)
        self.obs.metrics.exposition()
        format_broker_table(broker_rows(cluster))
        format_summary(summarize(cluster, cluster.decision_log, self.tracker))
        summary_lines(getattr(cluster, "publish_accounting", None), cluster.system.clock.now())
        self.reads += 1

    async def read(self) -> None:
        self.read_sync()
        for routes, path in _writable_gets(self.cluster):
            status, _, body = await routes.handle("GET", path, b"")
            assert status < 500, (path, body)


def _observed(make_task: Callable[[Reader], Callable[[], Any]], readers: list[Reader]) -> Any:
    """`attach.observe` with a reader started inside it (what a scraper would see)."""
    real = attach.observe

    @contextlib.asynccontextmanager
    async def observe(cluster: Any, **kwargs: Any) -> AsyncIterator[Any]:
        async with real(cluster, **kwargs) as obs:
            reader = Reader(cluster, obs)
            readers.append(reader)
            async with anyio.create_task_group() as tg:
                tg.start_soon(make_task(reader))
                try:
                    yield obs
                finally:
                    tg.cancel_scope.cancel()

    return observe


def _every_emulated_second(reader: Reader) -> Callable[[], Any]:
    """A read at the first loop turn after each emulated second, handed to the loop as the HTTP server
    hands its requests (a callback, here a task, at whatever instant the loop is): no timer of its
    own, since a timer would itself move the virtual loop's timers that fall within its resolution
    (1 ns) of it."""
    async def task() -> None:
        loop = asyncio.get_running_loop()
        clock = reader.cluster.system.clock
        due = [clock.now()]
        pending: set[asyncio.Task[None]] = set()
        turn = loop._run_once      # type: ignore[attr-defined]

        def run_once() -> None:
            now = clock.now()
            if now >= due[0]:
                due[0] = now + 1.0
                t = loop.create_task(reader.read())
                pending.add(t)
                t.add_done_callback(pending.discard)
            turn()

        loop._run_once = run_once   # type: ignore[attr-defined]
        try:
            await anyio.sleep_forever()
        finally:
            loop._run_once = turn   # type: ignore[attr-defined]
    return task


def _from_a_thread(reader: Reader) -> Callable[[], Any]:
    """As the HTTP server reads on the wall clock: a thread hands each read to the loop, at whatever
    emulated instant the loop is then."""
    async def task() -> None:
        loop = asyncio.get_running_loop()
        stop = threading.Event()

        def scrape() -> None:
            while not stop.wait(0.002):
                done = threading.Event()

                def once(done: threading.Event = done) -> None:
                    try:
                        reader.read_sync()
                    finally:
                        done.set()
                try:
                    loop.call_soon_threadsafe(once)
                except RuntimeError:    # the loop closed
                    return
                done.wait(5.0)

        thread = threading.Thread(target=scrape, daemon=True)
        thread.start()
        try:
            await anyio.sleep_forever()
        finally:
            stop.set()
    return task


def _recording(folder: Path) -> dict[str, bytes]:
    """The recording's files as bytes (tables decompressed; run.json without its wall-clock fields)."""
    out: dict[str, bytes] = {}
    for path in sorted(folder.iterdir()):
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        if path.name == "run.json":
            info = json.loads(data)
            for key in WALL_CLOCK_FIELDS:
                info.pop(key, None)
            info.get("summary", {}).pop("wall_lag_max", None)   # how far behind this machine fell
            data = json.dumps(info, sort_keys=True, indent=1).encode()
        out[path.name] = data
    return out


def _run(folder: Path, case: tuple[str, float], clock: str, observer: Any = None,
         monkeypatch: Any = None) -> tuple[str, dict[str, bytes]]:
    if observer is not None:
        monkeypatch.setattr(attach, "observe", observer)
    scenario, duration = case
    opts = RunOptions(scenario=scenario, duration=duration, clock=clock, speed=300.0, record_dir=str(folder))
    result = run(opts, out=io.StringIO(), err=io.StringIO())
    if observer is not None:
        monkeypatch.undo()
    assert result.record_path is not None and not result.actor_failures
    text = result.summary_text
    if clock == "wall":   # the one line the summary says is the machine's (how far it fell behind)
        text = "\n".join(line for line in text.splitlines() if "wall clock" not in line)
    return text, _recording(Path(result.record_path))


def _assert_same(plain: tuple[str, dict[str, bytes]], read: tuple[str, dict[str, bytes]]) -> None:
    assert sorted(read[1]) == sorted(plain[1])
    differ = [name for name in plain[1] if read[1][name] != plain[1][name]]
    if read[0] != plain[0]:
        differ.append("summary")
    assert not differ, f"read, the run recorded other bytes in {', '.join(differ)}"


@pytest.mark.parametrize("case", CASES, ids=[name for name, _ in CASES])
def test_reading_everything_every_emulated_second_changes_no_recorded_byte(tmp_path, monkeypatch, case):
    plain = _run(tmp_path / "plain", case, "virtual")
    readers: list[Reader] = []
    read = _run(tmp_path / "read", case, "virtual", _observed(_every_emulated_second, readers), monkeypatch)
    assert readers and readers[0].reads >= case[1] / 2   # it did read, about every second
    assert "publish latency" in plain[0] and "publish.jsonl.gz" in plain[1]
    _assert_same(plain, read)
    # the failure counters only grow: Prometheus' increase() (and the KPIs) read a drop as a reset
    last: dict[str, float] = {}
    for line in plain[1]["samples.jsonl.gz"].splitlines():
        sample = json.loads(line)
        if sample.get("name") == "pulsar_lb_emulator_publish_failed_total":
            reason = sample["labels"]["reason"]
            assert sample["value"] >= last.get(reason, 0.0), sample
            last[reason] = sample["value"]
    assert last


def test_reading_from_another_thread_on_the_wall_clock_changes_no_recorded_byte(tmp_path, monkeypatch):
    case = CASES[0]
    plain = _run(tmp_path / "plain", case, "wall")
    readers: list[Reader] = []
    read = _run(tmp_path / "read", case, "wall", _observed(_from_a_thread, readers), monkeypatch)
    assert readers and readers[0].reads >= 10
    _assert_same(plain, read)
    # and the wall clock records what the virtual clock does
    virtual = _run(tmp_path / "virtual", case, "virtual")
    assert virtual[1]["samples.jsonl.gz"] == plain[1]["samples.jsonl.gz"]
    assert virtual[1]["publish.jsonl.gz"] == plain[1]["publish.jsonl.gz"]
