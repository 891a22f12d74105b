"""Shared pytest fixtures. Keep the anyio_backend fixture first; append others below it."""

from __future__ import annotations

import pytest

from emulator.runtime import VirtualEventLoop


@pytest.fixture
def anyio_backend():
    """Every `@pytest.mark.anyio` test runs on the virtual clock unless it overrides this."""
    return ("asyncio", {"loop_factory": VirtualEventLoop})


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
