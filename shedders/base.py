"""The load-shedding contract (Pulsar's LoadSheddingStrategy) and the helpers the built-ins share.

A shedder is a pure decision: it reads the leader's `LoadData` and the `ServiceConfig`, keeps only its
own small state (ThresholdShedder's EMA, AvgShedder's hit counters and plan), and returns the
(broker, bundle) pairs to unload, in order. The leader applies them. The numbers behind the decision
are returned with it, not kept on the shedder: a shedder may implement
`ExplainedLoadSheddingStrategy.find_bundles_for_unloading_explained`, which returns an `UnloadPlan`
(the pairs and an explanation as plain JSON-able data: dicts, lists, floats, str); the leader calls it
through `find_bundles_for_unloading_explained` below when it is there and speaks for the class, else
plain `find_bundles_for_unloading` (a plan without explanation), and puts the explanation in its
shedding-plan event. The built-ins implement it, and only it: `BaseShedder.find_bundles_for_unloading`
is its `bundles`, so a new shedder on the base writes one method, `find_bundles_for_unloading_explained`
(or, without explanation, only `find_bundles_for_unloading`), plus the hooks it needs.

Java arithmetic is kept where it decides something: `(int)` casts truncate toward zero and saturate
(`java_int`), `MutableInt.add` wraps at 32 bits (`java_int_add`), and bundles are ordered with
`Double.compare` in a stable sort (`sorted_by_traffic_desc`).

The fast path, for any shedder that declares it: a class attribute `shedding_reads_bundle_data =
False` says that `find_bundles_for_unloading` (and `warm_up`) read only `load_data.broker_data`,
never the bundle windows of `load_data.bundle_data` (nor `bundle_data_for_load_shedding()`); the
load manager then skips making every window current before the call. Undeclared (or True), every
window is current. The built-in shedders all read bundle windows and declare nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import msgspec

from emulator.model.class_registry import DecisionBase, explains
from emulator.model.java_sort import java_list_sort

if TYPE_CHECKING:
    from emulator.model.config import ServiceConfig
    from emulator.model.loaddata import BundleData, LoadData, LocalBrokerData

__all__ = [
    "ADDITIONAL_THRESHOLD_PERCENT_MARGIN",
    "BaseShedder",
    "ExplainedLoadSheddingStrategy",
    "INTEGER_MAX_VALUE",
    "INTEGER_MIN_VALUE",
    "LoadSheddingStrategy",
    "MIB",
    "Metric",
    "UnloadPlan",
    "broker_msg_rate",
    "broker_throughput",
    "candidates_explained",
    "find_bundles_for_unloading_explained",
    "java_double_key",
    "java_int",
    "java_int_add",
    "java_list_sort",
    "offload_from_broker",
    "select_until_offloaded",
    "shedding_candidates",
    "sorted_by_traffic_desc",
]

MIB = 1048576.0  # Pulsar's "MB" in the shedders: 1024 * 1024 bytes
ADDITIONAL_THRESHOLD_PERCENT_MARGIN = 0.05  # Overload/Threshold shed 5 points more than the excess
INTEGER_MAX_VALUE = 2**31 - 1
INTEGER_MIN_VALUE = -(2**31)

Metric = Literal["throughput", "msg_rate"]
"""Which short-term traffic a shedder ranks bundles by: bytes/s (in+out) or msg/s (in+out)."""


class UnloadPlan(msgspec.Struct, frozen=True):
    """A shedder's answer with the numbers behind it: what the shedding-plan event carries."""

    bundles: list[tuple[str, str]]
    """(broker, bundle) pairs to unload, in order."""
    explanation: dict[str, Any] | None = None


@runtime_checkable
class LoadSheddingStrategy(Protocol):
    """What the leader calls every `loadBalancerSheddingIntervalMinutes`."""

    def find_bundles_for_unloading(
        self, load_data: LoadData, conf: ServiceConfig
    ) -> list[tuple[str, str]]: ...

    def on_active_brokers_change(self, active_brokers: set[str]) -> None: ...

    def on_unload_attempt_completed(self, planned: list[tuple[str, str]]) -> None: ...


