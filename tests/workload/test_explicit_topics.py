"""Explicit topics (`names`) and per-topic rates (`distribution = "explicit"`), the form snapshots write."""

from __future__ import annotations

import numpy as np
import pytest

from emulator.workload import loader
from emulator.workload.errors import ScenarioError
from emulator.workload.traffic import TrafficModel

HEAD = """
[scenario]
name = "x"
description = "explicit topics"
[[namespaces]]
name = "a/b"
[[topics]]
namespace = "a/b"
"""


def test_each_named_topic_publishes_its_own_rate():
    s = loader.loads(HEAD + 'names = ["orders", "t-9", "x-partition-0"]\nmsg_size = 100\n'
                     'rate = { distribution = "explicit", rates = [12.5, 3.0, 0.0] }\n', "e.toml")
    model = TrafficModel.from_scenario(s)
    assert model.names == ["persistent://a/b/orders", "persistent://a/b/t-9", "persistent://a/b/x-partition-0"]
    assert np.array_equal(model.rates(0.0), [12.5, 3.0, 0.0])
    # with a count/name pattern, rates follow the topic index
    s = loader.loads(HEAD + 'count = 2\nrate = { distribution = "explicit", rates = [1.0, 7.0] }\n', "e.toml")
    assert np.array_equal(TrafficModel.from_scenario(s).rates(0.0), [1.0, 7.0])


@pytest.mark.parametrize("body, message", [
    ('names = ["t", "t"]', 'e.toml: topics[0].names[1] = t: listed twice'),
    ('names = ["t"]\ncount = 2', "e.toml: topics[0].count = 2: give names = [...] or count/name, not both"),
    ('names = ["t"]\nname = "u-{i}"', 'e.toml: topics[0].name = "u-{i}": give names = [...] or count/name, not both'),
    ('names = ["a/b"]', "e.toml: topics[0].names[0] = a/b: a local topic name must be non-empty and without '/'"),
    ('names = ["t", "u"]\nrate = { distribution = "explicit", rates = [1] }',
     "e.toml: topics[0].rate.rates = [1]: 1 rates for 2 topics; give one msg/s per topic, in order"),
    ('count = 2\nrate = { rates = [1, 2] }',
     'e.toml: topics[0].rate.rates = [1, 2]: only with distribution = "explicit"'),
    ('names = ["t"]\nrate = { distribution = "explicit", rates = [-1] }',
     "e.toml: topics[0].rate.rates[0] = -1: must be >= 0"),
])
def test_bad_explicit_topics_are_one_line_naming_the_key(body, message):
    with pytest.raises(ScenarioError) as e:
        loader.loads(HEAD + body + "\n", "e.toml")
    assert str(e.value) == message
