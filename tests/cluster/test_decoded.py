"""The cluster's shared decode cache: brokers share decoded reports and ranges, never stale ones."""

from __future__ import annotations

import msgspec
import pytest

from emulator.cluster.decoded import DecodeCache
from emulator.testing import emulated_cluster


def test_equal_bytes_reuse_the_value_and_new_bytes_decode_again():
    cache = DecodeCache()
    calls = []

    def make(raw: bytes) -> dict:
        calls.append(raw)
        return msgspec.json.decode(raw)

    a = cache.get("k", b'{"x": 1}', make)
    assert cache.get("k", bytes(b'{"x": 1}'), make) is a  # equal bytes, another object
    b = cache.get("k", b'{"x": 2}', make)
    assert b == {"x": 2} and b is not a
    assert cache.get("other", b'{"x": 2}', make) is not b  # keys are separate
    assert len(calls) == 3 and (cache.hits, cache.misses) == (1, 3)


@pytest.mark.asyncio
async def test_brokers_share_decoded_bundle_ranges_and_see_a_split():
    ns = "public/default"
    async with emulated_cluster(3, seed=3, namespaces={ns: 4}) as cluster:
        client = cluster.add_client()
        client.create_handles([f"persistent://{ns}/t-{i}" for i in range(40)])
        await cluster.wait_until(lambda: client.connected_count() == 40, timeout=60)
        brokers = list(cluster.brokers.values())
        assert all(b.decoded is cluster.decoded for b in brokers)
        ranges = [b._ns_bundles[ns] for b in brokers if ns in b._ns_bundles]
        assert len(ranges) >= 2 and all(r is ranges[0] for r in ranges)
        bundle = sorted(cluster.ownership())[0]
        await cluster.split_bundle(bundle)
        # the first broker to read the ranges again is the leader, in its split check after the
        # owner's next report that changed: that waits for the owner's next stats update (60 s)
        await cluster.wait_until(
            lambda: all(len(b._ns_bundles.get(ns, ranges[0])) == 5 for b in brokers if ns in b._ns_bundles)
            and any(ns in b._ns_bundles for b in brokers), timeout=150)
