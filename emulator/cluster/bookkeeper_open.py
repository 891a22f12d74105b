"""A managed-ledger open, step by step, as callbacks of the broker that loads the topic.

ManagedLedgerFactoryImpl.asyncOpen -> ManagedLedgerImpl.initialize, in Pulsar's order:

1. read the managed ledger's znode (MetaStoreImpl.getManagedLedgerInfo: `/managed-ledgers/<topic>`);
2. open its last ledger with recovery (BookKeeper.asyncOpenLedger -> LedgerOpenOp): read the ledger's
   metadata znode; if the ledger was not closed, recover it (LedgerHandle.recover): a fence round
   (ReadLastConfirmed with the fence flag to the ensemble; from here its previous writer's adds fail),
   a read round (LedgerRecoveryOp reads past the last add confirmed) and the close (a metadata write);
   a CLOSED ledger needs none of it;
3. create the new ledger (ManagedLedgerImpl.createLedgerAfterClosed -> BookKeeper.asyncCreateLedger:
   an ensemble chosen from the registered bookies, no bookie I/O, and the ledger's metadata znode
   created), then store the ledger list (a write of the managed ledger's znode).

So an open costs 2 metadata reads and 2 writes, plus 1 write and 2 bookie rounds when it recovers.
The metadata operations are sent to the metadata store as the broker's own requests (Get / Set on the
managed ledger's znode and on one ledger znode per topic: BookKeeper's `/ledgers/...` path per ledger
id is simplified to one per topic, overwritten), so the store's latency and capacity apply to them.
Not modelled: the cursors' recovery (one more read per subscription, and a cursor ledger's open when
the cursor has one), and a failed metadata operation failing the load (it is counted in
`Bookies.metadata_errors` and the open goes on).

With `[capacity.bookkeeper] bookies = 0` (unlimited: the cluster tests) none of this runs: a load is one
`topic_load` draw as before, and only the fencing is applied when it ends (`topic_loader`).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Hashable

from emulator.runtime import ActorDead

from .bookkeeper import Bookies, LedgerFenced
from .metadata_messages import Get, Set
from .topic_loader import TopicLoader

Broker = Any   # the broker actor (broker.py imports this module: not imported back, no cycle)

__all__ = ["ManagedLedgerOpen", "ledger_path", "managed_ledger_path", "on_ledger_fenced", "topic_loader"]

_OPEN = b"OPEN"
_CLOSED = b"CLOSED"


def managed_ledger_path(topic: str) -> str:
    """`/managed-ledgers/<tenant>/<namespace>/persistent/<local name>` for persistent://tenant/ns/name."""
    scheme, _, rest = topic.partition("://")
    tenant, _, tail = rest.partition("/")
    ns, _, local = tail.partition("/")
    return f"/managed-ledgers/{tenant}/{ns}/{scheme or 'persistent'}/{local}"


def ledger_path(topic: str) -> str:
    """The znode of the topic's ledger (one per topic; see the module docstring)."""
    return "/ledgers" + managed_ledger_path(topic)[len("/managed-ledgers"):]


def topic_loader(broker: Broker, bookies: Bookies) -> TopicLoader:
    """The broker's TopicLoader: with bookies modelled, each load is a `ManagedLedgerOpen`; without,
    one `topic_load` draw, then the fencing of a ledger another broker left open."""
    limit: Callable[[], int] = lambda: broker.conf.max_concurrent_topic_load_request  # noqa: E731
    if bookies.unlimited:
        def opened(key: Hashable) -> None:
            fence_and_create(broker, bookies, key[1])  # type: ignore[index]
        return TopicLoader(broker.call_later, functools.partial(broker.latency, "topic_load"), limit,
                           opened=opened)
    return TopicLoader(broker.call_later, functools.partial(broker.latency, "topic_load"), limit,
                       opener=ManagedLedgerOpen(broker, bookies).open)


def fence_and_create(broker: Broker, bookies: Bookies, topic: str) -> None:
    """The open's fence and new ledger at one instant (no bookie modelled)."""
    _tell_fenced(broker, bookies.fence(topic, broker.broker_id), topic)
    bookies.created(topic, broker.broker_id)


def _tell_fenced(broker: Broker, previous: str | None, topic: str) -> None:
    if previous is None:
        return
    try:
        broker.network.broker(previous).tell(LedgerFenced(topic, broker.broker_id))
    except ActorDead:   # a crashed writer: nobody left to notice
        pass


