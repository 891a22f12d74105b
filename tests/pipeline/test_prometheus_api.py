"""Prometheus' HTTP API as `rollup --prometheus` reads it: chunks under the 11,000-point limit, the times
of --from/--to, replies in Prometheus' documented shape, and one clear line for every bad input.

No Prometheus and no Spark: the replies are canned (`fetch=`), the CLI's checks run before either."""

from __future__ import annotations

import datetime as dt
import json
import math
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from emulator.cli import main
from emulator.model.errors import UsageError
from emulator.pipeline.prometheus_api import MAX_POINTS, chunks, parse_series, parse_time, parse_url, query_range

ROOT = Path(__file__).resolve().parents[2]
NOW = 1_714_554_000.0     # 2024-05-01T09:00:00Z


def matrix(*series: tuple[dict, list]) -> bytes:
    """A query_range reply as https://prometheus.io/docs/prometheus/latest/querying/api/ shows it."""
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": labels, "values": [[t, str(v)] for t, v in values]} for labels, values in series]}}).encode()


# ---------------------------------------------------------------------------- chunks


def instants(start, end, step, max_points=MAX_POINTS):
    out = []
    for lo, hi in chunks(start, end, step, max_points):
        n = round((hi - lo) / step) + 1
        assert n <= max_points
        out += [lo + i * step for i in range(n)]
    return out


@pytest.mark.parametrize("start,end,step,limit", [
    (0.0, 100.0, 1.0, 11_000), (0.0, 100.0, 1.0, 7), (0.0, 99.5, 1.0, 10), (10.0, 10.0, 5.0, 3),
    (NOW - 86_400 * 3, NOW, 15.0, MAX_POINTS), (0.0, 22_000.0, 1.0, MAX_POINTS)])
