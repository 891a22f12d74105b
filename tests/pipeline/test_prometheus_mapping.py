"""Prometheus series -> the recording the roll-up reads: canned query_range replies in Prometheus'
documented shape, one for a real cluster's brokers and one for an emulator's endpoint; no Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulator.model.config import ServiceConfig
from emulator.model.errors import UsageError
from emulator.observe.recording_files import iter_lines
from emulator.pipeline.prometheus import (EMULATOR_ONLY, NEVER, QUERIES, fetch_series, rollup_prometheus,
                                          to_recording)
from emulator.pipeline.recording import load_runs
from emulator.pipeline.rollup import KPI_COLUMNS, SAMPLE_NAMES
from tests.pipeline.test_prometheus_api import matrix

URL = "http://prom:9090"
T0 = 1_714_554_000.0
STEP = 15.0


def steps(*values):
    """(unix time, value) at T0, T0 + STEP, ...; None leaves an instant out."""
    return [(T0 + i * STEP, v) for i, v in enumerate(values) if v is not None]


def canned(replies: dict[str, list]) -> dict:
    """query -> series, fetched through query_range from replies in Prometheus' JSON."""
    def fetch(url, form):
        assert url == f"{URL}/api/v1/query_range" and form["step"] == "15"
        return matrix(*replies.get(form["query"], []))
    return fetch_series(URL, T0, T0 + 4 * STEP, STEP, fetch=fetch)


def lines(folder: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in iter_lines(folder, name)]


def by_name(samples: list[dict], name: str) -> list[tuple]:
    return [(s["t"], s["labels"].get("broker"), s["value"]) for s in samples if s["name"] == name]


def pulsar(name: str, broker: str | None, **labels: str) -> dict:
    """A real broker's labels: `cluster`, Prometheus' `instance` and `job`, `broker` on the LB gauges."""
    out = {"__name__": name, "cluster": "prod", "instance": f"{broker or 'b1'}.example:8080", "job": "pulsar"}
    if broker is not None and name.startswith("pulsar_lb_") and name.endswith("_usage"):
        out |= {"broker": broker, "metric": "loadBalancing"}
    return out | labels


# ============================================================================ a real cluster


@pytest.fixture
def real(tmp_path):
    replies = {
        "pulsar_lb_cpu_usage": [(pulsar("pulsar_lb_cpu_usage", "b1"), steps(50, 50, 80, 80, 80)),
                                (pulsar("pulsar_lb_cpu_usage", "b2"), steps(10, 10, 10, 10, 10))],
        "pulsar_lb_directMemory_usage": [(pulsar("pulsar_lb_directMemory_usage", "b1"), steps(1, 1, 1, 1, 1)),
                                         (pulsar("pulsar_lb_directMemory_usage", "b2"), steps(5, 5, 5, 5, 5))],
        "pulsar_lb_bandwidth_in_usage": [(pulsar("pulsar_lb_bandwidth_in_usage", "b1"), steps(60, 60, 60, 60, 60)),
                                         (pulsar("pulsar_lb_bandwidth_in_usage", "b2"), steps(30, 30, 30, 30, 30))],
        "pulsar_lb_bandwidth_out_usage": [(pulsar("pulsar_lb_bandwidth_out_usage", "b2"),
                                           steps(20, 20, "NaN", 20, 20))],
        "pulsar_broker_rate_in": [(pulsar("pulsar_broker_rate_in", "b1"), steps(100, 100, 100, 100, 100)),
                                  (pulsar("pulsar_broker_rate_in", "b2"), steps(50, 50, 50, 50, 50))],
        # a broker's counter from before --from, reset once (a restart); one that appears in range
        "pulsar_broker_lookup_answers_total": [
            (pulsar("pulsar_broker_lookup_answers_total", "b1"), steps(100, 105, 103, 110, 110)),
            (pulsar("pulsar_broker_lookup_answers_total", "b3"), steps(None, None, 4, 6, 6))],
        # the leader's gauges (Pulsar types them gauge): 3 unloads and 1 split in range
        "pulsar_lb_unload_bundle_total": [(pulsar("pulsar_lb_unload_bundle_total", "b1",
                                                  metric="bundleUnloading"), steps(2, 2, 5, 5, 5))],
        "pulsar_lb_bundles_split_total": [(pulsar("pulsar_lb_bundles_split_total", "b1", metric="bundlesSplit"),
                                           steps(7, 7, 7, 8, 8))],
    }
    conf = ServiceConfig().with_overrides({"loadBalancerCPUResourceWeight": "0.5",
                                           "loadBalancerBrokerOverloadedThresholdPercentage": "70"}, source="test")
    staged = to_recording(canned(replies), tmp_path / "run", url=URL, start=T0, end=T0 + 4 * STEP, step=STEP,
                          conf=conf)
    return staged, Path(staged.path)


