"""Namespace bundles: topic hashing, bundle names, lookup, split mechanics and split algorithms.

Spec: `pulsar-algorithms.md` §6.3 (split mechanics), §6.4 (split algorithms), §7 (hashing), and the
vectors in `vectors-hashing-and-split.md`. A namespace's bundles are a sorted partition array
`p[0] = 0 < ... < p[k] = 0xffffffff`; bundle i is `[p[i], p[i+1])` and the last one is closed.
"""

from __future__ import annotations

import bisect
import operator
import re
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from emulator.model.config import ServiceConfig
    from emulator.model.loaddata import NamespaceBundleStats

__all__ = [
    "FULL_LOWER",
    "FULL_UPPER",
    "SPLIT_ALGORITHMS",
    "NamespaceBundles",
    "topic_hash",
    "full_topic_name",
    "topic_namespace",
    "partition_name",
    "bundle_range_name",
    "bundle_name",
    "parse_bundle",
    "check_bundle_range",
    "can_split",
    "split_boundaries",
]

FULL_LOWER = 0x00000000
FULL_UPPER = 0xFFFFFFFF
_MIBI = 1048576

SPLIT_ALGORITHMS = (
    "range_equally_divide",
    "topic_count_equally_divide",
    "flow_or_qps_equally_divide",
    "specified_positions_divide",
)

_RANGE_RE = re.compile(r"0x([0-9a-f]{8})_0x([0-9a-f]{8})")
_DOMAINS = ("persistent", "non-persistent")


# --- Topics ----------------------------------------------------------------------------------------


def topic_hash(topic: str) -> int:
    """CRC-32 (IEEE) of the UTF-8 name as an unsigned 32-bit value, like Guava `crc32().padToLong()`."""
    return zlib.crc32(topic.encode("utf-8")) & 0xFFFFFFFF


def full_topic_name(topic: str) -> str:
    """`TopicName.toString()`: `t` → `persistent://public/default/t`, `a/b/t` → `persistent://a/b/t`."""
    if not isinstance(topic, str) or not topic:
        raise ValueError(f"topic = {topic!r}: expected a topic name such as 'persistent://tenant/ns/t'")
    if "://" in topic:
        domain = topic.split("://", 1)[0]
        if domain not in _DOMAINS:
            raise ValueError(
                f"topic = {topic!r}: domain must be 'persistent' or 'non-persistent'"
            )
        return topic
    parts = topic.split("/")
    if len(parts) == 1:
        return "persistent://public/default/" + topic
    if len(parts) in (3, 4):
        return "persistent://" + topic
    raise ValueError(
        f"topic = {topic!r}: short names are 'topic', 'tenant/ns/topic' or 'tenant/cluster/ns/topic'"
    )


def topic_namespace(topic: str) -> str:
    """Namespace of a topic: `persistent://tenant/ns/x` → `tenant/ns`; v1 `tenant/cluster/ns/x` too.

    As Java's TopicName, the rest after the domain is split into at most 4 parts: 3 parts is v2
    (tenant/ns/local), 4 parts is v1 (tenant/cluster/ns/local), so a v2 local name containing `/`
    is read as v1, exactly like Pulsar.
    """
    return _namespace_of_full(full_topic_name(topic), topic)


def parse_topic(topic: str) -> tuple[str, str]:
    """(full name, namespace) of a topic in one parse: what a lookup or an attach needs, and the
    input of `NamespaceBundles.bundle_of_full_name`."""
    name = full_topic_name(topic)
    return name, _namespace_of_full(name, topic)


def _namespace_of_full(name: str, topic: str) -> str:
    """`topic_namespace` of a name already in full form (`name`); `topic` is for the message."""
    parts = name[name.index("://") + 3:].split("/", 3)
    if len(parts) < 3 or not all(parts):
        raise ValueError(f"topic = {topic!r}: expected '<domain>://tenant/ns/topic'")
    if len(parts) == 3:
        return f"{parts[0]}/{parts[1]}"
    return f"{parts[0]}/{parts[1]}/{parts[2]}"


def partition_name(topic: str, i: int) -> str:
    """The name of partition `i` of a partitioned topic (each partition hashes on its own)."""
    if not isinstance(i, int) or isinstance(i, bool) or i < 0:
        raise ValueError(f"i = {i!r}: a partition index is an int >= 0")
    return f"{topic}-partition-{i}"


