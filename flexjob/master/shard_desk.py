"""The master's shard calls: hand out, count and take back the shards of its datasets.

``ShardDesk`` carries out ``GetShard``, ``ReportShard``, ``LeaseShards`` and ``GetProgress`` over
the ``DatasetBook`` and gives back the shards of a node or replica that is gone, logging each
event and queueing what must survive a restart (``master.persistence``: a journal line per
shard handed out or counted, a snapshot when an epoch opens). Its methods are called holding the
service's lock and the service's ``@saves`` call writes what they queued. Not for who is alive
(``master.service``) nor for the shard bookkeeping itself (``core.training.shards``).
"""

import logging

from flexjob.api.errors import InvalidSpecError
from flexjob.api.limits import MAX_SHARD_LEASE
from flexjob.core.fields import build
from flexjob.core.training.rendezvous import Rendezvous
from flexjob.core.training.shards import ReportResult, ShardManager
from flexjob.master.datasets import DatasetBook
from flexjob.master.logs import event
from flexjob.master.persistence import Persistence
from flexjob.rpc.messages import LeaseRequest, Progress, ShardInfo, ShardLease

log = logging.getLogger(__name__)


def check_lease(request: LeaseRequest) -> None:
    """A ``LeaseShards`` request within ``MAX_SHARD_LEASE`` (else ``InvalidSpecError``)."""
    if not 0 <= request.count <= MAX_SHARD_LEASE:
        raise InvalidSpecError(f"count must be in 0..{MAX_SHARD_LEASE}, got {request.count}")
    for field, ids in (("done", request.done), ("release", request.release)):
        if len(ids) > MAX_SHARD_LEASE:
            raise InvalidSpecError(f"{field} may list at most {MAX_SHARD_LEASE} shards")


class ShardDesk:
    def __init__(self, job: str, datasets: DatasetBook, persistence: Persistence) -> None:
        self._job = job
        self._datasets = datasets
        self._persistence = persistence

    def get_shard(self, dataset: str, worker: str) -> ShardInfo:
        mgr = self._datasets.get(dataset)
        shard = self._hand_out(mgr, dataset, worker)
        return shard or ShardInfo(has_shard=False, end_of_data=mgr.finished)

    def report_shard(self, dataset: str, shard_id: int, worker: str) -> bool:
        return self._report(self._datasets.get(dataset), dataset, shard_id, worker)

    def lease_shards(self, request: LeaseRequest, worker: str) -> ShardLease:
        """Report ``done`` in order, put ``release`` back in TODO, then hand out up to
        ``count`` shards (``request`` passed ``check_lease``)."""
        dataset = request.dataset
        mgr = self._datasets.get(dataset)
        accepted = tuple(self._report(mgr, dataset, sid, worker) for sid in request.done)
        if mgr.give_back(request.release, worker):
            self._persistence.note_change()  # rare (a trainer closing): a snapshot
        shards: list[ShardInfo] = []
        while len(shards) < request.count and (got := self._hand_out(mgr, dataset, worker)):
            shards.append(got)
        return ShardLease(tuple(shards), accepted, mgr.finished)

    def progress(self, dataset: str, rdzv: Rendezvous) -> Progress:
        p = self._datasets.get(dataset).progress()
        world = rdzv.world
        size = len(world.members) if world else 0
        return build(Progress, p, finished=p.finished, round=rdzv.round, world_size=size)

    def recover(self, node_id: str) -> None:
        """Every shard ``node_id`` is doing goes back to TODO."""
        for name, mgr in self._datasets.managers.items():
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

    def recover_processes(self, node_id: str) -> None:
        """The shards of ``node_id``'s processes (``<node>.<local rank>``) go back to TODO."""
        processes = {
            w
            for mgr in self._datasets.managers.values()
            for w in mgr.doing().values()
            if w.startswith(node_id + ".")
        }
        for process in sorted(processes):
            self.recover(process)

    def expire_slow_shards(self) -> None:
        """Shards held past the slow-shard timeout go back to TODO (``ShardConfig``)."""
        for name, mgr in self._datasets.managers.items():
            for sid in mgr.expire_slow_shards():
                event(log, "shard_timed_out", self._job, dataset=name or "-", shard=sid)

    def _hand_out(self, mgr: ShardManager, dataset: str, worker: str) -> ShardInfo | None:
        """The next shard of ``dataset``, now DOING for ``worker`` and journaled; None when
        none is free now."""
        opened = mgr.opened_epochs
        shard = mgr.get_shard(worker)
        if shard is None:
            return None
        if mgr.opened_epochs != opened:
            event(log, "epoch_started", self._job, dataset=dataset or "-", epoch=shard.epoch)
            self._persistence.note_change()
        self._persistence.append({"d": dataset, "s": shard.shard_id, "w": worker, "g": 1})
        s = shard.spec
        return ShardInfo(
            True, False, shard.shard_id, shard.epoch, s.start, s.end, s.indices, s.name
        )

    def _report(self, mgr: ShardManager, dataset: str, shard_id: int, worker: str) -> bool:
        """Count ``worker``'s report of ``shard_id`` (journaled); whether it is accepted."""
        result = mgr.report_done(shard_id, worker)
        if result is ReportResult.COUNTED:
            self._persistence.append({"d": dataset, "s": shard_id, "w": worker})
            if mgr.finished:
                event(log, "dataset_finished", self._job, dataset=dataset or "-")
                # Once per dataset: the snapshot alone then holds its whole books (a job whose
                # pods are deleted as soon as its workers succeed may not close its master).
                self._persistence.note_change()
        elif result is ReportResult.REJECTED:
            event(log, "shard_report_rejected", self._job, node=worker, shard=shard_id)
        return result.accepted
