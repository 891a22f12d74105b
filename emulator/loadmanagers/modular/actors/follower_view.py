"""What a Modular follower holds when it becomes the leader: the load data it kept from the reports.

Pulsar runs ModularLoadManagerImpl on every broker, and every broker's `handleDataNotification` runs
`updateAll` on each change under /loadbalance/brokers (ModularLoadManagerImpl.java, `initialize`,
`handleDataNotification`, `updateAll`): a follower's `loadData` (broker data, and the time-averaged
bundle data built from every report's `lastStats`) is as current as the leader's. A follower elected
leader keeps that `loadData`; it reads a bundle's persisted data (`getBundleDataOrDefault`) only for a
bundle it has never seen.

Here the leader-only half is an actor on the elected broker, and followers keep no load data (at 100
brokers x 65,000 bundles, every broker walking every report would cost 100 times the leader's work for
one view they all share). `FollowerView`, one per cluster (`Cluster.load_manager_shared`, under
Modular's class name), stands for the followers' copies: each leader records its manager after every
`updateAll`, and a new leader starts from that manager's bundle data when its broker was running (so
watching the reports) at that manager's last update. A broker that started later holds only what it
read since, as Pulsar's restarted broker does: it rebuilds from the store, as before.

Emulator choice (documented, not a Pulsar behaviour): the copy is the old leader's view at its last
update; the reports that arrive between the old leader's end and the new leader's start (the election,
at most a session timeout) add their sample at the new leader's first `updateAll` instead of one by one.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:  # pragma: no cover
    from emulator.model.loaddata import BundleData

    from .modular_load_manager import ModularLoadManager

__all__ = ["FollowerView"]


class FollowerView:
    """The Modular followers' load data of one cluster (module docstring): a `ClusterShared`."""

    def __init__(self) -> None:
        self._lm: ModularLoadManager | None = None
        self.updated_at = -math.inf

    def ownership(self) -> dict[str, str]:
        """Modular's ownership is the store's lock nodes, which `Cluster.ownership` reads already."""
        return {}

    def record(self, lm: ModularLoadManager, now: float) -> None:
        """A leader's `updateAll` at emulated time `now`: the followers' copies are as current."""
        self._lm, self.updated_at = lm, now

    def bundle_data_for(self, watching_since: float) -> dict[str, BundleData] | None:
        """The bundle data a broker watching the reports since `watching_since` holds, or None when it
        started after the last update (it holds only what it read since: the store's, as Pulsar's)."""
        lm = self._lm
        if lm is None or watching_since > self.updated_at:
            return None
        data = lm.view().bundle_data   # every window current
        return {bundle: _copy(d) for bundle, d in data.items()}


def _copy(data: BundleData) -> BundleData:
    """A private copy: the new leader's windows update it; the old leader's must not see that."""
    return msgspec.structs.replace(data, short_term_data=msgspec.structs.replace(data.short_term_data),
                                   long_term_data=msgspec.structs.replace(data.long_term_data))
