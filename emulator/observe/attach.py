"""One call that attaches every observer a run asked for: metrics, the HTTP server, the recorder.

    async with Cluster.start(...) as cluster:
        async with observe(cluster, metrics_port=8080, record_dir="runs/001",
                           run_info={"scenario": "hot-broker", "seed": 7}) as obs:
            ...                      # obs.metrics, obs.url, obs.recorder
            obs.close(complete=True)  # optional: the block's exit does it too

Attach right after `Cluster.start`: event-fed counters count from here on. The recorder samples as a
task on the cluster's clock. On exit the recorder is closed (complete unless the block raised or was
cancelled), the server stopped and the metrics detached, in that order.
"""

from __future__ import annotations

import os
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, AsyncIterator

import anyio

from .decision_log import DEFAULT_LEVEL
from .http import ObserveServer
from .metrics import ClusterMetrics
from .recorder import Recorder
from .write_guard import AdminWrite

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.cluster import Cluster

__all__ = ["Observation", "observe"]


class Observation:
    """What `observe` started: `metrics` always; `server`/`url` with a port; `recorder` with a folder."""

    def __init__(self, metrics: ClusterMetrics, server: ObserveServer | None, recorder: Recorder | None) -> None:
        self.metrics = metrics
        self.server = server
        self.recorder = recorder

    @property
    def admin_writes(self) -> list[AdminWrite]:
        """The writes the HTTP server accepted so far (write_guard.py), oldest first."""
        return list(self.server.writes) if self.server is not None else []

    @property
    def url(self) -> str | None:
        return self.server.url if self.server is not None else None

    def close(self, complete: bool = True) -> None:
        """Close the recording now (e.g. from a signal handler path); a no-op without a recorder."""
        if self.recorder is not None:
            self.recorder.close(complete=complete)


@asynccontextmanager
async def observe(cluster: "Cluster", *, metrics_port: int | None = None, metrics_host: str = "127.0.0.1",
                  record_dir: str | os.PathLike[str] | None = None, record_interval: float = 10.0,
                  run_info: dict[str, Any] | None = None, record_decisions: str = DEFAULT_LEVEL,
                  record_compress: bool = True, admin_token: str | None = None) -> AsyncIterator[Observation]:
    """Metrics always; an HTTP server when `metrics_port` is given (0: a free port; `admin_token`: the
    Bearer token its writes need); a recording into `record_dir` when given (see `Recorder` for
    `run_info`, `record_interval`, the decisions level and the compression)."""
    metrics = ClusterMetrics(cluster)
    server: ObserveServer | None = None
    recorder: Recorder | None = None
    complete = False
    try:
        if metrics_port is not None:
            server = ObserveServer(cluster, metrics, host=metrics_host, port=metrics_port, admin_token=admin_token)
            server.start()
        if record_dir is not None:
            recorder = Recorder(cluster, metrics, record_dir, run_info=dict(run_info or {}),
                                interval=record_interval, decisions=record_decisions,
                                compress=record_compress)
        async with anyio.create_task_group() as tg:
            if recorder is not None:
                tg.start_soon(recorder.run)
            try:
                yield Observation(metrics, server, recorder)
                complete = True
            finally:
                if recorder is not None:
                    recorder.close(complete=complete)
                tg.cancel_scope.cancel()
    finally:
        if recorder is not None:
            recorder.close(complete=False)    # no-op when already closed above
        if server is not None:
            server.stop()
        metrics.close()
