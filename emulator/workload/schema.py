"""The scenario file, as typed Structs: what a TOML scenario may say, with every default named here.

    [scenario]          name, description, duration ("2h"), seed
    [cluster]           brokers, placement, shedder, emulator knobs; [cluster.capacity] for every broker;
                        [cluster.overrides] broker-3 = { cores = 2 } for some
    [[namespaces]]      name = "tenant/ns", bundles, anti_affinity_group
    [[topics]]          a group of topics: namespace, count, name pattern, partitions, producers,
                        consumers, msg_size, rate = { distribution = ... }, patterns = [...],
                        consumer_jitter = { ... }; or explicit `names` with explicit per-topic rates
    [traffic]           scale (a global multiplier), patterns applied to every topic
    [resources]         ResourceModelConstants overrides
    [settings]          any ServiceConfig key by its Pulsar name (camelCase)
    [metadata_store]    latency            [network] latency
    [latency]           operation latencies by name: topic_load = "20ms" or { distribution = ... }
                        (latency_table.py; defaults and sources in emulator/cluster/latency.py)
    [capacity.<part>]   shared capacities: metadata, bookkeeper, broker, client
                        (capacity_table.py; defaults and sources in emulator/cluster/capacity_*.py)
    [clients]           count, connect_over, operation_timeout, backoffs, max_lookup_redirects, library
    [serve]             pulsar_port: the binary protocol for real clients (wall clock only)
    [initial]           the state at t = 0 (see below)
    [[events]]          at = "30m", do = "<verb>", and the verb's arguments
    [[expect]]          kpi = "unloads", min / max, optional window: from / to, or after_event + within
    [[isolation_policies]]  name, namespaces (regexes), primary, secondary (broker regexes: host or host:port),
                        auto_failover_policy = { policy_type = "min_available",
                        parameters = { min_limit = "1", usage_threshold = "80" } } (Pulsar's
                        NamespaceIsolationData; stored at /admin/clusters/<cluster>/namespaceIsolationPolicies)
    [[failure_domains]] name, brokers = ["broker-1:8080", ...] (applied with [settings]
                        failureDomainsEnabled = true; /admin/clusters/<cluster>/failureDomain/<name>)
    Policy events: set_isolation_policy (name, namespaces, primary, secondary, auto_failover_policy,
                        unload = true: unload the matching namespaces, as pulsar-admin does),
                        delete_isolation_policy (name), set_failure_domain (name, brokers),
                        delete_failure_domain (name), set_anti_affinity_group (namespace, group;
                        no group removes it)

[[expect]] (issue 16, format 5): `kpi` is a KPI name of emulator/model/kpi_registry.py (the roll-up's
columns: unloads, bundle_moves, lookups, balance_max_over_mean, msg_rate_max_min_ratio,
unavailable_topic_seconds, lookup_failures, ..., publish_failed, publish_p9999, ...); `min` and/or `max`;
a window: `from` / `to` (offsets from the run start; either may be left out), or `after_event` (an index
into [[events]], counted from 0) with `within` (default: to the run's end). `run` exits 1 if one fails.

Broker lifecycle: `add_brokers` takes `count` (new brokers, numbered above every broker the cluster has
had) or `brokers` (names: a removed broker comes back under its id, empty); `restart_rolling` takes
`every` for a fixed cadence (batch k stopped at at + k × every, whatever the drains before it), instead
of `wait` (after each batch is back), and `settings`, broker.conf keys the restarted brokers come back
with (a migration of the load manager: `settings = { loadManagerClassName = "ExtensibleLoadManagerImpl" }`).

`[cluster] brokers` is a count (broker-1..broker-N) or a list of names as Pulsar writes broker ids,
`brokers = ["broker-a:8080", "broker-b:8080"]` (a name without a port gets :8080).

Initial state (`[initial]`, initial_state.py): every bundle is owned at t = 0 by a stated broker, its
ownership lock written as Pulsar writes it and the clients connecting to it:

    [initial]
    owners = "even" | "skewed" | "all_on"   # generator for bundles without a stated owner (default even)
    ratio = 2.5                             # skewed: max/min broker msg rate (in + out) at t = 0
    broker = "broker-1"                     # all_on: the one owner
    warm = "30m"                            # load data as if the cluster had run this long (default 0s)
    [[initial.namespaces]]
    name = "tenant/ns"
    boundaries = ["0x00000000", "0x40000000", "0x80000000", "0xffffffff"]   # optional, any split state
    owners = ["broker-1:8080", "", "broker-1:8080"]   # optional, one per bundle ("": the generator places it)

Explicit topics (what `pulsar-lb-emulator snapshot to-scenario` writes): a group may list its topics'
local names instead of `count` and `name`, and give each its own base rate:

    [[topics]]
    namespace = "tenant/ns"
    names = ["t-1", "t-2"]                                      # count = len(names); no `name` pattern
    rate = { distribution = "explicit", rates = [12.5, 3.0] }   # msg/s, one per topic, in names' order

`rates` may also follow a `count`/`name` group (one per topic index). A partition of a partitioned topic
exported from a cluster is listed by its own name (`x-partition-0`), as a topic of its own.

Every table forbids unknown keys. Durations are strings like "90m", "2h", "30s", "250ms", or a number of
seconds. Decoding (msgspec) checks types and ranges; `loader.py` adds the checks that need the whole
file (events within the duration, known namespaces, strategy names, Pulsar keys) and words every error as
one line naming the file, the key path and the value.
"""

