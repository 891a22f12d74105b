"""Ship the project with a Spark job, and choose the interpreter its Python workers run.

    python = worker_python(master, conf, override)   # before the SparkContext starts
    zip_path = build_project_zip(tmp_dir)           # once per command; then sc.addPyFile(zip_path)

Code: the `emulator`, `strategies` and `shedders` packages (sources and their data files: scenarios,
the snapshot sample, log4j2.properties) go into one zip named after its content, added with
`SparkContext.addPyFile`. Every Python worker puts it on `sys.path` before site-packages, so a worker
imports the driver's code, never an older copy installed there; built-in scenarios load through
`importlib.resources`, which reads inside a zip. The name carries the content's hash because Spark
refuses a second file of one name with other bytes.

Interpreter: PySpark takes the workers' Python from `PYSPARK_PYTHON` as the driver saw it when the
SparkContext started (`SparkContext.pythonExec`, pyspark/core/context.py), and `python3` on the worker's
PATH without it: `spark.pyspark.python` in the conf is read by spark-submit's launcher only. So
`worker_python` decides, and `session.start_session` sets `pythonExec` (and the conf, for the record):

1. `--python PATH` (the `override`), else `--conf spark.pyspark.python=PATH`, else `$PYSPARK_PYTHON`:
   the user's choice, as the PySpark docs ("Python Package Management") describe it.
2. YARN and Kubernetes (`--master yarn`, `k8s://...`): workers are other machines or containers, so the
   driver's interpreter path means nothing there. The docs' way is a packed environment (venv-pack or
   conda-pack) on `spark.archives`, `env.tar.gz#environment`, run as `./environment/bin/python`; with
   one `#alias` archive in `--conf spark.archives` that is the default, else the workers' `python3`.
3. Local and standalone (`local[*]`, `spark://...`): `sys.executable`, the interpreter running this
   command. It has the emulator's third-party packages (msgspec, numpy, anyio, structlog, ...); in local
   mode and on a standalone cluster on this machine (or machines with the same path) it is the one right
   answer, whatever PATH the worker daemon started with. A standalone cluster elsewhere takes `--python`
   or a packed environment as on YARN.

A worker whose interpreter cannot import the project (a missing dependency, an older Python) fails the
job with one line naming that interpreter (`worker.py`).
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import zipfile
from pathlib import Path
from typing import Mapping

__all__ = ["PACKAGES", "build_project_zip", "packed_env_python", "worker_python"]

PACKAGES = ("emulator", "strategies", "shedders")
_SKIP_DIRS = {"__pycache__"}
_SKIP_SUFFIXES = (".pyc", ".pyo")


def _package_root(name: str) -> Path:
    """The folder that holds package `name` (imported to find it: the driver's own copy)."""
    import importlib

    module = importlib.import_module(name)
    return Path(next(iter(module.__path__))).resolve().parent


def _files(root: Path, package: str) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    for folder, dirs, files in os.walk(root / package):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for f in sorted(files):
            if f.endswith(_SKIP_SUFFIXES) or f.startswith("."):
                continue
            path = Path(folder) / f
            out.append((path.relative_to(root).as_posix(), path))
    return out


def build_project_zip(out_dir: str | Path, packages: tuple[str, ...] = PACKAGES) -> Path:
    """Zip the driver's copy of `packages` into `out_dir/pulsar_lb_<hash>.zip` and return its path.

    Entries are written in sorted order with a fixed timestamp, so the same code gives the same bytes
    (and the same name) every time."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for package in packages:
            for arcname, path in _files(_package_root(package), package):
                info = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                zf.writestr(info, path.read_bytes(), compresslevel=1)
    data = buf.getvalue()
    target = Path(out_dir) / f"pulsar_lb_{hashlib.sha256(data).hexdigest()[:16]}.zip"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target


def _manager(master: str | None) -> str:
    m = (master or "").strip()
    if m.startswith("yarn"):
        return "yarn"
    if m.startswith("k8s://"):
        return "k8s"
    return "local" if m.startswith("local") or not m else "standalone"


def packed_env_python(conf: Mapping[str, str]) -> str | None:
    """`./ALIAS/bin/python` for the one `archive#ALIAS` in `spark.archives`, else None."""
    aliases = [a.partition("#")[2] for a in conf.get("spark.archives", "").split(",") if "#" in a]
    aliases = [a.strip() for a in aliases if a.strip()]
    return f"./{aliases[0]}/bin/python" if len(aliases) == 1 else None


def worker_python(master: str | None, conf: Mapping[str, str] | None = None, override: str | None = None,
                  environ: Mapping[str, str] | None = None) -> str:
    """The interpreter Spark's Python workers run (module docstring: the order and why)."""
    conf = conf or {}
    env = os.environ if environ is None else environ
    chosen = override or conf.get("spark.pyspark.python") or env.get("PYSPARK_PYTHON")
    if chosen:
        return chosen
    if _manager(master) in ("yarn", "k8s"):
        return packed_env_python(conf) or "python3"
    return sys.executable
