"""The seeded fault soak: a deterministic generator of valid scenarios, a checker that catches every
problem class, and a slice of the real soak (a few seeds, one rerun)."""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

import pytest

from emulator.soak import __main__ as soak_cli
from emulator.soak.check import actor_crashes, run_seed
from emulator.cluster.load_manager import resolve_class_name
from emulator.soak.generate import LOAD_MANAGERS, generate, load_manager_of, scenario_toml
from emulator.workload import loader
from emulator.workload.schema import verb_of


def test_same_seed_same_file_and_seeds_differ():
    assert scenario_toml(11) == scenario_toml(11)
    assert generate(11) == generate(11)
    assert len({scenario_toml(s) for s in range(1, 21)}) == 20


def test_every_generated_scenario_loads_and_the_vocabulary_is_covered():
    verbs: collections.Counter[str] = collections.Counter()
    modes: set[str] = set()
    pairs: set[tuple[str, str | None]] = set()
    managers: set[str] = set()
    for seed in range(1, 151):
        scenario = loader.loads(scenario_toml(seed), f"soak-{seed}")  # raises on any bad key
        assert scenario.seed == seed
        assert sum(g.count * max(1, g.partitions) for g in scenario.topics) <= 700
        pairs.add((scenario.cluster.placement, scenario.cluster.shedder))
        managers.add(resolve_class_name(scenario.settings.get("loadManagerClassName", LOAD_MANAGERS[0])))
        for e in scenario.events:
            verbs[verb_of(e)] += 1
            if hasattr(e, "mode"):
                modes.add(f"{verb_of(e)}:{e.mode}")
    for verb in ("remove_brokers", "restart_rolling", "leader_failover", "session_expire", "add_brokers",
                 "set_capacity", "background_load", "spike", "ramp", "set_rate", "scale_rate", "unload",
                 "split", "set_config"):
        assert verbs[verb] > 0, verb
    for mode in ("kill", "sigterm", "graceful"):
        assert f"remove_brokers:{mode}" in modes and f"restart_rolling:{mode}" in modes
    assert "leader_failover:session_expire" in modes
    import shedders
    import strategies

    assert {p for p, _ in pairs} == set(strategies.names())
    assert {s for _, s in pairs if s is not None} == set(shedders.names())
    assert managers == set(LOAD_MANAGERS)


def test_seed_list_and_rerun_sample():
    assert soak_cli.parse_seeds("1-3,7,2") == [1, 2, 3, 7]
    assert soak_cli.rerun_sample(list(range(1, 201)), 4) == {1, 51, 101, 151}
    assert soak_cli.rerun_sample([5], 3) == {5}
    assert soak_cli.rerun_sample([5], 0) == set()


@pytest.mark.parametrize("flag", [["--seeds", "5-1"], ["--seeds", "x"], ["--jobs", "0"], ["--timeout", "inf"]])
def test_bad_flags_are_one_line_and_exit_2(flag, capsys):
    with pytest.raises(SystemExit) as e:
        soak_cli.main(flag)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and flag[0] in err


CRASH_LOG = """\
[warning  ] something else                 t=3.0
[error    ] actor crashed                  actor=broker-3:8080 error='AttributeError(...)' t=170.0
Traceback (most recent call last):
  File "/x/broker.py", line 528, in _select_locally
    self._local_lm.update_all(available, reports, self.owned_bundle_names())

AttributeError: 'NoneType' object has no attribute 'update_all'
[warning  ] actor task failed after the actor died actor=broker-4:8080/leader t=200.0
"""


def test_actor_crashes_are_cut_out_of_stderr_with_their_traceback():
    crashes = actor_crashes(CRASH_LOG)
    assert len(crashes) == 1
    assert crashes[0].startswith("[error    ] actor crashed")
    assert crashes[0].endswith("AttributeError: 'NoneType' object has no attribute 'update_all'")
    assert actor_crashes("[warning  ] fine t=1\n") == []


def _fake(code: int, stdout: str = "", stderr: str = "", sleep: float = 0.0):
    """A child that prints and exits like a broken emulator would (no recording written)."""
    program = (f"import sys, time; time.sleep({sleep}); sys.stdout.write({stdout!r}); "
               f"sys.stderr.write({stderr!r}); sys.exit({code})")
    return lambda scenario, record: [sys.executable, "-c", program]


def test_checker_flags_each_problem_class(tmp_path: Path):
    crashed = run_seed(1, tmp_path / "a", command=_fake(0, "summary\n", CRASH_LOG))
    assert {"actor_failure", "recording"} <= crashed.problems.keys()
    assert "AttributeError" in crashed.crashes[0]
    fault = run_seed(1, tmp_path / "b", command=_fake(3))
    assert "actor_failure" in fault.problems
    violated = run_seed(1, tmp_path / "c", command=_fake(1, "invariant violations: 2\n  x\n"))
    assert violated.violations == 2 and "violation" in violated.problems
    traceback = run_seed(1, tmp_path / "d", command=_fake(1 + 1 + 1 + 1, "", "Traceback...\nKeyError: 1\n"))
    assert traceback.problems["exit"] == "exit code 4: KeyError: 1"
    hung = run_seed(1, tmp_path / "e", command=_fake(0, sleep=60), timeout=0.5)
    assert hung.exit_code is None and "hang" in hung.problems


def test_a_slice_of_the_soak_passes(tmp_path: Path, capsys):
    """Four real seeds, one per load manager, one of them rerun byte for byte, through the command line."""
    assert {load_manager_of(seed) for seed in range(2, 6)} == set(LOAD_MANAGERS)
    code = soak_cli.main(["--seeds", "2-5", "--rerun-sample", "1", "--keep", str(tmp_path / "keep"),
                          "--failures", str(tmp_path / "failures"), "--timeout", "300"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.count(" ok ") == 4 and "(+rerun)" in out
    assert "nondeterministic      0 of 1" in out
    assert (tmp_path / "keep" / "seed-2" / "soak-2.toml").read_text() == scenario_toml(2)
    for seed in range(2, 6):    # each ran its own load manager
        run_json = next((tmp_path / "keep" / f"seed-{seed}").rglob("run.json"))
        config = json.loads(run_json.read_text())["config"]
        assert resolve_class_name(config["loadManagerClassName"]) == load_manager_of(seed)
    assert not (tmp_path / "failures").exists()
