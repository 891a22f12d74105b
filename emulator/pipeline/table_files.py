"""A roll-up table written by the driver, in the files Spark's writers make: Parquet and CSV.

In local mode the roll-up collects each small table (`DRIVER_BYTES` by Spark's estimate, at most
`DRIVER_ROWS` rows) and writes it here instead of through Spark's writers (`driver_writes`). Spark's
writers are the largest fixed cost of a small roll-up: the read-and-count job plus nine 3-row tables
written by Spark as Parquet and CSV took 1.4x the job alone (bench/README.md, "Where a roll-up's time
goes"); in a cold JVM each table is two jobs, a Hadoop committer and the Parquet writer's classes to
load. Collecting the tables instead of writing them with Spark took a recorded hour's roll-up from 16.3 s
to 14.5 s (median of three alternating pairs, measured before this module's writes were added).
On a cluster the workers write (their output is on shared storage the driver may not see), and Spark's
writers stay.

The files are those Spark writes, value for value:
- `parquet/<table>/part-00000-c000.snappy.parquet` (pyarrow, snappy as Spark's default; the Spark
  schema in the footer under Spark's own key, so Spark reads back the same types);
- `csv/<table>/part-00000-c000.csv`: a header, one line per row, as Spark's CSV writer with the roll-up's
  options (`escape '"'`, `nullValue ''`): null is an empty field; a string is trimmed of blanks at its
  ends, and is then `""` if empty, quoted with its quotes doubled if it has a comma, a quote or a line
  break or starts with `#`; doubles as Java's `Double.toString`, booleans `true`/`false`;
- an empty `_SUCCESS` in each folder, as Spark's committer leaves.

The names carry no random UUID (Spark's do): the same run rolled up twice gives the same files.
"""

from __future__ import annotations

import math
import shutil
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

PART = "part-00000-c000"
SPARK_ROW_METADATA = "org.apache.spark.sql.parquet.row.metadata"
"""The Parquet footer key under which Spark keeps a file's Spark schema (ParquetReadSupport)."""
DRIVER_BYTES = 4 << 20
"""The largest table the driver writes, by Spark's own estimate of its size (`estimated_bytes`); a
larger one is written by Spark's writers without a try (a recorded hour's largest, broker_usage, is
estimated at 0.6 MB for 7,240 rows; a 1,000-run sweep's publish table at 29 MB for 1.3 million)."""
DRIVER_ROWS = 100_000
"""The most rows a table the driver writes may have, whatever the estimate said: the driver collects
one row more, and a table that has it is written by Spark's writers after all."""

_BLANK = "".join(map(chr, range(33)))
"""What univocity's writer trims from a value's ends: every character up to the space."""
Field = tuple[str, str]  # (column, Spark simple type name: string, long, int, double, boolean)


def driver_writes(session: "SparkSession", out_dir: str | Path) -> bool:
    """Whether the driver may write the tables: local mode, and an output folder on this machine's file
    system (no `scheme://` other than `file:`). Each table is still bounded by `DRIVER_ROWS`."""
    out = str(out_dir)
    master = session.sparkContext.master or ""
    return master.startswith("local") and ("://" not in out or out.startswith("file:"))


def preload() -> None:
    """Import pyarrow on a thread of its own (0.3 s): called while the JVM starts, the import is not on
    the roll-up's path."""
    import threading

    def load() -> None:
        import pyarrow.parquet  # noqa: F401

    threading.Thread(target=load, name="pyarrow-import", daemon=True).start()


def estimated_bytes(df: "DataFrame") -> int | None:
    """Spark's estimate of `df`'s size (its optimized plan's `sizeInBytes`: cached frames as cached,
    files by their size on disk), or None if the plan does not say."""
    try:
        return int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    except Exception:  # noqa: BLE001 - Spark's internals moved: go by the row bound alone
        return None


def small_enough(df: "DataFrame") -> bool:
    """Whether the driver should try to write `df` (`DRIVER_BYTES`; unknown counts as small)."""
    size = estimated_bytes(df)
    return size is None or size <= DRIVER_BYTES


