"""The snapshot folder's index: which admin call went to which file.

    DIR/index.json     {"format": "pulsar-lb-emulator-snapshot/1", "url": ..., "cluster": ...,
                        "broker_url": "http://{broker}", "calls": [{"kind": "load_report",
                        "broker": "broker-1:8080", "url": ..., "status": 200, "file": "004-...json"}, ...]}
    DIR/NNN-<path>.json  each answer's body exactly as received (text for `anti_affinity`, which Pulsar
                        answers as a plain string)

`index.json` is written last: a folder without it is an export that did not finish. A call whose answer
means "nothing set" (404 for isolation policies or an anti-affinity group, 204 for the latter) is listed
with its status and no file.
"""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = ["FORMAT", "INDEX", "Call", "CallKind", "SnapshotIndex"]

FORMAT = "pulsar-lb-emulator-snapshot/1"
INDEX = "index.json"

CallKind = Literal["clusters", "brokers", "leader", "load_report", "owned_namespaces", "broker_topics",
                   "tenants", "namespaces", "policies", "bundles", "anti_affinity", "isolation_policies",
                   "failure_domains", "runtime_config"]


class Call(msgspec.Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    kind: CallKind
    url: str
    status: int
    file: str | None = None
    """None when the answer said "nothing set"."""
    broker: str | None = None
    tenant: str | None = None
    namespace: str | None = None


class SnapshotIndex(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    format: str
    url: str
    cluster: str
    broker_url: str
    """How each broker's own web service was reached: a template with `{broker}` (and `{url}`)."""
    calls: list[Call] = []
