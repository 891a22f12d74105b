"""Bundles: every hashing and split vector of `vectors-hashing-and-split.md` (V-H1..6, V-S1..8)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emulator.model import bundles
from emulator.model.bundles import (
    FULL_LOWER,
    FULL_UPPER,
    NamespaceBundles,
    bundle_name,
    bundle_range_name,
    can_split,
    check_bundle_range,
    full_topic_name,
    parse_bundle,
    partition_name,
    split_boundaries,
    topic_hash,
    topic_namespace,
)
from emulator.model.config import ServiceConfig
from emulator.model.loaddata import NamespaceBundleStats

CONF = ServiceConfig()


def stats(rate_in: float, rate_out: float, thr_in: float, thr_out: float) -> NamespaceBundleStats:
    return NamespaceBundleStats(
        msg_rate_in=rate_in, msg_rate_out=rate_out, msg_throughput_in=thr_in, msg_throughput_out=thr_out
    )


# --- V-H1 CRC32 ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("s", "h"), [("a", 3904355907), ("b", 1908338681), ("c", 112844655)])
def test_vh1_crc32(s: str, h: int) -> None:
    assert topic_hash(s) == h


def test_topic_hash_is_unsigned_and_utf8() -> None:
    assert topic_hash("persistent://public/default/my-topic") == 0x2BAD45F7
    assert 0 <= topic_hash("persistent://t/n/ü") <= FULL_UPPER
    assert topic_hash("ü") != topic_hash("u")


# --- V-H2 default partitions -----------------------------------------------------------------------


def test_vh2_default_partitions() -> None:
    assert NamespaceBundles.default("t/n", 4).boundaries == (
        0x00000000, 0x40000000, 0x80000000, 0xC0000000, 0xFFFFFFFF,
    )  # fmt: skip
    assert NamespaceBundles.default("t/n", 3).boundaries == (0, 0x55555555, 0xAAAAAAAA, 0xFFFFFFFF)
    assert NamespaceBundles.default("t/n", 16).boundaries == tuple(
        [i * 0x10000000 for i in range(16)] + [0xFFFFFFFF]
    )
    single = NamespaceBundles.default("t/n", 1)
    assert single.boundaries == (0, 0xFFFFFFFF)
    assert single.names == ["t/n/0x00000000_0xffffffff"]


# --- V-H3 topic -> bundle table --------------------------------------------------------------------

VH3 = [
    ("persistent://public/default/my-topic", 732775927,
     "0x00000000_0x40000000", "0x20000000_0x30000000", "0x00000000_0x55555555"),
    ("persistent://public/default/my-topic-partition-0", 1028342325,
     "0x00000000_0x40000000", "0x30000000_0x40000000", "0x00000000_0x55555555"),
    ("persistent://public/default/my-topic-partition-1", 1246524067,
     "0x40000000_0x80000000", "0x40000000_0x50000000", "0x00000000_0x55555555"),
    ("persistent://public/default/my-topic-partition-2", 3544523545,
     "0xc0000000_0xffffffff", "0xd0000000_0xe0000000", "0xaaaaaaaa_0xffffffff"),
    ("persistent://public/default/my-topic-partition-3", 2755793807,
     "0x80000000_0xc0000000", "0xa0000000_0xb0000000", "0x55555555_0xaaaaaaaa"),
    ("persistent://my-tenant/my-ns/orders", 3831209422,
     "0xc0000000_0xffffffff", "0xe0000000_0xf0000000", "0xaaaaaaaa_0xffffffff"),
    ("non-persistent://public/default/events", 121986075,
     "0x00000000_0x40000000", "0x00000000_0x10000000", "0x00000000_0x55555555"),
    ("persistent://pulsar/global/ns1/topic-1", 690289361,
     "0x00000000_0x40000000", "0x20000000_0x30000000", "0x00000000_0x55555555"),
    ("persistent://pulsar/use/ns1/topic-1", 913724553,
     "0x00000000_0x40000000", "0x30000000_0x40000000", "0x00000000_0x55555555"),
    ("persistent://prop/ns-abc/topic1", 1230041121,
     "0x40000000_0x80000000", "0x40000000_0x50000000", "0x00000000_0x55555555"),
    ("persistent://prop/ns-abc/topic2", 3495535003,
     "0xc0000000_0xffffffff", "0xd0000000_0xe0000000", "0xaaaaaaaa_0xffffffff"),
    ("persistent://public/default/test", 2855153909,
     "0x80000000_0xc0000000", "0xa0000000_0xb0000000", "0x55555555_0xaaaaaaaa"),
    ("persistent://tenant/ns/t0", 2903286110,
     "0x80000000_0xc0000000", "0xa0000000_0xb0000000", "0xaaaaaaaa_0xffffffff"),
    ("persistent://tenant/ns/t1", 3658191304,
     "0xc0000000_0xffffffff", "0xd0000000_0xe0000000", "0xaaaaaaaa_0xffffffff"),
    ("persistent://tenant/ns/t2", 1124253810,
     "0x40000000_0x80000000", "0x40000000_0x50000000", "0x00000000_0x55555555"),
]  # fmt: skip


@pytest.mark.parametrize(("topic", "h", "b4", "b16", "b3"), VH3, ids=[v[0] for v in VH3])
def test_vh3_topic_to_bundle(topic: str, h: int, b4: str, b16: str, b3: str) -> None:
    assert topic_hash(topic) == h
    ns = topic_namespace(topic)
    for n, expected in ((4, b4), (16, b16), (3, b3)):
        assert NamespaceBundles.default(ns, n).find_bundle(topic) == f"{ns}/{expected}"


def test_find_bundle_hashes_the_full_topic_name() -> None:
    nb = NamespaceBundles.default("public/default", 4)
    assert nb.find_bundle("my-topic-partition-2") == "public/default/0xc0000000_0xffffffff"
    assert nb.find_bundle("public/default/my-topic-partition-2") == "public/default/0xc0000000_0xffffffff"


# --- V-H4 boundary semantics -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("h", "expected"),
    [
        (0x00000000, "0x00000000_0x40000000"),
        (0x3FFFFFFF, "0x00000000_0x40000000"),
        (0x40000000, "0x40000000_0x80000000"),
        (0xBFFFFFFF, "0x80000000_0xc0000000"),
        (0xC0000000, "0xc0000000_0xffffffff"),
        (0xFFFFFFFE, "0xc0000000_0xffffffff"),
        (0xFFFFFFFF, "0xc0000000_0xffffffff"),  # Java throws; the closed last range holds it
    ],
)
def test_vh4_boundaries(h: int, expected: str) -> None:
    assert NamespaceBundles.default("t/n", 4).find_bundle_by_hash(h) == f"t/n/{expected}"


@pytest.mark.parametrize("h", [-1, 0x100000000, 1.5, "0", True])
def test_find_bundle_by_hash_rejects_non_hashes(h: object) -> None:
    with pytest.raises(ValueError, match="h = "):
        NamespaceBundles.default("t/n", 4).find_bundle_by_hash(h)  # type: ignore[arg-type]


# --- V-H5 construction and names -------------------------------------------------------------------


def test_vh5_constructor_and_names() -> None:
    nb = NamespaceBundles.from_boundaries("pulsar/use/ns2", [0, 0x10000000, 0x40000000, 0xFFFFFFFF])
    assert nb.names == [
        "pulsar/use/ns2/0x00000000_0x10000000",
        "pulsar/use/ns2/0x10000000_0x40000000",
        "pulsar/use/ns2/0x40000000_0xffffffff",
    ]
    assert nb.ranges == [(0, 0x10000000), (0x10000000, 0x40000000), (0x40000000, 0xFFFFFFFF)]
    assert len(nb) == 3 and list(nb) == nb.names
    assert nb.find_bundle_by_hash(0x3FFFFFFF) == "pulsar/use/ns2/0x10000000_0x40000000"  # open upper
    assert nb.find_bundle_by_hash(0xFFFFFFFF) == "pulsar/use/ns2/0x40000000_0xffffffff"  # closed
    assert bundle_name("pulsar/use/ns1", 0, 0x10000000) == "pulsar/use/ns1/0x00000000_0x10000000"
    assert bundle_name("pulsar/use/ns1", 0x10000000, FULL_UPPER) == "pulsar/use/ns1/0x10000000_0xffffffff"
    assert bundle_range_name(FULL_LOWER, FULL_UPPER) == "0x00000000_0xffffffff"


def test_vh5_parse_bundle() -> None:
    assert parse_bundle("pulsar/use/ns1/0x10000000_0xffffffff") == ("pulsar/use/ns1", 0x10000000, 0xFFFFFFFF)
    assert parse_bundle("public/default/0x00000000_0x40000000") == ("public/default", 0, 0x40000000)


@pytest.mark.parametrize(
    ("lower", "upper", "closed", "match"),
    [
        (0x10000000, 0xFFFFFFFF, False, "must be closed"),
        (0x10000000, 0x40000000, True, "only a range ending at 0xffffffff may be closed"),
        (0x10000000, 0x10000000, False, "empty key range"),
        (0x40000000, 0x10000000, False, "empty key range"),
    ],
)
def test_vh5_invalid_ranges(lower: int, upper: int, closed: bool, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        check_bundle_range(lower, upper, closed)


def test_check_bundle_range_accepts_the_valid_forms() -> None:
    check_bundle_range(0, 0xFFFFFFFF, True)
    check_bundle_range(0, 0x40000000, False)
    check_bundle_range(0, 0x40000000)


@pytest.mark.parametrize(
    "name",
    [
        "public/default/0x10000000_0x10000000",  # empty range
        "public/default/0x40000000_0x10000000",
        "public/default/0x1000_0x2000",  # not canonical
        "public/default/0X10000000_0X20000000",
        "public/default/0x1000000g_0x20000000",
        "0x00000000_0xffffffff",  # no namespace
        "a/0x00000000_0xffffffff",
        "a/b/c/d/0x00000000_0xffffffff",
    ],
)
def test_parse_bundle_rejects_invalid_names(name: str) -> None:
    with pytest.raises(ValueError, match="bundle name"):
        parse_bundle(name)


@pytest.mark.parametrize(
    "boundaries",
    [
        [0x10000000, 0xFFFFFFFF],  # does not start at 0
        [0, 0x10000000],  # does not end at 0xffffffff
        [0, 0x40000000, 0x40000000, 0xFFFFFFFF],  # empty bundle
        [0, 0x80000000, 0x40000000, 0xFFFFFFFF],  # unsorted
        [0],
        [0, 0x100000000],
    ],
)
def test_from_boundaries_validates(boundaries: list[int]) -> None:
    with pytest.raises(ValueError, match="boundaries"):
        NamespaceBundles.from_boundaries("t/n", boundaries)


@pytest.mark.parametrize("namespace", ["", "t", "t/", "/n", "a/b/c/d", 5])
def test_bad_namespaces(namespace: object) -> None:
    with pytest.raises(ValueError, match="namespace"):
        NamespaceBundles.default(namespace, 4)  # type: ignore[arg-type]


@pytest.mark.parametrize("n", [0, -1, 1.5, True])
def test_default_rejects_bad_counts(n: object) -> None:
    with pytest.raises(ValueError, match="n = "):
        NamespaceBundles.default("t/n", n)  # type: ignore[arg-type]


# --- V-H6 out-of-range lookups ---------------------------------------------------------------------


def test_vh6_hash_below_first_partition_raises() -> None:
    partial = NamespaceBundles("pulsar/global/ns1", [0x40000000, 0x80000000, 0xFFFFFFFF], allow_partial=True)
    h = topic_hash("persistent://pulsar/global/ns1/topic-1")  # 0x2924fad1 < 0x40000000
    with pytest.raises(ValueError, match="below the first bundle"):
        partial.find_bundle_by_hash(h)
    with pytest.raises(ValueError):
        partial.find_bundle("persistent://pulsar/global/ns1/topic-1")


def test_vh6_hash_at_or_above_last_partial_boundary_raises() -> None:
    partial = NamespaceBundles("t/n", [0, 0x80000000], allow_partial=True)
    assert partial.find_bundle_by_hash(0x7FFFFFFF) == "t/n/0x00000000_0x80000000"
    with pytest.raises(ValueError, match="last boundary"):
        partial.find_bundle_by_hash(0x80000000)


def test_vh6_topic_of_another_namespace_raises() -> None:
    nb = NamespaceBundles.default("pulsar/global/ns1", 4)
    with pytest.raises(ValueError, match="belongs to namespace 'pulsar/global/ns2'"):
        nb.find_bundle("persistent://pulsar/global/ns2/topic-1")


# --- Topic names -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("topic", "namespace"),
    [
        ("persistent://tenant/ns/x", "tenant/ns"),
        ("non-persistent://tenant/ns/x", "tenant/ns"),
        ("persistent://tenant/cluster/ns/x", "tenant/cluster/ns"),
        ("persistent://tenant/cluster/ns/x/y", "tenant/cluster/ns"),  # Java: 4-part split
        ("tenant/ns/x", "tenant/ns"),
        ("x", "public/default"),
    ],
)
def test_topic_namespace(topic: str, namespace: str) -> None:
    assert topic_namespace(topic) == namespace


@pytest.mark.parametrize("topic", ["", "http://t/n/x", "a/b", "persistent://t/x", "persistent://t//x"])
def test_topic_namespace_rejects_bad_names(topic: str) -> None:
    with pytest.raises(ValueError, match="topic = "):
        topic_namespace(topic)


def test_full_topic_name_and_partitions() -> None:
    assert full_topic_name("x") == "persistent://public/default/x"
    assert partition_name("persistent://public/default/my-topic", 2) == (
        "persistent://public/default/my-topic-partition-2"
    )
    with pytest.raises(ValueError, match="i = -1"):
        partition_name("t", -1)


# --- V-S1 range_equally_divide ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lower", "upper", "expected"),
    [(10, 0xFFFFFFFF, 2147483652), (0, 0xFFFFFFFF, 0x7FFFFFFF), (0x40000000, 0x80000000, 0x60000000)],
)
def test_vs1_range_equally_divide(lower: int, upper: int, expected: int) -> None:
    assert split_boundaries("range_equally_divide", lower, upper, {}, CONF) == [expected]


def test_split_boundaries_rejects_bad_ranges() -> None:
    with pytest.raises(ValueError, match="empty key range"):
        split_boundaries("range_equally_divide", 5, 5, {}, CONF)
    with pytest.raises(ValueError, match="upper = "):
        split_boundaries("range_equally_divide", 0, 0x100000000, {}, CONF)


# --- V-S2 split in two, repeatedly -----------------------------------------------------------------


def split_in_two(nb: NamespaceBundles, name: str) -> NamespaceBundles:
    _, lower, upper = parse_bundle(name)
    cuts = split_boundaries("range_equally_divide", lower, upper, {}, CONF)
    return nb.split(name, cuts)


def test_vs2_split_in_two_repeatedly() -> None:
    nb = NamespaceBundles.default("t/n", 1)
    nb = split_in_two(nb, "t/n/0x00000000_0xffffffff")
    assert nb.names == ["t/n/0x00000000_0x7fffffff", "t/n/0x7fffffff_0xffffffff"]
    nb = split_in_two(nb, "t/n/0x00000000_0x7fffffff")
    assert nb.children_of("t/n/0x00000000_0x7fffffff") == ["t/n/0x00000000_0x3fffffff", "t/n/0x3fffffff_0x7fffffff"]
    nb = split_in_two(nb, "t/n/0x7fffffff_0xffffffff")
    assert nb.children_of("t/n/0x7fffffff_0xffffffff") == ["t/n/0x7fffffff_0xbfffffff", "t/n/0xbfffffff_0xffffffff"]
    nb = split_in_two(nb, "t/n/0x00000000_0x3fffffff")
    assert nb.children_of("t/n/0x00000000_0x3fffffff") == ["t/n/0x00000000_0x1fffffff", "t/n/0x1fffffff_0x3fffffff"]
    nb = split_in_two(nb, "t/n/0x3fffffff_0x7fffffff")
    assert nb.children_of("t/n/0x3fffffff_0x7fffffff") == ["t/n/0x3fffffff_0x5fffffff", "t/n/0x5fffffff_0x7fffffff"]
    assert len(nb) == 6


def test_split_by_count_two_equals_range_equally_divide() -> None:
    nb = NamespaceBundles.default("t/n", 1)
    assert nb.split("t/n/0x00000000_0xffffffff") == split_in_two(nb, "t/n/0x00000000_0xffffffff")


# --- V-S3 split into N ----------------------------------------------------------------------------


def test_vs3_split_into_n() -> None:
    nb = NamespaceBundles.default("t/n", 1).split("t/n/0x00000000_0xffffffff", count=4)
    assert nb.names == [
        "t/n/0x00000000_0x3fffffff",
        "t/n/0x3fffffff_0x7ffffffe",
        "t/n/0x7ffffffe_0xbffffffd",
        "t/n/0xbffffffd_0xffffffff",
    ]
    first_in_four = nb.split("t/n/0x00000000_0x3fffffff", count=4)
    assert len(first_in_four) == 7
    assert first_in_four.children_of("t/n/0x00000000_0x3fffffff")[-1].endswith("_0x3fffffff")
    child_in_three = nb.split("t/n/0x7ffffffe_0xbffffffd", count=3)
    assert len(child_in_three) == 6
    children = child_in_three.children_of("t/n/0x7ffffffe_0xbffffffd")
    assert len(children) == 3
    assert parse_bundle(children[0])[1] == 0x7FFFFFFE and parse_bundle(children[-1])[2] == 0xBFFFFFFD


def test_split_leaves_the_original_unchanged() -> None:
    nb = NamespaceBundles.default("t/n", 4)
    nb.split("t/n/0x00000000_0x40000000")
    assert nb == NamespaceBundles.default("t/n", 4)
    assert hash(nb) == hash(NamespaceBundles.default("t/n", 4))


# --- V-S4 fixed boundaries -------------------------------------------------------------------------


def test_vs4_split_at_fixed_boundary() -> None:
    nb = NamespaceBundles.default("t/n", 1).split("t/n/0x00000000_0xffffffff", [10])
    assert nb.names == ["t/n/0x00000000_0x0000000a", "t/n/0x0000000a_0xffffffff"]


@pytest.mark.parametrize("cuts", [[0], [0xFFFFFFFF], [5, 0xFFFFFFFF]])
def test_vs4_boundary_at_an_endpoint_raises(cuts: list[int]) -> None:
    with pytest.raises(ValueError, match="strictly inside"):
        NamespaceBundles.default("t/n", 1).split("t/n/0x00000000_0xffffffff", cuts)


def test_split_sorts_boundaries_and_rejects_duplicates() -> None:
    nb = NamespaceBundles.default("t/n", 1).split("t/n/0x00000000_0xffffffff", [30, 10, 20])
    assert nb.boundaries == (0, 10, 20, 30, 0xFFFFFFFF)
    with pytest.raises(ValueError, match="strictly increasing"):
        NamespaceBundles.default("t/n", 1).split("t/n/0x00000000_0xffffffff", [10, 10])


def test_split_errors() -> None:
    nb = NamespaceBundles.from_boundaries("t/n", [0, 1, 0xFFFFFFFF])
    with pytest.raises(ValueError, match="can't be split further"):
        nb.split("t/n/0x00000000_0x00000001")
    with pytest.raises(ValueError, match="not a bundle of 't/n'"):
        nb.split("t/n/0x00000000_0x40000000")
    with pytest.raises(ValueError, match="count = 1"):
        nb.split("t/n/0x00000001_0xffffffff", count=1)
    narrow = NamespaceBundles.from_boundaries("t/n", [0, 3, 0xFFFFFFFF])
    with pytest.raises(ValueError, match="too narrow"):
        narrow.split("t/n/0x00000000_0x00000003", count=4)
    assert can_split(0, 2) and not can_split(0, 1)


def test_contains_and_children() -> None:
    nb = NamespaceBundles.default("t/n", 4)
    assert nb.contains("t/n/0x40000000_0x80000000")
    assert not nb.contains("t/n/0x40000000_0x80000001")
    assert nb.children_of("t/n/0x00000000_0xffffffff") == nb.names
    with pytest.raises(ValueError, match="not in namespace"):
        nb.children_of("x/y/0x00000000_0xffffffff")


# --- V-S5 topic_count_equally_divide ---------------------------------------------------------------


def test_vs5_topic_count_equally_divide() -> None:
    topics = {"a": None, "b": None, "c": None}
    assert split_boundaries("topic_count_equally_divide", 0, FULL_UPPER, topics, CONF) == [1010591668]
    assert split_boundaries("topic_count_equally_divide", 0, FULL_UPPER, {"a": None}, CONF) is None
    assert split_boundaries("topic_count_equally_divide", 0, FULL_UPPER, {}, CONF) is None


def test_topic_count_with_even_count_splits_between_the_middle_two() -> None:
    topics = {"a": None, "b": None, "c": None, "d": None}
    h = sorted(topic_hash(t) for t in topics)
    assert split_boundaries("topic_count_equally_divide", 0, FULL_UPPER, topics, CONF) == [
        h[1] + (h[2] - h[1]) // 2
    ]


# --- V-S6 specified_positions_divide ---------------------------------------------------------------


def test_vs6_specified_positions() -> None:
    topics = {"topic": None, "topic2": None}
    positions = [-1, 0, 1, 100, 200, 500, 800, 1000, 1100]
    assert split_boundaries("specified_positions_divide", 1, 1000, topics, CONF, positions) == [100, 200, 500, 800]
    assert split_boundaries("specified_positions_divide", 1, 1000, topics, CONF, [800, 100]) == [100, 800]
    assert split_boundaries("specified_positions_divide", 1, 1000, {"a": None}, CONF, [1, 2]) is None
    assert split_boundaries("specified_positions_divide", 1, 1000, topics, CONF, [1, 1000]) is None


@pytest.mark.parametrize("positions", [None, []])
def test_vs6_positions_are_required(positions: list[int] | None) -> None:
    with pytest.raises(ValueError, match="positions"):
        split_boundaries("specified_positions_divide", 1, 1000, {"a": None, "b": None}, CONF, positions)


def test_unknown_algorithm_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="range_equally_divide, topic_count_equally_divide"):
        split_boundaries("halves", 0, FULL_UPPER, {}, CONF)


# --- V-S7 / V-S8 flow_or_qps_equally_divide --------------------------------------------------------

FLOW_CONF = CONF.with_overrides(
    {
        "loadBalancerNamespaceBundleMaxMsgRate": 1010,
        "loadBalancerNamespaceBundleMaxBandwidthMbytes": 100,
        "flowOrQpsDifferenceThresholdPercentage": 10,
    },
    source="V-S7",
)


def vs7_topics() -> dict[str, NamespaceBundleStats | None]:
    topics: dict[str, NamespaceBundleStats | None] = {}
    prefix = "persistent://test-tenant1/test-namespace1/"
    for i in range(1, 6):
        for j in range(20):
            topics[f"{prefix}test{i}-partition-{j}"] = stats(24.5, 25, 1000, 1000)
    for i in range(6, 13):
        for j in range(20):
            topics[f"{prefix}test{i}-partition-{j}"] = stats(25.5, 25, 1000, 1000)
    topics[f"{prefix}test695-partition-0"] = stats(25, 35, 1000, 1000)
    return topics


def test_vs7_flow_or_qps_many_topics() -> None:
    topics = vs7_topics()
    result = split_boundaries("flow_or_qps_equally_divide", 0, FULL_UPPER, topics, FLOW_CONF)
    assert result == [
        316498816, 845910623, 1072534986, 1323020230, 1829348649, 2151045800,
        2462724096, 2747734995, 3171835987, 3692515374, 3990051434, 4290840930,
    ]  # fmt: skip
    # every resulting segment stays under the limits (what Pulsar's test asserts)
    nb = NamespaceBundles.default("test-tenant1/test-namespace1", 1).split(
        "test-tenant1/test-namespace1/0x00000000_0xffffffff", result
    )
    per_bundle: dict[str, list[float]] = {}
    for topic, s in topics.items():
        assert s is not None
        acc = per_bundle.setdefault(nb.find_bundle(topic), [0, 0.0])
        acc[0] += 1
        acc[1] += s.msg_rate_in + s.msg_rate_out
    assert [(int(c), round(r)) for c, r in (per_bundle[n] for n in nb.names)] == [
        (20, 994), (20, 1005), (20, 1006), (20, 1007), (20, 1002), (20, 996), (20, 1001),
        (20, 999), (20, 1005), (20, 1005), (20, 1000), (20, 1000), (1, 60),
    ]  # fmt: skip


def test_vs8_first_topic_alone_exceeds_the_limit() -> None:
    prefix = "persistent://test-tenant1/test-namespace1/test-partition-"
    names = [f"{prefix}{i}" for i in range(5)]
    lowest = min(names, key=topic_hash)
    assert lowest == f"{prefix}3" and topic_hash(lowest) == 0x3C7BF844
    topics = {n: (stats(1000, 1000, 1000, 1000) if n == lowest else stats(24.5, 25, 1000, 1000)) for n in names}
    assert split_boundaries("flow_or_qps_equally_divide", 0, FULL_UPPER, topics, FLOW_CONF) == [1140613260]


def test_flow_or_qps_no_split_cases() -> None:
    topics = vs7_topics()
    # under the limit x (1 + diff): no split
    conf = FLOW_CONF.with_overrides({"loadBalancerNamespaceBundleMaxMsgRate": 11000}, source="t")
    assert split_boundaries("flow_or_qps_equally_divide", 0, FULL_UPPER, topics, conf) is None
    # fewer than 2 topics with traffic (None stats and empty topics are skipped)
    few = {"a": stats(5000, 5000, 0, 0), "b": None, "c": stats(0, 0, 0, 0)}
    assert split_boundaries("flow_or_qps_equally_divide", 0, FULL_UPPER, few, FLOW_CONF) is None
    assert split_boundaries("flow_or_qps_equally_divide", 0, FULL_UPPER, {"a": stats(1e6, 0, 0, 0)}, FLOW_CONF) is None


def test_flow_or_qps_triggers_on_throughput_alone() -> None:
    mb = 1048576
    topics = {f"persistent://t/n/x{i}": stats(0.0, 0.0, 30 * mb, 30 * mb) for i in range(4)}  # 240 MB
    result = split_boundaries("flow_or_qps_equally_divide", 0, FULL_UPPER, topics, FLOW_CONF)
    h = sorted(topic_hash(t) for t in topics)
    # each topic carries 60 MB/s against a 100 MB/s limit: every pair must be cut apart
    assert result == [h[i - 1] + (h[i] - h[i - 1]) // 2 + 1 for i in range(1, 4)]


# --- Property: splits keep a partition --------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.integers(min_value=0, max_value=10_000), st.integers(min_value=2, max_value=5),
                  st.booleans(), st.lists(st.integers(0, FULL_UPPER), min_size=1, max_size=3)),
        max_size=12,
    ),
    initial=st.integers(min_value=1, max_value=8),
    probes=st.lists(st.integers(min_value=0, max_value=FULL_UPPER), min_size=1, max_size=20),
)
def test_any_split_sequence_keeps_a_gapless_partition(steps, initial, probes) -> None:
    nb = NamespaceBundles.default("t/n", initial)
    for pick, count, by_boundaries, cuts in steps:
        name = nb.names[pick % len(nb)]
        _, lower, upper = parse_bundle(name)
        if not can_split(lower, upper):
            continue
        if by_boundaries:
            inside = sorted({lower + 1 + c % (upper - lower - 1) for c in cuts})
            nb = nb.split(name, inside)
        elif (upper - lower) // count > 0:
            nb = nb.split(name, count=count)
        children = nb.children_of(name)
        assert parse_bundle(children[0])[1] == lower and parse_bundle(children[-1])[2] == upper
    ranges = nb.ranges
    assert ranges[0][0] == FULL_LOWER and ranges[-1][1] == FULL_UPPER
    for (_, up), (low, _) in zip(ranges, ranges[1:]):
        assert up == low  # no gap, no overlap
    assert all(lo < up for lo, up in ranges)
    for h in probes + [FULL_LOWER, FULL_UPPER] + [lo for lo, _ in ranges]:
        owners = [
            i for i, (lo, up) in enumerate(ranges) if lo <= h < up or (up == FULL_UPPER and h == FULL_UPPER)
        ]
        assert len(owners) == 1
        assert nb.find_bundle_by_hash(h) == nb.names[owners[0]]


def test_module_exports() -> None:
    for name in bundles.__all__:
        assert hasattr(bundles, name)
