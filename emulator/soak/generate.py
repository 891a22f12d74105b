"""Random scenarios from a seed, for the fault soak: a pure function `generate(seed) -> dict`.

The dict is a scenario file as the loader reads it (`emulator.workload.loader.from_dict`), and `to_toml`
writes it as a file `python -m emulator run FILE` takes; the same seed gives the same dict and the same
bytes (one `random.Random(seed)`, no clock, no set or hash order).

A scenario is small on purpose (a few wall seconds per run, so hundreds of seeds fit in a soak): 2 to
8 brokers, 1 to 4 namespaces of 1 to 8 bundles, at most ~700 topics, 2 to 5 emulated minutes, and a
schedule of 2 to 8 events drawn from the whole fault and traffic vocabulary of `workload/schema.py`:
kills, sigterms and graceful stops, rolling restarts, leader failovers, session expiries, added brokers,
capacity and background-load changes, spikes, ramps, rate changes, unloads and splits. The strategy
pair is drawn from `strategies.names()` and `shedders.names()` (a placement strategy that also sheds,
AvgShedder, gets itself as the shedder, as Pulsar requires). Shedding runs every minute with a short
grace period, so the shedder acts within the run.

The load manager (`loadManagerClassName`) goes round `LOAD_MANAGERS` by seed (seed % 4), so any four
consecutive seeds cover all four: Modular with the drawn pair; Extensible with its TransferShedder (the
pair's shedder dropped, as Pulsar's migration guide sets it); Simple and Noop with the pair left in
place (they read neither, as in Pulsar). It takes no draw of the seed's RNG.

Broker names in events only name brokers that exist by then (the loader checks it); a stop never takes
the estimated live count below one, so most of a run has a cluster to balance.
"""

from __future__ import annotations

import json
import math
import random
import re
from typing import Any

__all__ = ["LOAD_MANAGERS", "generate", "load_manager_of", "to_toml", "scenario_toml"]

LOAD_MANAGERS = (
    "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl",
    "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl",
    "org.apache.pulsar.broker.loadbalance.impl.SimpleLoadManagerImpl",
    "org.apache.pulsar.broker.loadbalance.NoopLoadManager",
)
"""Pulsar's four `loadManagerClassName` values (emulator/cluster/load_manager.py), seed % 4."""
TRANSFER_SHEDDER = "org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder"

STOP_MODES = ("graceful", "sigterm", "kill")
RATE_DISTRIBUTIONS = ("constant", "uniform", "zipf", "hot_set")
SESSION_TIMEOUT_S = 30
"""metadataStoreSessionTimeoutMillis default (30 000 ms, ServiceConfiguration): a broker killed in a
rolling restart must stay down at least this long, or its old session still holds its registration
and the restart fails (RestartRolling's docstring)."""


def load_manager_of(seed: int) -> str:
    """The `loadManagerClassName` of a seed's scenario (the module docstring)."""
    return LOAD_MANAGERS[seed % len(LOAD_MANAGERS)]


def _strategy_pair(rng: random.Random) -> tuple[str, str]:
    import shedders
    import strategies
    from emulator.cluster.strategy_pair import create_pair

    placement = rng.choice(sorted(strategies.names()))
    shedder = rng.choice(sorted(shedders.names()))
    try:
        create_pair(placement, shedder, rng=random.Random(0))
    except ValueError:  # a placement class that also sheds must be the shedder too (MLMI.initialize)
        shedder = placement
    return placement, shedder


def _secs(x: float) -> str:
    return f"{int(round(x))}s"


