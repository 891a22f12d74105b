"""Dynamic configuration of one cluster: pulsar-admin brokers update/delete-dynamic-config and the
/admin/configuration node they persist.

Kept apart from `Cluster` (which delegates to it) because it is one job with its own state: the
start-up values a deleted key reverts to, the map name -> string value, and the serialized writes of
that map by the operator's admin client."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Callable

import anyio
import msgspec

from emulator.model.config import (ServiceConfig, check_dynamic_delete, check_dynamic_update,
                                   property_text)
from emulator.runtime import Actor

from . import paths
from .events import ClusterEvents, ConfigChanged
from .metadata_client import MetadataClient
from .metadata_store import MetadataStore


class DynamicConfiguration:
    """The values a deleted key reverts to (the broker's start-up values, as BrokerService's
    ConfigField.defaultValue) and the map /admin/configuration holds once written."""

    def __init__(self, conf: ServiceConfig, store: MetadataStore, events: ClusterEvents,
                 admin: Callable[[], tuple[Actor | None, MetadataClient | None]]) -> None:
        self.conf = conf
        self.store = store
        self.events = events
        self._admin = admin   # the operator's admin actor and client, once the cluster has booted
        self._startup_conf = msgspec.structs.replace(conf)
        self._dynamic: dict[str, str] = {}
        self._dynamic_written: bytes | None = None
        self._dynamic_lock: anyio.Lock | None = None
        # brokers started with a broker.conf of their own (`broker_conf`): (its conf, its start-up values)
        self._broker_confs: list[tuple[ServiceConfig, ServiceConfig]] = []

    def broker_conf(self, settings: Mapping[str, object], *, source: str) -> ServiceConfig:
        """The ServiceConfig of a broker started with its own broker.conf: the cluster's start-up
        values with `settings` over them, then every key of /admin/configuration over those, as
        BrokerService.updateDynamicServiceConfiguration applies them at start: a dynamic value set
        earlier wins over the broker's file (e.g. a `loadManagerClassName` once set with
        update-dynamic-config keeps a broker restarted with another class in broker.conf on the
        dynamic one, until `delete-dynamic-config`). Later dynamic changes reach it too."""
        startup = self._startup_conf.with_overrides(settings, source=source)
        conf = msgspec.structs.replace(startup)
        for name, text in self._dynamic.items():
            field = ServiceConfig.field_name(name)
            setattr(conf, field, getattr(conf.with_overrides({name: text}, source=source), field))
        self._broker_confs.append((conf, startup))
        return conf

    def forget_broker_conf(self, conf: ServiceConfig) -> None:
        """A stopped broker's own conf no longer follows the dynamic configuration."""
        self._broker_confs = [(c, s) for c, s in self._broker_confs if c is not conf]

    def set_config(self, key: str, value: object) -> None:
        """Dynamic configuration (pulsar-admin brokers update-dynamic-config), as Pulsar's
        BrokersBase.updateDynamicConfiguration / persistDynamicConfigurationAsync: `key` must be dynamic
        and pass its validator (emulator.model.config.check_dynamic_update raises DynamicConfigError with
        Pulsar's 412 and reason, nothing changed), then the value joins the JSON map name -> string value
        in /admin/configuration (written by the operator's admin client right after; await
        `dynamic_configuration_written` to wait for it, as the REST call does). `key` may also be the
        snake_case field name; it is stored under Pulsar's name. A blank value means the start-up value.

        In Pulsar every broker watches that node and applies the value (BrokerService
        .handleDynamicConfigurationUpdates / configValueChanged, then the key's registered listener:
        a new lookup semaphore for maxConcurrentLookupRequest, LoadManager.create and a restart of the
        load manager for loadManagerClassName). Here every broker and the leader share this
        ServiceConfig, so the value is applied to it at once and read at each next use of the key;
        loadManagerClassName's listener runs on each broker when its watch sees the node change
        (broker.py: the live switch). A value Pulsar's FieldParser
        cannot parse would be stored and fail on every broker; here it raises ConfigError first."""
        name = _pulsar_key(key)
        text = value if isinstance(value, str) else property_text(value)
        check_dynamic_update(name, text)
        field = ServiceConfig.field_name(key)
        if text.strip() == "":   # configValueChanged: a blank value is the start-up value
            applied = getattr(self._startup_conf, field)
        else:
            applied = getattr(self.conf.with_overrides({key: value}, source="set_config"), field)
        setattr(self.conf, field, applied)
        for conf, startup in self._broker_confs:   # every broker applies the node's value
            setattr(conf, field, applied if text.strip() else getattr(startup, field))
        self._dynamic[name] = text
        self._persist_dynamic_configuration()
        self.events.emit(ConfigChanged(key=key, value=applied))

    def delete_config(self, key: str) -> None:
        """pulsar-admin brokers delete-dynamic-config (BrokersBase.deleteDynamicConfiguration /
        internalDeleteDynamicConfigurationOnMetadataAsync): a non-dynamic key is 412 "Can't delete
        non-dynamic configuration" (DynamicConfigError); a dynamic one leaves /admin/configuration and
        goes back to its start-up value (configValueChanged with no value: ConfigField.defaultValue, the
        value the broker started with). A key that was never set changes nothing."""
        name = _pulsar_key(key)
        check_dynamic_delete(name)
        if self._dynamic.pop(name, None) is None:
            return
        field = ServiceConfig.field_name(name)
        value = getattr(self._startup_conf, field)
        setattr(self.conf, field, value)
        for conf, startup in self._broker_confs:   # back to each broker's own start-up value
            setattr(conf, field, getattr(startup, field))
        self._persist_dynamic_configuration()
        self.events.emit(ConfigChanged(key=key, value=value))

    def dynamic_configuration(self) -> dict[str, str]:
        """GET /admin/v2/brokers/configuration/values (BrokersBase.getAllDynamicConfigurations): the
        map in /admin/configuration, {} while there is none (read with `peek`: no metadata operation)."""
        data = self.store.peek(paths.DYNAMIC_CONFIGURATION)
        return {} if data is None else msgspec.json.decode(data, type=dict[str, str])

    def _persist_dynamic_configuration(self) -> None:
        actor, _ = self._admin()
        assert actor is not None
        actor.start_soon(self.dynamic_configuration_written)

    async def dynamic_configuration_written(self) -> None:
        """Wait until /admin/configuration holds every change made so far (DynamicConfigurationResources
        .setDynamicConfigurationWithCreateAsync: one node, created on first use). Writes are serialized
        and each writes the whole current map, so the node ends with the last change."""
        if self._dynamic_lock is None:
            self._dynamic_lock = anyio.Lock()
        async with self._dynamic_lock:
            data = msgspec.json.encode(dict(sorted(self._dynamic.items())))
            if data != self._dynamic_written:
                _, client = self._admin()
                assert client is not None
                await client.set(paths.DYNAMIC_CONFIGURATION, data)
                self._dynamic_written = data


def _pulsar_key(key: str) -> str:
    """Pulsar's camelCase name of a key given either way; an unknown key is returned as is."""
    try:
        return ServiceConfig.pulsar_name(ServiceConfig.field_name(key))
    except ValueError:
        return key