class ManagedLedgerOpen:
    """The open chain of one broker (see the module docstring). No task per open: every step is a
    metadata ask answered as a callback (`Actor.ask_then`) or a timer at a bookie round's finish."""

    __slots__ = ("broker", "bookies")

    def __init__(self, broker: Broker, bookies: Bookies) -> None:
        self.broker = broker
        self.bookies = bookies

    def open(self, key: Hashable, done: Callable[[], Any]) -> None:
        topic: str = key[1]  # type: ignore[index]
        self._md(Get(managed_ledger_path(topic), self.broker.md.session_id), self._read_ledger, topic, done)

    # each step: (topic, done, value, error) from the previous metadata answer, or (topic, done) after a timer

    def _read_ledger(self, topic: str, done: Callable[[], Any], _value: Any, error: Any) -> None:
        self._count(error)
        self._md(Get(ledger_path(topic), self.broker.md.session_id), self._recover, topic, done)

    def _recover(self, topic: str, done: Callable[[], Any], _value: Any, error: Any) -> None:
        self._count(error)
        ledger = self.bookies.open_ledger(topic)
        if ledger is None:
            self._create(topic, done)
            return
        now = self.broker.now
        self.broker.call_later(self.bookies.round(now, ledger.ensemble) - now, self._fenced, topic, done,
                               ledger.ensemble)

    def _fenced(self, topic: str, done: Callable[[], Any], ensemble: tuple[int, ...]) -> None:
        _tell_fenced(self.broker, self.bookies.fence(topic, self.broker.broker_id), topic)
        now = self.broker.now
        self.broker.call_later(self.bookies.round(now, ensemble) - now, self._recovered, topic, done)

    def _recovered(self, topic: str, done: Callable[[], Any]) -> None:
        self._md(Set(ledger_path(topic), _CLOSED, -1, self.broker.md.session_id), self._close_answered,
                 topic, done)

    def _close_answered(self, topic: str, done: Callable[[], Any], _value: Any, error: Any) -> None:
        self._count(error)
        self._create(topic, done)

    def _create(self, topic: str, done: Callable[[], Any]) -> None:
        self._md(Set(ledger_path(topic), _OPEN, -1, self.broker.md.session_id), self._store_list, topic, done)

    def _store_list(self, topic: str, done: Callable[[], Any], _value: Any, error: Any) -> None:
        self._count(error)
        self._md(Set(managed_ledger_path(topic), _OPEN, -1, self.broker.md.session_id), self._opened,
                 topic, done)

    def _opened(self, topic: str, done: Callable[[], Any], _value: Any, error: Any) -> None:
        self._count(error)
        # a fence by another broker meanwhile found the old ledger; the new one is ours from here
        self.bookies.created(topic, self.broker.broker_id)
        done()

    # ------------------------------------------------------------------ metadata

    def _md(self, msg: Any, then: Callable[..., Any], topic: str, done: Callable[[], Any]) -> None:
        broker = self.broker
        store = broker.system.get(broker.md.store_name)
        if store is None:
            then(topic, done, None, ActorDead(broker.md.store_name, "not running"))
            return
        try:
            store.ask_then(msg, then, topic, done, asker=broker, timeout=broker.md.op_timeout)
        except ActorDead as e:
            then(topic, done, None, e)

    def _count(self, error: Any) -> None:
        if error is not None:
            self.bookies.metadata_errors += 1


def on_ledger_fenced(broker: Broker, msg: LedgerFenced) -> None:
    """The broker learns its ledger of `msg.topic` was fenced (its next add failed): PersistentTopic
    .addFailed -> close(): every producer and consumer of the topic is disconnected and the topic is
    gone from this broker; the next attach here loads it again (and fences the other writer: with two
    owners, the topic bounces between them, as in Pulsar). Ignored if this broker writes a newer
    ledger of the topic, or no longer has it loaded."""
    bookies: Bookies = broker.bookies
    if bookies.writer_of(msg.topic) == broker.broker_id:
        return
    owner = _owner_of(broker, msg.topic)
    if owner is None or msg.topic not in owner.topics:
        return
    bookies.fenced_topics += 1
    bookies.fenced_handles += owner.fence_topic(msg.topic)


def _owner_of(broker: Broker, topic: str) -> Any:
    from emulator.model.bundles import parse_topic

    name, namespace = parse_topic(topic)
    bundles = broker._ns_bundles.get(namespace)
    if bundles is None:
        return None
    owned = broker.owned.get(bundles.bundle_of_full_name(name))
    if owned is None or owned.actor is None or not owned.actor.alive:
        return None
    return owned.actor


