"""The KPIs a run is judged by: names, one-line definitions, and which are whole-run only.

Data, in the model layer so that a scenario's `[[expect]]` tables (the workload) can be checked
against it without importing the observers that compute the values (`emulator/observe/kpis.py`,
the roll-up's columns of the same names, the summary's figures through `summary.SUMMARY_KPIS`).
This is the one list: the KPI table of docs/rollup.md repeats each definition word for word (a test
holds them equal), and the full rules (windows, ticks, resets) are in `emulator/pipeline/rollup.py`.
"""

from __future__ import annotations

import msgspec

__all__ = ["KPIS", "WHOLE_RUN_ONLY", "Kpi"]


class Kpi(msgspec.Struct, frozen=True):
    name: str
    doc: str


def _k(name: str, doc: str) -> Kpi:
    return Kpi(name, doc)


_REGISTRY = (
    _k("balance_max_over_mean", "mean over ticks of max/mean broker usage"),
    _k("balance_range", "mean over ticks of max - min broker usage, percentage points"),
    _k("balance_range_max", "largest max - min broker usage at a tick, percentage points"),
    _k("balance_std", "mean over ticks of the population std of broker usage"),
    _k("balance_cv", "mean over ticks of std/mean broker usage"),
    _k("msg_rate_max_min_ratio", "mean over ticks of max/min broker msg rate (in + out)"),
    _k("throughput_max_min_ratio", "mean over ticks of max/min broker throughput (in + out)"),
    _k("overloaded_broker_seconds", "broker-seconds at or above the overload threshold"),
    _k("overloaded_seconds_max", "the most overloaded seconds of one broker"),
    _k("overloaded_brokers", "brokers overloaded at some tick"),
    _k("unloads", "the shedder's unloads (decision log; the metric "
                  "pulsar_lb_unload_bundle_total)"),
    _k("unloads_per_hour", "unloads per hour of the window"),
    _k("repeat_unloads", "unloads of a bundle unloaded within the grace period before"),
    _k("bundles_unloaded", "bundles unloaded for any reason: shedding, admin, broker drains"),
    _k("splits", "the load manager's splits that went through (pulsar_lb_bundles_split_total)"),
    _k("splits_per_hour", "splits per hour of the window"),
    _k("bundles_split", "bundles split for any reason: the load manager's and admin splits"),
    _k("bundle_moves", "bundles that became owned by another broker"),
    _k("lookups", "lookups answered with an owner (the brokers' pulsar_broker_lookup_answers_total)"),
    _k("lookup_redirects", "lookups answered with a redirect (the brokers' counters)"),
    _k("lookup_failures", "lookups that failed (the brokers' counters)"),
    _k("client_lookups", "lookups the clients started, redirect hops not counted again"),
    _k("client_lookup_redirects", "redirects the clients followed"),
    _k("client_lookup_failures", "client lookups that failed"),
    _k("reconnects", "client handles reconnected"),
    _k("reconnect_latency_mean", "mean seconds from disconnect to reconnect"),
    _k("reconnect_latency_p50", "median reconnect latency, s"),
    _k("reconnect_latency_p99", "P99 reconnect latency, s"),
    _k("reconnect_latency_max", "longest reconnect latency, s"),
    _k("unavailable_topics", "topics with an outage"),
    _k("unavailable_topic_seconds", "per topic, seconds while at least one of its producers or consumers "
                                    "was down (not summed over them), summed over topics"),
    _k("unavailable_topic_seconds_p50", "median outage seconds over topics with one"),
    _k("unavailable_topic_seconds_p99", "P99 outage seconds over topics with one"),
    _k("unavailable_topic_seconds_max", "longest outage of a topic, s"),
    _k("scenario_events", "scenario events"),
    _k("time_to_balance_mean", "mean seconds from a scenario event to a balanced cluster"),
    _k("time_to_balance_max", "most seconds from a scenario event to a balanced cluster"),
    _k("events_never_balanced", "scenario events after which the cluster never balanced"),
    _k("thrashing_tdtv_pct", "mean over brokers of the usage's thrashing (asim tdtv, percent)"),
    _k("thrashing_tdtv", "sum over brokers of the usage's thrashing, percentage points"),
    _k("publish_messages", "messages acknowledged"),
    _k("publish_failed", "failed sends (send timeout, queue full, producer closed)"),
    _k("publish_p50", "publish latency P50 over the whole run, s"),
    _k("publish_p99", "publish latency P99 over the whole run, s"),
    _k("publish_p999", "publish latency P99.9 over the whole run, s"),
    _k("publish_p9999", "publish latency P99.99 over the whole run, s"),
)
KPIS: dict[str, Kpi] = {k.name: k for k in _REGISTRY}
WHOLE_RUN_ONLY = frozenset({"publish_p50", "publish_p99", "publish_p999", "publish_p9999"})
