"""Pulsar's dynamic-configuration admin paths, served by the emulator's HTTP server (http.py).

As BrokersBase (pulsar-broker .../admin/impl/BrokersBase.java) answers them, one broker speaking for the
cluster (every emulated broker shares one configuration):

    GET    /admin/v2/brokers/configuration               getDynamicConfigurationName: ["<key>", ...], the
                                                         dynamic keys (config.dynamic_configuration_names)
    GET    /admin/v2/brokers/configuration/values        getAllDynamicConfigurations: {key: "value"}, only
                                                         what was set dynamically (/admin/configuration)
    GET    /admin/v2/brokers/configuration/runtime       getRuntimeConfiguration: {key: "value"}, every key
                                                         as String.valueOf renders it
    POST   /admin/v2/brokers/configuration/<key>/<value> updateDynamicConfiguration: 200, empty body
    DELETE /admin/v2/brokers/configuration/<key>         deleteDynamicConfiguration: 200, empty body

A refusal is `{"reason": ...}` with Pulsar's status: 412 " Invalid dynamic-config value" (the
loadManagerClassName validator), 412 "Can't update non-dynamic configuration" (a key that is not dynamic
or does not exist), 412 "Can't delete non-dynamic configuration". A value the emulator cannot parse is
412 " Invalid dynamic-config value (<why>)" where Pulsar would store it and fail on every broker (see
Cluster.set_config). Writes take emulated time: the answer comes once /admin/configuration is written.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import TYPE_CHECKING, Any

import msgspec
import structlog

from emulator.model.config import (
    INVALID_VALUE_REASON,
    PRECONDITION_FAILED,
    ConfigError,
    DynamicConfigError,
    check_dynamic_delete,
    check_dynamic_update,
    dynamic_configuration_names,
    runtime_configuration,
)
from emulator.runtime.supervision import report_failure

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster

__all__ = ["DynamicConfigRoutes"]

Response = tuple[int, str, bytes]
_JSON = "application/json"
_OK: Response = (200, _JSON, b"")
_PATH = re.compile(r"/admin/v2/brokers/configuration(?:/(?P<key>[^/]+)(?:/(?P<value>.+))?)?/?")


def _json(value: Any, status: int = 200) -> Response:
    return status, _JSON, msgspec.json.encode(value)


def _error(status: int, reason: str) -> Response:
    return _json({"reason": reason}, status)


class DynamicConfigRoutes:
    """Matches a path; `handle` runs on the event loop (a coroutine) and never raises for bad input."""

    def __init__(self, cluster: "Cluster") -> None:
        self.cluster = cluster

    @staticmethod
    def match(raw_path: str) -> dict[str, str | None] | None:
        path = urllib.parse.unquote(urllib.parse.urlsplit(raw_path).path)
        m = _PATH.fullmatch(path)
        return None if m is None else m.groupdict()

    async def handle(self, method: str, raw_path: str, body: bytes) -> Response | None:
        """The answer, or None if the path is not one of these routes."""
        args = self.match(raw_path)
        if args is None:
            return None
        key, value = args["key"], args["value"]
        try:
            if method == "GET":
                return self._read(key, value)
            if method == "POST" and key not in (None, "values", "runtime") and value is not None:
                return await self._update(key, value)
            if method == "DELETE" and key is not None and value is None:
                return await self._delete(key)
            return _error(405, f"{method} {raw_path}: expected GET .../configuration[/values|/runtime], "
                               "POST .../configuration/<name>/<value> or DELETE .../configuration/<name>")
        except Exception as e:
            # not a refusal Pulsar would give: the emulator's own fault, counted as an actor failure
            system = self.cluster.system
            report_failure(system.failures, system.on_failure, structlog.get_logger("config_http"),
                           "http:dynamic-configuration", system.clock.now(), e)
            return _error(500, f"emulator fault: {type(e).__name__}: {e}")

    def _read(self, key: str | None, value: str | None) -> Response:
        if key is None and value is None:
            return _json(dynamic_configuration_names())
        if key == "values" and value is None:
            return _json(self.cluster.dynamic_configuration())
        if key == "runtime" and value is None:
            return _json(runtime_configuration(self.cluster.conf))
        # Jersey's answer for a path that exists with other methods (POST .../<name>/<value>, DELETE .../<name>)
        return _error(405, "GET reads .../configuration, .../configuration/values or .../configuration/runtime")

    async def _update(self, key: str, value: str) -> Response:
        try:
            check_dynamic_update(key, value)   # Pulsar's names only (set_config also takes snake_case)
            self.cluster.set_config(key, value)
        except DynamicConfigError as e:
            return _error(e.status, e.reason)
        except ConfigError as e:   # a value ServiceConfig cannot take (Cluster.set_config says why)
            return _error(PRECONDITION_FAILED, f"{INVALID_VALUE_REASON} ({e})")
        await self.cluster.dynamic_configuration_written()
        return _OK

    async def _delete(self, key: str) -> Response:
        try:
            check_dynamic_delete(key)
            self.cluster.delete_config(key)
        except DynamicConfigError as e:
            return _error(e.status, e.reason)
        await self.cluster.dynamic_configuration_written()
        return _OK
