"""LoadManagerLeader: the leader-only half of ModularLoadManagerImpl, as an actor on the elected broker.

Started when its broker becomes Leading and killed when it stops leading. On start it rebuilds its view from
the store (every broker's report under /loadbalance/brokers and the persisted /loadbalance/bundle-data),
then runs `updateAll` once per notification under /loadbalance/brokers, exactly as Pulsar's single-thread
load-manager executor does (one bundle-data sample per notification, pulsar-algorithms.md §2.2).
It answers `selectBrokerForAssignment` for its broker's lookups and writes bundle data every
`loadBalancerResourceQuotaUpdateIntervalMinutes`.

Reads triggered by a notification run in a child task and come back as an `_Apply` message, so every
state change happens inside the actor's serial message handling and the order of notifications is kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import msgspec

import strategies
from emulator.model.loaddata import BundleData, LocalBrokerData
from emulator.runtime import Actor, ActorSystem, Reply

from . import paths
from .messages import SelectBrokerForAssignment
from .metadata_client import MetadataClient, MetadataStoreError
from .metadata_messages import Notification
from .modular_load_manager import ModularLoadManager

if TYPE_CHECKING:  # pragma: no cover
    from .broker import Broker

_encode = msgspec.json.encode


class _Apply(msgspec.Struct):
    """Result of reading one broker's report after a notification (None: node gone)."""

    broker: str | None
    report: LocalBrokerData | None
    membership: list[str] | None = None


class LoadManagerLeader(Actor):
    def __init__(self, name: str, system: ActorSystem, *, broker: "Broker",
                 placement: Any = None) -> None:
        super().__init__(name, system)
        self.broker = broker
        self.conf = broker.conf
        self.events = broker.events
        self.md = MetadataClient(self, broker.md.store_name)
        self.placement = placement or strategies.create(
            self.conf.load_balancer_load_placement_strategy, rng=self.rng
        )
        self.lm: ModularLoadManager | None = None
        self._reports: dict[str, LocalBrokerData | None] = {}
        self._available: list[str] = []
        self.updates = 0

    @classmethod
    def factory(cls, placement_name: str | None = None):
        """The broker calls this with itself when it wins the election."""

        def make(broker: "Broker") -> "LoadManagerLeader":
            name = f"{broker.broker_id}/leader"
            actor = cls(name, broker.system, broker=broker)
            if placement_name is not None:
                actor.placement = strategies.create(placement_name, rng=actor.rng)
            return actor

        return make

    # ------------------------------------------------------------------ start: rebuild from the store

    async def on_start(self) -> None:
        persisted = await self._read_persisted_bundle_data()
        self.lm = ModularLoadManager(
            self.conf, self.placement, self.rng, broker_id=self.broker.broker_id,
            persisted_bundle_data=persisted,
        )
        await self.md.watch(paths.BROKERS)
        self._available = await self.md.children(paths.BROKERS)
        for b in self._available:
            self._reports[b] = await self._read_report(b)
        self._update_all()
        self.start_soon(self._bundle_data_writer)
        self.events.emit("leader_started", broker=self.broker.broker_id,
                         brokers=len(self._available), bundle_data=len(persisted))

    async def _read_persisted_bundle_data(self) -> dict[str, BundleData]:
        out: dict[str, BundleData] = {}
        for tenant in await self.md.children(paths.BUNDLE_DATA):
            for ns in await self.md.children(f"{paths.BUNDLE_DATA}/{tenant}"):
                base = f"{paths.BUNDLE_DATA}/{tenant}/{ns}"
                for rng in await self.md.children(base):
                    node = await self.md.get(f"{base}/{rng}")
                    if node is not None:
                        out[f"{tenant}/{ns}/{rng}"] = msgspec.json.decode(node.data, type=BundleData)
        return out

    async def _read_report(self, broker: str) -> LocalBrokerData | None:
        node = await self.md.get(paths.broker_path(broker))
        return None if node is None else msgspec.json.decode(node.data, type=LocalBrokerData)

    # ------------------------------------------------------------------ messages

    async def receive(self, msg: Any, reply: Reply) -> None:
        kind = type(msg)
        if kind is SelectBrokerForAssignment:
            reply.ok(self._select(msg))
        elif kind is Notification:
            self._on_notification(msg)
        elif kind is _Apply:
            self._apply(msg)
        else:
            raise TypeError(f"{self.name}: unexpected message {kind.__name__}")

    def _select(self, msg: SelectBrokerForAssignment) -> str | None:
        assert self.lm is not None
        broker, trace = self.lm.select_broker_for_assignment(
            msg.bundle, non_persistent=msg.non_persistent
        )
        self.events.emit("assignment", bundle=msg.bundle, broker=broker,
                         leader=self.broker.broker_id, local=False, trace=trace)
        return broker

    def _on_notification(self, note: Notification) -> None:
        """handleDataNotification: any change under /loadbalance/brokers -> (read) -> updateAll."""
        path = note.path
        if not path.startswith(paths.BROKERS):
            return
        if path == paths.BROKERS:
            self.start_soon(self._read_membership)
        else:
            self.start_soon(self._read_and_apply, path.rsplit("/", 1)[1])

    async def _read_membership(self) -> None:
        self.tell(_Apply(None, None, membership=await self.md.children(paths.BROKERS)))

    async def _read_and_apply(self, broker: str) -> None:
        self.tell(_Apply(broker, await self._read_report(broker)))

    def _apply(self, msg: _Apply) -> None:
        assert self.lm is not None
        if msg.membership is not None:
            self._available = msg.membership
            for gone in set(self._reports) - set(msg.membership):
                del self._reports[gone]
            self.lm.reap_dead_broker_preallocations(self._available)
        elif msg.broker is not None:
            if msg.report is None:
                self._reports.pop(msg.broker, None)
                if msg.broker in self._available:
                    self._available = [b for b in self._available if b != msg.broker]
            else:
                self._reports[msg.broker] = msg.report
                if msg.broker not in self._available:
                    self._available = sorted([*self._available, msg.broker])
        self._update_all()

    def _update_all(self) -> None:
        assert self.lm is not None
        result = self.lm.update_all(self._available, self._reports,
                                    self.broker.owned_bundle_names())
        self.updates += 1
        removed = getattr(result, "removed_bundles", ()) or ()
        for bundle in removed:
            self.start_soon(self._delete_quietly, paths.bundle_data_path(bundle))
        for broker in getattr(result, "dead_brokers", ()) or ():
            self.start_soon(self._delete_quietly, paths.time_average_path(broker))

    async def _delete_quietly(self, path: str) -> None:
        try:
            await self.md.delete(path)
        except MetadataStoreError:
            pass

    # ------------------------------------------------------------------ periodic bundle-data writer

    async def _bundle_data_writer(self) -> None:
        """LoadResourceQuotaUpdaterTask -> writeBundleDataOnZooKeeper, at a fixed rate."""
        interval = self.conf.load_balancer_resource_quota_update_interval_minutes * 60.0
        while True:
            await anyio.sleep(interval)
            await self.write_bundle_data()

    async def write_bundle_data(self) -> None:
        assert self.lm is not None
        self.lm.update_bundle_data(self.broker.owned_bundle_names())
        for bundle, data in self.lm.bundle_data_to_write().items():
            await self.md.set(paths.bundle_data_path(bundle), _encode(data))
        for broker, bd in sorted(self.lm.load_data.broker_data.items()):
            await self.md.set(paths.time_average_path(broker), _encode(bd.time_average_data))
