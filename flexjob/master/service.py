"""``MasterService``: the job master's state and one method per RPC (the ``MasterBackend``).

Wires the core pieces together — ``Rendezvous``, the datasets' shards (``master.shard_desk``),
``BatchPlan`` — with heartbeats, stats and a small KV store. One lock guards the state; every
change that must survive a master restart (an accepted shard report, a new epoch, a completed
round, a dead node) is saved before the call that made it returns (``master.persistence``:
journal lines, group-committed snapshots, the restore at start). Not for transport
(``rpc.server``) or process life (``master.main``).
"""

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from flexjob.api.errors import InvalidSpecError, NodeFencedError, NotFoundError
from flexjob.core.training import fencing
from flexjob.core.training.batch import BatchPlan, RankBatch
from flexjob.core.training.dataset import Dataset
from flexjob.core.training.master_config import MasterConfig
from flexjob.core.training.rendezvous import NodeStatus, Rendezvous
from flexjob.core.training.stragglers import StragglerWatch
from flexjob.master.attachments import Attachments
from flexjob.master.datasets import DatasetBook
from flexjob.master.health import HeartbeatTracker
from flexjob.master.kv import KVStore, check_kv
from flexjob.master.logs import event
from flexjob.master.members import MemberBook
from flexjob.master.observing import MasterView, master_view
from flexjob.master.persistence import Persistence, saves
from flexjob.master.shard_desk import ShardDesk, check_lease
from flexjob.master.snapshot import SnapshotWriter, dataset_json
from flexjob.master.state_file import StateFile
from flexjob.master.stats import NodeRecord, StatsBook
from flexjob.master.stragglers import StragglerGuard, excluded
from flexjob.rpc.auth import acts_as
from flexjob.rpc.messages import (
    HeartbeatReply,
    LeaseRequest,
    NodeRef,
    NodeStats,
    NodesWaiting,
    NodeWorld,
    Progress,
    ShardInfo,
    ShardLease,
)

log = logging.getLogger(__name__)


