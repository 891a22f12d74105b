"""Every bad input is answered before anything starts: exit 2, one line on stderr naming the file or
flag, the key and the value, no traceback (issue 12, item 4)."""

from __future__ import annotations

import io
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from emulator.cli import main
from emulator.workload import limits
from emulator.workload.loader import loads

DATA = Path(__file__).parent / "data"
HEAD = "[scenario]\nname = 'x'\ndescription = 'd'\nduration = '10m'\n"
NS = "[[namespaces]]\nname = 'a/b'\n"
TOPICS = NS + "[[topics]]\nnamespace = 'a/b'\n"


def bad(capsys, argv: list[str], *needles: str) -> str:
    """Run the CLI in-process; assert exit 2 and one line holding every needle; return the line."""
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's own errors (type=... parsers) exit from parse_args
        code = e.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def scenario(tmp_path: Path, body: str, head: str = HEAD) -> str:
    path = tmp_path / "s.toml"
    path.write_text(head + body)
    return str(path)


# ------------------------------------------------------------------------------------ sizes

SIZES = {
    "brokers": ("[cluster]\nbrokers = 10000000\n", ["cluster.brokers", "10000000", "2,000"]),
    "brokers_past_int64": ("[cluster]\nbrokers = 99999999999999999999\n",
                           ["cluster.brokers", "99999999999999999999", "2,000"]),
    "topics": (TOPICS + "count = 1000000000000\n", ["topics[0].count", "1000000000000", "2,000,000"]),
    "partitions": (TOPICS + "count = 1000\npartitions = 5000\n", ["topics[0].count", "5,000,000"]),
    "producers": (TOPICS + "count = 1000\nproducers = 5000\n", ["topics[0].producers", "5000", "2,000,000"]),
    "bundles": ("[[namespaces]]\nname = 'a/b'\nbundles = 2000000\n",
                ["namespaces[0].bundles", "2000000", "1,000,000"]),
    "msg_size": (TOPICS + "msg_size = 1000000000000000000000000000000\n",
                 ["topics[0].msg_size", "5,242,880", "maxMessageSize"]),
    "clients": ("[clients]\ncount = 1000000\n", ["clients.count", "1000000", "100,000"]),
    "add_brokers": ("[[events]]\nat = '1m'\ndo = 'add_brokers'\ncount = 5000\n",
                    ["events[0].count", "5000", "2,000"]),
    "restart_batch": ("[[events]]\nat = '1m'\ndo = 'restart_rolling'\nbatch = 1000000\n",
                      ["events[0].batch", "1000000"]),
}


@pytest.mark.parametrize("case", sorted(SIZES))
def test_sizes_past_what_fits_in_memory_are_refused_with_the_limit(tmp_path, capsys, case):
    body, needles = SIZES[case]
    path = scenario(tmp_path, body)
    bad(capsys, ["run", path, "--quiet"], path, *needles, *(["fit in memory"] if case != "msg_size" else []))


def test_namespace_and_event_counts_have_limits(monkeypatch):
    monkeypatch.setattr(limits, "MAX_NAMESPACES", 2)
    with pytest.raises(ValueError, match=r"namespaces = .*3 namespaces; at most 2"):
        loads(HEAD + "".join(f"[[namespaces]]\nname = 'a/n{i}'\n" for i in range(3)), "s.toml")
    monkeypatch.setattr(limits, "MAX_EVENTS", 2)
    with pytest.raises(ValueError, match=r"events = .*3 events; at most 2"):
        loads(HEAD + "[[events]]\nat = '1m'\ndo = 'leader_failover'\n" * 3, "s.toml")


def test_the_restart_bench_shape_is_well_inside_the_limits():
    """100 brokers, 65 namespaces of 1,000 bundles, 100,000 topics with one producer each."""
    text = (HEAD + "[cluster]\nbrokers = 100\n[settings]\nloadBalancerNamespaceMaximumBundles = 1000\n"
            + "".join(f"[[namespaces]]\nname = 'public/ns-{i}'\nbundles = 1000\n" for i in range(65))
            + "".join(f"[[topics]]\nnamespace = 'public/ns-{i}'\ncount = {100_000 // 65 + (i < 100_000 % 65)}\n"
                      f"name = 't{i}-{{i}}'\nconsumers = 0\n" for i in range(65)))
    s = loads(text, "bench.toml")
    assert sum(g.count for g in s.topics) == 100_000
    assert 10 * 100 <= limits.MAX_BROKERS and 10 * 65_000 <= limits.MAX_BUNDLES
    assert 10 * 100_000 <= limits.MAX_TOPICS and 10 * 100_000 <= limits.MAX_HANDLES


