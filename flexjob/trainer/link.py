"""``MasterLink``: the trainer's connection to the job master (rendezvous and shards).

Rendezvous calls go out as the node (all processes of a node share one seat in the world);
shard calls go out as the process (``<node>.<local_rank>`` beyond local rank 0), so the shards
of a process that dies can be handed out again without touching its siblings'. Shards are
leased through a ``trainer.lease.ShardLeaser``. Datasets that the job spec did not declare are
registered with the master's ``RegisterDataset`` call.
Not for the agent (it has its own client).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

from flexjob.api import names
from flexjob.api.errors import UnavailableError
from flexjob.api.roles import type_named
from flexjob.core.training.batch import RankBatch
from flexjob.core.training.dataset import Dataset
from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import NodeRef
from flexjob.trainer.lease import ShardLeaser, lease_size
from flexjob.trainer.sampler import NoShard, ShardSamples
from flexjob.trainer.settings import TrainerSettings
from flexjob.trainer.world import Generation, NodeIdentity, node_identity


class MasterLink:
    def __init__(self, ident: NodeIdentity, shard_lease: str = "1") -> None:
        """``shard_lease``: the lease when ``FLEXJOB_SHARD_LEASE`` is unset (``trainer.lease``)."""
        if not ident.master:
            raise RuntimeError(
                f"{names.ENV_MASTER} is not set: start the script with `flexjob run` or "
                "`flexjob agent`, or pass link= to ElasticTrainer"
            )
        self.ident = ident
        # Its calls carry the membership its agent started it under: once the master fenced
        # that one, they are refused (``core.training.fencing``).
        kind = type_named(ident.replica_type)
        node = NodeRef(ident.node_id, kind, ident.replica_index, ident.incarnation)
        self.node = MasterClient(ident.master, node)
        proc = NodeRef(ident.process_id, kind, ident.replica_index, ident.incarnation)
        self.proc = (
            self.node if ident.process_id == ident.node_id else MasterClient(ident.master, proc)
        )
        self.shards = ShardLeaser(self.proc, lease_size(default=shard_lease))
        self._closing = threading.Event()

    def stay_attached(self) -> None:
        """Hold the node's ``Attach`` stream on a thread while this process lives, so that the
        master takes its death (the stream breaks) at once: the shards it held go back to TODO
        without waiting for the heartbeat timeout or a restarted process. For a process that
        is its node's only one and has no agent holding the stream for it."""
        self.node.attach_in_background(self._closing)

    @classmethod
    def from_identity(cls, ident: NodeIdentity) -> MasterLink:
        return cls(ident)

    # ---- WorldSource ----
    def join(self) -> int:
        return self.node.join("", self.ident.local_world_size)

    def get_world(self, round: int) -> Generation | None:
        w = self.node.get_world(round)
        if not w.complete or w.rank < 0 or w.round < round:
            return None
        return Generation(
            w.round, w.rank, w.world_size, w.store_address, w.store_prefix, tuple(w.members)
        )

    def nodes_waiting(self) -> int:
        return self.node.nodes_waiting().num_nodes_waiting

    def data_finished(self, dataset: str) -> bool:
        """Whether every epoch of ``dataset`` is done (``next_generation``'s ``finished``)."""
        return self.node.get_progress(dataset).finished

    def exclude_nodes(self, round: int, reasons: Mapping[str, str]) -> tuple[str, ...]:
        return self.node.exclude_nodes(round, reasons)

    # ---- ShardSource ----
    def register_dataset(self, dataset: Dataset) -> None:
        self.node.register_dataset(dataset)

    def get_shard(self, dataset: str) -> ShardSamples | NoShard:
        return self.shards.get_shard(dataset)

    def report_shard(self, dataset: str, shard_id: int) -> bool:
        return self.shards.report_shard(dataset, shard_id)

    def report_shards(self, dataset: str, shard_ids: Sequence[int]) -> list[bool]:
        return self.shards.report_shards(dataset, shard_ids)

    def unqueue(self, dataset: str, shard_ids: Collection[int]) -> list[int]:
        return self.shards.unqueue(dataset, shard_ids)

    def report_shard_as(self, process_id: str, dataset: str, shard_id: int) -> bool:
        """Report ``shard_id`` done as the process ``process_id``: a peer that finished it in
        a step that completed, then died before its own report (``trainer.peer_shards``)."""
        assert self.ident.master is not None
        node = NodeRef(process_id, type_named(self.ident.replica_type))
        with MasterClient(self.ident.master, node, timeout=5.0, retry_deadline=10.0) as client:
            return client.report_shard(shard_id, dataset)

    # ---- fixed global batch ----
    def get_batch_plan(self, rank: int, world_size: int) -> RankBatch:
        """This rank's share of ``spec.batch``; ``NotFoundError`` when the job has none."""
        return self.node.get_batch_plan(rank, world_size)

    def publish(self, key: str, value: str) -> None:
        self.node.kv_set(key, value.encode())

    def close(self) -> None:
        self._closing.set()
        with contextlib.suppress(UnavailableError):  # a gone master takes them back itself
            self.shards.close()
        if self.proc is not self.node:
            self.proc.close()
        self.node.close()


def replica_link() -> MasterLink:
    """A link for a process that is its replica's only trainer, started without an agent
    (e.g. an asynchronous parameter-server worker). Unless ``FLEXJOB_NODE_ID`` names it, its
    node is the replica (``worker-1``), and it tells the master it (re)started, so the shards
    an earlier process of the same replica held go back to TODO, and it holds the node's
    ``Attach`` stream (``MasterLink.stay_attached``), so that its own death hands its shards
    back at once, before a replacement process starts."""
    settings = TrainerSettings.current()
    ident = node_identity(settings)
    if settings.node_id is not None or settings.replica_type is None:
        return MasterLink(ident)
    ident = replace(ident, node_id=f"{ident.replica_type}-{ident.replica_index}")
    link = MasterLink(ident)
    link.node.report_failure(
        "replica process started: shards of its earlier process go back to TODO",
        exit_code=0,
        restarting=True,
    )
    link.stay_attached()
    return link
