"""Bad input to `snapshot export` / `snapshot to-scenario`: one line naming what is wrong, exit 2."""

from __future__ import annotations

import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator.cli import main

SAMPLE = Path(__file__).resolve().parents[2] / "emulator" / "snapshot" / "sample"


def run_cli(capsys, *argv: str) -> tuple[int, str]:
    rc = main(list(argv))
    err = capsys.readouterr().err
    return rc, err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def fake_pulsar() -> Iterator[tuple[str, dict[str, tuple[int, bytes]]]]:
    """A web server answering canned (status, body) per path; 404 JSON for the rest."""
    answers: dict[str, tuple[int, bytes]] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            status, body = answers.get(self.path, (404, b'{"reason": "not here"}'))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", answers
    finally:
        server.shutdown()
        server.server_close()


def test_export_rejects_a_bad_url_a_used_folder_and_a_template_without_broker(capsys, tmp_path):
    rc, err = run_cli(capsys, "snapshot", "export", "--url", "localhost:8080", str(tmp_path / "a"))
    assert rc == 2 and "--url = 'localhost:8080': expected http(s)://HOST:PORT" in one_line(err)
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "x").write_text("x")
    rc, err = run_cli(capsys, "snapshot", "export", "--url", "http://127.0.0.1:1", str(tmp_path / "used"))
    assert rc == 2 and "exists and is not an empty folder" in one_line(err)
    rc, err = run_cli(capsys, "snapshot", "export", "--url", "http://127.0.0.1:1", str(tmp_path / "b"),
                      "--broker-url", "http://proxy")
    assert rc == 2 and "--broker-url = 'http://proxy': needs {broker}" in one_line(err)


def test_export_says_which_call_failed_and_why(capsys, tmp_path, fake_pulsar):
    rc, err = run_cli(capsys, "snapshot", "export", "--url", "http://127.0.0.1:1", str(tmp_path / "a"),
                      "--timeout", "5")
    assert rc == 2 and "GET http://127.0.0.1:1/admin/v2/clusters: cannot reach it" in one_line(err)

    url, answers = fake_pulsar
    answers["/admin/v2/clusters"] = (200, b"<html>a login page</html>")
    rc, err = run_cli(capsys, "snapshot", "export", "--url", url, str(tmp_path / "b"))
    assert rc == 2 and f"GET {url}/admin/v2/clusters: the answer is not JSON" in one_line(err)

    answers["/admin/v2/clusters"] = (200, b'["east", "west"]')
    rc, err = run_cli(capsys, "snapshot", "export", "--url", url, str(tmp_path / "c"))
    assert rc == 2 and "2 clusters (east, west); say which with --cluster" in one_line(err)
    rc, err = run_cli(capsys, "snapshot", "export", "--url", url, str(tmp_path / "d"), "--cluster", "north")
    assert rc == 2 and "--cluster = 'north': not one of east, west" in one_line(err)

    answers["/admin/v2/brokers/east"] = (403, b'{"reason": "Don\'t have admin permission"}')
    rc, err = run_cli(capsys, "snapshot", "export", "--url", url, str(tmp_path / "e"), "--cluster", "east")
    assert rc == 2 and one_line(err).endswith(
        f"GET {url}/admin/v2/brokers/east: HTTP 403: Don't have admin permission")

    # a broker id that is not reachable from here: the line says to give --broker-url
    answers["/admin/v2/brokers/east"] = (200, b'["127.0.0.1:1"]')
    answers["/admin/v2/brokers/leaderBroker"] = (200, b'{"brokerId": "127.0.0.1:1", "serviceUrl": "x"}')
    rc, err = run_cli(capsys, "snapshot", "export", "--url", url, str(tmp_path / "f"), "--cluster", "east",
                      "--timeout", "5")
    line = one_line(err)
    assert rc == 2 and "GET http://127.0.0.1:1/admin/v2/broker-stats/load-report: cannot reach it" in line
    assert not (tmp_path / "f" / "index.json").exists()        # an unfinished export has no index


def test_to_scenario_names_the_bad_folder_or_file(capsys, tmp_path):
    rc, err = run_cli(capsys, "snapshot", "to-scenario", str(tmp_path / "none"))
    assert rc == 2 and f"{tmp_path / 'none'}: no such snapshot folder" in one_line(err)
    (tmp_path / "empty").mkdir()
    rc, err = run_cli(capsys, "snapshot", "to-scenario", str(tmp_path / "empty"))
    assert rc == 2 and "no index.json; not a snapshot folder, or an export that did not finish" in one_line(err)

    snap = tmp_path / "snap"
    shutil.copytree(SAMPLE, snap)
    index = json.loads((snap / "index.json").read_text())
    (snap / "index.json").write_text(json.dumps({**index, "format": "other/9"}))
    rc, err = run_cli(capsys, "snapshot", "to-scenario", str(snap))
    assert rc == 2 and "format = 'other/9'; this version reads 'pulsar-lb-emulator-snapshot/1'" in one_line(err)

    (snap / "index.json").write_text(json.dumps(index))
    report = next(c["file"] for c in index["calls"] if c["kind"] == "load_report")
    data = json.loads((snap / report).read_text())
    (snap / report).write_text(json.dumps({**data, "cpu": {"usage": "busy", "limit": 800}}))
    rc, err = run_cli(capsys, "snapshot", "to-scenario", str(snap))
    line = one_line(err)
    assert rc == 2 and f"{snap / report}: not the JSON" in line and "$.cpu.usage" in line

    (snap / report).unlink()
    rc, err = run_cli(capsys, "snapshot", "to-scenario", str(snap))
    assert rc == 2 and f"{snap / report}: listed in index.json" in one_line(err)

    rc, err = run_cli(capsys, "snapshot", "to-scenario", str(SAMPLE), "--duration", "soon")
    assert rc == 2 and "--duration = 'soon'" in one_line(err)


def test_to_scenario_writes_the_file_it_is_asked_to(capsys, tmp_path):
    out = tmp_path / "replay.toml"
    rc = main(["snapshot", "to-scenario", str(SAMPLE), "-o", str(out), "--name", "replay", "--duration", "2h"])
    assert rc == 0 and capsys.readouterr().out == ""
    text = out.read_text()
    assert 'name = "replay"' in text and 'duration = "2h"' in text and 'distribution = "explicit"' in text