# ------------------------------------------------------------------------------------ TOML itself

def test_deeply_nested_toml_is_one_line_not_a_recursion_error(tmp_path, capsys):
    path = scenario(tmp_path, "x = " + "[" * 5000 + "]" * 5000 + "\n")
    bad(capsys, ["run", path, "--quiet"], path, "nested more than 64 deep")


def test_huge_toml_is_refused_before_reading(tmp_path, capsys):
    path = tmp_path / "big.toml"
    path.write_text(HEAD + "# " + "x" * (limits.MAX_TOML_BYTES + 10) + "\n")
    bad(capsys, ["run", str(path), "--quiet"], str(path), "larger than")


def test_binary_and_non_utf8_scenarios(tmp_path, capsys):
    path = tmp_path / "bin.toml"
    path.write_bytes(b"\x00\x01\x02\xff\xfe")
    bad(capsys, ["run", str(path), "--quiet"], str(path), "UTF-8")
    path.write_bytes(HEAD.encode() + b"\x00\n")
    bad(capsys, ["run", str(path), "--quiet"], str(path), "NUL")


# ------------------------------------------------------------------------------------ NaN, inf, zero

NONSENSE = {
    "inf_rate": (TOPICS + "rate = { rate = inf }\n", ["topics[0].rate.rate", "inf", "finite"]),
    "nan_capacity": ("[cluster.capacity]\ncores = nan\n", ["cluster.capacity.cores", "nan", "finite"]),
    "inf_duration": ("", ["scenario.duration", "inf"]),
    "zero_report_interval": ("[cluster]\nreport_interval = '0s'\n", ["cluster.report_interval", "> 0"]),
    "zero_start_timeout": ("[cluster]\nbroker_start_timeout = 0\n", ["cluster.broker_start_timeout"]),
    "zero_diurnal_period": ("[traffic]\npatterns = [{ kind = 'diurnal', period = '0s' }]\n",
                            ["traffic.patterns[0].period", "> 0"]),
    "zero_jitter_period": (TOPICS + "consumer_jitter = { period = 0 }\n",
                           ["topics[0].consumer_jitter.period", "> 0"]),
    "zero_spike": ("[[events]]\nat = '1m'\ndo = 'spike'\nfactor = 2\nduration = '0s'\n",
                   ["events[0].duration", "> 0"]),
    "zero_ramp": ("[[events]]\nat = '1m'\ndo = 'ramp'\nfactor = 2\nover = 0\n", ["events[0].over", "> 0"]),
    "empty_duration": ("", ["scenario.duration"]),
}


@pytest.mark.parametrize("case", sorted(NONSENSE))
def test_infinite_nan_empty_or_zero_times_and_rates(tmp_path, capsys, case):
    body, needles = NONSENSE[case]
    head = HEAD
    if case == "inf_duration":
        head = HEAD.replace("duration = '10m'", "duration = inf")
    if case == "empty_duration":
        head = HEAD.replace("duration = '10m'", "duration = ''")
    path = scenario(tmp_path, body, head)
    bad(capsys, ["run", path, "--quiet"], path, *needles)


@pytest.mark.parametrize("flag,value", [("--duration", "inf"), ("--duration", "0"), ("--duration", ""),
                                        ("--duration", "nan"), ("--record-interval", "inf"),
                                        ("--check-interval", "0s"), ("--monitor-interval", "inf"),
                                        ("--speed", "inf"), ("--speed", "0")])
def test_flag_durations_and_rates(capsys, flag, value):
    line = bad(capsys, ["run", "default", "--quiet", flag, value], flag)
    assert repr(value) in line or value in line


# ------------------------------------------------------------------------------------ broker.conf


def conf(tmp_path: Path, data: bytes | str) -> str:
    path = tmp_path / "broker.conf"
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return str(path)


