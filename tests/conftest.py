"""Shared pytest configuration: every async test of the project runs on the virtual clock.

Async tests are `@pytest.mark.asyncio` (pytest-asyncio, strict mode); `tests/testing/` checks the plugin
users get (which picks the loop per test) and keeps the one anyio test that proves that path.
"""

from __future__ import annotations

import pytest

from emulator.runtime import VirtualEventLoop
from emulator.testing import VIRTUAL_BACKEND


def pytest_addoption(parser):
    """`--rewrite`: the recorded-output tests (tests/recorded/) write what the runs recorded into their
    folders instead of comparing, as CockroachDB's datadriven tests: `python3 -m pytest tests/recorded
    --rewrite`, then review `git diff tests/recorded`."""
    parser.addoption("--rewrite", action="store_true", default=False,
                     help="tests/recorded: rewrite the recorded outputs instead of comparing them")


def pytest_asyncio_loop_factories(config, item):
    """The project's own async tests are all emulator tests: all on virtual time, cluster fixture or not
    (asked before the plugin's own answer, which only switches tests that use a cluster fixture)."""
    return {"virtual": VirtualEventLoop}


@pytest.fixture
def anyio_backend():
    """The remaining `@pytest.mark.anyio` test (tests/testing) runs on the virtual clock too."""
    return VIRTUAL_BACKEND


@pytest.fixture(autouse=True)
def _fresh_structlog():
    """The CLI configures structlog process-wide; give every test the defaults back."""
    import structlog

    structlog.reset_defaults()
    yield
    structlog.reset_defaults()


def pytest_collection_modifyitems(config, items):
    """Every test that starts Spark (the `spark` fixture, a JVM) is `slow`: the default run leaves
    them out, `.ci/run` runs them after it (`python -m pytest -m slow`)."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
