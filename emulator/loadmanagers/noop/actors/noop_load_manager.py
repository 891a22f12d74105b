"""NoopLoadManager: every broker takes every bundle it is asked for; nothing is balanced.

Pulsar's NoopLoadManager (org.apache.pulsar.broker.loadbalance.NoopLoadManager), read in apache/pulsar:

* `start()` writes one LocalBrokerData holding only the broker's URLs (no load, no bundles, no
  `loadManagerClassName`) as its lock `/loadbalance/brokers/<broker>`, and never writes it again;
* `isCentralized()` is false, so NamespaceService.searchForCandidateBroker decides on the broker that
  was asked; `getLeastLoaded()` is that broker: an unowned bundle is owned by whichever broker the
  client's lookup reached (a redirect happens only for bundles another broker owns already);
* `getAvailableBrokers()` is only itself; `generateLoadReport()` is null; the report write, the quota
  write, load shedding, bundle split and `disableBroker()` do nothing; `stop()` closes its lock manager,
  which releases the lock.

The leader election still runs (it is PulsarService's), and its leader-only tasks call these no-ops.
The broker keeps its stats windows (local_data.py) as Pulsar keeps its PulsarStats: each 5 s report tick
refreshes `broker.local_data` for the emulator's observers, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from emulator.model.loaddata import LocalBrokerData
from emulator.runtime import epoch_ms

from emulator.cluster import paths
from emulator.cluster.load_manager import NOOP, LoadManager, ReportTicks, release_registration
from emulator.cluster.metadata_client import MetadataStoreError

if TYPE_CHECKING:  # pragma: no cover
    from emulator.cluster.broker import Broker

__all__ = ["NoopLoadManager"]


class NoopLoadManager(LoadManager, ReportTicks):
    """One broker's NoopLoadManager (see the module docstring). What it leaves to the base's defaults
    is what NoopLoadManager leaves empty: no leader-only work, no force flag, no quota write, no split,
    no affinity. Its report tick runs as a callback (ReportTicks)."""

    class_name = NOOP
    broker: "Broker"

    def __init__(self, broker: "Broker", requested: str = NOOP) -> None:
        super().__init__(broker, requested)
        self.local_data: LocalBrokerData | None = None

    # ================================================================== lifecycle

    def _lock_value(self) -> bytes:
        assert self.local_data is not None
        return msgspec.json.encode(self.local_data)

    async def start(self) -> None:
        """NoopLoadManager.start(): acquire /loadbalance/brokers/<broker> with the bare LocalBrokerData
        (its constructor stamps lastUpdate; Java's null loadManagerClassName is "" here)."""
        b = self.broker
        self.local_data = LocalBrokerData(
            web_service_url=b.web_url, pulsar_service_url=b.service_url,
            load_manager_class_name="", last_update=epoch_ms(b.system.clock))
        b.log.info("Acquiring broker resource lock", path=paths.broker_path(b.broker_id))
        await b.md.acquire_lock(paths.broker_path(b.broker_id), self._lock_value())
        self.registered = True

    async def stop(self) -> None:
        """lockManager.close(): the lock is released."""
        await release_registration(self)

    async def disable_broker(self) -> None:
        """Does nothing: the registration stays until `stop()` or the session ends."""

    async def on_session_reestablished(self) -> None:
        """The lock manager revalidates its lock with the same value."""
        if self.registered:
            try:
                await self.broker.md.acquire_lock(paths.broker_path(self.broker.broker_id),
                                                  self._lock_value())
            except MetadataStoreError as e:
                self.broker.log.warning("could not re-register after session loss", error=str(e))

    # ================================================================== reports: none

    def generate_load_report(self) -> None:
        return None

    async def write_load_report(self, force: bool = False) -> bool:
        """Writes nothing; the broker's own view of its load stays current for the observers."""
        self.broker._update_local_data()
        return False

    def report_tick(self, then: Callable[[], None]) -> None:
        """`write_load_report()` as a plain callback (broker.py's report ticks)."""
        self.broker._update_local_data()
        then()

    async def do_load_shedding(self) -> list[tuple[str, str]]:
        return []

    # ================================================================== placement: here

    def is_centralized(self) -> bool:
        return False

    def available_brokers(self) -> frozenset[str]:
        return frozenset((self.broker.broker_id,))

    async def get_least_loaded(self, bundle: str, non_persistent: bool) -> str | None:
        return self.broker.broker_id

