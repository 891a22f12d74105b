"""`run --load-manager`: the default scenario end to end under another load manager, invariants on."""

from __future__ import annotations

import json
import subprocess
import sys

from emulator.observe.recording_files import iter_lines

NOOP = "org.apache.pulsar.broker.loadbalance.NoopLoadManager"


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "emulator", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_noop_load_manager_runs_the_default_scenario_end_to_end(tmp_path):
    p = cli("run", "default", "--duration", "4m", "--seed", "1", "--quiet", "--record", str(tmp_path),
            "--load-manager", "NoopLoadManager")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]   # 1 would be an invariant violation
    assert "invariant violations" not in p.stdout
    (run_dir,) = list(tmp_path.iterdir())
    info = json.loads((run_dir / "run.json").read_text())
    assert info["config"]["loadManagerClassName"] == NOOP
    # every bundle is owned where its first lookup landed: no redirect, no leader decision
    assert " redirects 0;" in p.stdout and "bundles            64 owned" in p.stdout
    kinds = {json.loads(line)["kind"] for line in iter_lines(run_dir, "events.jsonl")}
    assert "actor_failed" not in kinds
    decisions = "\n".join(iter_lines(run_dir, "decisions.jsonl"))
    # Modular's 4 minutes hold about 110 assignments and 4 shedding plans; Noop's none
    assert '"decision":"assignment"' not in decisions and '"decision":"shedding_plan"' not in decisions


def test_an_unknown_load_manager_falls_back_with_pulsars_warning():
    p = cli("run", "broker-crash", "--duration", "1m", "--seed", "1", "--quiet",
            "--load-manager", "com.example.Missing")
    assert p.returncode == 0, p.stderr[-2000:]
    warnings = [line for line in p.stderr.splitlines() if "Error when trying to create load manager" in line]
    assert len(warnings) == len({w.split("actor=")[1].split()[0] for w in warnings}) >= 3


def test_simple_load_manager_runs_the_default_scenario_end_to_end(tmp_path):
    p = cli("run", "default", "--duration", "4m", "--seed", "1", "--quiet", "--record", str(tmp_path),
            "--load-manager", "SimpleLoadManagerImpl")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]   # 1 would be an invariant violation
    assert "invariant violations" not in p.stdout and "bundles            64 owned" in p.stdout
    (run_dir,) = list(tmp_path.iterdir())
    info = json.loads((run_dir / "run.json").read_text())
    assert info["config"]["loadManagerClassName"] == "org.apache.pulsar.broker.loadbalance.impl.SimpleLoadManagerImpl"
    kinds = {json.loads(line)["kind"] for line in iter_lines(run_dir, "events.jsonl")}
    assert "actor_failed" not in kinds
    decisions = [json.loads(line) for line in iter_lines(run_dir, "decisions.jsonl")]
    # leastLoadedServer: every assignment decided on the leader, spread over the brokers
    assignments = [d for d in decisions if d["decision"] == "assignment"]
    assert assignments and not any(d["local"] for d in assignments)
    assert len({d["broker"] for d in assignments}) >= 10