from __future__ import annotations

import datetime
from typing import Annotated, Any, Literal, Union

import msgspec

from emulator.model.durations import parse_duration
from emulator.runtime import DEFAULT_START_EPOCH_MS
from .resources import BrokerCapacity, ResourceModelConstants

__all__ = [
    "SetIsolationPolicy",
    "SetFailureDomain",
    "SetAntiAffinityGroup",
    "POLICY_EVENT_TYPES",
    "IsolationPolicySpec",
    "FailureDomainSpec",
    "DeleteIsolationPolicy",
    "DeleteFailureDomain",
    "AutoFailoverSpec",
    "EVENT_TYPES",
    "PATTERN_TYPES",
    "AddBrokers",
    "BackgroundLoad",
    "BrokerCapacity",
    "CapacityOverride",
    "ClientsSection",
    "ClusterSection",
    "ConsumerJitter",
    "DiurnalPattern",
    "Duration",
    "Event",
    "Expect",
    "InitialNamespace",
    "InitialSection",
    "LeaderFailover",
    "MetadataStoreSection",
    "NamespaceSpec",
    "NetworkSection",
    "NoisePattern",
    "Offset",
    "Pattern",
    "RampEvent",
    "RampPattern",
    "RateSpec",
    "RemoveBrokers",
    "RestartRolling",
    "Scenario",
    "ScenarioInfo",
    "ScaleRate",
    "SessionExpire",
    "SetCapacity",
    "SetConfig",
    "SetRate",
    "SpikeEvent",
    "SpikePattern",
    "Split",
    "SteadyPattern",
    "TopicGroup",
    "TopicSelector",
    "TrafficSection",
    "Unload",
    "dec_hook",
    "verb_of",
]


class Duration(float):
    """Seconds, >= 0; written "90m", "2h", "1h30m", "30s", "250ms" or as a number of seconds."""

    NEGATIVE = "durations must be >= 0"


class Offset(Duration):
    """An emulated time, in seconds from the run start (the moment the cluster is up)."""

    NEGATIVE = "times are offsets from the run start and must be >= 0"


def dec_hook(kind: type, obj: Any) -> Any:
    """msgspec hook for Duration/Offset: a ValueError here becomes an error at the key's path."""
    if isinstance(kind, type) and issubclass(kind, Duration):
        seconds = parse_duration(obj)
        if seconds < 0:
            raise ValueError(kind.NEGATIVE)
        return kind(seconds)
    raise NotImplementedError(kind)


NonNegative = Annotated[float, msgspec.Meta(ge=0)]
Positive = Annotated[float, msgspec.Meta(gt=0)]
Count = Annotated[int, msgspec.Meta(ge=1)]
NonNegativeInt = Annotated[int, msgspec.Meta(ge=0)]
Fraction = Annotated[float, msgspec.Meta(ge=0, le=1)]
SettingValue = Union[str, int, float, bool, list[str]]
StopMode = Literal["graceful", "sigterm", "kill"]

