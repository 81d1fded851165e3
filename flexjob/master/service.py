"""``MasterService``: the job master's state and one method per RPC (the ``MasterBackend``).

Wires the core pieces together — ``Rendezvous``, one ``ShardManager`` per dataset,
``BatchPlan`` — with heartbeats, stats, a small KV store and the state file. One lock
guards the state; every change that must survive a master restart (an accepted shard report,
a new epoch, a completed round, a dead node) is written to the state file before the call that
made it returns. Writes are group-committed: concurrent calls share one write, and parts that
did not change (rendezvous, stats) are not serialized again. Not for transport (``rpc.server``)
or process life (``master.main``).
"""

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Concatenate, ParamSpec, TypeVar

from flexjob.api.errors import InvalidSpecError, NotFoundError
from flexjob.api.limits import MAX_KV_KEY_BYTES, MAX_KV_VALUE_BYTES
from flexjob.core.batch import BatchPlan, RankBatch
from flexjob.core.dataset import Dataset
from flexjob.core.master_config import MasterConfig
from flexjob.core.rendezvous import NodeStatus, Rendezvous
from flexjob.core.shards import ReportResult, ShardManager
from flexjob.master.health import HeartbeatTracker
from flexjob.master.kv import KVStore, is_kv_entry
from flexjob.master.logs import event
from flexjob.master.observing import MasterView, master_view
from flexjob.master.snapshot import (
    SnapshotWriter,
    dataset_from_json,
    dataset_json,
    restore_snapshot,
)
from flexjob.master.state_file import StateFile, StateLostError, check_not_lost, mark_started
from flexjob.master.stats import NodeRecord, StatsBook
from flexjob.rpc.messages import (
    HeartbeatReply,
    NodeRef,
    NodeStats,
    NodesWaiting,
    NodeWorld,
    Progress,
    ShardInfo,
)

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")


def _saves(
    method: "Callable[Concatenate[MasterService, P], R]",
) -> "Callable[Concatenate[MasterService, P], R]":
    """After ``method`` returns (its lock released), write what it changed before answering."""

    def wrapper(self: "MasterService", /, *args: P.args, **kwargs: P.kwargs) -> R:
        result = method(self, *args, **kwargs)
        self._flush()
        return result

    wrapper.__doc__ = method.__doc__
    return wrapper


