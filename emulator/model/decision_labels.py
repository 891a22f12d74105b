"""The labels and reasons of the Extensible load manager's decisions (`models/UnloadDecision.Label`,
`.Reason`, `models/SplitDecision.Label`, `.Reason` in apache/pulsar `pulsar-broker/.../loadbalance/extensions/`).

They are vocabulary shared by three layers: the Extensible manager decides with them
(`emulator.loadmanagers.extensible.model.decisions` re-exports them), the cluster's typed events carry
them and the metrics label `pulsar_lb_*_breakdown_total` with them; so they live here, below all three.
"""

from __future__ import annotations

import enum

__all__ = ["SplitLabel", "SplitReason", "UnloadLabel", "UnloadReason"]


class UnloadLabel(enum.Enum):
    """`UnloadDecision.Label`: the `result` label of `pulsar_lb_unload_broker_breakdown_total`."""

    SUCCESS = "Success"
    SKIP = "Skip"
    FAILURE = "Failure"


class UnloadReason(enum.Enum):
    """`UnloadDecision.Reason`: the `reason` label of `pulsar_lb_unload_broker_breakdown_total`.

    `Balanced` is kept from the older enum (@15aa9811); UnloadCounter @1a5df8f3 no longer counts it.
    """

    OVERLOADED = "Overloaded"
    UNDERLOADED = "Underloaded"
    ADMIN = "Admin"
    BALANCED = "Balanced"
    NO_BUNDLES = "NoBundles"
    COOL_DOWN = "CoolDown"
    OUT_DATED_DATA = "OutDatedData"
    NO_LOAD_DATA = "NoLoadData"
    NO_BROKERS = "NoBrokers"
    HIT_COUNT = "HitCount"
    UNKNOWN = "Unknown"


class SplitLabel(enum.Enum):
    """`SplitDecision.Label`: the `result` label of `pulsar_lb_bundles_split_breakdown_total`."""

    SUCCESS = "Success"
    SKIP = "Skip"
    FAILURE = "Failure"


class SplitReason(enum.Enum):
    """`SplitDecision.Reason`: which threshold a hot bundle crossed first (or Admin, Balanced, Unknown)."""

    TOPICS = "Topics"
    SESSIONS = "Sessions"
    MSG_RATE = "MsgRate"
    BANDWIDTH = "Bandwidth"
    ADMIN = "Admin"
    BALANCED = "Balanced"
    UNKNOWN = "Unknown"
