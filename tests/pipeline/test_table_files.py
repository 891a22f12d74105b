"""Tables the driver writes (table_files.py) are the files Spark's writers make: the same CSV bytes, the
same Parquet rows and types; a roll-up written either way, or half and half, gives the same tables."""

from __future__ import annotations

import json
import math
import random
import struct
from pathlib import Path

from emulator.pipeline import rollup as rollup_module
from emulator.pipeline import table_files
from emulator.pipeline.rollup import TABLES, rollup
from emulator.pipeline.table_files import csv_field, driver_writes, java_double, spark_fields, write_table
from tests.pipeline.test_rollup import OPTIONS


def _doubles(n: int) -> list[float]:
    rng = random.Random(11)
    values = [0.0, -0.0, 0.001, 0.000999, 1e7, 9999999.5, 1e-5, 1.5e-5, 123.0, -3.25, 20.0, 1e21, 1e-300,
              float("inf"), float("-inf"), float("nan")]
    values += [struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0] for _ in range(n)]
    values += [rng.uniform(-1, 1) * 10 ** rng.randint(-9, 15) for _ in range(n)]
    values += [round(rng.uniform(0, 100), rng.randint(0, 6)) for _ in range(n)]
    return values


def test_java_double_matches_the_jvm(spark):
    """Against the JVM's own Double.toString (what Spark's CSV writer calls), 60,000 doubles of every
    magnitude. Java 17's printer (before JDK 19's shortest-digits fix) writes one digit more for some
    doubles of 1e16 and over, which read back as the same double; those are compared as numbers."""
    gateway = spark.sparkContext._gateway
    java_version = int(spark._jvm.java.lang.Runtime.version().feature())
    values = _doubles(20_000)
    array = gateway.new_array(gateway.jvm.double, len(values))
    for i, v in enumerate(values):
        array[i] = v
    printed = str(spark._jvm.java.util.Arrays.toString(array))[1:-1].split(", ")
    assert len(printed) == len(values)
    exact = 0
    for v, java in zip(values, printed):
        mine = java_double(v)
        if java_version < 19 and math.isfinite(v) and (abs(v) >= 1e16 or 0 < abs(v) < 1e-300) and mine != java:
            assert float(mine) == float(java) == v, (v, mine, java)
            continue
        assert mine == java, (v, mine, java)
        exact += 1
    assert exact > 0.99 * len(values)


def test_csv_fields_as_spark_writes_them(spark, tmp_path):
    """Awkward strings through Spark's CSV writer and through write_table: byte for byte."""
    strings = ["plain", "", None, "a,b", 'say "hi"', "line\nbreak", "cr\rx", " lead", "trail ", "\ttab", "#hash",
               "a#b", "ünï", "back\\slash", "'single'", " ", "a;b", '"', "x\r\ny", '\\"', "NaN", "null"]
    rows = [(s, i - 3, None if i % 3 == 0 else i / 7 - 1, i % 2 == 0) for i, s in enumerate(strings)]
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(dict(zip("sidb", r))) + "\n" for r in rows))
    df = spark.read.schema("s string, i long, d double, b boolean").json(str(source))
    (df.coalesce(1).write.option("header", True).option("escape", '"').option("nullValue", "")
     .csv(str(tmp_path / "spark")))
    collected = df.collect()
    assert [tuple(r) for r in collected] == rows
    write_table(tmp_path / "driver", "t", spark_fields(df.schema), collected)
    (spark_csv,) = (tmp_path / "spark").glob("part-*.csv")
    assert (tmp_path / "driver" / "csv" / "t" / "part-00000-c000.csv").read_bytes() == spark_csv.read_bytes()
    back = spark.read.parquet(str(tmp_path / "driver" / "parquet" / "t"))
    assert back.schema == df.schema and back.collect() == collected


def test_fields_and_folders(tmp_path):
    assert [csv_field(v) for v in (None, True, 3, 2.0, 1e7, "", "a,b", " x ")] == \
        ["", "true", "3", "2.0", "1.0E7", '""', '"a,b"', "x"]
    # an int in a double column (the driver's count of 0) is written as Spark reads it: 0.0
    write_table(tmp_path, "t", [("n", "double"), ("k", "long")], [{"n": 0, "k": 2}])
    assert (tmp_path / "csv" / "t" / "part-00000-c000.csv").read_text() == "n,k\n0.0,2\n"
    assert sorted(p.name for p in (tmp_path / "parquet" / "t").iterdir()) == \
        ["_SUCCESS", "part-00000-c000.snappy.parquet"]
    write_table(tmp_path, "t", [("n", "double")], [])   # overwrite, as Spark's mode("overwrite")
    assert (tmp_path / "csv" / "t" / "part-00000-c000.csv").read_text() == "n\n"


def test_driver_writes_only_in_local_mode_to_a_local_folder(spark):
    assert driver_writes(spark, "/tmp/x") and driver_writes(spark, "file:/tmp/x")
    assert not driver_writes(spark, "hdfs://nn/x") and not driver_writes(spark, "s3a://bucket/x")


def test_only_tables_spark_estimates_small_are_tried(spark, monkeypatch):
    df = spark.range(1000).selectExpr("id", "id * 2.0 AS x")
    size = table_files.estimated_bytes(df)
    assert size is not None and size > 0
    assert table_files.small_enough(df)
    monkeypatch.setattr(table_files, "DRIVER_BYTES", size - 1)
    assert not table_files.small_enough(df)


def _tables(spark, out: Path) -> dict[str, tuple[bytes, list, object]]:
    found = {}
    for name in TABLES:
        (part,) = (out / "csv" / name).glob("part-*.csv")
        parquet = spark.read.parquet(str(out / "parquet" / name))
        found[name] = (part.read_bytes(), parquet.collect(), parquet.schema)
    return found


def test_a_rollup_written_by_spark_by_the_driver_or_both_gives_the_same_tables(spark, recorded, tmp_path,
                                                                                 monkeypatch):
    driver = tmp_path / "driver"
    rollup(recorded, driver, spark=spark, options=OPTIONS, show=False)
    assert not list((driver / "csv" / "runs").glob("part-*-*-*.csv")), "the driver names its parts"
    monkeypatch.setattr(rollup_module, "driver_writes", lambda *_: False)
    by_spark = tmp_path / "spark"
    rollup(recorded, by_spark, spark=spark, options=OPTIONS, show=False)
    monkeypatch.undo()
    monkeypatch.setattr(rollup_module, "DRIVER_ROWS", 3)   # larger tables fall back to Spark's writers
    mixed = tmp_path / "mixed"
    rollup(recorded, mixed, spark=spark, options=OPTIONS, show=False)
    fell_back = [n for n in TABLES if list((mixed / "csv" / n).glob("part-*-*-*-*.csv"))]
    assert "broker_usage" in fell_back and "runs" not in fell_back and "comparison" not in fell_back
    monkeypatch.undo()
    monkeypatch.setattr(table_files, "DRIVER_BYTES", 0)   # no table is tried: Spark writes all six of its own
    estimated = tmp_path / "estimated"
    rollup(recorded, estimated, spark=spark, options=OPTIONS, show=False)
    by_estimate = [n for n in TABLES if list((estimated / "csv" / n).glob("part-*-*-*-*.csv"))]
    assert sorted(by_estimate) == sorted(set(TABLES) - {"runs", "windows", "comparison"})
    expected = _tables(spark, by_spark)
    assert _tables(spark, driver) == expected
    assert _tables(spark, mixed) == expected
    assert _tables(spark, estimated) == expected
    assert len(expected["broker_usage"][1]) > 100