def java_double(x: float) -> str:
    """`x` as Java's `Double.toString` prints it (what Spark's CSV writer writes): the shortest digits
    that read back as `x`, plain between 1e-3 and 1e7 with at least one digit after the point
    (`20.0`, `0.001`), else computerized scientific notation (`1.0E7`, `1.5E-5`); `NaN`, `Infinity`."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if 1e-3 <= abs(x) < 1e7:   # Python's repr is plain here too, with the same shortest digits
        return repr(x)
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign, digit_tuple, exponent = Decimal(repr(x)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    assert isinstance(exponent, int)
    exponent += len(digit_tuple) - len(digits)   # the zeros stripped
    e10 = len(digits) + exponent - 1              # scientific exponent: d.ddd x 10^e10
    minus = "-" if sign else ""
    if -3 <= e10 < 7:
        if e10 >= 0:
            whole, fraction = digits[:e10 + 1].ljust(e10 + 1, "0"), digits[e10 + 1:]
        else:
            whole, fraction = "0", "0" * (-e10 - 1) + digits
        return f"{minus}{whole}.{fraction or '0'}"
    return f"{minus}{digits[0]}.{digits[1:] or '0'}E{e10}"


def csv_field(value: Any) -> str:
    """One field as Spark's CSV writer writes it with the roll-up's options (module docstring)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, int):
        return str(value)
    text = str(value).strip(_BLANK)   # Spark's ignore{Leading,Trailing}WhiteSpaceInWrite, on by default
    if text == "":
        return '""'
    if text[0] == "#" or any(c in text for c in ',"\n\r'):   # '#': univocity's comment character
        return '"' + text.replace('"', '""') + '"'
    return text


def _arrow_schema(fields: Sequence[Field]) -> Any:
    import pyarrow as pa

    kinds = {"string": pa.string(), "long": pa.int64(), "int": pa.int32(), "double": pa.float64(),
             "boolean": pa.bool_()}
    return pa.schema([pa.field(name, kinds[kind], nullable=True) for name, kind in fields])


def spark_schema_json(fields: Sequence[Field]) -> str:
    """`fields` as Spark's schema JSON (StructType.json): what Spark stores in a Parquet footer, and
    what `StructType.fromJson` reads back."""
    import json

    kinds = {"string": "string", "long": "long", "int": "integer", "double": "double", "boolean": "boolean"}
    return json.dumps({"type": "struct", "fields": [
        {"name": n, "type": kinds[k], "nullable": True, "metadata": {}} for n, k in fields]},
        separators=(",", ":"))


def _fresh(folder: Path) -> Path:
    """`folder` emptied (Spark's overwrite mode), made if absent."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


def write_table(out_dir: str | Path, name: str, fields: Sequence[Field],
                rows: Iterable[Sequence[Any] | Mapping[str, Any]]) -> None:
    """`rows` (tuples in `fields` order, or dicts by column) as parquet/<name>/ and csv/<name>/."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = [n for n, _ in fields]
    tuples = [tuple(r[n] for n in names) if isinstance(r, Mapping) else tuple(r) for r in rows]
    doubles = [i for i, (_, kind) in enumerate(fields) if kind == "double"]
    if doubles:   # the driver's rows may hold an int in a double column (a count of 0): Spark reads 0.0
        tuples = [tuple(float(v) if i in doubles and v is not None else v for i, v in enumerate(t))
                  for t in tuples]
    out = Path(str(out_dir).removeprefix("file:"))
    schema = _arrow_schema(fields).with_metadata({SPARK_ROW_METADATA: spark_schema_json(fields)})
    columns = [pa.array([t[i] for t in tuples], type=schema.field(i).type) for i in range(len(names))]
    folder = _fresh(out / "parquet" / name)
    pq.write_table(pa.Table.from_arrays(columns, schema=schema), folder / f"{PART}.snappy.parquet",
                   compression="snappy")
    (folder / "_SUCCESS").touch()
    folder = _fresh(out / "csv" / name)
    with (folder / f"{PART}.csv").open("w", encoding="utf-8", newline="") as f:
        f.write(",".join(csv_field(n) for n in names) + "\n")
        for t in tuples:
            f.write(",".join(csv_field(v) for v in t) + "\n")
    (folder / "_SUCCESS").touch()


def spark_fields(schema: Any) -> list[Field]:
    """A Spark StructType's columns as `Field`s (its simple type names: `bigint` is `long`)."""
    names = {"bigint": "long", "integer": "int"}
    return [(f.name, names.get(f.dataType.simpleString(), f.dataType.simpleString())) for f in schema.fields]
