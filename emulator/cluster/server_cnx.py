"""ServerCnx's producer and consumer commands: serve a topic only where its bundle is owned and active.

CommandProducer / CommandSubscribe (`Attach`) and their close (`Detach`): the topic's bundle is found
through the bundle factory, the topic is loaded (BrokerService.getOrCreateTopic, at most
`maxConcurrentTopicLoadRequest` at once: topic_loader.py) and the handle attached to the bundle's owner.
A part of the broker actor (broker_base.py).
"""

from __future__ import annotations

import functools

from emulator.model.bundles import parse_topic
from emulator.runtime import Reply

from .bundle_owner import BundleOwner
from .messages import Attach, AttachResult, Detach, LookupFailure, ServerError
from .namespace_service import NOT_RUNNING
from .ownership import OwnershipCache
from .topic_loader import TopicLoader

__all__ = ["ServerCnx"]

_ATTACHED = AttachResult(ok=True)
_CONNECT_REFUSED = AttachResult(False, ServerError.SERVICE_NOT_READY, NOT_RUNNING,
                                connection_refused=True)


class ServerCnx(OwnershipCache):
    """Producers and consumers of the topics this broker serves."""

    topic_loader: TopicLoader

    def _on_attach(self, msg: Attach, reply: Reply) -> None:
        """ServerCnx handleProducer/handleSubscribe: serve only topics of active bundles owned here.

        A broker draining for shutdown takes no new connection (ServerCnx.handleConnect checks
        `isRunning()`, PR #17314): a client that has none to it is refused before its producer or
        consumer is looked at; one that still has its connection is served as usual."""
        if self.closing and not self.network.is_connected(msg.client, self.broker_id):
            reply.ok(_CONNECT_REFUSED)
            return
        try:
            name, namespace = parse_topic(msg.topic)
        except ValueError as e:
            reply.ok(AttachResult(False, ServerError.TOPIC_NOT_FOUND, str(e)))
            return
        bundles = self._ns_bundles.get(namespace)
        if bundles is None:
            self.start_soon(self._attach_after_load, namespace, name, msg, reply)
            return
        self._route_attach(bundles.bundle_of_full_name(name), msg, reply)

    async def _attach_after_load(self, namespace: str, name: str, msg: Attach,
                                 reply: Reply) -> None:
        try:
            bundles = await self.namespace_bundles(namespace)
        except LookupFailure as e:
            reply.ok(AttachResult(False, e.error, e.message))
            return
        self._route_attach(bundles.bundle_of_full_name(name), msg, reply)

    def _route_attach(self, bundle: str, msg: Attach, reply: Reply, *, checked: bool = False) -> None:
        owned = self.owned.get(bundle)
        if owned is None or not owned.active or owned.actor is None or not owned.actor.alive:
            if not checked and self.capabilities.channel_ownership is not None:
                # Extensible: checkTopicOwnership asks the channel, which waits while the bundle is
                # in flight (Assigning to this broker, say): a client sent here by a transfer's
                # CloseProducer may arrive before this broker has applied the Owned value
                self.start_soon(self._attach_after_check, bundle, msg, reply)
                return
            reply.ok(
                AttachResult(
                    False,
                    ServerError.SERVICE_NOT_READY,
                    f"Namespace bundle for topic ({msg.topic}) not served by this instance. "
                    "Please redo the lookup.",
                )
            )
            return
        owner = owned.actor
        if msg.topic in owner.topics:   # loaded already (a topic stays loaded until its bundle goes)
            self._attached(owner, msg, reply)
            return
        # BrokerService.getOrCreateTopic: load the topic first (a permit of
        # maxConcurrentTopicLoadRequest, queued beyond; topic_loader.py), then serve the producer
        self.topic_loader.load((owner, msg.topic), functools.partial(
            self._after_topic_load, bundle, owner, msg, reply))

    async def _attach_after_check(self, bundle: str, msg: Attach, reply: Reply) -> None:
        channel = self.capabilities.channel_ownership
        if channel is not None:   # None: switched away meanwhile; refused below as any other
            await channel.check_ownership(bundle)
        self._route_attach(bundle, msg, reply, checked=True)

    def _after_topic_load(self, bundle: str, owner: BundleOwner, msg: Attach, reply: Reply) -> None:
        owned = self.owned.get(bundle)
        if owned is None or owned.actor is not owner or not owned.active or not owner.alive:
            self._route_attach(bundle, msg, reply)   # unloaded meanwhile: refused as any other
            return
        self._attached(owner, msg, reply)

    def _attached(self, owner: BundleOwner, msg: Attach, reply: Reply) -> None:
        self.network.connect(msg.client, self.broker_id)
        owner.attach(msg)
        reply.ok(_ATTACHED)

    def _on_detach(self, msg: Detach, reply: Reply) -> None:
        name, namespace = parse_topic(msg.topic)
        bundles = self._ns_bundles.get(namespace)
        owned = self.owned.get(bundles.bundle_of_full_name(name)) if bundles else None
        if owned is not None and owned.actor is not None and owned.actor.alive:
            owned.actor.detach(msg)
        reply.ok(None)