@runtime_checkable
class ExplainedLoadSheddingStrategy(Protocol):
    """Optional: a shedder that also says why; `find_bundles_for_unloading` must give the same pairs
    as this method's `bundles`."""

    def find_bundles_for_unloading_explained(
        self, load_data: LoadData, conf: ServiceConfig
    ) -> UnloadPlan: ...


class BaseShedder(DecisionBase):
    """The base of the built-ins: the rng and the no-op broker-change hook (`DecisionBase`), Java's other
    no-op hooks, and every plain method from the one a subclass writes,
    `find_bundles_for_unloading_explained` (or `find_bundles_for_unloading` alone)."""

    def find_bundles_for_unloading_explained(
        self, load_data: LoadData, conf: ServiceConfig
    ) -> UnloadPlan:
        """The pairs and the numbers behind them: what a subclass writes (`ExplainedLoadSheddingStrategy`)."""
        raise NotImplementedError(f"{type(self).__qualname__} defines neither find_bundles_for_unloading_explained "
                                  "nor find_bundles_for_unloading; a shedder writes one of them")

    def find_bundles_for_unloading(
        self, load_data: LoadData, conf: ServiceConfig
    ) -> list[tuple[str, str]]:
        """The pairs of `find_bundles_for_unloading_explained`, in order."""
        return self.find_bundles_for_unloading_explained(load_data, conf).bundles

    def on_unload_attempt_completed(self, planned: list[tuple[str, str]]) -> None:
        return None

    def warm_up(self, load_data: LoadData, conf: ServiceConfig, cycles: int) -> None:
        """A warm start: update the history as `cycles` shedding cycles over `load_data` would have.
        No history here (the emulator's hook, not Pulsar's: Pulsar's shedders start empty)."""
        return None

    shedding_reads_bundle_data: bool = True
    """Set False in a subclass whose `find_bundles_for_unloading` reads no bundle windows (module doc)."""


def find_bundles_for_unloading_explained(
    shedder: LoadSheddingStrategy, load_data: LoadData, conf: ServiceConfig
) -> UnloadPlan:
    """The shedder's `find_bundles_for_unloading_explained` when it speaks for the class (see
    `emulator.model.class_registry.explains`), else `find_bundles_for_unloading` as a plan without explanation."""
    if explains(type(shedder), "find_bundles_for_unloading_explained", "find_bundles_for_unloading"):
        return shedder.find_bundles_for_unloading_explained(load_data, conf)  # type: ignore[attr-defined]
    return UnloadPlan(shedder.find_bundles_for_unloading(load_data, conf))


# --- Java arithmetic ---------------------------------------------------------------------------------


def java_int(x: float) -> int:
    """Java's `(int)` cast of a double: toward zero, NaN → 0, saturating at Integer.MIN/MAX_VALUE."""
    if x != x:
        return 0
    if x >= INTEGER_MAX_VALUE:
        return INTEGER_MAX_VALUE
    if x <= INTEGER_MIN_VALUE:
        return INTEGER_MIN_VALUE
    return int(x)


def java_int_add(a: int, b: int) -> int:
    """`int += int` in Java: wraps around at 32 bits."""
    return (a + b + 2**31) % 2**32 - 2**31


def java_double_key(x: float) -> tuple[int, float, float]:
    """A sort key ordering doubles as `Double.compare`: −0.0 < 0.0 and NaN above +∞."""
    if x != x:
        return (1, 0.0, 0.0)
    return (0, x, math.copysign(1.0, x))


# --- Broker and bundle traffic -----------------------------------------------------------------------


def broker_throughput(local: LocalBrokerData) -> float:
    """Bytes/s in+out of the broker's last report (a sum of bundle stats, not time-averaged)."""
    return local.msg_throughput_in + local.msg_throughput_out


def broker_msg_rate(local: LocalBrokerData) -> float:
    """Msg/s in+out of the broker's last report."""
    return local.msg_rate_in + local.msg_rate_out


def _short_term_traffic(data: BundleData, metric: Metric) -> float:
    short = data.short_term_data
    if metric == "throughput":
        return short.msg_throughput_in + short.msg_throughput_out
    return short.msg_rate_in + short.msg_rate_out


