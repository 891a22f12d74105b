"""tests/testing checks the plugin as users get it: here the loop is the plugin's choice, not the project's."""

from emulator.testing import loop_factories


def pytest_asyncio_loop_factories(config, item):
    return loop_factories(item)
