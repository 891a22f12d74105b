"""Pulsar's own client (the C++ client's Python wheel) against the HTTP side (issue 29): an `http://`
service URL makes it look topics up over HTTP, as `HTTPLookupService` does: partitioned metadata from
`/admin/v2/persistent/.../partitions`, and `/lookup/v2/topic/...`, following the 307s with curl to the
broker that acquires the bundle. The binary protocol is not served here, so its connection then fails:
what is checked is what the lookups did to the cluster."""

from __future__ import annotations

import logging

import pytest

from emulator.cluster.messages import HandleKind
from emulator.observe.attach import observe
from emulator.runtime import run_external
from emulator.testing import emulated_cluster

pulsar = pytest.importorskip("pulsar")


def _quiet() -> logging.Logger:
    log = logging.getLogger("pulsar-client-test")
    log.setLevel(logging.ERROR)
    return log


@pytest.mark.asyncio
async def test_the_real_client_reads_partitions_and_follows_the_lookup_redirects_over_http():
    async with emulated_cluster(3, seed=41, namespaces={"acme/a": 4}) as cluster:
        async with observe(cluster, metrics_port=0) as obs:
            client = cluster.add_client()
            client.create_handles([f"persistent://acme/a/p-partition-{i}" for i in range(3)], HandleKind.PRODUCER)
            await cluster.wait_until(lambda: client.connected_count() == 3)
            before = cluster.lookup_counts()
            topics = [f"other-topic-{i}" for i in range(8)]      # public/default: never written before

            def real() -> tuple[list[str], list[str], int]:
                c = pulsar.Client(obs.url, operation_timeout_seconds=3, logger=_quiet())
                try:
                    parts = c.get_topic_partitions("persistent://acme/a/p")
                    plain = c.get_topic_partitions("persistent://acme/a/plain")
                    failed = 0
                    for topic in topics:
                        try:
                            c.create_producer(topic, send_timeout_millis=1000)
                        except Exception:  # noqa: BLE001 - no binary protocol here: the connect fails
                            failed += 1
                    return parts, plain, failed
                finally:
                    c.close()

            parts, plain, _ = await run_external(real)
            assert parts == [f"persistent://acme/a/p-partition-{i}" for i in range(3)]
            assert plain == ["persistent://acme/a/plain"]
            nb = await cluster.namespace_bundles("public/default")      # written by the first lookup
            assert len(nb.names) == 16
            owners = cluster.ownership()
            wanted = {nb.find_bundle(f"persistent://public/default/{t}") for t in topics}
            assert wanted <= set(owners) and {owners[b] for b in wanted} <= set(cluster.live_brokers())
            after = cluster.lookup_counts()
            # every assignment went through the leader; those it gave another broker were a 307 there
            away = sum(1 for b in wanted if owners[b] != cluster.leader())
            assert away > 0 and after["redirects"] - before["redirects"] == away
            assert cluster.system.failures == []
