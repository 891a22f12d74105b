"""Messages exchanged by brokers, bundle owners, the leader and clients.

Names follow Pulsar's binary protocol (PulsarApi.proto) where there is one: CommandLookupTopic,
CommandLookupTopicResponse with LookupType {Redirect, Connect, Failed} and ServerError codes.
Metadata-store messages live in `metadata_messages.py`.
"""

from __future__ import annotations

from enum import Enum

import msgspec


class LookupType(str, Enum):
    REDIRECT = "Redirect"
    CONNECT = "Connect"
    FAILED = "Failed"


class ServerError(str, Enum):
    """The ServerError codes a lookup or attach can fail with (PulsarApi.proto)."""

    SERVICE_NOT_READY = "ServiceNotReady"
    METADATA_ERROR = "MetadataError"
    TOO_MANY_REQUESTS = "TooManyRequests"
    TOPIC_NOT_FOUND = "TopicNotFound"


class LookupFailure(Exception):
    """A lookup that ends in CommandLookupTopicResponse Failed with `error`."""

    def __init__(self, error: ServerError, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


class AdminError(Exception):
    """An admin operation refused by the broker (IllegalStateException / NotFound in Pulsar)."""


# --------------------------------------------------------------------------- lookups


class LookupTopic(msgspec.Struct, frozen=True):
    """CommandLookupTopic: the first lookup is non-authoritative; redirects carry the flag back."""

    topic: str
    authoritative: bool = False
    request_id: int = 0
    client: str = ""
    """The connection it came over (the client's name and pool key): the broker serves each
    connection on one netty I/O thread (broker_executors.py)."""


class LookupTopicResponse(msgspec.Struct, frozen=True):
    """CommandLookupTopicResponse. `broker_id` is the emulator's handle on `broker_service_url`."""

    response: LookupType
    broker_service_url: str = ""
    broker_id: str = ""
    authoritative: bool = False
    error: ServerError | None = None
    message: str = ""


# --------------------------------------------------------------------------- producers / consumers


class HandleKind(str, Enum):
    PRODUCER = "producer"
    CONSUMER = "consumer"


class Attach(msgspec.Struct, frozen=True):
    """CommandProducer / CommandSubscribe sent to the broker the lookup answered with."""

    topic: str
    handle_id: int
    client: str
    kind: HandleKind


class AttachResult(msgspec.Struct, frozen=True):
    ok: bool
    error: ServerError | None = None
    message: str = ""
    connection_refused: bool = False
    """The connection itself was refused (ServerCnx.handleConnect on a broker that is not running):
    the client has no connection to that broker afterwards."""


class Detach(msgspec.Struct, frozen=True):
    """CommandCloseProducer / CommandCloseConsumer sent by the client (it is going away)."""

    topic: str
    handle_id: int
    client: str
    kind: HandleKind


class CloseHandle(msgspec.Struct, frozen=True):
    """Broker-initiated CommandCloseProducer / CommandCloseConsumer (bundle unload): reconnect after backoff.

    `assigned_broker` is PIP-307's `assignedBrokerServiceUrl` (the Extensible load manager's transfer):
    the client reconnects there at once, without a lookup (ClientCnx.handleCloseProducer ->
    `connectionClosed(cnx, Optional.of(0L), Optional.of(uri))`)."""

    topic: str
    handle_id: int
    kind: HandleKind
    assigned_broker: str | None = None


class TopicFenced(msgspec.Struct, frozen=True):
    """Not a protocol command: the emulator's note to a client that the topic its handle is attached to
    was closed without disconnecting it (PIP-307's first phase, `unloadServiceUnit(disconnectClients=
    false)`). Pulsar's broker ignores the producer's sends from then on (`brk_lb_ignored_send_total`);
    the client cannot tell, but its messages wait from this instant, so its outage starts here."""

    topic: str
    handle_id: int
    kind: HandleKind


class SendError(msgspec.Struct, frozen=True):
    """CommandSendError from `broker_id` for a producer's pending send (PersistentTopic.addFailed: the
    publish callback completes with the error, Producer.MessagePublishContext sends it). The Java client
    (ClientCnx.handleSendError) closes the whole connection for any error but ChecksumError and
    TopicTerminatedError, so every producer and consumer on it reconnects and resends."""

    broker_id: str
    error: str


class ConnectionClosed(msgspec.Struct, frozen=True):
    """The TCP connection to a broker dropped (crash, or the client closed it after ServiceNotReady)."""

    broker_id: str


# --------------------------------------------------------------------------- client control


class CreateHandles(msgspec.Struct, frozen=True):
    """Ask a client to create producers/consumers on topics (each retries until created or timed out)."""

    topics: tuple[str, ...]
    kind: HandleKind = HandleKind.PRODUCER
    per_topic: int = 1


# --------------------------------------------------------------------------- leader


class SelectBrokerForAssignment(msgspec.Struct, frozen=True):
    """Broker -> its LoadManagerLeader: ModularLoadManagerImpl.selectBrokerForAssignment."""

    bundle: str
    non_persistent: bool = False


# --------------------------------------------------------------------------- admin / leader -> owner


class UnloadBundle(msgspec.Struct, frozen=True):
    """Admin unloadNamespaceBundle, executed by the owner (NamespaceService.unloadNamespaceBundle).

    `destination` is `--destinationBroker` for a load manager that transfers (Extensible); the Modular
    and Simple ones get it through `set_namespace_bundle_affinity` on the leader instead."""

    bundle: str
    destination: str | None = None


class SplitBundle(msgspec.Struct, frozen=True):
    """Admin splitNamespaceBundle, executed by the owner (NamespaceService.splitAndOwnBundle).

    `algorithm` None means the broker's `defaultNamespaceBundleSplitAlgorithm`."""

    bundle: str
    unload: bool = True
    algorithm: str | None = None
    boundaries: tuple[int, ...] | None = None


class AdminResult(msgspec.Struct, frozen=True):
    ok: bool
    message: str = ""
    detail: dict[str, object] = {}


class CloseTopics(msgspec.Struct, frozen=True):
    """Broker -> BundleOwner: close every topic of the bundle (BrokerService.unloadServiceUnit)."""


# --------------------------------------------------------------------------- initial state (scenario)


class AcquireBundle(msgspec.Struct, frozen=True):
    """Own an unowned bundle now (OwnershipCache.tryAcquiringOwnership): a scenario's owner at t = 0."""

    bundle: str


class WarmStart(msgspec.Struct, frozen=True):
    """Fill the stats period and host sample with this instant's traffic as steady, then write a report."""


class WarmShedder(msgspec.Struct, frozen=True):
    """Leader: step the shedder's history `cycles` times over the current load data, as that many
    shedding cycles in a steady cluster would have (ThresholdShedder's EMA; no-op for the others)."""

    cycles: int
