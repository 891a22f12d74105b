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


# ------------------------------------------------------------------------------ --version, did you mean, --help


def test_version_is_the_distributions(capsys):
    import importlib.metadata

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out == f"pulsar-lb-emulator {importlib.metadata.version('pulsar-lb-emulator')}\n"
    p = cli("--version")
    assert p.returncode == 0 and p.stdout.startswith("pulsar-lb-emulator ")


def test_version_falls_back_to_the_source_trees_when_not_installed(monkeypatch):
    import importlib.metadata

    import emulator
    from emulator import cli as cli_module

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert cli_module.version() == f"{emulator.__version__} (not installed; the source tree's version)"


@pytest.mark.parametrize("argv,needles", [
    (["run", "defualt"], ["defualt", "not a built-in scenario", "(did you mean default?)", "built-in: "]),
    (["scenarios", "show", "overloadin"], ["'overloadin'", "(did you mean overloading?)", "known: "]),
    (["run", "--clock", "wal"], ["--clock", "invalid choice: 'wal' (did you mean wall?)", "'virtual', 'wall'"]),
    (["run", "--log-level", "warn"], ["--log-level", "(did you mean warning?)"]),
    (["scenarios", "shw"], ["invalid choice: 'shw' (did you mean show?)"]),
    (["rn"], ["invalid choice: 'rn' (did you mean run?)", "'scenarios'"]),
    (["run", "--placement", "LeastLongTermMesageRate", "--quiet"],
     ["--placement = 'LeastLongTermMesageRate'", "(did you mean LeastLongTermMessageRate?)", "known: AvgShedder"]),
    (["run", "--shedder", "thresholdshedder", "--quiet"],
     ["--shedder = 'thresholdshedder'", "(did you mean ThresholdShedder?)", "known: AvgShedder"]),
    (["run", "--set", "loadBalancerSheddingIntervalMinute=5", "--quiet"],
     ["--set: loadBalancerSheddingIntervalMinute = '5'", "(did you mean loadBalancerSheddingIntervalMinutes?)"]),
])
def test_an_unknown_name_gets_the_closest_known_one(capsys, argv, needles):
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.mark.parametrize("name,hint", [("capcity", "capacity"), ("brokrs", "brokers")])
def test_an_unknown_scenario_key_gets_the_closest_known_one(tmp_path, capsys, name, hint):
    path = tmp_path / "s.toml"
    path.write_text(HEAD + f"[cluster]\n{name} = 3\n")
    try:
        code = main(["run", str(path), "--quiet"])
    except SystemExit as e:
        code = e.code
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert f"{path}: cluster.{name} = 3: unknown key (did you mean {hint}?); expected one of: brokers," in line


def test_an_unknown_load_manager_warns_once_with_the_closest_and_still_falls_back(monkeypatch, capsys):
    """Pulsar's fallback (SimpleLoadManagerImpl) is kept; the command names the likely intent once."""
    import emulator.runner

    seen = {}

    def fake_run(opts):
        seen["conf"] = opts.overrides
        raise emulator.runner.RunError("stop here")

    monkeypatch.setattr(emulator.runner, "run", fake_run)
    assert main(["run", "--load-manager", "ModularLoadManagerImp", "--quiet"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == ("pulsar-lb-emulator: warning: --load-manager = 'ModularLoadManagerImp': not a load manager "
                      "the emulator knows (did you mean ModularLoadManagerImpl?); the brokers fall back to "
                      "SimpleLoadManagerImpl, as Pulsar does")
    assert seen["conf"]["loadManagerClassName"] == "ModularLoadManagerImp"
    assert main(["run", "--load-manager", "NoopLoadManager", "--quiet"]) == 2
    assert "warning" not in capsys.readouterr().err


def test_run_help_lists_every_load_manager_strategy_and_shedder_from_the_registries(capsys):
    import shedders
    import strategies
    from emulator.model.config import LOAD_MANAGER_CLASSES

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())

    def flag_help(flag: str, next_flag: str) -> str:
        return text.split(f"{flag} CLASS ", 1)[1].split(f" {next_flag} ", 1)[0]

    placement = flag_help("--placement", "--shedder CLASS")
    shedder = flag_help("--shedder", "--load-manager CLASS")
    manager = flag_help("--load-manager", "--seed")
    for name in strategies.names():
        assert name in placement
    assert "LeastLongTermMessageRate (default)" in placement
    for name in shedders.names():
        assert name in shedder
    assert "ThresholdShedder (default)" in shedder
    for name in shedders.extensible_names():          # a long name the help wraps: compare without spaces
        assert name in shedder.replace(" ", "")
    for name in LOAD_MANAGER_CLASSES:
        assert name.rsplit(".", 1)[1] in manager
    assert "ModularLoadManagerImpl (default)" in manager


def test_run_help_follows_the_registries(monkeypatch, capsys):
    """A new built-in shows up in --help without a hand-written list to update."""
    import types

    import strategies

    monkeypatch.setattr(strategies, "MODULAR_BUILTINS",
                        types.MappingProxyType({**strategies.MODULAR_BUILTINS, "MyNewStrategy": "x:Y"}))
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "MyNewStrategy" in capsys.readouterr().out
