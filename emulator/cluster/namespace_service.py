"""The lookup path: ServerCnx.handleLookup, NamespaceService.findBrokerServiceUrl / searchForCandidateBroker.

Follows pulsar-protocol.md §1.2 ("Net behaviour") for the current (3.x) code:

1. a bundle owned by anyone (and enabled) -> any broker answers Connect(owner);
2. unowned, non-authoritative lookup at a non-leader while the leader is active and the load manager is
   centralized -> Redirect(leader, authoritative=false);
3. unowned at the leader, or anywhere while the leader is missing or not among the load manager's
   available brokers, or anywhere when the load manager is not centralized (NoopLoadManager) -> the load
   manager's `get_least_loaded` picks X; X == self -> acquire and Connect, else Redirect(X,
   authoritative=true);
4. unowned with authoritative=true -> acquire here, no load-manager check; LockBusy -> Failed/MetadataError;
5. a bundle this broker is unloading -> Failed/MetadataError.

Concurrent lookups of one bundle with the same authoritative flag share one resolution
(findingBundlesAuthoritative / NotAuthoritative). `maxConcurrentLookupRequest` pending lookups at most,
beyond which the answer is Failed/TooManyRequests at once. A lookup first waits for the netty I/O
thread of its connection and a placement decision for the broker's assignment lock
(broker_executors.py; no wait in the cost-free cluster). Ownership is read from the store on every
lookup (no cache of other brokers' ownership nodes), which is what Pulsar's metadata cache converges to;
heartbeat/SLA namespaces are not emulated.

A part of the broker actor (broker_base.py); the load manager is reached only through the seam
(load_manager.py): `is_centralized`, `available_brokers`, `get_least_loaded`, and, when the broker's
`capabilities` have ChannelOwnership (Extensible), its `find_broker_service_url`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import msgspec

from emulator.model.bundles import parse_topic
from emulator.runtime import ActorDead, AskTimeout, Reply
from emulator.runtime.rng import derive_rng

from . import paths
from .broker_executors import BrokerExecutors
from .messages import LookupFailure, LookupTopic, LookupTopicResponse, LookupType, ServerError
from .metadata_client import MetadataStoreError
from .network import service_url_of
from .ownership import NamespaceEphemeralData, OwnershipCache
from .user_faults import UserCodeError

__all__ = ["NamespaceService", "NOT_RUNNING"]


class _Result(msgspec.Struct, frozen=True):
    broker_id: str
    redirect: bool
    authoritative: bool = True


NOT_RUNNING = "Failed due to pulsar service is not ready"
"""ServerCnx's answer while PulsarService is not running (closing): to lookups and to CommandConnect."""
_LOOKUP_REFUSED = LookupTopicResponse(LookupType.FAILED, error=ServerError.SERVICE_NOT_READY,
                                      message=NOT_RUNNING)