BROKER_CONFS = {
    "binary": (b"\x7fELF\x02\x01\x01\x00\x00", ["--broker-conf", "NUL", "binary"]),
    "latin1": (b"loadBalancerEnabled=true\n# caf\xe9\n", ["--broker-conf", "not UTF-8", "line 2"]),
    "int_range": ("loadBalancerBrokerMaxTopics=2147483648\n",
                  ["loadBalancerBrokerMaxTopics", "2147483648", "Java int"]),
    "negative_int_range": ("loadBalancerNamespaceBundleMaxSessions=-2147483649\n",
                           ["loadBalancerNamespaceBundleMaxSessions", "Java int"]),
    "long_range": ("brokerShutdownTimeoutMs=9223372036854775808\n",
                   ["brokerShutdownTimeoutMs", "9223372036854775808", "Java long"]),
    "digits": ("loadBalancerBrokerMaxTopics=" + "9" * 5000 + "\n", ["loadBalancerBrokerMaxTopics", "Java long"]),
    "infinity": ("loadBalancerCPUResourceWeight=Infinity\n", ["loadBalancerCPUResourceWeight", "finite"]),
    "nan": ("loadBalancerHistoryResourcePercentage=NaN\n", ["loadBalancerHistoryResourcePercentage", "NaN"]),
    "placement": ("loadBalancerLoadPlacementStrategy=org.example.Nope\n",
                  ["loadBalancerLoadPlacementStrategy", "org.example.Nope", "unknown placement"]),
    "shedder": ("loadBalancerLoadSheddingStrategy=Nope\n", ["loadBalancerLoadSheddingStrategy", "Nope"]),
    "zero_period": ("loadBalancerSheddingIntervalMinutes=0\n", ["loadBalancerSheddingIntervalMinutes", "> 0"]),
}


@pytest.mark.parametrize("case", sorted(BROKER_CONFS))
def test_bad_broker_confs(tmp_path, capsys, case):
    data, needles = BROKER_CONFS[case]
    path = conf(tmp_path, data)
    bad(capsys, ["run", "default", "--quiet", "--broker-conf", path], path, *needles)


def test_a_long_key_takes_values_past_java_int(tmp_path):
    from emulator.runner import load_broker_conf

    c = load_broker_conf(conf(tmp_path, "brokerShutdownTimeoutMs=3000000000\n"))
    assert c.broker_shutdown_timeout_ms == 3_000_000_000


def test_huge_broker_conf(tmp_path, capsys):
    from emulator.preflight import MAX_BROKER_CONF_BYTES

    path = conf(tmp_path, b"#" * (MAX_BROKER_CONF_BYTES + 1))
    bad(capsys, ["run", "default", "--quiet", "--broker-conf", path], path, "larger than")


def test_a_pulsar_style_broker_conf_loads_unchanged_and_lists_ignored_keys_at_debug():
    from emulator.observe.logs import configure_logging
    from emulator.runner import load_broker_conf
    from emulator.runtime import VirtualClock

    warn, log = io.StringIO(), io.StringIO()
    configure_logging(VirtualClock(), level="debug", stream=log)
    c = load_broker_conf(str(DATA / "pulsar-style-broker.conf"), warn)
    assert c.zoo_keeper_session_timeout_millis == -1          # "-1" = unset, as Pulsar ships it
    assert c.load_balancer_override_broker_nic_speed_gbps is None   # empty value = the default
    assert c.load_balancer_direct_memory_resource_weight == 1.0
    assert c.load_balancer_load_shedding_strategy.endswith("ThresholdShedder")
    lines = warn.getvalue().splitlines()
    assert len(lines) == 1 and "ignoring 27 key(s)" in lines[0] and "--log-level debug" in lines[0]
    listed = log.getvalue()
    for key in ("schemaRegistryCompatibilityCheckers", "httpMaxRequestHeaderSize", "zooKeeperCacheExpirySeconds",
                "webServiceTlsProvider"):
        assert key in listed
    assert "advertisedListeners" not in listed                 # a commented-out key stays a comment
    configure_logging(VirtualClock(), level="warning", stream=io.StringIO())
    c2 = load_broker_conf(str(DATA / "pulsar-style-broker.conf"), io.StringIO())
    assert c2 == c