def sorted_by_traffic_desc(pairs: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """Java's `sorted((e1, e2) -> Double.compare(e2, e1))`: descending and stable for ties."""
    return sorted(pairs, key=lambda p: java_double_key(p[1]), reverse=True)


def shedding_candidates(
    shedding_view: Mapping[str, BundleData],
    local: LocalBrokerData,
    recently_unloaded: Mapping[str, int],
    metric: Metric,
) -> list[tuple[str, float]]:
    """The broker's bundles that may move, biggest short-term traffic first.

    `shedding_view` is `load_data.bundle_data_for_load_shedding()` (system namespaces removed),
    computed once per decision; its order (the leader's map order) breaks ties, as the Java
    stream's encounter order does.
    """
    owned = local.bundles
    # The view holds every bundle of the cluster and this runs once per overloaded broker: with
    # a SheddingView, the broker's own bundles are put in view order by position (the same list
    # as the scan below, without visiting the other brokers' bundles).
    positions = getattr(shedding_view, "positions", None)
    if positions is not None and 4 * len(owned) < len(shedding_view):
        pos = positions()
        mine = [b for b in owned if b in pos and b not in recently_unloaded]
        mine.sort(key=pos.__getitem__)
        pairs = [(b, _short_term_traffic(shedding_view[b], metric)) for b in mine]
    else:
        pairs = [
            (bundle, _short_term_traffic(shedding_view[bundle], metric))
            for bundle in filter(owned.__contains__, shedding_view)
            if bundle not in recently_unloaded
        ]
    return sorted_by_traffic_desc(pairs)


def select_until_offloaded(
    candidates: Sequence[tuple[str, float]], minimum_to_offload: float
) -> list[str]:
    """Overload/ThresholdShedder: take bundles, biggest first, while the marked traffic is still below
    the minimum to offload, and always at least one (`atLeastOneBundleSelected`).

    The whole list is walked, as Java's `forEach`, so the condition is re-checked for every bundle.
    """
    selected: list[str] = []
    marked = 0.0
    for bundle, throughput in candidates:
        if marked < minimum_to_offload or not selected:
            selected.append(bundle)
            marked += throughput
    return selected


def candidates_explained(
    candidates: Sequence[tuple[str, float]], selected: Iterable[str], metric: Metric
) -> list[dict[str, Any]]:
    """The bundles a shedder looked at, for the decision log."""
    chosen = set(selected)
    return [{"bundle": b, metric: v, "selected": b in chosen} for b, v in candidates]


def offload_from_broker(
    broker: str,
    local: LocalBrokerData,
    min_offload: float,
    load_data: LoadData,
    shedding_view: list[Mapping[str, BundleData]],
    info: dict[str, Any],
    selected: list[tuple[str, str]],
) -> None:
    """The step OverloadShedder and ThresholdShedder share once a broker must shed `min_offload`
    bytes/s: a broker with more than one bundle gives its biggest bundles by short-term throughput
    (recently unloaded ones excepted) until the minimum is marked, at least one; a broker with one
    bundle or none is skipped (OverloadShedder / ThresholdShedder.findBundlesForUnloading, the
    `if (localData.getBundles().size() > 1)` branch and its two log lines).

    `shedding_view` holds `load_data.bundle_data_for_load_shedding()` once the first broker that needs
    it has made it (an empty list until then): one view per call of the shedder."""
    if len(local.bundles) > 1:
        if not shedding_view:
            shedding_view.append(load_data.bundle_data_for_load_shedding())
        candidates = shedding_candidates(shedding_view[0], local, load_data.recently_unloaded_bundles,
                                         "throughput")
        chosen = select_until_offloaded(candidates, min_offload)
        info["candidates"] = candidates_explained(candidates, chosen, "throughput")
        info["selected"] = chosen
        selected.extend((broker, bundle) for bundle in chosen)
    elif len(local.bundles) == 1:
        info["skip"] = "sole_bundle"
    else:
        info["skip"] = "no_bundles"