# Every table below is a frozen, keyword-only Struct that refuses unknown keys (spelled out on each class,
# where msgspec and the type checkers read them).


# ---------------------------------------------------------------------------------- scenario, cluster


class ScenarioInfo(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str
    description: str
    """One line: what the scenario exists to show."""
    duration: Duration = Duration(3600.0)
    seed: int = 1
    start: datetime.datetime | None = None
    """The calendar time of the run's t = 0 (a TOML date-time, e.g. 2024-05-01T09:00:00Z; no offset
    means UTC): load reports' `lastUpdate` is it plus emulated time. Unset: 2024-01-01T00:00:00Z
    (`emulator.runtime.DEFAULT_START_EPOCH_MS`), fixed so that a seed alone decides the files."""


def start_epoch_ms(scenario: "Scenario") -> int:
    """The scenario's `start` in epoch milliseconds (the default start when it states none)."""
    start = scenario.scenario.start
    if start is None:
        return DEFAULT_START_EPOCH_MS
    if start.tzinfo is None:
        start = start.replace(tzinfo=datetime.timezone.utc)
    return round(start.timestamp() * 1000)


class CapacityOverride(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Fields of BrokerCapacity to change for some brokers; unset fields keep the cluster default."""

    cores: Positive | None = None
    nic_gbps: Positive | None = None
    heap_mb: Positive | None = None
    direct_mb: Positive | None = None
    background_cores: NonNegative | None = None

    def changes(self) -> dict[str, float]:
        return {k: v for k, v in msgspec.structs.asdict(self).items() if v is not None}


class ClusterSection(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    brokers: Count | list[str] = 3
    """A count (brokers named broker-1..broker-N) or the brokers' names: ids as Pulsar writes them,
    `host:port`; a name without a port gets :8080."""
    placement: str | None = None
    """Placement strategy (short name, Pulsar class, or pkg.module:Class); sets
    loadBalancerLoadPlacementStrategy."""
    shedder: str | None = None
    """Shedding strategy; sets loadBalancerLoadSheddingStrategy."""
    capacity: BrokerCapacity = msgspec.field(default_factory=BrokerCapacity)
    overrides: dict[str, CapacityOverride] = {}
    """Per broker (`broker-3` or `broker-3:8080`), applied over `capacity`."""
    report_interval: Duration = Duration(5.0)
    broker_start_timeout: Duration = Duration(60.0)
    bundle_close_time: Duration | None = None
    """Older spelling of `[latency] bundle_close` (default 20 ms)."""
    topic_close_time: Duration | None = None
    """Older spelling of `[latency] topic_close` (default 2 ms)."""
    sigterm_timeout: Duration = Duration(5.0)

    @property
    def broker_count(self) -> int:
        return self.brokers if isinstance(self.brokers, int) else len(self.brokers)

    @property
    def broker_ids(self) -> list[str]:
        """The initial brokers' ids (`host:port`), in the file's order."""
        if isinstance(self.brokers, int):
            return [f"broker-{i + 1}:8080" for i in range(self.brokers)]
        return [name if ":" in name else f"{name}:8080" for name in self.brokers]


class NamespaceSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str
    """tenant/namespace"""
    bundles: Count | None = None
    """Initial bundle count; default defaultNumberOfNamespaceBundles."""
    anti_affinity_group: str | None = None


# ---------------------------------------------------------------------------------- topics, traffic


class TopicSelector(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Which topics an event or pattern touches. Filters combine (AND), then one of hottest / random /
    fraction narrows the result; an empty selector means every topic (of the group, for a pattern)."""

    group: str | None = None
    namespace: str | None = None
    topics: list[str] = []
    """Topic names: full (`persistent://t/n/x`) or `t/n/x`; a partitioned topic's name selects all its
    partitions."""
    hottest: Count | None = None
    """The N topics with the highest base rate."""
    random: Count | None = None
    """N topics drawn with the scenario's seeded generator."""
    fraction: Fraction | None = None
    """This share of the topics, drawn at random."""


class RateSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base publish rate per topic (msg/s), before patterns.

    constant: every topic `rate`. uniform: U(low, high) per topic. zipf: `total` msg/s shared with
    weights 1/k^exponent over the topics in a seeded random order (default total = rate × count).
    hot_set: every topic `rate`, and `hot_count` (or `hot_fraction` of the) topics `rate × hot_factor`.
    explicit: `rates`, one msg/s per topic in the group's order (snapshots).
    A partitioned topic's rate is split evenly over its partitions."""

    distribution: Literal["constant", "uniform", "zipf", "hot_set", "explicit"] = "constant"
    rate: NonNegative = 10.0
    low: NonNegative | None = None
    high: NonNegative | None = None
    exponent: NonNegative = 1.0
    total: NonNegative | None = None
    hot_count: Count | None = None
    hot_fraction: Fraction | None = None
    hot_factor: NonNegative = 10.0
    rates: list[NonNegative] = []
    """explicit: the base rate of each topic of the group, in order."""


class SteadyPattern(msgspec.Struct, tag_field="kind", tag="steady",
                    frozen=True, kw_only=True, forbid_unknown_fields=True):
    """No change over time (the default)."""


class RampPattern(msgspec.Struct, tag_field="kind", tag="ramp", frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Multiplier `from_factor` until `start`, linear to `to_factor` at `end`, held after."""

    start: Offset = Offset(0.0)
    end: Offset
    from_factor: NonNegative = 1.0
    to_factor: NonNegative


class SpikePattern(msgspec.Struct, tag_field="kind", tag="spike",
                   frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Multiplier `factor` on the selected topics during [at, at + duration)."""

    at: Offset
    duration: Duration
    factor: NonNegative
    select: TopicSelector = msgspec.field(default_factory=TopicSelector)


class DiurnalPattern(msgspec.Struct, tag_field="kind", tag="diurnal",
                     frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Multiplier 1 + amplitude · sin(2π (t + phase_i) / period); phase_i = phase + U(±phase_jitter)
    per topic, so topics peak at different times when jittered."""

    amplitude: Fraction = 0.5
    period: Duration = Duration(86400.0)
    phase: Duration = Duration(0.0)
    phase_jitter: Duration = Duration(0.0)


class NoisePattern(msgspec.Struct, tag_field="kind", tag="noise",
                   frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Multiplier max(0, 1 + sd · N(0, 1)) per topic, drawn anew every `interval` (piecewise constant,
    a pure function of the seed and the interval's number): real traffic is never flat, and a load
    report is only written when a broker's numbers move by more than 10 %."""

    sd: NonNegative = 0.1
    interval: Duration = Duration(10.0)
    """> 0"""
    select: TopicSelector = msgspec.field(default_factory=TopicSelector)


Pattern = Union[SteadyPattern, RampPattern, SpikePattern, DiurnalPattern, NoisePattern]
PATTERN_TYPES: tuple[type, ...] = (SteadyPattern, RampPattern, SpikePattern, DiurnalPattern,
                                   NoisePattern)


class ConsumerJitter(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """On/off consumers: every `period`, the consumers of `fraction` of the group's topics close and
    come back after `off` (each comeback is a new lookup and attach)."""

    fraction: Fraction = 0.1
    period: Duration = Duration(60.0)
    off: Duration = Duration(30.0)


class TopicGroup(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    namespace: str
    count: Count = 1
    group: str | None = None
    """Name used by selectors; default `topics[<index>]`."""
    name: str = "topic-{i}"
    """Local name pattern; `{i}` is the topic's index in the group (format specs allowed: {i:05d})."""
    names: list[str] = []
    """Explicit local names, one per topic (replaces `count` and `name`; snapshots write these)."""
    persistence: Literal["persistent", "non-persistent"] = "persistent"
    partitions: NonNegativeInt = 0
    """0 = non-partitioned topics; N = partitioned topics of N partitions (`<name>-partition-<p>`)."""
    producers: NonNegativeInt = 1
    """Per topic (per partition of a partitioned topic)."""
    consumers: NonNegativeInt = 1
    """Per topic (per partition); each consumer reads everything (its own subscription)."""
    msg_size: Annotated[int, msgspec.Meta(ge=1)] = 1024
    """Bytes per message."""
    rate: RateSpec = msgspec.field(default_factory=RateSpec)
    patterns: list[Pattern] = []
    consumer_jitter: ConsumerJitter | None = None

    def label(self, index: int) -> str:
        return self.group or f"topics[{index}]"

    @property
    def size(self) -> int:
        """How many topics the group makes: len(names) when listed, else `count`."""
        return len(self.names) if self.names else self.count

    def local_name(self, i: int) -> str:
        """The i-th topic's local name: from `names`, or the `name` pattern."""
        return self.names[i] if self.names else self.name.format(i=i)


class TrafficSection(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    scale: NonNegative = 1.0
    """Multiplies every topic's rate."""
    patterns: list[Pattern] = []
    """Applied to every topic, on top of the group patterns."""


# ---------------------------------------------------------------------------------- infrastructure


class MetadataStoreSection(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    latency: Duration | None = None
    """Per metadata-store operation (ZooKeeper round trip); older spelling of `[latency] metadata_op`,
    a constant."""


class NetworkSection(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    latency: Duration = Duration(0.0)
    """One-way latency between clients and brokers (applied where the cluster supports it)."""


class ServeSection(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pulsar_port: Annotated[int, msgspec.Meta(ge=1, le=65535)] | None = None
    """Broker k serves Pulsar's binary protocol on this port + k - 1 for real clients (wall clock only;
    the same as `--pulsar-port`, which wins)."""


class ClientsSection(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    count: Count = 4
    """PulsarClient instances; topics are dealt to them round robin."""
    connect_over: Duration = Duration(0.0)
    """Spread the first connects of all topics evenly over this time (0 = all at once)."""
    operation_timeout: Positive = 30.0
    initial_backoff: Positive = 0.1
    max_backoff: Positive = 60.0
    max_lookup_redirects: NonNegativeInt = 20
    service_url: Literal["list", "service"] = "list"
    """"list": the clients' serviceUrl lists the brokers live at their creation (round robin, removed
    brokers refuse); "service": one name in front of the ready brokers (Kubernetes Service / DNS /
    load balancer), each lookup goes to a listening broker."""
    library: Literal["java", "cpp"] = "java"
    """Which Pulsar client the emulated clients behave as. "java" (the default, apache/pulsar's
    pulsar-client, which the emulated client follows step by step); "cpp": pulsar-client-cpp 3.x, the
    client under the Python, Node.js and Go-cgo wheels, which retries a failed lookup itself within
    the operation timeout (RetryableLookupService) and draws one reconnect jitter per second for all
    its handles (Backoff seeded with time(NULL)): bench/README.md, "Emulated clients against the real
    client"."""


# ---------------------------------------------------------------------------------- initial state
# (issue 16 item 1: who owns which bundle at t = 0, and a warm start; applied by initial_state.py)


class InitialNamespace(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One namespace's bundles at t = 0: exact boundaries (any split state) and/or owners."""

    name: str
    """tenant/namespace, declared in [[namespaces]]."""
    boundaries: list[str] | None = None
    """Ascending hex boundaries from "0x00000000" to "0xffffffff" (N + 1 values for N bundles);
    default: the [[namespaces]] bundle count in equal ranges."""
    owners: list[str] | None = None
    """One broker per bundle, in bundle order ("" for a bundle without a stated owner, as `snapshot
    to-scenario` writes an unowned one: the [initial] owners generator places it); default: the
    generator for every bundle."""


class InitialSection(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The cluster's state at t = 0 instead of an empty cluster whose clients' lookups place bundles."""

    owners: Literal["even", "skewed", "all_on"] = "even"
    """Generator for bundles without a stated owner: "even" (the same msg rate on every broker, as
    near as the bundles allow), "skewed" (max/min broker msg rate = `ratio`), "all_on" (`broker`)."""
    ratio: Annotated[float, msgspec.Meta(ge=1)] | None = None
    """skewed: target max/min broker msg rate (in + out) from the traffic model at t = 0."""
    broker: str | None = None
    """all_on: the broker that owns every such bundle."""
    warm: Duration = Duration(0.0)
    """Warm start: the load data as if the cluster had run in this state this long (0 = cold)."""
    namespaces: list[InitialNamespace] = []


# ---------------------------------------------------------------------------------- events


class AddBrokers(msgspec.Struct, tag_field="do", tag="add_brokers",
                 frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Start `count` new brokers (named broker-<N+1>, ... above every broker the cluster has had), or
    the `brokers` named: a removed one comes back under its id as a restarted host does (empty: it
    registers /loadbalance/brokers/<id> again and owns nothing until the leader assigns it bundles;
    same capacity unless given here). Optionally with their own capacity."""

    at: Offset
    count: Count | None = None
    """Default 1 when no `brokers` are named."""
    brokers: list[str] = []
    cores: Positive | None = None
    nic_gbps: Positive | None = None
    heap_mb: Positive | None = None
    direct_mb: Positive | None = None


class RemoveBrokers(msgspec.Struct, tag_field="do", tag="remove_brokers",
                    frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Stop brokers: the named ones, or `count` picked by `pick` (last = highest numbers)."""

    at: Offset
    brokers: list[str] = []
    count: Count | None = None
    pick: Literal["last", "first", "random", "most_bundles", "least_bundles"] = "last"
    mode: StopMode = "graceful"
    concurrent: bool = True
    """Stop them at once (True) or one after the other."""


class RestartRolling(msgspec.Struct, tag_field="do", tag="restart_rolling",
                     frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Restart brokers `batch` at a time (stop, stay down `down`, start), waiting `wait` between batches
    (after one batch is back, the next is stopped), or, with `every`, on a fixed cadence: batch k is
    stopped at `at + k × every` whatever the state of the ones before (still draining, down, back), as
    a rollout with a fixed interval does ("restart 100 brokers within 2 minutes": every = "1.2s").

    With mode = "kill", give `down` at least the metadata session timeout: like a real broker, one
    started again while its old session still holds /loadbalance/brokers/<id> cannot register
    (LockBusy), and the event fails."""

    at: Offset
    brokers: list[str] = []
    """Default: every live broker, in name order."""
    batch: Count = 1
    wait: Duration = Duration(60.0)
    """Between one batch back up and the next stopped (not with `every`)."""
    every: Duration | None = None
    """Fixed cadence: one batch stopped every this long, > 0."""
    down: Duration = Duration(0.0)
    mode: StopMode = "graceful"
    settings: dict[str, SettingValue] = {}
    """broker.conf keys the restarted brokers come back with (their own file edited before the
    restart; the others keep theirs): Pulsar's documented way to change the load manager, e.g.
    `settings = { loadManagerClassName = "ExtensibleLoadManagerImpl", loadBalancerLoadSheddingStrategy
    = "...TransferShedder" }` (a short class name is taken for Pulsar's). A key set with
    update-dynamic-config (set_config) wins over the file, as in Pulsar."""


class LeaderFailover(msgspec.Struct, tag_field="do", tag="leader_failover",
                     frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Take the current leader away: kill it, stop it, or expire its metadata session."""

    at: Offset
    mode: Literal["kill", "graceful", "sigterm", "session_expire"] = "kill"
    restart_after: Duration | None = None
    """Bring the old leader's broker back this long after it went away (kill/graceful/sigterm)."""


class SessionExpire(msgspec.Struct, tag_field="do", tag="session_expire",
                    frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Expire a broker's metadata-store session (ZooKeeper session expiry)."""

    at: Offset
    broker: str = "leader"
    """A broker name, or "leader"."""


class SetCapacity(msgspec.Struct, tag_field="do", tag="set_capacity",
                  frozen=True, kw_only=True, forbid_unknown_fields=True):
    at: Offset
    brokers: list[str] = []
    """Default: every live broker."""
    cores: Positive | None = None
    nic_gbps: Positive | None = None
    heap_mb: Positive | None = None
    direct_mb: Positive | None = None


class BackgroundLoad(msgspec.Struct, tag_field="do", tag="background_load",
                     frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A foreign process using `cores` of CPU on the brokers' hosts (0 ends it)."""

    at: Offset
    brokers: list[str] = []
    cores: NonNegative
    duration: Duration | None = None
    """Back to 0 after this long (default: stays)."""


class SetConfig(msgspec.Struct, tag_field="do", tag="set_config",
                frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Dynamic configuration (pulsar-admin brokers update-dynamic-config): a key Pulsar changes at
    runtime (emulator.model.config.DYNAMIC_KEYS), written to /admin/configuration (Cluster.set_config)."""

    at: Offset
    key: str
    value: SettingValue


class Unload(msgspec.Struct, tag_field="do", tag="unload", frozen=True, kw_only=True, forbid_unknown_fields=True):
    """pulsar-admin namespaces unload: one of namespace, bundle or topic (its current bundle)."""

    at: Offset
    namespace: str | None = None
    bundle: str | None = None
    topic: str | None = None
    destination: str | None = None


class Split(msgspec.Struct, tag_field="do", tag="split", frozen=True, kw_only=True, forbid_unknown_fields=True):
    """pulsar-admin namespaces split-bundle: a bundle, or the bundle of a topic at that time."""

    at: Offset
    bundle: str | None = None
    topic: str | None = None
    algorithm: str | None = None
    unload: bool = False


class SpikeEvent(msgspec.Struct, tag_field="do", tag="spike", frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Multiply the selected topics' rates by `factor` for `duration`."""

    at: Offset
    select: TopicSelector = msgspec.field(default_factory=TopicSelector)
    factor: NonNegative
    duration: Duration


class RampEvent(msgspec.Struct, tag_field="do", tag="ramp", frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Move the selected topics' rates linearly to `factor` × their rate over `over`, then hold."""

    at: Offset
    select: TopicSelector = msgspec.field(default_factory=TopicSelector)
    factor: NonNegative
    over: Duration


class SetRate(msgspec.Struct, tag_field="do", tag="set_rate", frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Set the selected topics' base rate (msg/s per topic; patterns still apply)."""

    at: Offset
    select: TopicSelector = msgspec.field(default_factory=TopicSelector)
    rate: NonNegative


class ScaleRate(msgspec.Struct, tag_field="do", tag="scale_rate",
                frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Multiply the selected topics' base rate by `factor` from now on."""

    at: Offset
    select: TopicSelector = msgspec.field(default_factory=TopicSelector)
    factor: NonNegative


# ---------------------------------------------------------------------------------- isolation (issue 16)


class AutoFailoverSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Pulsar's AutoFailoverPolicyData; `min_available` is its only type: fail over to the secondaries
    when fewer than `min_limit` primaries are available."""

    policy_type: str = "min_available"
    parameters: dict[str, str | int] = msgspec.field(
        default_factory=lambda: {"min_limit": "1", "usage_threshold": "80"})


class IsolationPolicySpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One namespace isolation policy (NamespaceIsolationData). Regexes are full matches: namespaces
    against `tenant/ns`, primary and secondary against the broker id `host:port` and then its host
    (newer Pulsar's NamespaceIsolationPolicyImpl.matchesBrokerRegex)."""

    name: str
    namespaces: list[str]
    primary: list[str]
    secondary: list[str] = []
    auto_failover_policy: AutoFailoverSpec = msgspec.field(default_factory=AutoFailoverSpec)

    def data(self) -> dict[str, Any]:
        """The policy's NamespaceIsolationData, as Pulsar's JSON."""
        return {"namespaces": list(self.namespaces), "primary": list(self.primary),
                "secondary": list(self.secondary),
                "auto_failover_policy": msgspec.to_builtins(self.auto_failover_policy)}


class FailureDomainSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A failure domain: broker ids (`broker-1` means `broker-1:8080`)."""

    name: str
    brokers: list[str]


class SetIsolationPolicy(IsolationPolicySpec, tag_field="do", tag="set_isolation_policy",
                         frozen=True, kw_only=True, forbid_unknown_fields=True):
    """pulsar-admin ns-isolation-policy set: create or replace a policy."""

    at: Offset
    unload: bool = True
    """Unload the namespaces the policy matches (setNamespaceIsolationPolicy's unloadBundles default)."""


class DeleteIsolationPolicy(msgspec.Struct, tag_field="do", tag="delete_isolation_policy",
                            frozen=True, kw_only=True, forbid_unknown_fields=True):
    at: Offset
    name: str


class SetFailureDomain(FailureDomainSpec, tag_field="do", tag="set_failure_domain",
                       frozen=True, kw_only=True, forbid_unknown_fields=True):
    """pulsar-admin clusters create-failure-domain / update-failure-domain."""

    at: Offset


class DeleteFailureDomain(msgspec.Struct, tag_field="do", tag="delete_failure_domain",
                          frozen=True, kw_only=True, forbid_unknown_fields=True):
    at: Offset
    name: str


class SetAntiAffinityGroup(msgspec.Struct, tag_field="do", tag="set_anti_affinity_group",
                           frozen=True, kw_only=True, forbid_unknown_fields=True):
    """pulsar-admin namespaces set-anti-affinity-group; without `group`, delete-anti-affinity-group."""

    at: Offset
    namespace: str
    group: str | None = None


POLICY_EVENT_TYPES: tuple[type, ...] = (SetIsolationPolicy, DeleteIsolationPolicy, SetFailureDomain,
                                        DeleteFailureDomain, SetAntiAffinityGroup)


Event = Union[AddBrokers, RemoveBrokers, RestartRolling, LeaderFailover, SessionExpire, SetCapacity,
              BackgroundLoad, SetConfig, Unload, Split, SpikeEvent, RampEvent, SetRate, ScaleRate,
              SetIsolationPolicy, DeleteIsolationPolicy, SetFailureDomain, DeleteFailureDomain,
              SetAntiAffinityGroup]
EVENT_TYPES: tuple[type, ...] = (AddBrokers, RemoveBrokers, RestartRolling, LeaderFailover,
                                 SessionExpire, SetCapacity, BackgroundLoad, SetConfig, Unload, Split,
                                 SpikeEvent, RampEvent, SetRate, ScaleRate) + POLICY_EVENT_TYPES


def verb_of(event: Any) -> str:
    """The `do = "..."` name of an event Struct."""
    return type(event).__struct_config__.tag


# ---------------------------------------------------------------------------------- expectations


class Expect(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What the run must show: one KPI (the roll-up's column name, emulator/model/kpi_registry.py) within
    [min, max], over the whole run, over [from, to], or over `within` after events[after_event]."""

    kpi: str
    min: float | None = None
    max: float | None = None
    from_: Offset | None = msgspec.field(default=None, name="from")
    """Window start (offset from the run start); default the run start."""
    to: Offset | None = None
    """Window end; default the run's end."""
    after_event: NonNegativeInt | None = None
    """Index into [[events]]: the window starts at that event's time."""
    within: Duration | None = None
    """With after_event: the window's length (default: to the run's end)."""


# ---------------------------------------------------------------------------------- the file


class Scenario(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    scenario: ScenarioInfo
    cluster: ClusterSection = msgspec.field(default_factory=ClusterSection)
    namespaces: list[NamespaceSpec] = []
    topics: list[TopicGroup] = []
    traffic: TrafficSection = msgspec.field(default_factory=TrafficSection)
    resources: ResourceModelConstants = msgspec.field(default_factory=ResourceModelConstants)
    settings: dict[str, SettingValue] = {}
    metadata_store: MetadataStoreSection = msgspec.field(default_factory=MetadataStoreSection)
    network: NetworkSection = msgspec.field(default_factory=NetworkSection)
    clients: ClientsSection = msgspec.field(default_factory=ClientsSection)
    serve: ServeSection = msgspec.field(default_factory=ServeSection)
    latency: dict[str, Any] = {}
    """Operation latencies by name (checked by latency_table.py: constants or distributions)."""
    capacity: dict[str, Any] = {}
    """Shared capacities by part and key (checked by capacity_table.py), issue 27."""
    initial: InitialSection | None = None
    events: list[Event] = []
    expect: list[Expect] = []
    isolation_policies: list[IsolationPolicySpec] = []
    failure_domains: list[FailureDomainSpec] = []

    @property
    def name(self) -> str:
        return self.scenario.name

    @property
    def description(self) -> str:
        return self.scenario.description

    @property
    def duration(self) -> float:
        return float(self.scenario.duration)

    @property
    def seed(self) -> int:
        return self.scenario.seed