def test_usage_is_pulsars_weighted_max_of_the_four_gauges(real):
    _, folder = real
    samples = lines(folder, "samples.jsonl")
    got = by_name(samples, "pulsar_lb_emulator_broker_max_usage")
    # b1: max(cpu * 0.5, direct, bw in) = 60 (cpu 80 * 0.5 = 40); b2: bw in 30, its NaN bw out left out
    assert got == [(t, b, 60.0 if b == "b1" else 30.0) for t in (0.0, 15.0, 30.0, 45.0, 60.0) for b in ("b1", "b2")]


def test_series_without_a_broker_label_take_the_broker_of_their_instance(real):
    _, folder = real
    rates = by_name(lines(folder, "samples.jsonl"), "pulsar_broker_rate_in")
    assert {b for _, b, _ in rates} == {"b1", "b2"}
    assert [v for _, b, v in rates if b == "b2"] == [50.0] * 5


def test_counters_count_from_from_and_across_resets(real):
    _, folder = real
    answers = by_name(lines(folder, "samples.jsonl"), "pulsar_broker_lookup_answers_total")
    # b1 existed at --from: its 100 is history; +5, reset to 103 (all new), +7
    assert [v for _, b, v in answers if b == "b1"] == [0.0, 5.0, 108.0, 115.0, 115.0]
    # b3's instance has no LB gauges (no broker known); it appeared in range: counted from 0
    b3 = [s for s in lines(folder, "samples.jsonl") if s["labels"].get("instance") == "b3.example:8080"]
    assert [(s["t"], s["value"]) for s in b3] == [(30.0, 4.0), (45.0, 6.0), (60.0, 6.0)]
    assert "broker" not in b3[0]["labels"]


def test_unloads_and_splits_are_one_decision_per_increment_at_the_scrape(real):
    _, folder = real
    decisions = lines(folder, "decisions.jsonl")
    assert decisions == [{"t": 30.0, "decision": "unload"}] * 3 + [{"t": 45.0, "decision": "split", "ok": True}]


def test_a_real_cluster_has_no_emulator_kpis_and_run_json_says_where_it_came_from(real):
    staged, folder = real
    assert not staged.emulated and lines(folder, "events.jsonl") == []
    assert staged.unavailable == NEVER | EMULATOR_ONLY
    assert set(staged.unavailable) < set(KPI_COLUMNS) and all(staged.unavailable.values())
    [run] = load_runs([folder])
    assert run.overload_threshold == 70.0 and run.info.emulated_start == 0.0 and run.info.emulated_end == 60.0
    info = json.loads((folder / "run.json").read_text())
    assert info["source"] | {"series": None} == {"prometheus": URL, "from": T0, "to": T0 + 60, "step": STEP,
                                                 "time": "seconds since from", "series": None}
    assert {s["name"] for s in lines(folder, "samples.jsonl")} <= set(SAMPLE_NAMES)


# ============================================================================ an emulator's endpoint


def emu(metric: str, /, **labels: str) -> dict:
    return {"__name__": metric, "cluster": "standalone", "instance": "127.0.0.1:8080", "job": "emu"} | labels


def emulator_replies(time_values, marks=(0, 0, 0, 0, 1)) -> dict:
    """An emulator's endpoint; with repeated times (a step shorter than the scrape interval) every
    series repeats its value at the repeated instants, as a scrape seen twice does."""
    return {
        "pulsar_lb_emulator_time_seconds": [(emu("pulsar_lb_emulator_time_seconds"), steps(*time_values))],
        "pulsar_lb_emulator_broker_max_usage": [
            (emu("pulsar_lb_emulator_broker_max_usage", broker=b), steps(u, u, u + 1, u + 1, u + 2))
            for b, u in (("broker-1:8080", 40.0), ("broker-2:8080", 20.0))],
        "pulsar_lb_cpu_usage": [(emu("pulsar_lb_cpu_usage", broker="broker-1:8080", metric="loadBalancing"),
                                 steps(99, 99, 99, 99, 99))],
        "pulsar_lb_emulator_reconnect_latency_seconds_count": [
            (emu("pulsar_lb_emulator_reconnect_latency_seconds_count"), steps(0, 0, 2, 2, 5))],
        "pulsar_lb_emulator_reconnect_latency_seconds_sum": [
            (emu("pulsar_lb_emulator_reconnect_latency_seconds_sum"), steps(0, 0, 1.0, 1.0, 4.0))],
        'pulsar_lb_emulator_events_total{kind="scenario_event"}': [
            (emu("pulsar_lb_emulator_events_total", kind="scenario_event", name="add_brokers"), steps(*marks)),
            (emu("pulsar_lb_emulator_events_total", kind="scenario_event", name="spike"), steps(0, 0, 0, 0, 0))],
        "pulsar_lb_emulator_unavailable_topic_seconds_total": [
            (emu("pulsar_lb_emulator_unavailable_topic_seconds_total"), steps(0, 0, 2.5, 2.5, 7.5))],
        "pulsar_lb_emulator_bundle_moves_total": [(emu("pulsar_lb_emulator_bundle_moves_total"), steps(0, 0, 1, 1, 1))],
        "pulsar_lb_emulator_client_lookups_total": [(emu("pulsar_lb_emulator_client_lookups_total"),
                                                     steps(3, 3, 4, 4, 4))],
    }


