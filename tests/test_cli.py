"""The command line: runs print a deterministic summary; bad input is one line on stderr and exit 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from emulator.cli import main
from emulator.model.durations import parse_flag_duration
from emulator.model.errors import UsageError


def cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "emulator", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_run_prints_the_summary_and_is_byte_identical_for_the_same_seed():
    a = cli("run", "broker-crash", "--duration", "12m", "--seed", "3", "--quiet")
    b = cli("run", "broker-crash", "--duration", "12m", "--seed", "3", "--quiet")
    assert a.returncode == 0, a.stderr
    assert a.stdout.startswith("summary of broker-crash (seed 3)")
    for needle in ("unloads", "splits", "lookups", "redirects", "failures", "unavailable", "balance"):
        assert needle in a.stdout
    assert a.stdout == b.stdout
    c = cli("run", "broker-crash", "--duration", "12m", "--seed", "4", "--quiet")
    assert c.stdout != a.stdout


def test_help_states_the_settings_precedence():
    out = cli("run", "--help").stdout
    assert "built-in defaults < --broker-conf < scenario [settings] < --set / --placement / --shedder" in out


def test_scenarios_lists_and_shows_the_library(capsys):
    assert main(["scenarios"]) == 0
    listing = capsys.readouterr().out
    for name in ("default", "overloading", "rolling-restart", "broker-crash", "heterogeneous-brokers"):
        assert name in listing
    assert main(["scenarios", "show", "overloading"]) == 0
    assert "[scenario]" in capsys.readouterr().out


def test_broker_conf_sets_keys_and_warns_once_about_unknown_ones(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("loadBalancerSheddingEnabled=false\nzookeeperServers=zk:2181\nbrokerServicePort=6650\n")
    p = cli("run", "broker-crash", "--duration", "2m", "--broker-conf", str(conf), "--quiet")
    assert p.returncode == 0, p.stderr
    warnings = [line for line in p.stderr.splitlines() if "ignoring" in line]
    assert len(warnings) == 1 and "ignoring 2 key(s)" in warnings[0] and "--log-level debug" in warnings[0]
    debug = cli("run", "broker-crash", "--duration", "1s", "--broker-conf", str(conf), "--quiet",
                "--log-level", "debug")
    listed = [line for line in debug.stderr.splitlines() if "ignored keys" in line]
    assert len(listed) == 1 and "zookeeperServers" in listed[0] and "brokerServicePort" in listed[0]


@pytest.mark.parametrize("text,seconds", [("90m", 5400), ("2h", 7200), ("1h30m", 5400), ("1h 30m", 5400),
                                          ("45s", 45), ("10", 10), ("250ms", 0.25)])
def test_flag_durations_share_the_scenario_grammar(text, seconds):
    assert parse_flag_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "-5", "0", "5x", "nan", "inf"])
def test_bad_durations_name_the_flag_and_value(text):
    with pytest.raises(UsageError, match=f"--record-interval = {text!r}: "):
        parse_flag_duration(text, flag="--record-interval")


HEAD = "[scenario]\nname = 'x'\ndescription = 'd'\nduration = '10m'\n"
BAD_SCENARIOS = {
    "malformed": ("[scenario\nname = 'x'\n", "bad.toml"),
    "unknown_key": (HEAD + "duraton = '10m'\n", "duraton"),
    "wrong_type": (HEAD + "seed = 'seven'\n", "seed"),
    "negative_capacity": (HEAD + "[cluster]\nbrokers = 2\n[cluster.capacity]\ncores = -4\n", "cores"),
    "unknown_event": (HEAD + "[[events]]\nat = '1m'\ndo = 'explode'\n", "explode"),
    "event_past_duration": (HEAD + "[[events]]\nat = '20m'\ndo = 'leader_failover'\n", "events[0].at"),
    "unknown_strategy": (HEAD + "[settings]\nloadBalancerLoadSheddingStrategy = 'Nope'\n", "Nope"),
}


@pytest.mark.parametrize("case", sorted(BAD_SCENARIOS))
def test_bad_scenario_files_give_one_line_and_exit_2(tmp_path, case):
    text, needle = BAD_SCENARIOS[case]
    path = tmp_path / "bad.toml"
    path.write_text(text)
    p = cli("run", str(path), "--quiet")
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert "bad.toml" in lines[0] and needle in lines[0], lines[0]
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("args,needle", [
    (["run", "--duration", "soon"], "--duration = 'soon'"),
    (["run", "--set", "loadBalancerSheddingIntervalMinutes=abc"], "loadBalancerSheddingIntervalMinutes"),
    (["run", "--set", "noSuchKey=1"], "noSuchKey"),
    (["run", "--set", "novalue"], "--set = 'novalue'"),
    (["run", "--placement", "NoSuchStrategy"], "NoSuchStrategy"),
    (["run", "--shedder", "NoSuchShedder"], "NoSuchShedder"),
    (["run", "--broker-conf", "/nonexistent/broker.conf"], "/nonexistent/broker.conf"),
    (["run", "no-such-scenario"], "no-such-scenario"),
    (["run", "--speed", "-3"], "--speed = '-3'"),
    (["run", "--check-interval", "0s"], "--check-interval = '0s'"),
    (["run", "--check-interval", "often"], "--check-interval = 'often'"),
    (["scenarios", "show", "nope"], "nope"),
])
def test_bad_flags_exit_2_with_one_line_and_no_traceback(args, needle):
    p = cli(*args)
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], p.stderr
    assert "Traceback" not in p.stderr


def test_bad_broker_conf_value_names_file_key_and_value(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("loadBalancerBrokerOverloadedThresholdPercentage = lots\n")
    p = cli("run", "--broker-conf", str(conf))
    assert p.returncode == 2
    line = p.stderr.strip()
    assert str(conf) in line and "loadBalancerBrokerOverloadedThresholdPercentage" in line and "lots" in line


def test_placement_and_shedder_flags_reach_the_run(tmp_path):
    p = cli("run", "broker-crash", "--duration", "2m", "--quiet", "--record", str(tmp_path),
            "--placement", "LeastResourceUsageWithWeight", "--shedder", "UniformLoadShedder",
            "--set", "loadBalancerBrokerOverloadedThresholdPercentage=70")
    assert p.returncode == 0, p.stderr
    import json

    (run_dir,) = list(tmp_path.iterdir())
    info = json.loads((run_dir / "run.json").read_text())
    assert info["placement"].endswith("LeastResourceUsageWithWeight")
    assert info["shedder"].endswith("UniformLoadShedder")
    assert info["config"]["loadBalancerBrokerOverloadedThresholdPercentage"] == "70"


def test_monitor_interval_prints_the_extensions_tables_for_extensible_brokers():
    """`run --monitor-interval` under the Extensible load manager prints BrokerMonitor's --extensions
    tables from the broker-load-data view (its brokers register BrokerLookupData, not load reports)."""
    r = cli("run", "scale-up", "--duration", "2m", "--seed", "1", "--quiet", "--monitor-interval", "60",
            "--load-manager", "ExtensibleLoadManagerImpl")
    assert r.returncode == 0, r.stderr
    block = r.stdout.split("--- t=120s ---", 1)[1]
    assert "Broker Data for broker-1:8080" in block and "||COUNT" in block and "||SHORT" not in block
    cpu = [line for line in block.splitlines() if line.startswith("||  ")][0]
    assert float(cpu.split("|")[3]) > 0          # a real CPU %, not Modular's decoder reading zeros
