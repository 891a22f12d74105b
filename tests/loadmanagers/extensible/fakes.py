"""A fake cluster for the Extensible channel tests: brokers as `ChannelHost`s, a registry, a leader.

Each `FakeHost` records what its channel made it do and checks, at every `own`, the invariant the
channel must keep: no bundle (nor an overlapping range of the same namespace) is served by two live
brokers at once. Selection is deterministic: the available broker (excluded ones left out) serving the fewest bundles,
ties broken by a hash of (bundle, broker), so concurrent lookups of one bundle pick alike and the
bundles spread.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any

import anyio

from emulator.loadmanagers.extensible.actors.channel import ServiceUnitStateChannel
from emulator.loadmanagers.extensible.actors.host import BundleSplitConflict
from emulator.loadmanagers.extensible.actors.system_topic import SystemTopic
from emulator.loadmanagers.extensible.actors.topic_latency import TopicLatencies
from emulator.model.bundles import parse_bundle
from emulator.model.config import ServiceConfig
from emulator.loadmanagers.extensible.model.channel_rules import SERVICE_UNIT_STATE_TOPIC
from emulator.loadmanagers.extensible.model.state import ServiceUnitStateData, should_keep_left
from emulator.runtime import ActorSystem

SESSION_TIMEOUT_S = 30.0
"""ZooKeeper's session timeout as the emulator's metadata store uses it: a dead broker's registry
node goes away this long after the crash."""


class FakeHost:
    def __init__(self, cluster: FakeCluster, broker_id: str) -> None:
        self.cluster = cluster
        self._broker_id = broker_id
        self.alive = True
        self.serving: set[str] = set()
        self.owned: list[tuple[float, str]] = []
        self.closes: list[tuple[float, str, bool, str | None]] = []
        self.splits: list[tuple[float, str]] = []
        self.split_conflicts = 0
        self.underway: set[str] = set()   # split_underway: parents whose split is in flight
        self.hang_closes: set[str] = set()
        self.channel: ServiceUnitStateChannel | None = None

    @property
    def broker_id(self) -> str:
        return self._broker_id

    def _now(self) -> float:
        return self.cluster.system.now()

    async def own(self, bundle: str) -> None:
        self.cluster.check_single_owner(self.broker_id, bundle)
        self.serving.add(bundle)
        self.owned.append((self._now(), bundle))

    async def close(self, bundle: str, disconnect_clients: bool, assigned_broker: str | None) -> int:
        self.serving.discard(bundle)  # a closing topic is fenced at once (PersistentTopic.close)
        if bundle in self.hang_closes:
            await anyio.sleep_forever()
        self.closes.append((self._now(), bundle, disconnect_clients, assigned_broker))
        return 1

    async def split(self, parent: str, children: Mapping[str, str | None]) -> None:
        if self.split_conflicts > 0:
            self.split_conflicts -= 1
            raise BundleSplitConflict(parent)
        namespace = parent.rsplit("/", 1)[0]
        bundles = self.cluster.bundles.setdefault(namespace, set())
        bundles.discard(parent)
        bundles.update(f"{namespace}/{child}" for child in children)
        self.serving.discard(parent)
        self.splits.append((self._now(), parent))

    def split_underway(self, parent: str, underway: bool) -> None:
        if underway:
            self.underway.add(parent)
        else:
            self.underway.discard(parent)

    def splits_underway(self) -> set[str]:
        return self.underway

    async def is_healthy(self, broker: str) -> bool:
        host = self.cluster.hosts.get(broker)
        return host is not None and host.alive

    async def select(self, bundle: str, excluded: frozenset[str]) -> str | None:
        return self.cluster.select(bundle, excluded)

    async def available_brokers(self) -> list[str]:
        return list(self.cluster.registry)

    async def channel_owner(self) -> str | None:
        return self.cluster.leader


class FakeCluster:
    def __init__(self, system: ActorSystem, conf: ServiceConfig, latencies: TopicLatencies | None = None) -> None:
        self.system = system
        self.conf = conf
        self.topic = system.spawn(SystemTopic(SERVICE_UNIT_STATE_TOPIC, system, strategy=should_keep_left,
                                              latencies=latencies or TopicLatencies.zero()))
        self.hosts: dict[str, FakeHost] = {}
        self.registry: list[str] = []
        self.leader: str | None = None
        self.bundles: dict[str, set[str]] = {}
        self.violations: list[str] = []

    async def add_broker(self, broker_id: str, **channel_options: Any) -> ServiceUnitStateChannel:
        host = self.hosts[broker_id] = FakeHost(self, broker_id)
        channel = self.system.spawn(ServiceUnitStateChannel(
            f"{broker_id}/channel", self.system, host=host, topic=self.topic, conf=self.conf,
            **channel_options))
        host.channel = channel
        await channel.start()
        self.register(broker_id)
        return channel

    def channel(self, broker_id: str) -> ServiceUnitStateChannel:
        channel = self.hosts[broker_id].channel
        assert channel is not None
        return channel

    def register(self, broker_id: str) -> None:
        if broker_id not in self.registry:
            self.registry.append(broker_id)
        for host in self.live_hosts():
            assert host.channel is not None
            host.channel.on_broker_registry_event(broker_id, created=True)

    def unregister(self, broker_id: str) -> None:
        """The registry node of `broker_id` is gone (session expired): every live channel hears it."""
        self.registry.remove(broker_id)
        for host in self.live_hosts():
            assert host.channel is not None
            host.channel.on_broker_registry_event(broker_id, created=False)

    def crash(self, broker_id: str) -> None:
        host = self.hosts[broker_id]
        host.alive = False
        assert host.channel is not None
        host.channel.kill()

    def live_hosts(self) -> list[FakeHost]:
        return [h for h in self.hosts.values() if h.alive]

    def select(self, bundle: str, excluded: frozenset[str]) -> str | None:
        candidates = [b for b in self.registry if b not in excluded and self.hosts[b].alive]
        if not candidates:
            return None
        return min(candidates, key=lambda b: (len(self.hosts[b].serving), zlib.crc32(f"{bundle}|{b}".encode())))

    def check_single_owner(self, broker_id: str, bundle: str) -> None:
        namespace, lower, upper = parse_bundle(bundle)
        for other in self.live_hosts():
            if other.broker_id == broker_id:
                continue
            for served in other.serving:
                ns, lo, up = parse_bundle(served)
                if ns == namespace and lo < upper and lower < up:
                    self.violations.append(
                        f"t={self.system.now():.3f}: {bundle} owned by {broker_id} while {other.broker_id} "
                        f"serves {served}")

    def table(self) -> dict[str, ServiceUnitStateData]:
        """The compacted log's view of the channel: what a broker starting now would read."""
        return self.topic.resolved
