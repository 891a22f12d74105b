"""The plan of a scenario's `[initial]` table: every bundle at t = 0, its owner and its steady traffic.

Pure: scenario + traffic model + config in, an `InitialPlan` out; `initial_state.py` applies it to a
running cluster. A bundle's traffic is what the brokers' load source will report for it once every
producer and consumer is connected: the traffic model's rates at offset 0, summed per bundle exactly as
`WorkloadLoadSource` sums them (`bundle_sums`), so the ratio the plan aims at is the ratio the first
report shows. "Msg rate" is a broker's msgRateIn + msgRateOut, the roll-up's `msg_rate` (and
UniformLoadShedder's).

Owner generators, for the bundles the file gives no owner (stated owners count as fixed load):

* `even`: longest-processing-time first: bundles by msg rate, highest first, each to the broker with
  the least msg rate so far (then the fewest bundles, then file order), idle bundles to the broker with
  the fewest bundles;
  then single-bundle moves and pair swaps while they narrow the gap between max and min.
* `skewed` with ratio R: broker targets fall linearly from R·L (the first broker in file order) to L
  (the last), with L such that the targets add up to the total; bundles go, highest first, to the
  broker furthest below its target, then single-bundle moves and pair swaps are made while they bring
  max/min closer to R (at most 10,000 steps; swaps only up to 300 free bundles). How close it gets
  depends on the bundles: a handful of bundles of very different rates cannot make every ratio.
* `all_on`: every bundle on one broker.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import msgspec
import numpy as np

from emulator.cluster.load_source import TopicLoad
from emulator.model.bundles import NamespaceBundles
from emulator.model.config import ServiceConfig
from emulator.model.loaddata import NamespaceBundleStats

from .load import bundle_sums
from .schema import Scenario
from .traffic import TrafficModel, topic_names

__all__ = ["InitialPlan", "even_owners", "msg_rate", "plan_initial", "skewed_owners"]

_MAX_STEPS = 10_000
_MAX_SWAP_BUNDLES = 300


class InitialPlan(msgspec.Struct, kw_only=True):
    namespaces: dict[str, list[int]]
    """namespace -> its bundle boundaries, ascending, 0x00000000 .. 0xffffffff."""
    owners: dict[str, str]
    """bundle -> broker id, every bundle of every namespace, namespaces in file order."""
    stats: dict[str, NamespaceBundleStats]
    """bundle -> its steady traffic at t = 0 (all producers and consumers connected)."""
    warm: float = 0.0
    """Seconds the cluster is taken to have run in this state (0 = cold start)."""

    def broker_msg_rates(self, brokers: list[str]) -> dict[str, float]:
        out = dict.fromkeys(brokers, 0.0)
        for bundle, broker in self.owners.items():
            out[broker] = out.get(broker, 0.0) + msg_rate(self.stats[bundle])
        return out


def msg_rate(stats: NamespaceBundleStats) -> float:
    return stats.msg_rate_in + stats.msg_rate_out


def _broker_id(name: str) -> str:
    return name if ":" in name else f"{name}:8080"


def namespace_layout(scenario: Scenario, conf: ServiceConfig) -> dict[str, NamespaceBundles]:
    """Every declared namespace's bundles at t = 0: [initial] boundaries, else N equal ranges."""
    given = {ns.name: ns for ns in (scenario.initial.namespaces if scenario.initial else [])}
    out: dict[str, NamespaceBundles] = {}
    for ns in scenario.namespaces:
        spec = given.get(ns.name)
        if spec is not None and spec.boundaries is not None:
            out[ns.name] = NamespaceBundles.from_boundaries(ns.name, [int(b, 16) for b in spec.boundaries])
        else:
            out[ns.name] = NamespaceBundles.default(
                ns.name, ns.bundles or conf.default_number_of_namespace_bundles)
    return out


def steady_bundle_stats(scenario: Scenario, traffic: TrafficModel,
                        layout: Mapping[str, NamespaceBundles]) -> dict[str, NamespaceBundleStats]:
    """Each bundle's stats with every producer and consumer of the scenario connected, at offset 0."""
    tables: dict[str, dict[str, TopicLoad]] = {b: {} for nb in layout.values() for b in nb.names}
    for group in scenario.topics:
        nb = layout[group.namespace]
        for topic, _ in topic_names(group):
            if group.producers or group.consumers:   # a topic nobody opens is never loaded
                tables[nb.find_bundle(topic)][topic] = TopicLoad(group.producers, group.consumers)
    return bundle_sums(traffic.rates(traffic.origin), traffic.msg_size, traffic.index, tables)