class MasterService:
    def __init__(
        self,
        config: MasterConfig,
        *,
        store_address: str = "",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self._job = config.job_name
        self._store_address = store_address
        self._lock = threading.RLock()
        self._rdzv = Rendezvous(config.rendezvous(), prefix=config.job_name, clock=clock)
        self._shards = {
            d.name: ShardManager(
                d.splitter(),
                epochs=d.epochs,
                straggler_timeout=config.straggler_timeout,
                clock=clock,
            )
            for d in config.datasets
        }
        self._batch: BatchPlan | None = config.batch
        self._health = HeartbeatTracker(config.heartbeat_timeout, clock)
        self._stats = StatsBook()
        self._addresses: dict[str, str] = {}  # node → address given at join
        self._addresses_version = 0
        self._kv = KVStore()
        self._stats_dirty = False
        self._clock = clock
        self._registered: dict[str, Dataset] = {}  # datasets trainers registered
        path = config.state_path
        self._state = StateFile(path, fsync=config.fsync) if path else None
        self._changes = 0  # bumped by every change to save; guarded by _lock
        self._saved = 0  # changes covered by the state file; guarded by _write_lock
        self._write_lock = threading.Lock()
        self._journal_len = 0  # reports journaled since the last snapshot
        self._snapshots = SnapshotWriter()
        self._restore()
        self._kv_journal(self._kv.ensure_incarnation())
        self._logged_round = self._rdzv.round

    # ---- rendezvous ----
    @_saves
    def join(self, node: NodeRef, address: str, local_world_size: int) -> int:
        with self._lock:
            self._seen(node.node_id)
            if self._addresses.get(node.node_id) != address:
                self._addresses[node.node_id] = address
                self._addresses_version += 1
            round_ = self._rdzv.join(node.node_id)
            event(log, "node_joined", self._job, node=node.node_id, waits_for=round_)
            self._after_rendezvous()
            return round_

    @_saves
    def get_world(self, node: NodeRef, round: int) -> NodeWorld:
        with self._lock:
            self._seen(node.node_id)
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

    @_saves
    def nodes_waiting(self, node: NodeRef) -> NodesWaiting:
        with self._lock:
            self._seen(node.node_id)
            waiting = self._rdzv.num_nodes_waiting()
            self._after_rendezvous()
            return NodesWaiting(waiting, self._rdzv.round)

    # ---- shards ----
    @_saves
    def get_shard(self, node: NodeRef, dataset: str) -> ShardInfo:
        with self._lock:
            self._seen(node.node_id)
            mgr = self._dataset(dataset)
            opened = mgr.opened_epochs
            shard = mgr.get_shard(node.node_id)
            if shard is None:
                return ShardInfo(has_shard=False, end_of_data=mgr.finished)
            if mgr.opened_epochs != opened:
                event(log, "epoch_started", self._job, dataset=dataset or "-", epoch=shard.epoch)
                self._persist()
            self._append({"d": dataset, "s": shard.shard_id, "w": node.node_id, "g": 1})
            s = shard.spec
            return ShardInfo(
                True, False, shard.shard_id, shard.epoch, s.start, s.end, s.indices, s.name
            )

    @_saves
    def report_shard(self, node: NodeRef, dataset: str, shard_id: int) -> bool:
        with self._lock:
            self._seen(node.node_id)
            mgr = self._dataset(dataset)
            result = mgr.report_done(shard_id, node.node_id)
            if result is ReportResult.COUNTED:
                self._journal(dataset, shard_id, node.node_id)
                if mgr.finished:
                    event(log, "dataset_finished", self._job, dataset=dataset or "-")
            elif result is ReportResult.REJECTED:
                event(log, "shard_report_rejected", self._job, node=node.node_id, shard=shard_id)
            return result.accepted

    def get_progress(self, node: NodeRef, dataset: str) -> Progress:
        with self._lock:
            p = self._dataset(dataset).progress()
            world = self._rdzv.world
            return Progress(
                p.epoch,
                p.epochs,
                p.shards_done,
                p.shards_total,
                p.samples_done,
                p.samples_total,
                p.finished,
                self._rdzv.round,
                len(world.members) if world else 0,
            )

    # ---- stats, health ----
    def report_stats(self, node: NodeRef, stats: NodeStats) -> None:
        with self._lock:
            self._seen(node.node_id)
            self._stats.update(node, stats)
            self._stats_dirty = True

    def stats_snapshot(self) -> tuple[dict[str, NodeRecord], int]:
        """A copy of every node's stats record, and the current world size (for the optimizer)."""
        with self._lock:
            world = self._rdzv.world
            nodes = {n: replace(r) for n, r in self._stats.nodes.items()}
            return nodes, len(world.members) if world else 0

    @_saves
    def heartbeat(self, node: NodeRef, timestamp: float) -> HeartbeatReply:
        with self._lock:
            self._seen(node.node_id)
            waiting = self._rdzv.num_nodes_waiting()
            self._after_rendezvous()
            return HeartbeatReply(self._rdzv.round, waiting, self.job_finished)

    @_saves
    def report_failure(self, node: NodeRef, reason: str, exit_code: int, restarting: bool) -> None:
        with self._lock:
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
                self._recover_shards(node.node_id)
                self._rdzv.remove(node.node_id)
                self._after_rendezvous()
                self._persist()
            else:
                self._node_dead(node.node_id, "reported failure")

    def get_batch_plan(self, node: NodeRef, rank: int, world_size: int) -> RankBatch:
        if self._batch is None:
            raise NotFoundError("this job has no batch plan (spec.batch is not set)")
        try:
            return self._batch.for_rank(rank, world_size)
        except ValueError as exc:
            raise InvalidSpecError(str(exc)) from None

    def register_dataset(self, node: NodeRef, dataset: Dataset) -> None:
        """Shard ``dataset`` from now on (what ``flexjob run`` scripts use: the script knows its
        data, the command line does not); a name already known keeps its first registration.
        Journaled before it returns: a restarted master knows it, with its progress."""
        with self._lock:
            self._seen(node.node_id)
            if dataset.name in self._shards:
                return
            self._append({"r": dataset_json(dataset)})
            self._add_registered(dataset)
        event(log, "dataset_registered", self._job, dataset=dataset.name or "-", size=dataset.size)

    def view(self) -> MasterView:
        """The master's numbers in one consistent read (metrics, timeline)."""
        with self._lock:
            return master_view(self._job, self._shards, self._rdzv, self._stats, self._kv)

    def _add_registered(self, dataset: Dataset) -> ShardManager:
        mgr = ShardManager(
            dataset.splitter(),
            epochs=dataset.epochs,
            straggler_timeout=self.config.straggler_timeout,
            clock=self._clock,
        )
        self._registered[dataset.name] = dataset
        self._shards[dataset.name] = mgr
        return mgr

    # ---- key-value store (journaled: it survives a master restart) ----
    def kv_set(self, key: str, value: bytes) -> None:
        _check_kv(key, value)
        with self._lock:
            self._kv_journal(self._kv.set(key, value))

    def kv_get(self, key: str) -> bytes | None:
        with self._lock:
            return self._kv.get(key)

    def kv_add(self, key: str, amount: int) -> int:
        _check_kv(key, b"")
        with self._lock:
            value, entry = self._kv.add(key, amount)
            self._kv_journal(entry)
            return value

    # ---- periodic work ----
    @property
    def job_finished(self) -> bool:
        return bool(self._shards) and all(m.finished for m in self._shards.values())

    @_saves
    def check(self) -> None:
        """Dead nodes, stragglers, rounds due by time, stats to save: run every few seconds."""
        with self._lock:
            for node_id in self._health.expired():
                self._node_dead(node_id, "heartbeat timeout")
            for name, mgr in self._shards.items():
                for sid in mgr.expire_stragglers():
                    event(log, "shard_timed_out", self._job, dataset=name or "-", shard=sid)
            self._rdzv.tick()
            self._after_rendezvous()
            if self._stats_dirty:
                self._persist()

    # ---- internals ----
    def _seen(self, node_id: str) -> None:
        self._health.beat(node_id)

    def _dataset(self, name: str) -> ShardManager:
        mgr = self._shards.get(name)
        if mgr is None:
            known = ", ".join(repr(n) for n in self._shards) or "none"
            raise NotFoundError(f"unknown dataset {name!r}; this job has: {known}")
        return mgr

    def set_store_address(self, address: str) -> None:
        """The store this master hosts serves at ``address`` (it starts after the RPC server:
        worlds are handed out once it is set)."""
        with self._lock:
            self._store_address = address

    def _store_for(self, members: tuple[str, ...]) -> str:
        if self.config.host_store:
            return self._store_address
        return self._addresses.get(members[0], "")

    def _after_rendezvous(self) -> None:
        """Log and save a round that completed since the last call (any query may complete
        one: rounds can be due by time)."""
        world = self._rdzv.world
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

    def _recover_shards(self, node_id: str) -> None:
        for name, mgr in self._shards.items():
            ids = mgr.recover(node_id)
            if ids:
                event(
                    log,
                    "shards_recovered",
                    self._job,
                    node=node_id,
                    dataset=name or "-",
                    shards=len(ids),
                )

    def _node_dead(self, node_id: str, reason: str) -> None:
        event(log, "node_dead", self._job, node=node_id, reason=reason)
        self._health.forget(node_id)
        self._stats.set_alive(node_id, False)
        self._recover_shards(node_id)
        self._rdzv.remove(node_id)
        self._after_rendezvous()
        self._persist()

    def _persist(self) -> None:
        """Note a change to snapshot; the ``@_saves`` method that made it writes it."""
        self._changes += 1

    def _journal(self, dataset: str, shard_id: int, node_id: str) -> None:
        """Save a counted report now (one appended line); snapshot every so often."""
        self._append({"d": dataset, "s": shard_id, "w": node_id})

    def _kv_journal(self, entry: dict[str, str] | None) -> None:
        if entry is not None:
            self._append(entry)

    def _append(self, entry: dict[str, Any]) -> None:
        """One journal line, written before the call that made the change returns."""
        if self._state is None:
            return
        self._state.append(entry)
        self._journal_len += 1
        if self._journal_len >= self.config.snapshot_every:
            self._persist()

    def close(self) -> None:
        """Write what is not saved yet and release the journal."""
        self._persist()
        self._flush()
        if self._state is not None:
            self._state.close()

    def _flush(self) -> None:
        target = self._changes
        if self._state is None or self._saved >= target:
            return
        with self._write_lock:
            if self._saved >= target:
                return  # a write that started after our change covered it
            with self._lock:
                changes, text = self._changes, self._snapshot()
                self._stats_dirty = False
                self._state.rotate_journal()  # reports from now on go to a fresh journal
                self._journal_len = 0
            self._state.save_text(text)
            self._state.drop_old_journal()
            self._saved = changes

    def _snapshot(self) -> str:
        return self._snapshots.text(
            self._job,
            self._shards,
            self._rdzv,
            self._stats,
            self._addresses,
            self._addresses_version,
            self._kv,
            self._registered,
        )

    def _replay(self, entry: dict[str, Any]) -> None:
        """Apply one journal entry: a KV change, a registration, a hand-out or a report."""
        assert self._state is not None
        if is_kv_entry(entry):
            self._kv.replay(entry)
            return
        if "r" in entry:
            dataset = dataset_from_json(entry["r"])
            if dataset.name not in self._shards:
                self._add_registered(dataset)
            return
        mgr = self._shards.get(str(entry["d"]))
        if mgr is None:
            raise StateLostError(
                f"{self._state.journal_path}: shard entries for dataset {entry['d']!r}, which "
                "neither the job nor a registration declares"
            )
        if entry.get("g"):
            mgr.hand_out(int(entry["s"]), str(entry["w"]))
        else:
            mgr.report_done(int(entry["s"]), str(entry["w"]))

    def _restore(self) -> None:
        if self._state is None:
            return
        data, journal = self._state.load()
        if data is None and not journal:
            check_not_lost(self._state.path)  # a job that ran here before must have its state
            self._state.save_text(self._snapshot())
            mark_started(self._state.path)
            return
        if data is not None:
            for saved in data.get("datasets", {}).values():  # before their progress
                self._add_registered(dataset_from_json(saved))
            members = restore_snapshot(
                data, self._shards, self._rdzv, self._stats, self._addresses, self._kv
            )
            self._health.track(members)
            lost = sorted(set(data["shards"]) - set(self._shards))
            if lost:
                raise StateLostError(
                    f"{self._state.path}: progress of dataset(s) {lost} saved, but neither the "
                    "job nor a registration declares them"
                )
        for entry in journal:
            self._replay(entry)
        # Shard holders that never come back are declared dead after the heartbeat timeout.
        self._health.track([w for m in self._shards.values() for w in m.doing().values()])
        self._state.save_text(self._snapshot())  # nothing serves yet: no concurrent reports
        self._state.drop_journals()
        p = [m.progress() for m in self._shards.values()]
        event(
            log,
            "state_restored",
            self._job,
            round=self._rdzv.round,
            journal_entries=len(journal),
            shards_done=sum(x.shards_done for x in p),
        )


def _check_kv(key: str, value: bytes) -> None:
    """Refuse a KV key or value above ``api.limits`` bounds (they live in the master's memory)."""
    if len(key.encode()) > MAX_KV_KEY_BYTES:
        raise InvalidSpecError(f"key: {len(key.encode())} bytes, at most {MAX_KV_KEY_BYTES}")
    if len(value) > MAX_KV_VALUE_BYTES:
        raise InvalidSpecError(
            f"value of {key!r}: {len(value)} bytes, at most {MAX_KV_VALUE_BYTES}"
        )