def test_a_pulsar_style_broker_conf_runs_with_only_the_ignored_keys_warning():
    p = subprocess.run([sys.executable, "-m", "emulator", "run", "default", "--duration", "30s", "--quiet",
                        "--broker-conf", str(DATA / "pulsar-style-broker.conf")],
                       capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "ignoring 27 key(s)" in lines[0], p.stderr


# ------------------------------------------------------------------------------------ metrics, record


def test_metrics_port_in_use_is_refused_before_the_cluster_starts(capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        bad(capsys, ["run", "default", "--quiet", "--metrics-port", str(port)], "--metrics-port", str(port),
            "in use")


@pytest.mark.parametrize("args,needles", [
    (["--metrics-port", "70000"], ["--metrics-port", "70000", "0..65535"]),
    (["--metrics-port", "0", "--metrics-host", "no-such-host.invalid"], ["--metrics-host", "no-such-host.invalid"]),
    (["--metrics-port", "0", "--metrics-host", "192.0.2.1"], ["--metrics-host", "192.0.2.1", "cannot bind"]),
])
def test_metrics_port_and_host(capsys, args, needles):
    bad(capsys, ["run", "default", "--quiet", *args], *needles)


@pytest.mark.parametrize("args,needles", [
    (["--pulsar-port", "6650"], ["--pulsar-port", "6650", "--clock wall", "'virtual'"]),
    (["--pulsar-port", "70000", "--clock", "wall"], ["--pulsar-port", "70000", "1..65535"]),
    (["--pulsar-port", "0", "--clock", "wall"], ["--pulsar-port", "'0'", ">= 1"]),
    (["--pulsar-port", "x"], ["--pulsar-port", "'x'", "integer"]),
])
def test_pulsar_port(capsys, args, needles):
    bad(capsys, ["run", "default", "--quiet", *args], *needles)


def test_a_busy_pulsar_port_or_one_on_the_metrics_port_is_refused_before_the_cluster_starts(capsys):
    """Broker k listens on BASE + k - 1: each of the default scenario's 20 ports must be free, and apart
    from the metrics port (a busy port only warned while the cluster ran)."""
    from emulator.wire.options import free_base_port

    base = free_base_port(21)
    with socket.socket() as held:
        held.bind(("127.0.0.1", base + 4))
        held.listen()
        bad(capsys, ["run", "default", "--quiet", "--clock", "wall", "--pulsar-port", str(base)],
            "--pulsar-port", str(base), f"broker-5's port {base + 4}", "not free")
    bad(capsys, ["run", "default", "--quiet", "--clock", "wall", "--pulsar-port", str(base),
                 "--metrics-port", str(base + 2)], "--pulsar-port", "broker-3", "the metrics port")
    bad(capsys, ["run", "default", "--quiet", "--clock", "wall", "--pulsar-port", "65530"],
        "--pulsar-port", "65530", "past 65535")


def test_a_scenarios_pulsar_port_needs_the_wall_clock_too(tmp_path, capsys):
    path = scenario(tmp_path, "[serve]\npulsar_port = 6650\n")
    bad(capsys, ["run", path, "--quiet"], path, "[serve] pulsar_port", "6650", "--clock wall")
    path = scenario(tmp_path, "[serve]\npulsar_port = 0\n")
    bad(capsys, ["run", path, "--quiet", "--clock", "wall"], "serve.pulsar_port", "0")


def test_record_folder_must_be_a_writable_folder(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    bad(capsys, ["run", "default", "--quiet", "--record", str(afile)], "--record", str(afile), "not a folder")
    under = afile / "sub"
    bad(capsys, ["run", "default", "--quiet", "--record", str(under)], "--record", str(under), "not writable")


def test_a_strategy_pair_made_by_broker_conf_and_scenario_is_checked_up_front(tmp_path, capsys):
    """broker.conf sets only the placement (AvgShedder); with the default ThresholdShedder Pulsar's MLMI
    throws IllegalArgumentException at initialize: here one line before the cluster starts."""
    path = conf(tmp_path, "loadBalancerLoadPlacementStrategy=AvgShedder\n")
    bad(capsys, ["run", scenario(tmp_path, ""), "--quiet", "--broker-conf", path], path,
        "loadBalancerLoadPlacementStrategy", "AvgShedder", "must be the shedding strategy too")


def test_a_first_leader_that_is_not_a_broker_of_the_scenario(tmp_path, capsys):
    """`emulator_first_leader` (a snapshot's leader, snapshot/settings.py) must name one of the brokers."""
    path = scenario(tmp_path, "[cluster]\nbrokers = 2\n[settings]\nemulator_first_leader = 'broker-9:8080'\n" + TOPICS)
    bad(capsys, ["run", path, "--duration", "1m"], "emulator_first_leader", "broker-9:8080",
        "broker-1:8080, broker-2:8080")
