"""Issue 12: a user's strategy or shedder module that cannot be loaded is one line, exit 2, before the
cluster starts."""

from __future__ import annotations

import random

import pytest

import shedders
import strategies

MODULES = {
    "import_error": ("import not_a_module_anywhere_12\n",
                     "ModuleNotFoundError: No module named 'not_a_module_anywhere_12'"),
    "syntax_error": ("def f(:\n    pass\n", "SyntaxError: "),
    "raises_at_import": ("raise RuntimeError('boom at import')\n", "RuntimeError: boom at import"),
}
CONSTRUCTOR = '''
from strategies.round_robin import RoundRobinBrokerSelector
class Broken(RoundRobinBrokerSelector):
    def __init__(self, rng):
        raise ValueError("bad constructor")
'''


@pytest.fixture
def user_modules(tmp_path, monkeypatch, request):
    """Each case as a uniquely named module on sys.path (failed imports are not cached, names are)."""
    tag = request.node.name.replace("[", "_").replace("]", "").replace("-", "_")
    names = {}
    for case, (source, _) in MODULES.items():
        name = f"user_{case}_{tag}"
        (tmp_path / f"{name}.py").write_text(source)
        names[case] = name
    (tmp_path / f"user_ctor_{tag}.py").write_text(CONSTRUCTOR)
    names["constructor"] = f"user_ctor_{tag}"
    monkeypatch.syspath_prepend(str(tmp_path))
    return names


@pytest.mark.parametrize("case", sorted(MODULES))
@pytest.mark.parametrize("create", [strategies.create, shedders.create], ids=["placement", "shedder"])
def test_a_module_that_cannot_be_imported_is_one_line_naming_module_and_error(user_modules, case, create):
    module = user_modules[case]
    with pytest.raises(ValueError) as info:
        create(f"{module}:Anything", rng=random.Random(0))
    message = str(info.value)
    assert "\n" not in message
    assert f"cannot import module {module!r}" in message and MODULES[case][1] in message


def test_a_constructor_that_raises_is_one_line_too(user_modules):
    with pytest.raises(ValueError, match=r"Broken\(rng\) raised ValueError: bad constructor$"):
        strategies.create(f"{user_modules['constructor']}:Broken", rng=random.Random(0))


@pytest.mark.parametrize("case", sorted(MODULES) + ["constructor"])
@pytest.mark.parametrize("flag", ["--placement", "--shedder"])
def test_the_cli_exits_2_with_one_line_before_the_cluster_starts(user_modules, case, flag, capsys,
                                                                  monkeypatch):
    from emulator.cli import main
    from emulator.cluster import cluster as cluster_module

    def never(*args, **kwargs):
        raise AssertionError("the cluster started")

    monkeypatch.setattr(cluster_module.Cluster, "start", never)
    cls = "Broken" if case == "constructor" else "Anything"
    assert main(["run", "idle-new-broker", flag, f"{user_modules[case]}:{cls}", "--quiet"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert user_modules[case] in err


def test_a_scenario_naming_a_broken_module_exits_2(user_modules, tmp_path, capsys):
    from emulator.cli import main
    from emulator.workload import library

    source = library.source("idle-new-broker")
    scenario = tmp_path / "s.toml"
    module = user_modules["syntax_error"]
    scenario.write_text(source.replace('placement = "LeastLongTermMessageRate"',
                                       f'placement = "{module}:X"', 1))
    assert main(["run", str(scenario), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "SyntaxError" in err and module in err
