"""The pytest plugin (entry point `pulsar_lb_emulator`): fixtures, and virtual time for pytest-asyncio.

pytest-asyncio (>= 1.4) asks `pytest_asyncio_loop_factories` which loop a test runs on. A test that
uses one of this plugin's cluster fixtures gets the emulator's `VirtualEventLoop`; every other test gets
asyncio's default loop, as if the plugin were not there. The loop scope stays the user's choice
(`@pytest.mark.asyncio(loop_scope=...)`, `asyncio_default_test_loop_scope`). anyio users keep their
`anyio_backend` fixture (`VIRTUAL_BACKEND`); the hook is optional, so pytest runs without pytest-asyncio.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import pytest

import shedders
import strategies
from emulator.runtime import VirtualEventLoop

from .harness import emulated_cluster
from .report import reproduce_command
from .scenario import emulated_scenario

__all__ = ["VIRTUAL_FIXTURES", "loop_factories", "load_shedder", "placement_strategy",
           "pulsar_cluster", "pulsar_scenario", "pytest_asyncio_loop_factories"]

VIRTUAL_FIXTURES = frozenset({"pulsar_cluster", "pulsar_scenario"})
"""A test that uses any of these (directly or through its own fixtures) runs on virtual time."""


def loop_factories(item: pytest.Item) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    """The loop for `item`: virtual when it uses a cluster fixture. Call it from your own
    `pytest_asyncio_loop_factories` hook if you have one (yours is asked first)."""
    if VIRTUAL_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return {"virtual": VirtualEventLoop}
    return {"asyncio": asyncio.new_event_loop}


@pytest.hookimpl(optionalhook=True)
def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item) -> Mapping[str, Any]:
    return loop_factories(item)


def _repro(request: pytest.FixtureRequest) -> str | None:
    return reproduce_command(request.node.nodeid)


@pytest.fixture
def pulsar_cluster(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Factory: `async with pulsar_cluster(brokers=3, seed=1) as cluster: ...` (see `emulated_cluster`)."""

    def start(*args: Any, report_context: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        context = {"repro": _repro(request), **(report_context or {})}
        return emulated_cluster(*args, report_context=context, **kwargs)

    return start


@pytest.fixture
def pulsar_scenario(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Factory: `async with pulsar_scenario("default", seed=3) as scenario: await scenario.run_until("10m")`
    (a built-in name or a TOML path; see `emulated_scenario`)."""
    return partial(emulated_scenario, repro=_repro(request))


@pytest.fixture(params=strategies.names())
def placement_strategy(request: pytest.FixtureRequest) -> str:
    """Each built-in placement strategy in turn; narrow it with
    `@pytest.mark.parametrize("placement_strategy", ["LeastLongTermMessageRate", "my.mod:Mine"])`."""
    return request.param


@pytest.fixture(params=shedders.names())
def load_shedder(request: pytest.FixtureRequest) -> str:
    """Each built-in shedding strategy in turn (narrow it as `placement_strategy`)."""
    return request.param
