"""Snapshots of a running cluster: `export.py` reads one through Pulsar's admin REST API into a folder
(one file per call, `index.py`), `to_scenario.py` turns the folder into a scenario; `sample/` is one,
taken of an emulated cluster (3 brokers, 2 namespaces) with an isolation policy and failure domains added."""
