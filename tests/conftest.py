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