# --- Bundle names ----------------------------------------------------------------------------------


def _check_hash_value(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not FULL_LOWER <= value <= FULL_UPPER:
        raise ValueError(f"{name} = {value!r}: expected an int in [0, 0xffffffff]")
    return value


def _check_namespace(namespace: object) -> str:
    # "no empty part" without splitting: this runs for every bundle name parsed
    if not isinstance(namespace, str) or namespace.count("/") not in (1, 2) or (
        namespace[0] == "/" or namespace[-1] == "/" or "//" in namespace
    ):
        raise ValueError(
            f"namespace = {namespace!r}: expected 'tenant/ns' (or v1 'tenant/cluster/ns')"
        )
    return namespace


def check_bundle_range(lower: int, upper: int, upper_closed: bool | None = None) -> None:
    """NamespaceBundle's constructor checks: non-empty; upper closed iff it is 0xffffffff."""
    _check_hash_value("lower", lower)
    _check_hash_value("upper", upper)
    if upper_closed is None:
        upper_closed = upper == FULL_UPPER
    if upper == FULL_UPPER and not upper_closed:
        raise ValueError(f"upper = 0x{upper:08x}: the range ending at 0xffffffff must be closed")
    if upper != FULL_UPPER and upper_closed:
        raise ValueError(f"upper = 0x{upper:08x}: only a range ending at 0xffffffff may be closed")
    if lower >= upper:
        raise ValueError(f"lower = 0x{lower:08x}, upper = 0x{upper:08x}: empty key range")


def bundle_range_name(lower: int, upper: int) -> str:
    """`0x%08x_0x%08x`, lower-case hex: `bundle_range_name(0, 0x40000000)` → `0x00000000_0x40000000`."""
    _check_hash_value("lower", lower)
    _check_hash_value("upper", upper)
    return f"0x{lower:08x}_0x{upper:08x}"


def bundle_name(namespace: str, lower: int, upper: int) -> str:
    """`tenant/ns/0x00000000_0x40000000`."""
    return f"{_check_namespace(namespace)}/{bundle_range_name(lower, upper)}"


def parse_bundle(name: str) -> tuple[str, int, int]:
    """`tenant/ns/0xLLLLLLLL_0xUUUUUUUU` → (namespace, lower, upper); upper closed iff 0xffffffff.

    Only the canonical spelling (8 lower-case hex digits each) is accepted, because bundle names
    are map keys everywhere and a second spelling of the same range would be a second bundle.
    """
    if not isinstance(name, str) or "/" not in name:
        raise ValueError(f"bundle name = {name!r}: expected 'tenant/ns/0x00000000_0x40000000'")
    namespace, _, range_part = name.rpartition("/")
    match = _RANGE_RE.fullmatch(range_part)
    if not match:
        raise ValueError(
            f"bundle name = {name!r}: the range must be '0x%08x_0x%08x', e.g. 0x00000000_0x40000000"
        )
    try:
        _check_namespace(namespace)
    except ValueError:
        raise ValueError(f"bundle name = {name!r}: bad namespace {namespace!r}") from None
    lower, upper = int(match.group(1), 16), int(match.group(2), 16)
    if lower >= upper:
        raise ValueError(f"bundle name = {name!r}: empty key range")
    return namespace, lower, upper


def can_split(lower: int, upper: int) -> bool:
    """`canSplitBundle`: the range must be wider than 1."""
    return upper - lower > 1


_INT_ONLY = {int}


def _check_boundaries_slowly(bounds: tuple[object, ...]) -> None:
    """One boundary at a time: raises the ValueError naming the first bad one (the constructor's
    path for anything its C-speed check does not accept, e.g. an int subclass)."""
    for i, b in enumerate(bounds):
        _check_hash_value(f"boundaries[{i}]", b)
    for i in range(1, len(bounds)):
        if bounds[i] <= bounds[i - 1]:  # type: ignore[operator]
            raise ValueError(
                f"boundaries = {[hex(b) for b in bounds]!r}: must be strictly increasing "  # type: ignore[arg-type]
                f"(index {i}: 0x{bounds[i]:08x} <= 0x{bounds[i - 1]:08x})"
            )


# --- NamespaceBundles ------------------------------------------------------------------------------


class NamespaceBundles:
    """The immutable bundle layout of one namespace: its sorted partition array.

    `find_bundle_by_hash(0xffffffff)` returns the last bundle; Java's `binarySearch` lands on the
    final partition index there and throws IndexOutOfBoundsException (spec §7, §10.5).
    """

    __slots__ = ("_namespace", "_boundaries", "_names_cache")

    def __init__(self, namespace: str, boundaries: Iterable[int], *, allow_partial: bool = False):
        """Prefer `default` and `from_boundaries`; `allow_partial` skips the full-coverage check
        (only to reproduce Pulsar's own test of lookups outside the covered range, V-H6).

        Brokers rebuild a namespace's layout from its stored policies on every ownership check, so
        construction is O(n) at C speed (the checks run per boundary only to name a bad one) and
        the bundle names are made on first use."""
        _check_namespace(namespace)
        bounds = tuple(boundaries)
        if len(bounds) < 2:
            raise ValueError(f"boundaries = {list(bounds)!r}: need at least 2 (one bundle)")
        if not (set(map(type, bounds)) == _INT_ONLY and bounds[0] >= FULL_LOWER
                and bounds[-1] <= FULL_UPPER and all(map(operator.lt, bounds, bounds[1:]))):
            _check_boundaries_slowly(bounds)
        if not allow_partial and (bounds[0] != FULL_LOWER or bounds[-1] != FULL_UPPER):
            raise ValueError(
                f"boundaries = {[hex(b) for b in bounds]!r}: must start at 0x00000000 and end at "
                f"0xffffffff so the bundles cover every hash"
            )
        self._namespace = namespace
        self._boundaries = bounds
        self._names_cache: tuple[str, ...] | None = None

    @property
    def _names(self) -> tuple[str, ...]:
        names = self._names_cache
        if names is None:
            ns, b = self._namespace, self._boundaries
            names = self._names_cache = tuple(
                f"{ns}/0x{b[i]:08x}_0x{b[i + 1]:08x}" for i in range(len(b) - 1))
        return names

    @classmethod
    def default(cls, namespace: str, n: int) -> NamespaceBundles:
        """A namespace created with `n` bundles: `seg = 2^32 // n`, boundaries `0, seg, ..., 0xffffffff`."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"n = {n!r}: the number of bundles must be an int >= 1")
        seg = (1 << 32) // n
        return cls(namespace, [i * seg for i in range(n)] + [FULL_UPPER])

    @classmethod
    def from_boundaries(cls, namespace: str, boundaries: Iterable[int]) -> NamespaceBundles:
        """From a full partition array (sorted, strictly increasing, 0 … 0xffffffff)."""
        return cls(namespace, boundaries)

    # --- Views ------------------------------------------------------------------------------------

    @property
    def namespace(self) -> str:
        return self._namespace

    @property
    def boundaries(self) -> tuple[int, ...]:
        return self._boundaries

    @property
    def names(self) -> list[str]:
        """Full bundle names in hash order."""
        return list(self._names)

    @property
    def ranges(self) -> list[tuple[int, int]]:
        """(lower, upper) of each bundle in hash order (upper open except for 0xffffffff)."""
        b = self._boundaries
        return [(b[i], b[i + 1]) for i in range(len(b) - 1)]

    def __len__(self) -> int:
        return len(self._names)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NamespaceBundles):
            return NotImplemented
        return self._namespace == other._namespace and self._boundaries == other._boundaries

    def __hash__(self) -> int:
        return hash((self._namespace, self._boundaries))

    def __repr__(self) -> str:
        return f"NamespaceBundles({self._namespace!r}, {[f'0x{b:08x}' for b in self._boundaries]})"

    # --- Lookup -----------------------------------------------------------------------------------

    def find_bundle(self, topic: str) -> str:
        """The bundle owning `topic` (its namespace must be this one); hash of the full topic name."""
        name, ns = parse_topic(topic)
        if ns != self._namespace:
            raise ValueError(
                f"topic = {topic!r}: belongs to namespace {ns!r}, not {self._namespace!r}"
            )
        return self.bundle_of_full_name(name)

    def bundle_of_full_name(self, name: str) -> str:
        """`find_bundle` for a name `parse_topic` already made full and placed in this namespace
        (every lookup and attach lands here, so nothing is parsed or checked twice)."""
        # the hash is in range by construction, so skip find_bundle_by_hash's argument check
        h = zlib.crc32(name.encode("utf-8")) & 0xFFFFFFFF
        b = self._boundaries
        idx = bisect.bisect_right(b, h) - 1
        if 0 <= idx < len(b) - 1:
            return self._names[idx]
        return self.find_bundle_by_hash(h)  # outside a partial layout, or 0xffffffff: its rules

    def find_bundle_by_hash(self, h: int) -> str:
        """The bundle whose range holds hash `h` (Java `Arrays.binarySearch` on the partitions)."""
        _check_hash_value("h", h)
        b = self._boundaries
        idx = bisect.bisect_right(b, h) - 1
        if idx < 0:
            raise ValueError(f"h = 0x{h:08x}: below the first bundle (0x{b[0]:08x})")
        if idx == len(b) - 1:
            if h == FULL_UPPER:  # Java throws here; the closed last range holds it (§10.5)
                return self._names[-1]
            raise ValueError(f"h = 0x{h:08x}: at or above the last boundary 0x{b[-1]:08x}")
        return self._names[idx]

    def contains(self, bundle_name: str) -> bool:
        """True iff `bundle_name` is exactly one of this namespace's bundles (a binary search on
        the boundaries, not a scan of the names)."""
        return self._position(bundle_name) is not None

    def _position(self, bundle_name: str) -> int | None:
        try:
            namespace, lower, upper = parse_bundle(bundle_name)
        except ValueError:
            return None
        if namespace != self._namespace:
            return None
        b = self._boundaries
        i = bisect.bisect_left(b, lower)
        if i + 1 < len(b) and b[i] == lower and b[i + 1] == upper:
            return i
        return None

    def index_of(self, bundle_name: str) -> int:
        """Position of a bundle, or ValueError naming it."""
        i = self._position(bundle_name)
        if i is None:
            raise ValueError(
                f"bundle_name = {bundle_name!r}: not a bundle of {self._namespace!r}"
            )
        return i

    def children_of(self, parent_name: str) -> list[str]:
        """The bundles lying inside `parent_name`'s range (e.g. a split bundle's children)."""
        namespace, lower, upper = parse_bundle(parent_name)
        if namespace != self._namespace:
            raise ValueError(
                f"parent_name = {parent_name!r}: not in namespace {self._namespace!r}"
            )
        b = self._boundaries
        return [
            self._names[i]
            for i in range(len(self._names))
            if b[i] >= lower and b[i + 1] <= upper
        ]

    # --- Split ------------------------------------------------------------------------------------

    def split(
        self, bundle_name: str, boundaries: Sequence[int] | None = None, count: int = 2
    ) -> NamespaceBundles:
        """`NamespaceBundleFactory.splitBundles`: replace one bundle by its children (§6.3).

        With `boundaries` (sorted here, as Java does) each must lie strictly inside the bundle and
        they make `len(boundaries) + 1` children. Without, `count` children of `(max - min) // count`
        hashes each, the last one ending at the bundle's upper bound.
        """
        idx = self.index_of(bundle_name)
        lower, upper = self._boundaries[idx], self._boundaries[idx + 1]
        if not can_split(lower, upper):
            raise ValueError(
                f"bundle_name = {bundle_name!r}: can't be split further since range not larger than 1"
            )
        if boundaries:
            cuts = sorted(boundaries)
            for i, c in enumerate(cuts):
                _check_hash_value(f"boundaries[{i}]", c)
            if not (cuts[0] > lower and cuts[-1] < upper):
                raise ValueError(
                    f"boundaries = {[hex(c) for c in cuts]!r}: must lie strictly inside "
                    f"{bundle_name!r}"
                )
        else:
            if not isinstance(count, int) or isinstance(count, bool) or count < 2:
                raise ValueError(f"count = {count!r}: a split makes an int >= 2 bundles")
            seg = (upper - lower) // count
            if seg == 0:
                raise ValueError(
                    f"count = {count}: {bundle_name!r} is too narrow for that many bundles"
                )
            cuts = [lower + i * seg for i in range(1, count)]
        new = self._boundaries[: idx + 1] + tuple(cuts) + self._boundaries[idx + 1 :]
        return NamespaceBundles(self._namespace, new, allow_partial=True)


# --- Split algorithms (§6.4) -----------------------------------------------------------------------


def split_boundaries(
    algorithm: str,
    lower: int,
    upper: int,
    topics: Mapping[str, NamespaceBundleStats | None],
    conf: ServiceConfig,
    positions: Sequence[int] | None = None,
) -> list[int] | None:
    """Where to split bundle [lower, upper] by `algorithm`; None means "no split".

    `topics` are the bundle's owned topics (full names, hashed as given) with their stats or None.
    An empty boundary list from Java is also returned as None.
    """
    if algorithm not in SPLIT_ALGORITHMS:
        raise ValueError(
            f"algorithm = {algorithm!r}: unknown; known: {', '.join(SPLIT_ALGORITHMS)}"
        )
    _check_hash_value("lower", lower)
    _check_hash_value("upper", upper)
    if lower >= upper:
        raise ValueError(f"lower = 0x{lower:08x}, upper = 0x{upper:08x}: empty key range")
    if algorithm == "range_equally_divide":
        result: list[int] | None = [lower + (upper - lower) // 2]
    elif algorithm == "topic_count_equally_divide":
        result = _topic_count_equally_divide(topics)
    elif algorithm == "specified_positions_divide":
        result = _specified_positions_divide(lower, upper, topics, positions)
    else:
        result = _flow_or_qps_equally_divide(topics, conf)
    return result or None


def _topic_count_equally_divide(topics: Mapping[str, object]) -> list[int] | None:
    if len(topics) <= 1:
        return None
    hashes = sorted(topic_hash(t) for t in topics)
    n = len(hashes)
    start = hashes[max(n // 2 - 1, 0)]
    end = hashes[n // 2]
    return [start + (end - start) // 2]


def _specified_positions_divide(
    lower: int, upper: int, topics: Mapping[str, object], positions: Sequence[int] | None
) -> list[int] | None:
    if not positions:
        raise ValueError(
            f"positions = {positions!r}: specified_positions_divide needs split positions"
        )
    ordered = sorted(positions)
    if len(topics) <= 1:
        return None
    return [p for p in ordered if lower < p < upper] or None


def _flow_or_qps_equally_divide(
    topics: Mapping[str, NamespaceBundleStats | None], conf: ServiceConfig
) -> list[int] | None:
    """FlowOrQpsEquallyDivideBundleSplitAlgorithm (newest, with the `+ 1`), including its keying of
    topics by hash (a colliding topic overwrites the earlier one's info but stays in the list)."""
    if len(topics) <= 1:
        return None
    max_rate = conf.load_balancer_namespace_bundle_max_msg_rate
    max_bw = conf.load_balancer_namespace_bundle_max_bandwidth_mbytes * _MIBI
    diff = conf.flow_or_qps_difference_threshold_percentage / 100.0
    info: dict[int, tuple[float, float]] = {}
    hashes: list[int] = []
    total_rate = total_thr = 0.0
    for topic, stats in topics.items():
        if stats is None:
            continue
        rate = stats.msg_rate_in + stats.msg_rate_out
        thr = stats.msg_throughput_in + stats.msg_throughput_out
        if rate <= 0 and thr <= 0:
            continue
        h = topic_hash(topic)
        hashes.append(h)
        info[h] = (rate, thr)
        total_thr += thr
        total_rate += rate
    if len(info) < 2 or (total_rate < max_rate * (1 + diff) and total_thr < max_bw * (1 + diff)):
        return None
    hashes.sort()
    result: list[int] = []
    acc_rate, acc_thr = info[hashes[0]]
    for i in range(1, len(hashes)):
        rate, thr = info[hashes[i]]
        if acc_rate + rate > max_rate or acc_thr + thr > max_bw:
            start, end = hashes[i - 1], hashes[i]
            result.append(start + (end - start) // 2 + 1)
            acc_rate, acc_thr = rate, thr
        else:
            acc_rate += rate
            acc_thr += thr
    return result
