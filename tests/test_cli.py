"""The command line: a short run prints ownership and lookup counts; bad input is one line, exit 2."""

import subprocess
import sys

import pytest

from emulator.cli import main, parse_duration, UsageError


def test_run_prints_ownership_per_broker_and_lookup_counts(capsys):
    assert main(["run", "--brokers", "3", "--topics", "200", "--bundles", "8", "--duration", "2m"]) == 0
    out = capsys.readouterr().out
    assert "bundle ownership per broker:" in out
    assert out.count("(leader)") == 1
    assert "producers connected: 200/200" in out
    assert "violations: 0" in out
    assert sum(int(line.split(": ")[1].split()[0]) for line in out.splitlines()
               if line.startswith("  broker-") and "bundles" in line) == 8


@pytest.mark.parametrize("text,seconds", [("90m", 5400), ("2h", 7200), ("1h30m", 5400), ("45s", 45),
                                          ("10", 10)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "-5", "0", "5x"])
def test_bad_durations_name_the_flag_and_value(text):
    with pytest.raises(UsageError, match="--duration"):
        parse_duration(text)


@pytest.mark.parametrize("args,needle", [
    (["run", "--duration", "soon"], "--duration = 'soon'"),
    (["run", "--brokers", "0"], "--brokers = '0'"),
    (["run", "--placement", "NoSuchStrategy"], "--placement = 'NoSuchStrategy'"),
    (["run", "--namespace", "nonamespace"], "--namespace = 'nonamespace'"),
])
def test_bad_flags_exit_2_with_one_line_and_no_traceback(args, needle):
    proc = subprocess.run([sys.executable, "-m", "emulator", *args], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