def plan_initial(scenario: Scenario, traffic: TrafficModel, conf: ServiceConfig) -> InitialPlan:
    """The [initial] table's plan (the scenario must have one; loader.py has checked it)."""
    ini = scenario.initial
    assert ini is not None
    brokers = scenario.cluster.broker_ids
    layout = namespace_layout(scenario, conf)
    stats = steady_bundle_stats(scenario, traffic, layout)
    given = {ns.name: ns for ns in ini.namespaces}
    fixed: dict[str, str] = {}
    free: list[str] = []
    for name, nb in layout.items():
        spec = given.get(name)
        if spec is not None and spec.owners is not None:
            for bundle, owner in zip(nb.names, spec.owners):
                if owner:
                    fixed[bundle] = _broker_id(owner)
                else:   # "": unowned in the snapshot; the generator places it with the free ones
                    free.append(bundle)
        else:
            free.extend(nb.names)
    rates = {b: msg_rate(stats[b]) for b in free}
    if ini.owners == "all_on":
        assert ini.broker is not None
        chosen = dict.fromkeys(free, _broker_id(ini.broker))
    else:
        base = dict.fromkeys(brokers, 0.0)
        for bundle, broker in fixed.items():
            base[broker] += msg_rate(stats[bundle])
        if ini.owners == "skewed":
            assert ini.ratio is not None
            chosen = skewed_owners(rates, brokers, ini.ratio, base)
        else:
            chosen = even_owners(rates, brokers, base)
    owners = {b: fixed.get(b) or chosen[b] for nb in layout.values() for b in nb.names}
    return InitialPlan(namespaces={n: list(nb.boundaries) for n, nb in layout.items()}, owners=owners,
                       stats=stats, warm=float(ini.warm))


def _by_rate(rates: Mapping[str, float]) -> list[str]:
    return sorted(rates, key=lambda b: (-rates[b], b))


def even_owners(rates: Mapping[str, float], brokers: list[str],
                base: Mapping[str, float] | None = None) -> dict[str, str]:
    """Longest-processing-time first, then moves and swaps while they narrow max - min."""
    load = {b: (base or {}).get(b, 0.0) for b in brokers}
    count = dict.fromkeys(brokers, 0)
    order = {b: i for i, b in enumerate(brokers)}
    names = _by_rate(rates)
    where = np.zeros(len(names), dtype=int)
    for k, bundle in enumerate(names):
        if rates[bundle] > 0:
            broker = min(brokers, key=lambda b: (load[b], count[b], order[b]))
        else:   # idle bundles: the fewest bundles first
            broker = min(brokers, key=lambda b: (count[b], load[b], order[b]))
        where[k] = order[broker]
        load[broker] += rates[bundle]
        count[broker] += 1
    loads = np.array([load[b] for b in brokers])
    r = np.array([rates[b] for b in names])
    _improve(r, where, loads, lambda x: (float(x.max() - x.min()),))
    return {bundle: brokers[int(where[k])] for k, bundle in enumerate(names)}


def skewed_owners(rates: Mapping[str, float], brokers: list[str], ratio: float,
                  base: Mapping[str, float] | None = None) -> dict[str, str]:
    """Greedy towards linear targets, then moves and swaps towards max/min = `ratio`."""
    n = len(brokers)
    fixed = np.array([(base or {}).get(b, 0.0) for b in brokers])
    total = float(sum(rates.values()) + fixed.sum())
    steps = np.linspace(ratio, 1.0, n) if n > 1 else np.ones(1)
    targets = steps * (total / steps.sum()) if steps.sum() > 0 else np.zeros(n)
    load = fixed.copy()
    names = _by_rate(rates)
    r = np.array([rates[b] for b in names])
    where = np.zeros(len(names), dtype=int)
    for k in range(len(names)):
        i = int(np.argmax(targets - load))
        where[k] = i
        load[i] += r[k]

    def score(loads: np.ndarray) -> tuple[float, ...]:
        lo = loads.min()
        if lo <= 0:
            miss = float("inf") if loads.max() > 0 else abs(1.0 - ratio)
        else:
            miss = abs(loads.max() / lo - ratio)
        return (miss, float(np.abs(loads - targets).sum()))   # then: stay near the targets

    _improve(r, where, load, score, good_enough=1e-3)
    return {bundle: brokers[int(where[k])] for k, bundle in enumerate(names)}


def _improve(r: np.ndarray, where: np.ndarray, load: np.ndarray,
             score: Callable[[np.ndarray], tuple[float, ...]], good_enough: float = 0.0) -> None:
    """Best single-bundle move, else best pair swap, while the score drops (in place)."""
    n = len(load)
    best = score(load)
    for _ in range(_MAX_STEPS):
        if best[0] <= good_enough:
            return
        move = None
        for k in range(len(r)):   # single moves
            a = where[k]
            for j in range(n):
                if j == a or r[k] == 0:
                    continue
                trial = load.copy()
                trial[a] -= r[k]
                trial[j] += r[k]
                s = score(trial)
                if s < best:
                    best, move = s, ("move", k, j)
        if move is None and len(r) <= _MAX_SWAP_BUNDLES:   # pair swaps between brokers
            for k in range(len(r)):
                for m in range(k + 1, len(r)):
                    a, c = where[k], where[m]
                    if a == c or r[k] == r[m]:
                        continue
                    trial = load.copy()
                    trial[a] += r[m] - r[k]
                    trial[c] += r[k] - r[m]
                    s = score(trial)
                    if s < best:
                        best, move = s, ("swap", k, m)
        if move is None:
            return
        if move[0] == "move":
            _, k, j = move
            load[where[k]] -= r[k]
            load[j] += r[k]
            where[k] = j
        else:
            _, k, m = move
            a, c = where[k], where[m]
            load[a] += r[m] - r[k]
            load[c] += r[k] - r[m]
            where[k], where[m] = c, a