def test_an_emulators_time_is_the_time_axis_and_each_scrape_counts_once(tmp_path):
    staged = to_recording(canned(emulator_replies([0.0, 0.0, 10.0, 10.0, 20.0])), tmp_path / "run", url=URL,
                          start=T0, end=T0 + 60, step=STEP)
    folder = Path(staged.path)
    samples = lines(folder, "samples.jsonl")
    assert staged.emulated
    # the emulator's own usage, not the cpu gauge; instants 1 and 3 repeat scrapes 0 and 2
    assert by_name(samples, "pulsar_lb_emulator_broker_max_usage") == [
        (0.0, "broker-1:8080", 40.0), (10.0, "broker-1:8080", 41.0), (20.0, "broker-1:8080", 42.0),
        (0.0, "broker-2:8080", 20.0), (10.0, "broker-2:8080", 21.0), (20.0, "broker-2:8080", 22.0)]
    assert by_name(samples, "pulsar_lb_emulator_unavailable_topic_seconds_total") == [
        (0.0, None, 0.0), (10.0, None, 2.5), (20.0, None, 7.5)]
    assert [s["value"] for s in samples if s["name"] == "pulsar_lb_emulator_client_lookups_total"] == [0.0, 1.0, 1.0]
    events = lines(folder, "events.jsonl")
    assert [e for e in events if e["kind"] == "scenario_event"] == [
        {"t": 20.0, "kind": "scenario_event", "event": "add_brokers"}]
    assert [(e["t"], e["unavailable"]) for e in events if e["kind"] == "handle_reconnected"] == [
        (10.0, 0.5), (10.0, 0.5), (20.0, 1.0), (20.0, 1.0), (20.0, 1.0)]
    assert staged.unavailable == dict(NEVER) | {k: v for k, v in EMULATOR_ONLY.items()
                                                if k in ("client_lookup_redirects", "client_lookup_failures")}
    info = json.loads((folder / "run.json").read_text())
    assert info["emulated_end"] is None and info["source"]["time"] == "pulsar_lb_emulator_time_seconds"


def test_a_scenario_event_is_placed_at_its_scrape(tmp_path):
    staged = to_recording(canned(emulator_replies([0.0, 10.0, 20.0, 30.0, 40.0], marks=(0, 0, 0, 1, 1))),
                          tmp_path / "run", url=URL, start=T0, end=T0 + 60, step=STEP)
    events = lines(Path(staged.path), "events.jsonl")
    assert [e for e in events if e["kind"] == "scenario_event"] == [
        {"t": 30.0, "kind": "scenario_event", "event": "add_brokers"}]


@pytest.mark.parametrize("times,says", [
    ([0.0, 10.0, 5.0, 15.0, 20.0], "goes back from 10 to 5 s"),
])
def test_two_runs_in_range_are_one_line(tmp_path, times, says):
    with pytest.raises(UsageError, match=says):
        to_recording(canned(emulator_replies(times)), tmp_path / "run", url=URL, start=T0, end=T0 + 60, step=STEP)


def test_two_emulated_clusters_in_range_are_one_line(tmp_path):
    replies = emulator_replies([0.0, 10.0, 20.0, 30.0, 40.0])
    replies["pulsar_lb_emulator_time_seconds"].append(
        (emu("pulsar_lb_emulator_time_seconds", cluster="other"), steps(0.0, 1.0)))
    with pytest.raises(UsageError, match=r"2 emulated clusters in range \(cluster=other, standalone\)"):
        to_recording(canned(replies), tmp_path / "run", url=URL, start=T0, end=T0 + 60, step=STEP)


def test_no_pulsar_series_in_range_is_one_line_before_spark_starts(tmp_path):
    with pytest.raises(UsageError, match=r"^http://prom:9090: no pulsar_lb_\*_usage series between "
                                         r"2024-05-01T09:00:00Z and 2024-05-01T09:01:00Z"):
        rollup_prometheus(URL, T0, T0 + 60, STEP, tmp_path / "out", fetch=lambda url, form: matrix())
    assert not (tmp_path / "out").exists()


def test_every_query_is_a_series_the_rollup_or_the_mapping_reads():
    assert len(set(QUERIES)) == len(QUERIES)
    assert set(SAMPLE_NAMES) <= set(QUERIES)


def test_the_docs_list_every_kpi_prometheus_cannot_give():
    import re

    text = (Path(__file__).resolve().parents[2] / "docs" / "rollup.md").read_text(encoding="utf-8")
    section = text[text.index("## A real cluster"):text.index("## KPIs: one definition each")]
    named: set[str] = set()
    for cell in re.findall(r"^\| (.*?) \| [^|]+ \|$", section, re.M):
        for name in re.findall(r"`([a-z0-9_{},]+)`", cell):
            stem, _, alts = name.partition("{")
            named |= {stem + alt for alt in alts.rstrip("}").split(",")} if alts else {name}
    assert named == set(NEVER) | set(EMULATOR_ONLY)
