"""The Spark pipeline: roll-ups of recorded runs, sweeps on Spark, and the report.

    rollup.py     KPIs per run and per window (PySpark; also `spark-submit rollup.py RUN_DIR... --out DIR`)
    prometheus.py `rollup --prometheus`: a cluster's series from Prometheus, staged as a recording, rolled up
    prometheus_api.py  Prometheus' query_range in chunks, the --from/--to times, the server URL
    side_by_side.py    `compare`: one row per KPI, one column per configuration of each folder
    sweep.py      one Spark task per (configuration, seed), then the roll-up and the comparison table
    report.py     PNG plots and an HTML page from a roll-up folder (matplotlib, no Spark)
    session.py    a quiet local SparkSession and a clean stop
    recording.py  the recording folder: files, explicit schemas, run.json
    compare.py    the comparison over seeds (Student t interval, Welch's test: emulator/model/stats.py)
    tables.py     console tables
    synthetic.py  recordings in the recorder's format for tests and dry runs
    cli.py        the `rollup`, `sweep`, `report` and `compare` sub-commands

Nothing is imported here: `pulsar-lb-emulator --help` and the report must not start a JVM or load
pyspark.
"""
