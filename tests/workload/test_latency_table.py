"""The scenario's [latency] table: overrides, older keys, one-line errors."""

from __future__ import annotations

import pytest

from emulator.cluster.latency import Constant, Latencies, LogNormal, Uniform
from emulator.workload import loader
from emulator.workload.build import cluster_settings
from emulator.workload.errors import ScenarioError

BASE = """\
[scenario]
name = "t"
description = "a test"
duration = "1h"

[[namespaces]]
name = "public/default"
bundles = 4
"""


def latencies_of(extra: str) -> Latencies:
    settings = cluster_settings(loader.loads(BASE + extra, "s.toml"))
    assert settings.latency is not None
    return settings.latency


def test_defaults_apply_when_the_table_is_absent():
    assert latencies_of("") == Latencies()


def test_the_table_overrides_only_what_it_names():
    lat = latencies_of("""
[latency]
topic_load = { distribution = "lognormal", median = "20ms", p99 = "200ms" }
admin_call = "5ms"
broker_start = { distribution = "uniform", low = "5s", high = 15 }
lookup = { distribution = "constant", value = 0 }
subscribe = { value = "3ms" }
""")
    assert lat.topic_load == LogNormal(0.02, 0.2)
    assert lat.admin_call == Constant(0.005)
    assert lat.broker_start == Uniform(5.0, 15.0)
    assert lat.lookup == Constant(0.0) and lat.subscribe == Constant(0.003)
    assert lat.metadata_op == Latencies().metadata_op and lat.tcp_connect == Latencies().tcp_connect


def test_older_keys_still_set_their_latency():
    lat = latencies_of("""
[metadata_store]
latency = "2ms"
[cluster]
bundle_close_time = "1s"
topic_close_time = "10ms"
""")
    assert (lat.metadata_op, lat.bundle_close, lat.topic_close) == (
        Constant(0.002), Constant(1.0), Constant(0.01))


@pytest.mark.parametrize("extra, expected", [
    ('[latency]\ntopic_lod = "1ms"\n',
     's.toml: latency.topic_lod = 1ms: unknown latency (did you mean topic_load?); '
     'known: metadata_op, admin_call, topic_load, '
     'bundle_close, topic_close, broker_start, tcp_connect, producer_create, subscribe, lookup'),
    ('[latency]\ntopic_load = "-1ms"\n',
     's.toml: latency.topic_load = -1ms: latencies must be >= 0'),
    ('[latency]\ntopic_load = "fast"\n',
     's.toml: latency.topic_load = fast: expected a duration like 90m, 2h, 1h30m, 30s, 250ms or a '
     'number of seconds'),
    ('[latency]\ntopic_load = { distribution = "normal", median = "1ms" }\n',
     's.toml: latency.topic_load.distribution = normal: expected one of: constant, lognormal, uniform'),
    ('[latency]\ntopic_load = { distribution = "lognormal", median = "20ms", p99 = "10ms" }\n',
     's.toml: latency.topic_load.p99 = 10ms: must be >= median (20ms)'),
    ('[latency]\ntopic_load = { distribution = "lognormal", median = 0, p99 = "10ms" }\n',
     's.toml: latency.topic_load.median = 0: must be > 0 for a lognormal (use a constant for 0)'),
    ('[latency]\ntopic_load = { distribution = "lognormal", median = "1ms" }\n',
     's.toml: latency.topic_load.p99 = { distribution = lognormal, median = 1ms }: a lognormal '
     'distribution needs median and p99'),
    ('[latency]\ntopic_load = { distribution = "uniform", low = "1s", high = "2s", p99 = 3 }\n',
     's.toml: latency.topic_load.p99 = 3: unknown key for a uniform distribution; it takes: low, high'),
    ('[latency]\ntopic_load = { distribution = "uniform", low = "2s", high = "1s" }\n',
     's.toml: latency.topic_load.high = 1s: must be >= low (2s)'),
    ('[metadata_store]\nlatency = "1ms"\n[latency]\nmetadata_op = "2ms"\n',
     's.toml: latency.metadata_op = 2ms: also set as [metadata_store] latency; give only one of them'),
])
def test_bad_values_give_one_line_naming_key_and_value(extra, expected):
    with pytest.raises(ScenarioError) as e:
        loader.loads(BASE + extra, "s.toml")
    assert str(e.value) == expected
    assert "\n" not in str(e.value)
