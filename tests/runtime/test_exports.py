"""emulator.runtime exports each public name once, and every name in __all__ exists."""

from __future__ import annotations

import emulator.runtime as runtime


def test_all_names_exist_and_are_unique():
    assert len(runtime.__all__) == len(set(runtime.__all__))
    for name in runtime.__all__:
        assert getattr(runtime, name) is not None, name


def test_contract_names_are_exported():
    contract = {"VirtualEventLoop", "DeadlockError", "run_external", "ScaledWallEventLoop",
                "scaled_wall_loop_factory", "Clock", "VirtualClock", "WallClock", "run",
                "derive_rng", "ActorDead", "AskTimeout", "Reply", "NO_REPLY", "Actor",
                "ActorSystem", "ActorFailure"}
    assert contract <= set(runtime.__all__)


def test_module_homes_named_in_the_design():
    from emulator.runtime.actor import (Actor, ActorDead, ActorFailure, ActorSystem,  # noqa: F401
                                        AskTimeout, Reply)
    from emulator.runtime.clock import Clock, VirtualClock, WallClock, run  # noqa: F401
    from emulator.runtime.rng import derive_rng  # noqa: F401
    from emulator.runtime.virtual_loop import DeadlockError, VirtualEventLoop  # noqa: F401
    from emulator.runtime.wall_loop import ScaledWallEventLoop  # noqa: F401