class NamespaceService(OwnershipCache):
    """Lookups, answered from memory, by a shared resolution, or by the load manager's choice."""

    # (bundle, authoritative) -> the lookups waiting on its resolution: (reply, started)
    _finding: dict[tuple[str, bool], list[tuple[Reply, float]]]
    _responses: dict[_Result, LookupTopicResponse]

    def _init_namespace_service(self) -> None:
        self._finding = {}
        self._responses = {}
        # the threads a lookup storm queues on (broker_executors.py); cost-free without a capacity
        self.executors = BrokerExecutors(self.broker_id, self.capacity.broker, self.conf,
                                         derive_rng(self.system.seed, self.broker_id + "/executors"))

    def _on_lookup(self, msg: LookupTopic, reply: Reply) -> None:
        """CommandLookupTopic arrives: it waits for the I/O thread of its connection, which then
        runs ServerCnx.handleLookup (`_handle_lookup`); the lookup semaphore is taken there."""
        done = self.executors.lookup(self.now, msg.client)
        if done is not None and done > self.now:
            self.call_later(done - self.now, self._handle_lookup, msg, reply)
        else:
            self._handle_lookup(msg, reply)

    def _handle_lookup(self, msg: LookupTopic, reply: Reply) -> None:
        """Lookups are answered from memory or by their bundle's resolution.

        As Pulsar's handler runs on its I/O thread up to the first asynchronous step, a lookup whose
        bundle is owned and active here is answered at once, and one whose (bundle, authoritative)
        resolution is in flight waits in that resolution's list, which `_resolve` answers. A task
        runs per resolution, and per lookup only while its namespace's bundles are being loaded: in
        a lookup storm nearly every lookup shares a resolution, and a task per waiting lookup used
        to be most of the cost."""
        stats = self.stats
        stats.lookups += 1
        if self.closing:
            # ServerCnx.handleLookup: `if (!service.getPulsar().isRunning())` answers ServiceNotReady
            # before anything else (PR #17085, in 3.0): a broker draining for shutdown refuses every
            # lookup, and the client closes that connection (ClientCnx.checkServerError)
            stats.failures += 1
            reply.ok(_LOOKUP_REFUSED)
            return
        if stats.pending >= self.conf.max_concurrent_lookup_request:
            stats.too_many += 1
            stats.failures += 1
            reply.ok(
                LookupTopicResponse(
                    LookupType.FAILED,
                    error=ServerError.TOO_MANY_REQUESTS,
                    message="Failed due to too many pending lookup requests",
                )
            )
            return
        stats.pending += 1
        started = self.now
        try:
            name, namespace = parse_topic(msg.topic)
        except ValueError as e:
            self._answer(reply, started, LookupFailure(ServerError.TOPIC_NOT_FOUND, str(e)))
            return
        bundles = self._ns_bundles.get(namespace)
        if bundles is None:
            self.start_soon(self._lookup_after_load, namespace, name, msg, reply, started)
        else:
            self._route_lookup(bundles.bundle_of_full_name(name), msg, reply, started)

    async def _lookup_after_load(self, namespace: str, name: str, msg: LookupTopic, reply: Reply,
                                 started: float) -> None:
        try:
            bundles = await self.namespace_bundles(namespace)
        except LookupFailure as e:  # namespace_bundles turns store errors into LookupFailures
            self._answer(reply, started, e)
        except BaseException:
            self.stats.pending -= 1
            raise
        else:
            self._route_lookup(bundles.bundle_of_full_name(name), msg, reply, started)

    def _route_lookup(self, bundle: str, msg: LookupTopic, reply: Reply, started: float) -> None:
        # getBrokerServiceUrlAsync: RedirectManager first, while the cluster changes load manager
        # (redirect_manager.py); O(1), None unless the newest registration runs another class
        target = self.redirect_view.target(self.conf.load_manager_class_name, self.rng)
        if target is not None:
            self._answer(reply, started, _Result(target, redirect=True, authoritative=True))
            return
        key = (bundle, msg.authoritative)
        waiters = self._finding.get(key)
        if waiters is None:
            owned = self.owned.get(bundle)
            if owned is not None and owned.acquired.done():
                # an entry whose acquisition finished holds the lock (failures delete the entry)
                if owned.active:
                    self._answer(reply, started, _Result(self.broker_id, redirect=False))
                    return
                if self.capabilities.channel_ownership is None:
                    self._answer(reply, started, LookupFailure(
                        ServerError.METADATA_ERROR, f"Namespace bundle {bundle} is being unloaded"))
                    return
                # Extensible: a bundle being released here is the channel's to answer (it waits)
            waiters = self._finding[key] = []
            self.start_soon(self._resolve, key, msg.topic.startswith("non-persistent://"), waiters)
        waiters.append((reply, started))

    def _answer(self, reply: Reply, started: float, outcome: _Result | BaseException) -> None:
        stats = self.stats
        stats.pending -= 1
        stats.lookup_seconds += self.now - started
        if isinstance(outcome, _Result):
            if outcome.redirect:
                stats.redirects += 1
            else:
                stats.answers += 1
            response = self._responses.get(outcome)
            if response is None:  # responses are immutable: one per (broker, redirect, authoritative)
                response = self._responses[outcome] = LookupTopicResponse(
                    LookupType.REDIRECT if outcome.redirect else LookupType.CONNECT,
                    broker_service_url=service_url_of(outcome.broker_id),
                    broker_id=outcome.broker_id,
                    authoritative=outcome.authoritative,
                )
            reply.ok(response)
            return
        stats.failures += 1
        assert isinstance(outcome, LookupFailure), outcome
        error = outcome.error
        if error is ServerError.METADATA_ERROR and self.conf.emulator_lookup_failures_as_service_not_ready:
            error = ServerError.SERVICE_NOT_READY   # TopicLookupBase.handleLookupError before 3.0.2
        reply.ok(LookupTopicResponse(LookupType.FAILED, error=error, message=outcome.message))

    async def _resolve(self, key: tuple[str, bool], non_persistent: bool,
                       waiters: list[tuple[Reply, float]]) -> None:
        """NamespaceService.findBrokerServiceUrl, shared by the lookups of one (bundle,
        authoritative) while it runs (Pulsar's findingBundlesAuthoritative/NotAuthoritative maps);
        every waiter is answered here, with no callback or task of its own."""
        bundle, authoritative = key
        outcome: _Result | LookupFailure
        try:
            try:
                outcome = await self._find_uncached(bundle, authoritative, non_persistent)
            except MetadataStoreError as e:
                raise LookupFailure(ServerError.METADATA_ERROR, str(e)) from None
            except (ActorDead, AskTimeout) as e:
                raise LookupFailure(ServerError.SERVICE_NOT_READY, str(e)) from None
            except UserCodeError as e:  # TopicLookupBase.lookupTopicAsync's exceptionally
                raise LookupFailure(ServerError.SERVICE_NOT_READY, str(e)) from None
        except LookupFailure as e:
            outcome = e
        except BaseException:
            del self._finding[key]
            failure = LookupFailure(ServerError.SERVICE_NOT_READY, f"lookup of {bundle} interrupted")
            for reply, started in waiters:
                self._answer(reply, started, failure)
            raise
        del self._finding[key]
        for reply, started in waiters:
            self._answer(reply, started, outcome)

    async def _find_uncached(self, bundle: str, authoritative: bool, non_persistent: bool) -> _Result:
        channel = self.capabilities.channel_ownership
        if channel is not None:
            # NamespaceService.findBrokerServiceUrl with the extension enabled: the load manager's
            # findBrokerServiceUrl, whose answer is the owner's URL (LookupResult.Type.BrokerUrl):
            # Connect, never a redirect, whichever broker was asked
            return _Result(await channel.find_broker_service_url(bundle), redirect=False)
        owned = self.owned.get(bundle)
        if owned is not None:
            await asyncio.shield(owned.acquired)
            if owned.active:
                return _Result(self.broker_id, redirect=False)
            raise LookupFailure(
                ServerError.METADATA_ERROR, f"Namespace bundle {bundle} is being unloaded"
            )
        try:
            node = await self.md.get(paths.ownership_path(bundle))
        except MetadataStoreError as e:
            raise LookupFailure(ServerError.METADATA_ERROR, str(e)) from None
        if node is not None:
            data = msgspec.json.decode(node.data, type=NamespaceEphemeralData)
            if data.disabled:
                raise LookupFailure(
                    ServerError.METADATA_ERROR, f"Namespace bundle {bundle} is being unloaded"
                )
            return _Result(data.http_url.split("://", 1)[-1], redirect=False)
        return await self._search_for_candidate_broker(bundle, authoritative, non_persistent)

    async def _search_for_candidate_broker(
        self, bundle: str, authoritative: bool, non_persistent: bool
    ) -> _Result:
        """searchForCandidateBroker: `makeDecisionHere = !isCentralized() || isLeader()`, or the
        leader is not active (absent, or not among the load manager's available brokers)."""
        if not self.election_started:
            raise LookupFailure(
                ServerError.METADATA_ERROR, "The leader election has not yet been completed!"
            )
        authoritative_redirect = self.is_leader
        if authoritative:
            candidate: str | None = self.broker_id
        else:
            lm = self.load_manager
            decide_here = not lm.is_centralized() or self.is_leader
            leader = self.leader_id
            if not decide_here and (leader is None or leader not in lm.available_brokers()):
                decide_here = True
                # Pulsar logs this at WARN per lookup; at info here, or a leader drain floods stderr
                self.log.info("leader not active, deciding locally", bundle=bundle, leader=leader)
            if decide_here:
                candidate = await self._assign(lm, bundle, non_persistent)
                if candidate is None:
                    raise LookupFailure(
                        ServerError.SERVICE_NOT_READY, f"No broker was available to own {bundle}"
                    )
                authoritative_redirect = True
            else:
                lm.leader_decides()
                candidate = leader
        assert candidate is not None
        if candidate == self.broker_id:
            await self.try_acquiring_ownership(bundle)
            return _Result(self.broker_id, redirect=False)
        if candidate not in self.available_brokers:
            # createLookupResult reads the candidate's /loadbalance/brokers node
            raise LookupFailure(
                ServerError.METADATA_ERROR,
                f"NotFound: {paths.broker_path(candidate)}",
            )
        return _Result(candidate, redirect=True, authoritative=authoritative_redirect)

    async def _assign(self, lm: Any, bundle: str, non_persistent: bool) -> str | None:
        """The load manager's choice, one at a time per broker (selectBrokerForAssignment holds
        `synchronized (brokerCandidateCache)`): wait for the lock, decide on the state of that
        instant, then hold it for the decision's CPU (broker_executors.py)."""
        slot = self.executors.assign(self.now)
        if slot is None:
            return await lm.get_least_loaded(bundle, non_persistent)
        start, finish = slot
        if start > self.now:
            await anyio.sleep(start - self.now)
        candidate = await lm.get_least_loaded(bundle, non_persistent)
        if finish > self.now:
            await anyio.sleep(finish - self.now)
        return candidate
