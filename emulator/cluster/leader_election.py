"""LeaderElectionService: who holds `/loadbalance/leader`, and telling the load manager.

LeaderElectionImpl.elect(): create-if-absent on the ephemeral `/loadbalance/leader`, else follow the
holder; followers watch the node and elect again when it goes (pulsar-protocol.md §3). The election is
the broker's, whatever load manager runs: PulsarService's leader listener starts the leader-only tasks
(LoadSheddingTask, LoadResourceQuotaUpdaterTask) when this broker leads and stops them when it does not,
and those tasks call whatever load manager the broker holds at that moment. Here the listener is the
load manager's `leadership_acquired` / `leadership_lost` (load_manager.py): the Modular manager starts or
stops its leader actor, Noop has nothing to start. A part of the broker actor (broker_base.py).
"""

from __future__ import annotations

import anyio
import msgspec

from . import paths
from .broker_base import BrokerBase
from .events import LeaderElected
from .metadata_client import LockBusy, MetadataStoreError

__all__ = ["FIRST_LEADER_WAIT", "LeaderBroker", "LeaderElection"]

FIRST_LEADER_WAIT = 60.0
"""Seconds a broker other than `emulator_first_leader` waits at start for a leader to exist before it
elects anyway (the named broker may never start)."""


class LeaderBroker(msgspec.Struct, rename="camel"):
    """Value of `/loadbalance/leader` (3.x LeaderBroker JSON)."""

    broker_id: str
    service_url: str


class LeaderElection(BrokerBase):
    """This broker's side of the election (see the module docstring)."""

    web_url: str

    async def _await_first_leader(self) -> None:
        """`emulator_first_leader` (a replay's stated leader): a broker it does not name reads
        /loadbalance/leader every second until some broker holds it (at most FIRST_LEADER_WAIT), so
        the named broker, starting meanwhile, wins the cluster's first election. A broker that starts
        when a leader exists reads it once. Never runs when the switch is unset."""
        waited = 0.0
        while waited < FIRST_LEADER_WAIT and await self.md.get(paths.LEADER) is None:
            await anyio.sleep(1.0)
            waited += 1.0

    async def _elect(self) -> None:
        """LeaderElectionImpl.elect(): create-if-absent on /loadbalance/leader, else follow the holder."""
        value = msgspec.json.encode(LeaderBroker(broker_id=self.broker_id, service_url=self.web_url))
        while True:
            try:
                try:
                    await self.md.acquire_lock(paths.LEADER, value)
                except LockBusy:
                    # the holder's value; reading it can fail as any operation can (a session lost
                    # under a swamped ensemble): then the retry below, as for the lock itself
                    node = await self.md.get(paths.LEADER)
                    if node is None:
                        continue  # the holder vanished meanwhile: race again
                    leader = msgspec.json.decode(node.data, type=LeaderBroker)
                    self._become_follower(leader.broker_id)
                    return
            except MetadataStoreError as e:
                # e.g. the session just expired: LEADER_ELECTION_RETRY_DELAY_SECONDS, then again
                self.log.warning("leader election failed, retrying in 5 s", error=str(e))
                await anyio.sleep(5.0)
                continue
            else:
                self._become_leader()
                return

    async def _on_leader_deleted(self) -> None:
        if self.closing:   # a stopping broker (maybe the old leader itself) does not run again
            return
        if self.is_leader:
            self.log.info("Leadership released")
        self.leader_id = None
        await self._elect()

    def _become_leader(self) -> None:
        was = self.is_leader
        self.is_leader = True
        self.leader_id = self.broker_id
        if not was:
            self.log.info("This broker was elected leader")
            self.load_manager.leadership_acquired()
            self.events.emit(LeaderElected(broker=self.broker_id))

    def _become_follower(self, leader_id: str) -> None:
        self.leader_id = leader_id
        if self.is_leader:
            self.is_leader = False
            self.load_manager.leadership_lost()
        self.log.debug("This broker is a follower", leader=leader_id)

    async def _release_leadership(self) -> None:
        """LeaderElectionService.close() at shutdown: stop leading, delete the node."""
        if self.is_leader:
            self.load_manager.leadership_lost()
            self.is_leader = False
            try:
                await self.md.release_lock(paths.LEADER)
            except MetadataStoreError:
                pass
