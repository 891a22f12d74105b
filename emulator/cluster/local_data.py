"""The broker's own load: stats periods, host-usage samples, and the LocalBrokerData built from them.

BrokerService.startStatsUpdater (PulsarStats.updateStats every `statsUpdateFrequencyInSecs`) and
LinuxBrokerHostUsageImpl (a CPU and NIC sample every `loadBalancerHostUsageCheckIntervalMinutes`) run on
every broker whatever its load manager; ModularLoadManagerImpl.updateLocalBrokerData turns their last
values into the LocalBrokerData its report carries (stats_window.py holds the windows). The load manager
decides what is written where (load_manager.py); `local_data` is also what the emulator's observers read
as the broker's load. A part of the broker actor (broker_base.py).
"""

from __future__ import annotations

from typing import Any

from emulator.model.loaddata import LocalBrokerData, NamespaceBundleStats
from emulator.runtime import epoch_ms

from .broker_base import BrokerBase
from .ownership import OwnedBundles
from .stats_window import BrokerWindows

__all__ = ["BrokerLoadData"]


class BrokerLoadData(BrokerBase):
    """Keeps `local_data` current from the stats windows (see the module docstring)."""

    owned: OwnedBundles
    local_data: LocalBrokerData
    # stats periods and host-usage samples (stats_window.py); None = instant stats
    windows: BrokerWindows | None
    _windows_seen: tuple[int, int]
    _tables_epoch: int | None   # the ownership epoch of the last `track` (None: none yet)

    def _start_windows(self) -> None:
        """BrokerService.startStatsUpdater and the LinuxBrokerHostUsageImpl constructor: one stats update
        and one host-usage sample now, then each on its own clock (stats_window.py)."""
        if self.conf.emulator_instant_stats:
            return
        self.windows = BrokerWindows(self.broker_id, self.load_source, self.now)
        self._sample_windows()
        self.windows.update_stats(self.now)
        self.windows.sample_host(self.now)
        self.start_soon(self._stats_loop)
        self.start_soon(self._host_usage_loop)

    async def _stats_loop(self) -> None:
        """updateRates at a fixed rate of statsUpdateFrequencyInSecs after statsUpdateInitialDelayInSecs.

        This task only arms the first wake-up: the updates are plain callbacks of the broker (a
        `Wakeup`: the instants and order of callbacks of the loop of sleeps it replaces)."""
        w = self.windows
        assert w is not None

        def update() -> None:
            self._sample_windows()
            w.update_stats(self.now)
            wakeup.after(self.conf.stats_update_frequency_in_secs)

        wakeup = self.wakeup(update)
        wakeup.after(self.conf.stats_update_initial_delay_in_secs)

    async def _host_usage_loop(self) -> None:
        """calculateBrokerHostUsage with a fixed delay of loadBalancerHostUsageCheckIntervalMinutes
        (plain callbacks after this first step, as `_stats_loop`)."""
        w = self.windows
        assert w is not None

        def sample() -> None:
            self._sample_windows()
            w.sample_host(self.now)
            wakeup.after(self.conf.load_balancer_host_usage_check_interval_minutes * 60.0)

        wakeup = self.wakeup(sample)
        wakeup.after(self.conf.load_balancer_host_usage_check_interval_minutes * 60.0)

    def _sample_windows(self) -> Any:
        """The traffic of this instant into the windows; returns the broker's totals."""
        w = self.windows
        assert w is not None
        now = self.now
        if w.sampled_at(now):
            return w.current_totals
        # the tables as at the last track (the ownership epoch) and the same closed form: no walk
        # over the bundles (OwnedBundles, BrokerWindows.unchanged)
        epoch = self.owned.epoch
        if epoch == self._tables_epoch and w.unchanged(now):
            return w.advance(now)
        topics = {b: o.actor.topics for b, o in self.owned.items() if o.active and o.actor}
        totals = w.track(now, topics)
        self._tables_epoch = epoch
        return totals

    def _reset_local_data(self, load_manager_class_name: str) -> None:
        """A fresh LocalBrokerData (ModularLoadManagerImpl.start creates its own): the next update fills
        every field from the windows' last values."""
        self.local_data = LocalBrokerData(
            web_service_url=self.local_data.web_service_url,
            pulsar_service_url=self.local_data.pulsar_service_url,
            load_manager_class_name=load_manager_class_name,
            start_timestamp=epoch_ms(self.system.clock),
            advertised_listeners=self.local_data.advertised_listeners,
        )
        self._windows_seen = (-1, -1)

    def _update_local_data(self) -> None:
        """updateLocalBrokerData: bundles, rates and counts of the last stats update, CPU and bandwidth
        of the last host-usage sample, heap and direct memory of this instant."""
        w = self.windows
        if w is None:
            self._update_local_data_instant()
            return
        totals = self._sample_windows()
        local = self.local_data
        memory_usage = getattr(self.load_source, "memory_usage", None)
        if memory_usage is not None:   # the two memories alone (load.py's WorkloadLoadSource)
            local.memory, local.direct_memory = memory_usage(self.broker_id, self.now, totals)
        else:
            now_usage = self.load_source.system_usage(self.broker_id, self.now, {"": totals})
            local.memory = now_usage.memory
            local.direct_memory = now_usage.direct_memory
        stats_version, host_version = self._windows_seen
        if host_version != w.host_version and w.host_usage is not None:
            local.cpu = w.host_usage.cpu
            local.bandwidth_in = w.host_usage.bandwidth_in
            local.bandwidth_out = w.host_usage.bandwidth_out
        if stats_version != w.stats_version:
            local.update_from_stats(w.bundle_stats)
        self._windows_seen = (w.stats_version, w.host_version)

    def _update_local_data_instant(self) -> None:
        """`emulator_instant_stats`: every report carries the traffic and usage of its instant."""
        now = self.now
        topics = {b: o.actor.topics for b, o in self.owned.items() if o.active and o.actor}
        bundle_stats: dict[str, NamespaceBundleStats] = self.load_source.bundle_stats(
            self.broker_id, now, topics
        )
        usage = self.load_source.system_usage(self.broker_id, now, bundle_stats)
        local = self.local_data
        local.cpu = usage.cpu
        local.memory = usage.memory
        local.direct_memory = usage.direct_memory
        local.bandwidth_in = usage.bandwidth_in
        local.bandwidth_out = usage.bandwidth_out
        local.update_from_stats(bundle_stats)

    async def warm_start(self) -> dict[str, Any]:
        """Warm start: the last stats period and host-usage sample hold this instant's traffic as if it
        had been steady for a long time (stats_window.py `warm`), and a report carrying them is
        written at once, so the leader's first view of this broker is the steady state, not the empty
        first period of a broker that just started."""
        if self.windows is not None:
            now = self.now
            topics = {b: o.actor.topics for b, o in self.owned.items() if o.active and o.actor}
            self.windows.warm(now, self.load_source.bundle_stats(self.broker_id, now, topics))
        written = await self.load_manager.write_load_report(force=True)
        return {"broker": self.broker_id, "bundles": len(self.local_data.bundles), "written": written}