def test_chunks_cover_every_instant_once_and_none_exceeds_the_limit(start, end, step, limit):
    got = instants(start, end, step, limit)
    want = [start + i * step for i in range(int((end - start) // step) + 1)]
    assert len(got) == len(want)
    assert all(math.isclose(a, b) for a, b in zip(got, want))


def test_three_days_at_15s_is_three_requests():
    assert len(list(chunks(NOW - 3 * 86_400, NOW, 15.0))) == 2   # 17,281 points: 11,000 + 6,281
    assert len(list(chunks(0.0, 22_000.0, 1.0))) == 3             # 22,001 points


def test_query_range_asks_each_chunk_and_joins_the_series_by_labels():
    asked = []

    def fetch(url, form):
        asked.append((url, dict(form)))
        lo, hi, step = float(form["start"]), float(form["end"]), float(form["step"])
        pts = [(lo + i * step, lo + i * step) for i in range(int((hi - lo) / step) + 1)]
        return matrix(({"__name__": "m", "broker": "b1"}, pts),
                      ({"__name__": "m", "broker": "b2"}, pts[:1]))

    got = query_range("http://p:9090", "m", 0.0, 24.0, 1.0, fetch=fetch, max_points=10)
    assert [a[0] for a in asked] == ["http://p:9090/api/v1/query_range"] * 3
    assert [(a[1]["start"], a[1]["end"], a[1]["step"]) for a in asked] == [
        ("0", "9", "1"), ("10", "19", "1"), ("20", "24", "1")]
    assert [s.labels["broker"] for s in got] == ["b1", "b2"]
    assert [t for t, _ in got[0].points] == [float(i) for i in range(25)]
    assert [t for t, _ in got[1].points] == [0.0, 10.0, 20.0]


# ---------------------------------------------------------------------------- replies


def test_a_reply_in_the_documented_shape_gives_its_series_with_special_values():
    body = matrix(({"__name__": "up", "job": "prometheus", "instance": "localhost:9090"},
                   [(1435781430.781, 1), (1435781445.781, "NaN"), (1435781460.781, "+Inf")]))
    [s] = parse_series(body, "here")
    assert s.name == "up" and s.labels["instance"] == "localhost:9090"
    assert s.points[0] == (1435781430.781, 1.0)
    assert math.isnan(s.points[1][1]) and s.points[2][1] == math.inf


@pytest.mark.parametrize("body,says", [
    (b'{"status":"error","errorType":"bad_data","error":"exceeded maximum resolution of 11,000 points"}',
     "Prometheus says bad_data: exceeded maximum resolution"),
    (b"<html>404</html>", "not JSON; is this a Prometheus server?"),
    (b'{"status":"success","data":{"resultType":"vector","result":[]}}', "expected a matrix result"),
])
def test_a_bad_reply_is_one_line(body, says):
    with pytest.raises(UsageError, match="^here: ") as e:
        parse_series(body, "here")
    assert says in str(e.value) and "\n" not in str(e.value)


# ---------------------------------------------------------------------------- times and the URL


@pytest.mark.parametrize("text,want", [
    ("2024-05-01T09:00:00Z", NOW), ("2024-05-01T11:00:00+02:00", NOW), ("2024-05-01t09:00:00z", NOW),
    ("2024-05-01T09:00:00.250Z", NOW + 0.25), ("2024-05-01 09:00:00Z", NOW),
    ("1714554000", NOW), ("1714554000.5", NOW + 0.5), ("now", NOW), ("now-1h", NOW - 3600),
    ("now-1h30m", NOW - 5400), ("now - 90s", NOW - 90), ("NOW-2h", NOW - 7200)])
def test_times_parse(text, want):
    assert parse_time(text, NOW, "--from") == pytest.approx(want)


@pytest.mark.parametrize("text,says", [
    ("yesterday", "expected RFC 3339"), ("2024-05-01T09:00:00", "no offset; RFC 3339 needs one"),
    ("2024-05-01", "expected a date and a time"), ("now+1h", "expected now or now-<duration>"),
    ("now-1x", "expected now-<duration>"), ("-5", "expected RFC 3339"), ("nan", "expected RFC 3339")])
def test_bad_times_are_one_line_naming_the_flag(text, says):
    with pytest.raises(UsageError, match=r"^--to = ") as e:
        parse_time(text, NOW, "--to")
    assert says in str(e.value)


def test_the_rfc3339_time_is_what_datetime_says():
    assert parse_time("2030-01-02T03:04:05Z", NOW, "--from") == dt.datetime(
        2030, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc).timestamp()


@pytest.mark.parametrize("text,want", [("http://127.0.0.1:9090", "http://127.0.0.1:9090"),
                                       ("https://prom.example/prefix/", "https://prom.example/prefix")])
def test_urls(text, want):
    assert parse_url(text) == want


@pytest.mark.parametrize("text", ["127.0.0.1:9090", "ftp://x", "http://", "http://p:9090/?q=1", "http://p:99999"])
def test_bad_urls_are_one_line(text):
    with pytest.raises(UsageError, match=r"^--prometheus = "):
        parse_url(text)


# ---------------------------------------------------------------------------- the command's bad input


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]    # closed again on return: nothing listens there


@pytest.mark.parametrize("argv,says", [
    ([], "give recording folders (RUN_DIR...) or --prometheus URL --from T"),
    (["run-dir", "--prometheus", "http://127.0.0.1:9090", "--from", "now-1h"], "not both"),
    (["run-dir", "--from", "now-1h"], "--from goes with --prometheus"),
    (["--prometheus", "http://127.0.0.1:9090"], "--from is required"),
    (["--prometheus", "localhost:9090", "--from", "now-1h"], "--prometheus = 'localhost:9090': expected"),
    (["--prometheus", "http://127.0.0.1:9090", "--from", "now", "--to", "now-1h"], "is not before --to"),
    (["--prometheus", "http://127.0.0.1:9090", "--from", "now-1h", "--step", "0"], "--step = '0'"),
    (["--prometheus", "http://127.0.0.1:9090", "--from", "now-1h", "--set", "nope=1"], "nope = '1': unknown key"),
    (["--prometheus", "http://127.0.0.1:9090", "--from", "now-1h", "--broker-conf", "/no/such/file"],
     "--broker-conf = '/no/such/file'"),
])
def test_bad_rollup_input_is_one_line_and_exit_2(argv, says, capsys, tmp_path):
    assert main(["rollup", *argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pulsar-lb-emulator: error: ") and err.count("\n") == 1 and says in err, err
    assert not (tmp_path / "out").exists()


def test_an_unreachable_server_is_one_line_and_exit_2_from_the_command(tmp_path):
    port = closed_port()
    done = subprocess.run([sys.executable, "-m", "emulator", "rollup", "--prometheus", f"http://127.0.0.1:{port}",
                           "--from", "now-1h", "--out", str(tmp_path / "out"), "--quiet"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (f"pulsar-lb-emulator: error: http://127.0.0.1:{port}/api/v1/query_range: cannot "
                           "reach the Prometheus server ([Errno 111] Connection refused)\n")
    assert not (tmp_path / "out").exists()
