"""The cluster's three Extensible system topics, made on first use: one set per cluster, shared by its brokers.

Pulsar keeps them in `pulsar/system`, owned by the channel owner (the leader) like any topic; here each
is an actor of its own that is always there (`system_topic.SystemTopic`), so a leader change does not
move them. What that leaves out: the few seconds in which a new leader loads the topics after a
crash of the old one (lookups and channel writes wait for them in Pulsar; here they do not).

`ownership()` reads the channel's table as a broker starting now would (the compacted values and the
tail, with the conflict resolver), for the observers and the admin paths that ask "who owns what".
"""

from __future__ import annotations

from ..model.channel_rules import SERVICE_UNIT_STATE_TOPIC
from ..model.state import ServiceUnitState, ServiceUnitStateData, should_keep_left
from emulator.runtime import ActorSystem

from .system_topic import BROKER_LOAD_DATA_STORE_TOPIC, TOP_BUNDLES_LOAD_DATA_STORE_TOPIC, SystemTopic
from .topic_latency import TopicLatencies

__all__ = ["ExtensibleTopics"]


class ExtensibleTopics:
    """The service-unit state channel's topic and the two load-data topics of one cluster."""

    def __init__(self, system: ActorSystem, latencies: TopicLatencies | None = None) -> None:
        self.system = system
        self.latencies = latencies or TopicLatencies()
        self._topics: dict[str, SystemTopic] = {}

    def _topic(self, name: str) -> SystemTopic:
        topic = self._topics.get(name)
        if topic is None or not topic.alive:
            strategy = should_keep_left if name == SERVICE_UNIT_STATE_TOPIC else None
            topic = self._topics[name] = self.system.spawn(
                SystemTopic(name, self.system, strategy=strategy, latencies=self.latencies))
        return topic

    @property
    def in_use(self) -> bool:
        """A broker ran the Extensible load manager in this cluster."""
        return bool(self._topics)

    def channel(self) -> SystemTopic:
        return self._topic(SERVICE_UNIT_STATE_TOPIC)

    def broker_load_data(self) -> SystemTopic:
        return self._topic(BROKER_LOAD_DATA_STORE_TOPIC)

    def top_bundles_load_data(self) -> SystemTopic:
        return self._topic(TOP_BUNDLES_LOAD_DATA_STORE_TOPIC)

    def table(self) -> dict[str, ServiceUnitStateData]:
        """The channel's table as its log holds it (every value the conflict resolver kept)."""
        topic = self._topics.get(SERVICE_UNIT_STATE_TOPIC)
        return topic.resolved if topic is not None else {}

    def ownership(self) -> dict[str, str]:
        """bundle -> owner broker, for every bundle in state Owned."""
        return {su: d.dst_broker for su, d in self.table().items()
                if d.state is ServiceUnitState.OWNED and d.dst_broker}
