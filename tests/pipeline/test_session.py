"""The JVM a small roll-up is launched with, and the settings every session starts with."""

from __future__ import annotations

import re

from emulator.pipeline.session import BYTES_PER_PARTITION, SMALL_INPUT_BYTES, launch_conf, sized_to


def test_a_small_local_input_gets_c1_only_with_a_code_cache_that_does_not_fill():
    """C1's default code cache (48 MiB) filled after two recorded hours in one session and the JVM
    then switched its compiler off: the small-input launch sizes it."""
    options = launch_conf("local[2]", 26 << 20)["spark.driver.extraJavaOptions"]
    assert "-XX:TieredStopAtLevel=1" in options
    size = re.search(r"-XX:ReservedCodeCacheSize=(\d+)m", options)
    assert size is not None and int(size.group(1)) >= 240


def test_large_inputs_and_clusters_keep_the_jvm_defaults():
    assert launch_conf("local[2]", SMALL_INPUT_BYTES + 1) == {}
    assert launch_conf("spark://host:7077", 1 << 20) == {}
    assert launch_conf(None, 1 << 20) == {}
    assert launch_conf("local[*]", None) == {}


def test_functions_calls_do_not_capture_their_python_call_site(spark):
    """PySpark 4 records each `functions` call's Python call site for its error messages: a stack walk
    and four py4j round trips per call. Every session starts with it off (a user's --conf still wins)."""
    assert spark.conf.get("spark.python.sql.dataFrameDebugging.enabled") == "false"


def test_shuffle_partitions_follow_the_input_in_local_mode_and_are_restored(spark):
    """One partition per 128 MiB of input, at most the cores (local[2] here): a recorded hour gets one,
    not one per core (twice the cold tasks); the session's own setting is back afterwards."""
    key = "spark.sql.shuffle.partitions"
    before = spark.conf.get(key)
    with sized_to(spark, 26 << 20):
        assert spark.conf.get(key) == "1"
    with sized_to(spark, 3 * BYTES_PER_PARTITION):
        assert spark.conf.get(key) == "2"
    assert spark.conf.get(key) == before