def _rate(rng: random.Random, count: int) -> dict[str, Any]:
    kind = rng.choice(RATE_DISTRIBUTIONS)
    if kind == "constant":
        return {"distribution": "constant", "rate": rng.choice((1, 5, 20, 50, 200))}
    if kind == "uniform":
        low = rng.choice((0, 1, 10))
        return {"distribution": "uniform", "low": low, "high": low + rng.choice((50, 200, 500))}
    if kind == "zipf":
        return {"distribution": "zipf", "total": rng.choice((1000, 5000, 20000)),
                "exponent": rng.choice((0.5, 0.8, 1.0, 1.2))}
    spec: dict[str, Any] = {"distribution": "hot_set", "rate": rng.choice((5, 20, 50)),
                            "hot_factor": rng.choice((5, 10, 50))}
    if rng.random() < 0.5:
        spec["hot_count"] = rng.randint(1, max(1, count // 10))
    else:
        spec["hot_fraction"] = rng.choice((0.01, 0.05, 0.2))
    return spec


def _selector(rng: random.Random, groups: list[str], namespaces: list[str]) -> dict[str, Any]:
    sel: dict[str, Any] = {}
    r = rng.random()
    if r < 0.4:
        sel["group"] = rng.choice(groups)
    elif r < 0.6:
        sel["namespace"] = rng.choice(namespaces)
    narrow = rng.random()
    if narrow < 0.3:
        sel["hottest"] = rng.randint(1, 20)
    elif narrow < 0.5:
        sel["random"] = rng.randint(1, 20)
    elif narrow < 0.7:
        sel["fraction"] = rng.choice((0.1, 0.25, 0.5))
    return sel


def generate(seed: int) -> dict[str, Any]:
    """The scenario of `seed`, as the dict a scenario TOML file decodes to."""
    rng = random.Random(seed)
    duration = rng.choice((120, 180, 240, 300))
    brokers = rng.randint(2, 8)
    placement, shedder = _strategy_pair(rng)

    cluster: dict[str, Any] = {"brokers": brokers, "placement": placement, "shedder": shedder,
                               "capacity": {"cores": rng.choice((1, 2, 4, 8))}}
    if rng.random() < 0.3:
        victim = f"broker-{rng.randint(1, brokers)}"
        cluster["overrides"] = {victim: {"cores": rng.choice((0.5, 1, 16))}}

    namespaces = []
    for n in range(rng.randint(1, 4)):
        ns: dict[str, Any] = {"name": f"t{n}/ns{n}"}
        if rng.random() < 0.8:
            ns["bundles"] = rng.randint(1, 8)
        namespaces.append(ns)
    ns_names = [ns["name"] for ns in namespaces]

    topics = []
    budget = 700
    topic_names: list[str] = []
    for g in range(rng.randint(1, 4)):
        count = rng.randint(1, max(1, min(300, budget)))
        budget = max(1, budget - count)
        ns = rng.choice(ns_names)
        group: dict[str, Any] = {"group": f"g{g}", "namespace": ns, "count": count, "name": f"g{g}-{{i}}"}
        if rng.random() < 0.2:
            group["partitions"] = rng.randint(2, 4)
            group["count"] = max(1, count // group["partitions"])
        if rng.random() < 0.3:
            group["producers"] = rng.randint(0, 3)
        if rng.random() < 0.3:
            group["consumers"] = rng.randint(0, 3)
        group["rate"] = _rate(rng, group["count"])
        if rng.random() < 0.2:
            group["patterns"] = [{"kind": "noise", "sd": 0.2, "interval": "10s"}]
        if rng.random() < 0.15:
            group["consumer_jitter"] = {"fraction": 0.1, "period": "30s", "off": "10s"}
        topics.append(group)
        topic_names.append(f"{ns}/g{g}-0")
    groups = [t["group"] for t in topics]

    settings: dict[str, Any] = {
        "loadBalancerSheddingIntervalMinutes": 1,
        "loadBalancerSheddingGracePeriodMinutes": rng.choice((0, 1, 30)),
    }
    if rng.random() < 0.5:
        settings["loadBalancerBrokerOverloadedThresholdPercentage"] = rng.choice((50, 70, 85))
    load_manager = load_manager_of(seed)
    if load_manager != LOAD_MANAGERS[0]:
        settings["loadManagerClassName"] = load_manager
    if load_manager == LOAD_MANAGERS[1]:
        settings["loadBalancerLoadSheddingStrategy"] = TRANSFER_SHEDDER
        cluster.pop("shedder")     # [cluster] shedder outranks [settings]

    events: list[dict[str, Any]] = []
    known = brokers  # brokers named so far (broker-1..broker-<known>)
    live = brokers   # a rough estimate of the live ones, to keep at least one up
    times = sorted(rng.randint(5, int(duration * 0.85)) for _ in range(rng.randint(2, 8)))
    for t in times:
        at = _secs(t)
        kind = rng.choice(("remove", "remove", "rolling", "failover", "failover", "expire", "add",
                           "capacity", "background", "traffic", "traffic", "unload", "split", "config"))
        if kind == "remove" and live > 1:
            mode = rng.choice(STOP_MODES)
            if rng.random() < 0.5:
                count = rng.randint(1, max(1, min(2, live - 1)))
                events.append({"at": at, "do": "remove_brokers", "count": count, "mode": mode,
                               "pick": rng.choice(("last", "first", "random", "most_bundles",
                                                   "least_bundles")),
                               "concurrent": rng.random() < 0.5})
            else:
                count = 1
                events.append({"at": at, "do": "remove_brokers", "mode": mode,
                               "brokers": [f"broker-{rng.randint(1, known)}"]})
            live -= count
        elif kind == "rolling":
            mode = rng.choice(STOP_MODES)
            ev: dict[str, Any] = {"at": at, "do": "restart_rolling", "mode": mode,
                                  "batch": rng.randint(1, 2), "wait": _secs(rng.choice((5, 15, 30))),
                                  "down": _secs(SESSION_TIMEOUT_S + 5 if mode == "kill"
                                                else rng.choice((0, 5)))}
            if rng.random() < 0.5:
                picked = sorted(rng.sample(range(1, known + 1), rng.randint(1, min(3, known))))
                ev["brokers"] = [f"broker-{k}" for k in picked]
            events.append(ev)
        elif kind == "failover":
            mode = rng.choice(("kill", "graceful", "sigterm", "session_expire"))
            ev = {"at": at, "do": "leader_failover", "mode": mode}
            if mode != "session_expire" and rng.random() < 0.7:
                # a killed broker's session holds its registration for the session timeout: a restart
                # sooner cannot register (LockBusy), a documented scenario mistake, not a soak finding
                shortest = SESSION_TIMEOUT_S + 10 if mode == "kill" else 10
                ev["restart_after"] = _secs(max(shortest, rng.choice((10, 40, 120))))
            elif mode != "session_expire":
                live -= 1
            events.append(ev)
        elif kind == "expire":
            target = "leader" if rng.random() < 0.5 else f"broker-{rng.randint(1, known)}"
            events.append({"at": at, "do": "session_expire", "broker": target})
        elif kind == "add" or kind == "remove":  # a remove with one broker left adds one instead
            count = rng.randint(1, 2)
            ev = {"at": at, "do": "add_brokers", "count": count}
            if rng.random() < 0.3:
                ev["cores"] = rng.choice((1, 4, 16))
            events.append(ev)
            known += count
            live += count
        elif kind == "capacity":
            ev = {"at": at, "do": "set_capacity", "cores": rng.choice((0.5, 1, 2, 8))}
            if rng.random() < 0.6:
                ev["brokers"] = [f"broker-{rng.randint(1, known)}"]
            events.append(ev)
        elif kind == "background":
            ev = {"at": at, "do": "background_load", "cores": rng.choice((0.5, 1, 3))}
            if rng.random() < 0.6:
                ev["brokers"] = [f"broker-{rng.randint(1, known)}"]
            if rng.random() < 0.5:
                ev["duration"] = _secs(rng.choice((20, 60)))
            events.append(ev)
        elif kind == "traffic":
            verb = rng.choice(("spike", "ramp", "set_rate", "scale_rate"))
            ev = {"at": at, "do": verb, "select": _selector(rng, groups, ns_names)}
            if verb == "spike":
                ev.update(factor=rng.choice((0, 3, 10)), duration=_secs(rng.choice((10, 30, 60))))
            elif verb == "ramp":
                ev.update(factor=rng.choice((0.2, 2, 5)), over=_secs(rng.choice((10, 60))))
            elif verb == "set_rate":
                ev["rate"] = rng.choice((0, 10, 100, 1000))
            else:
                ev["factor"] = rng.choice((0.5, 2, 4))
            events.append(ev)
        elif kind == "unload":
            events.append({"at": at, "do": "unload", "namespace": rng.choice(ns_names)})
        elif kind == "split":
            events.append({"at": at, "do": "split", "topic": rng.choice(topic_names),
                           "unload": rng.random() < 0.5})
        else:
            key, value = rng.choice((("loadBalancerSheddingEnabled", False),
                                     ("loadBalancerSheddingEnabled", True),
                                     ("loadBalancerBrokerOverloadedThresholdPercentage", 60),
                                     ("loadBalancerAutoBundleSplitEnabled", False)))
            events.append({"at": at, "do": "set_config", "key": key, "value": value})

    scenario: dict[str, Any] = {
        "scenario": {"name": f"soak-{seed}", "description": f"fault soak scenario of seed {seed}",
                     "duration": _secs(duration), "seed": seed},
        "cluster": cluster,
        "namespaces": namespaces,
        "topics": topics,
        "settings": settings,
        "clients": {"count": rng.randint(1, 4), "connect_over": _secs(rng.choice((0, 5, 10)))},
    }
    if rng.random() < 0.3:
        scenario["metadata_store"] = {"latency": rng.choice(("1ms", "5ms"))}
    scenario["events"] = events
    return scenario


# ---------------------------------------------------------------------------------- TOML


_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"{v!r}: TOML scenario values must be finite")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string of printable text is a TOML basic string
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }" if v else "{}"
    raise TypeError(f"{v!r}: no TOML form for {type(v).__name__}")


def to_toml(doc: dict[str, Any]) -> str:
    """A scenario dict as TOML: top-level tables and arrays of tables, everything deeper inline."""
    out: list[str] = []
    for name, section in doc.items():
        if isinstance(section, dict):
            out.append(f"[{_key(name)}]")
            out.extend(f"{_key(k)} = {_value(v)}" for k, v in section.items())
            out.append("")
        elif isinstance(section, list) and all(isinstance(x, dict) for x in section):
            for item in section:
                out.append(f"[[{_key(name)}]]")
                out.extend(f"{_key(k)} = {_value(v)}" for k, v in item.items())
                out.append("")
        else:
            raise TypeError(f"top-level {name!r} must be a table or an array of tables")
    return "\n".join(out)


def scenario_toml(seed: int) -> str:
    """The file of `seed`'s scenario, with a first line saying how to reproduce it."""
    return (f"# generated by `python -m emulator.soak --show {seed}`; rerun: "
            f"python -m emulator run <this file>\n" + to_toml(generate(seed)))