class MasterService:
    def __init__(
        self,
        config: MasterConfig,
        *,
        store_address: str = "",
        on_world_broken: Callable[[str], object] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self._job = config.job_name
        self._store_address = store_address
        #: Called with a broken world's store prefix (``TcpStoreServer.abandon``): its ranks
        #: still forming the group wait for a peer that will not come.
        self._on_world_broken = on_world_broken
        self._abandoned_round = 0
        self._lock = threading.RLock()
        self._rdzv = Rendezvous(config.rendezvous, prefix=config.job_name, clock=clock)
        self._datasets = DatasetBook(config.shards, config.datasets, clock)
        self._batch: BatchPlan | None = config.batch
        self._health = HeartbeatTracker(config.node_health.heartbeat_timeout, clock)
        self._agents: set[str] = set()  # nodes whose agent sent a heartbeat (not trainers)
        self._attached = Attachments()
        self._members = MemberBook()  # agents' incarnations (in the snapshot)
        self._stats = StatsBook()
        self._addresses: dict[str, str] = {}  # node → address given at join
        self._addresses_version = 0
        self._kv = KVStore()
        self._clock = clock
        self._stragglers = StragglerGuard(
            config.job_name,
            config.slow_nodes.policy,
            StragglerWatch(config.slow_nodes),
            config.rendezvous.min_nodes,
        )
        self._stats_dirty = False
        path = config.state_path
        self._snapshots = SnapshotWriter()
        self.persistence = Persistence(
            StateFile(path, fsync=config.persistence.fsync) if path else None,
            snapshot_every=config.persistence.snapshot_every,
            lock=self._lock,
            snapshot=self._snapshot,
        )
        self._shards = ShardDesk(config.job_name, self._datasets, self.persistence)
        self.persistence.restore(
            self._job,
            self._datasets,
            self._rdzv,
            self._stats,
            self._addresses,
            self._kv,
            self._health,
            self._members,
        )
        self._append(self._kv.ensure_incarnation())
        self.persistence.flush()
        self._logged_round = self._rdzv.round

    # ---- rendezvous ----
    @saves
    def join(self, node: NodeRef, address: str, local_world_size: int) -> int:
        with self._lock:
            self._admit(node)
            if self._addresses.get(node.node_id) != address:
                self._addresses[node.node_id] = address
                self._addresses_version += 1
            if excluded(self._kv, node.node_id):
                return self._rdzv.round + 1  # it waits for a world that never comes
            round_ = self._rdzv.join(node.node_id)
            event(log, "node_joined", self._job, node=node.node_id, waits_for=round_)
            self._after_rendezvous()
            return round_

    @saves
    def get_world(self, node: NodeRef, round: int) -> NodeWorld:
        with self._lock:
            self._admit(node)
            if excluded(self._kv, node.node_id):
                return NodeWorld(False, self._rdzv.round + 1, -1, 0, "", "", ())
            if self._rdzv.status(node.node_id) is NodeStatus.UNKNOWN:
                # It asks for a world it is not waiting for: its join was lost (a master
                # restart) or it was declared dead while alive. Either way it waits again.
                self._rdzv.join(node.node_id)
                event(log, "node_joined", self._job, node=node.node_id, implicit=True)
            view = self._rdzv.view(node.node_id)
            self._after_rendezvous()
            if view.world is None or (self.config.host_store and not self._store_address):
                # No world yet, or its store is still starting: the node asks again.
                return NodeWorld(False, view.round, -1, 0, "", "", ())
            w = view.world
            return NodeWorld(
                True,
                w.round,
                view.rank,
                len(w.members),
                self._store_for(w.members),
                w.store_prefix,
                w.members,
            )

    @saves
    def nodes_waiting(self, node: NodeRef) -> NodesWaiting:
        with self._lock:
            self._admit(node)
            waiting = self._rdzv.num_nodes_waiting()
            self._after_rendezvous()
            return NodesWaiting(waiting, self._rdzv.round)

    # ---- shards (``master.shard_desk``) ----
    @saves
    def get_shard(self, node: NodeRef, dataset: str) -> ShardInfo:
        with self._lock:
            self._admit(node)
            return self._shards.get_shard(dataset, node.node_id)

    def same_world(self, reporter: str, node_id: str) -> bool:
        """Whether ``reporter`` (a node's credential) and ``node_id`` are both members of the
        running world: a survivor may report the shards of a peer that died after a committed
        step (``trainer.peer_shards``), and no one outside that world may."""
        world = self._rdzv.world
        if world is None:
            return False
        return node_id in world.members and any(acts_as(reporter, m) for m in world.members)

    @saves
    def report_shard(self, node: NodeRef, dataset: str, shard_id: int) -> bool:
        with self._lock:
            self._admit(node, peer_report=True)
            return self._shards.report_shard(dataset, shard_id, node.node_id)

    @saves
    def lease_shards(self, node: NodeRef, request: LeaseRequest) -> ShardLease:
        """Report ``done`` in order, put ``release`` back in TODO, then hand out up to
        ``count`` shards: what ``report_shard`` and ``get_shard`` do, in one call under one
        lock, saved by one write."""
        check_lease(request)
        with self._lock:
            self._admit(node)
            return self._shards.lease_shards(request, node.node_id)

    def get_progress(self, node: NodeRef, dataset: str) -> Progress:
        with self._lock:
            return self._shards.progress(dataset, self._rdzv)

    # ---- stats, health ----
    def report_stats(self, node: NodeRef, stats: NodeStats) -> None:
        with self._lock:
            self._admit(node)
            self._stats.update(node, stats)
            self._stats_dirty = True
            self._stragglers.observe(node.node_id, self._rdzv, stats.step_seconds, self._clock())

    def stats_snapshot(self) -> tuple[dict[str, NodeRecord], int]:
        """A copy of every node's stats record, and the current world size (for the optimizer)."""
        with self._lock:
            world = self._rdzv.world
            nodes = {n: replace(r) for n, r in self._stats.nodes.items()}
            return nodes, len(world.members) if world else 0

    @saves
    def heartbeat(self, node: NodeRef, timestamp: float) -> HeartbeatReply:
        """The agent's heartbeat; incarnation 0 joins it as a new member, a fenced one is
        answered ``fenced`` (``core.training.fencing``)."""
        with self._lock:
            got = fencing.heartbeat(self._members.state, node.node_id, node.incarnation)
            if got.fenced:
                return HeartbeatReply(
                    self._rdzv.round, 0, self.job_finished, False, got.incarnation, True
                )
            if got.incarnation != node.incarnation:
                event(log, "node_member", self._job, node=node.node_id, incarnation=got.incarnation)
            if self._members.set(got.state):
                self._persist()  # saved before it is answered: a restart keeps it
            self._seen(node.node_id)
            self._agents.add(node.node_id)
            waiting = self._rdzv.num_nodes_waiting()
            self._after_rendezvous()
            out = excluded(self._kv, node.node_id)
            return HeartbeatReply(
                self._rdzv.round, waiting, self.job_finished, out, got.incarnation
            )

    def attach(self, node: NodeRef) -> int:
        """An agent's stream opened (a fenced node's too: it is no sign of life until its
        agent joins again)."""
        with self._lock:
            if self._admitted(node):
                self._seen(node.node_id)
            return self._attached.attach(node.node_id)

    @saves
    def detach(self, node: NodeRef, token: int) -> None:
        """The node's agent is gone (its stream broke): dead now, no heartbeat timeout."""
        with self._lock:
            gone = self._attached.detach(node.node_id, token) and node.node_id in self._health
            if gone and not self.job_finished:  # when the data is done, agents leave
                self._node_dead(node.node_id, "connection lost")

    def node_succeeded(self, node: NodeRef) -> None:
        """The node's workers all ended with 0 and its agent leaves: neither the end of its
        stream nor its silence is a death, so the world of the nodes still running stays as it
        is (a re-form would restart a plain script's workers that are finishing)."""
        with self._lock:
            event(log, "node_succeeded", self._job, node=node.node_id)
            self._attached.forget(node.node_id)
            self._health.forget(node.node_id)

    def running_nodes(self) -> list[str]:
        with self._lock:
            return sorted(n for n in self._health.alive() if n in self._agents)

    def wait_closing(self, timeout: float) -> bool:
        return self._attached.closing.wait(timeout)

    def closing(self) -> None:
        """The master stops: the streams its server ends are no deaths."""
        self._attached.closing.set()

    @saves
    def report_failure(self, node: NodeRef, reason: str, exit_code: int, restarting: bool) -> None:
        with self._lock:
            if not self._admitted(node):
                # Declared dead already: its shards went back and it left the world.
                event(log, "fenced_failure_ignored", self._job, node=node.node_id, reason=reason)
                return
            self._stats.failure(node, reason)
            event(
                log,
                "node_failed",
                self._job,
                node=node.node_id,
                exit_code=exit_code,
                restarting=restarting,
                reason=reason,
            )
            if restarting:
                # Its process is gone: it leaves the world and re-joins once restarted.
                self._shards.recover(node.node_id)
                self._rdzv.remove(node.node_id)
                self._after_rendezvous()
                self._persist()
            else:
                self._node_dead(node.node_id, "reported failure")

    @saves
    def replica_gone(self, node: NodeRef, reason: str) -> None:
        """The platform says the replica behind ``node`` is gone (failed, evicted, deleted):
        its shards and those of its processes (``<node>.<local rank>``) go back at once, it
        leaves the world, and ``reason`` becomes its last failure (``master.node_watcher``)."""
        with self._lock:
            self._stats.failure(node, reason)
            event(log, "replica_gone", self._job, node=node.node_id, reason=reason)
            self._shards.recover_processes(node.node_id)
            self._node_dead(node.node_id, "replica gone")

    @saves
    def exclude_nodes(
        self, node: NodeRef, round: int, reasons: Mapping[str, str]
    ) -> tuple[str, ...]:
        """A member of world ``round`` reports nodes that failed its pre-flight check: they
        leave it and stay out of every later world (``master.stragglers``)."""
        with self._lock:
            self._admit(node)
            marks = self._stragglers.exclude_failed(
                node.node_id, self._rdzv, self._kv, round, reasons
            )
            for node_id, entry in marks:
                self._append(entry)
                self._rdzv.remove(node_id)
            self._after_rendezvous()
            return tuple(n for n in reasons if excluded(self._kv, n))

    def get_batch_plan(self, node: NodeRef, rank: int, world_size: int) -> RankBatch:
        if self._batch is None:
            raise NotFoundError("this job has no batch plan (spec.batch is not set)")
        try:
            return self._batch.for_rank(rank, world_size)
        except ValueError as exc:
            raise InvalidSpecError(str(exc)) from None

    @saves
    def register_dataset(self, node: NodeRef, dataset: Dataset) -> None:
        """Shard ``dataset`` from now on (what ``flexjob run`` scripts use: the script knows its
        data, the command line does not); the same definition again changes nothing, another
        one under a known name is refused (``DatasetBook.is_new``). Journaled before it
        returns: a restarted master knows it, with its progress."""
        with self._lock:
            self._admit(node)
            if not self._datasets.is_new(dataset):
                return
            self._datasets.check_room(dataset)
            self._append({"r": dataset_json(dataset)})
            self._datasets.add_registered(dataset)
        event(log, "dataset_registered", self._job, dataset=dataset.name or "-", size=dataset.size)

    def view(self) -> MasterView:
        """The master's numbers in one consistent read (metrics, timeline)."""
        with self._lock:
            return master_view(
                self._job, self._datasets.managers, self._rdzv, self._stats, self._kv
            )

    # ---- key-value store (journaled: it survives a master restart) ----
    @saves
    def kv_set(self, key: str, value: bytes) -> None:
        check_kv(key, value)
        with self._lock:
            self._append(self._kv.set(key, value))

    def kv_get(self, key: str) -> bytes | None:
        with self._lock:
            return self._kv.get(key)

    @saves
    def kv_add(self, key: str, amount: int) -> int:
        check_kv(key, b"")
        with self._lock:
            value, entry = self._kv.add(key, amount)
            self._append(entry)
            return value

    # ---- periodic work ----
    @property
    def job_finished(self) -> bool:
        return self._datasets.finished

    @saves
    def check(self) -> None:
        """Dead nodes, slow shards and nodes, rounds due by time, stats to save: every few
        seconds."""
        with self._lock:
            for node_id in self._health.expired():
                # It may be alive (a partition, a hung host): fenced until it joins again, and
                # the end of its stream, whenever it comes, is no second death.
                self._members.set(fencing.declared_dead(self._members.state, node_id))
                self._attached.forget(node_id)
                self._node_dead(node_id, "heartbeat timeout")
            self._shards.expire_slow_shards()
            for node_id, entry in self._stragglers.check(self._rdzv, self._kv, self._clock()):
                # Out of the world: the others re-form after their step; its agent, told so
                # by its heartbeat, stops its workers once they are idle (``agent.agent``).
                self._append(entry)
                self._rdzv.remove(node_id)
            self._rdzv.tick()
            self._after_rendezvous()
            if self._stats_dirty:
                self._persist()

    # ---- internals ----
    def _seen(self, node_id: str) -> None:
        self._health.beat(node_id)

    def _admitted(self, node: NodeRef) -> bool:
        got = fencing.admission(self._members.state, node.node_id, node.incarnation)
        return got is fencing.Admission.ADMITTED

    def _admit(self, node: NodeRef, *, peer_report: bool = False) -> None:
        """Refuse the call of a fenced node (``NodeFencedError``); else it is a sign of life
        (a peer's report for a fenced node is not: ``core.training.fencing``)."""
        m = self._members.state
        got = fencing.admission(m, node.node_id, node.incarnation, peer_report=peer_report)
        if got is fencing.Admission.FENCED:
            owner = m.node_of(node.node_id) or node.node_id
            raise NodeFencedError(
                fencing.fenced_message(owner, m.fenced.get(owner, node.incarnation))
            )
        if got is fencing.Admission.ADMITTED:
            self._seen(node.node_id)

    def _store_for(self, members: tuple[str, ...]) -> str:
        if self.config.host_store:
            return self._store_address
        return self._addresses.get(members[0], "")

    def _after_rendezvous(self) -> None:
        """Log and save a round that completed since the last call (any query may complete
        one: rounds can be due by time); give up the store waits of a world that broke."""
        world = self._rdzv.world
        if world is not None and self._rdzv.broken and world.round > self._abandoned_round:
            self._abandoned_round = world.round
            if self._on_world_broken is not None:
                self._on_world_broken(world.store_prefix)
        if world is not None and world.round != self._logged_round:
            self._logged_round = world.round
            event(
                log,
                "round_completed",
                self._job,
                round=world.round,
                world_size=len(world.members),
                members=",".join(world.members),
            )
            self._persist()

    def _node_dead(self, node_id: str, reason: str) -> None:
        event(log, "node_dead", self._job, node=node_id, reason=reason)
        self._health.forget(node_id)
        self._stats.set_alive(node_id, False)
        self._shards.recover(node_id)
        self._rdzv.remove(node_id)
        self._after_rendezvous()
        self._persist()

    def _persist(self) -> None:
        """Note a change to snapshot; the ``@saves`` method that made it writes it."""
        self.persistence.note_change()

    def _append(self, entry: dict[str, Any] | None) -> None:
        """One journal line, written (by ``@saves``) before the call that made it returns."""
        self.persistence.append(entry)

    def close(self) -> None:
        """Write what is not saved yet and release the journal."""
        self.closing()
        self.persistence.close()

    def _snapshot(self) -> str:
        """The whole state as one snapshot (called holding the lock)."""
        self._stats_dirty = False
        return self._snapshots.text(
            self._job,
            self._datasets.managers,
            self._rdzv,
            self._stats,
            self._addresses,
            self._addresses_version,
            self._kv,
            self._datasets.registered,
            self._members,
        )
