"""Broker and leader lifecycle: starts, stops, crashes, elections, sessions, load reports, bundle
ownership, user-code faults and load-manager changes."""

from __future__ import annotations

from typing import Any

from .base import Event

class BrokerStarted(Event, kw_only=True):
    kind = "broker_started"
    broker: str


class BrokerStartFailed(Event, kw_only=True):
    kind = "broker_start_failed"
    broker: str
    error: str


class BrokerCrashed(Event, kw_only=True):
    """A crash: the broker's actors are gone, its metadata session expires later."""

    kind = "broker_crashed"
    broker: str
    bundles: int


class BrokerStopping(Event, kw_only=True):
    """A graceful shutdown began: the broker unloads its `bundles` within `timeout` seconds."""

    kind = "broker_stopping"
    broker: str
    bundles: int
    timeout: float


class BrokerStopped(Event, kw_only=True):
    kind = "broker_stopped"
    broker: str
    graceful: bool
    duration: float
    bundles_left: int


class LeaderElected(Event, kw_only=True):
    kind = "leader_elected"
    broker: str


class LeaderStarted(Event, kw_only=True):
    """The leader's load manager built its view: `brokers` reports, `bundle_data` bundles' data, from
    what the broker held as a follower (`followers_view`) or else read from the persisted nodes."""

    kind = "leader_started"
    broker: str
    brokers: int
    bundle_data: int
    followers_view: bool = False


class SessionLost(Event, kw_only=True):
    """The broker's metadata session expired; `policy` is zookeeperSessionExpiredPolicy."""

    kind = "session_lost"
    broker: str
    policy: str


class SessionReestablished(Event, kw_only=True):
    kind = "session_reestablished"
    broker: str
    lost_bundles: list[str]


class LoadReportWritten(Event, kw_only=True):
    """The broker wrote its LocalBrokerData (a > 10 % change or the max interval)."""

    kind = "load_report"
    broker: str
    bundles: int


class BundleOwned(Event, kw_only=True):
    """A broker took a bundle's ownership (lookup, split child or initial placement)."""

    kind = "bundle_owned"
    bundle: str
    broker: str


class ShedderWarmed(Event, kw_only=True):
    """A warm start moved the shedder's history as `cycles` shedding cycles would have."""

    kind = "warm_shedder"
    shedder: str
    cycles: int
    brokers: int


class PlacementFailed(Event, kw_only=True):
    """A user's placement strategy raised (user_faults.py); `bundle` when a lookup asked."""

    kind = "placement_failed"
    strategy: str
    error: str
    outcome: str
    bundle: str | None = None


class SheddingFailed(Event, kw_only=True):
    """A user's shedder raised: that shedding cycle is skipped."""

    kind = "shedding_failed"
    strategy: str
    error: str
    outcome: str


class ActorFailed(Event, kw_only=True):
    """An actor raised: an emulator bug (the run exits 3)."""

    kind = "actor_failed"
    actor: str
    error: str


class ConfigChanged(Event, kw_only=True):
    """A dynamic configuration key was set (its new value)."""

    kind = "config_changed"
    key: str
    value: Any


class LoadManagerChanged(Event, kw_only=True):
    """BrokerService's loadManagerClassName listener ran on `broker`: `previous` stopped, `current`
    started (`requested` is the configured class name; it differs from `current` after a fallback)."""

    kind = "load_manager_changed"
    broker: str
    previous: str
    current: str
    requested: str


class LoadManagerSwitchUnsupported(Event, kw_only=True):
    """`broker` changed its load manager between `previous` and `current` in a way Pulsar does not
    support: live (`how = "live"`, update-dynamic-config loadManagerClassName) between the
    ZooKeeper-ownership managers (Modular, Simple, Noop) and the Extensible one, which Pulsar's
    admin API accepts (the key is dynamic) but its docs say to do by broker.conf and a restart
    (`docs`); or restarted with a broker.conf class that /admin/configuration overrides
    (`how = "overridden"`: the broker runs `current`, not the `requested` class of its file)."""

    kind = "load_manager_switch_unsupported"
    broker: str
    previous: str
    current: str
    requested: str
    how: str
    docs: str


class LoadManagerCreateFailed(Event, kw_only=True):
    """LoadManager.create could not make `requested` on `broker` ("Error when trying to create load
    manager"): `fallback` runs instead."""

    kind = "load_manager_create_failed"
    broker: str
    requested: str
    fallback: str
    error: str
