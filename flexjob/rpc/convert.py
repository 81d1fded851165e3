"""Conversions between the generated protobuf messages and the ``rpc.messages`` data classes.

The only place that knows both shapes; the client and the servicer call these. Not for
validation (the backend validates) nor for transport.
"""

from typing import Protocol

from flexjob.core.batch import RankBatch
from flexjob.core.dataset import Dataset
from flexjob.rpc.gen import master_pb2 as pb
from flexjob.rpc.messages import (
    HeartbeatReply,
    NodeRef,
    NodeStats,
    NodesWaiting,
    NodeWorld,
    Progress,
    ShardInfo,
    ShardLease,
)


class NodeLike(Protocol):
    @property
    def node_id(self) -> str: ...


def node_to_pb(node: NodeLike | str) -> pb.NodeRef:
    if isinstance(node, str):
        return pb.NodeRef(node_id=node)
    return pb.NodeRef(
        node_id=node.node_id,
        replica_type=str(getattr(node, "replica_type", "worker")),
        replica_index=int(getattr(node, "replica_index", 0)),
    )


def node_from_pb(msg: pb.NodeRef) -> NodeRef:
    return NodeRef(msg.node_id, msg.replica_type or "worker", msg.replica_index)


def dataset_to_pb(node: pb.NodeRef, dataset: Dataset) -> pb.RegisterDatasetRequest:
    return pb.RegisterDatasetRequest(
        node=node,
        name=dataset.name,
        size=dataset.size or 0,
        files=list(dataset.files),
        shard_size=dataset.shard_size,
        epochs=dataset.epochs,
        shuffle=dataset.shuffle,
        seed=dataset.seed,
    )


def dataset_from_pb(msg: pb.RegisterDatasetRequest) -> Dataset:
    """The registered dataset; ``InvalidSpecError`` names a bad field."""
    return Dataset(
        name=msg.name,
        size=None if msg.files else msg.size,
        files=tuple(msg.files),
        shard_size=msg.shard_size,
        epochs=msg.epochs,
        shuffle=msg.shuffle,
        seed=msg.seed,
    )


def world_to_pb(world: NodeWorld) -> pb.WorldInfo:
    return pb.WorldInfo(
        complete=world.complete,
        round=world.round,
        rank=world.rank,
        world_size=world.world_size,
        store_address=world.store_address,
        store_prefix=world.store_prefix,
        members=list(world.members),
    )


def world_from_pb(msg: pb.WorldInfo) -> NodeWorld:
    return NodeWorld(
        complete=msg.complete,
        round=msg.round,
        rank=msg.rank,
        world_size=msg.world_size,
        store_address=msg.store_address,
        store_prefix=msg.store_prefix,
        members=tuple(msg.members),
    )


def waiting_to_pb(waiting: NodesWaiting) -> pb.NodesWaitingResponse:
    return pb.NodesWaitingResponse(num_nodes_waiting=waiting.num_nodes_waiting, round=waiting.round)


def waiting_from_pb(msg: pb.NodesWaitingResponse) -> NodesWaiting:
    return NodesWaiting(msg.num_nodes_waiting, msg.round)


def shard_to_pb(shard: ShardInfo) -> pb.Shard:
    return pb.Shard(
        has_shard=shard.has_shard,
        end_of_data=shard.end_of_data,
        shard_id=shard.shard_id,
        epoch=shard.epoch,
        start=shard.start,
        end=shard.end,
        indices=list(shard.indices),
        name=shard.name,
    )


def shard_from_pb(msg: pb.Shard) -> ShardInfo:
    return ShardInfo(
        has_shard=msg.has_shard,
        end_of_data=msg.end_of_data,
        shard_id=msg.shard_id,
        epoch=msg.epoch,
        start=msg.start,
        end=msg.end,
        indices=tuple(msg.indices),
        name=msg.name,
    )


def lease_to_pb(lease: ShardLease) -> pb.LeaseShardsResponse:
    return pb.LeaseShardsResponse(
        shards=[shard_to_pb(s) for s in lease.shards],
        accepted=list(lease.accepted),
        end_of_data=lease.end_of_data,
    )


def lease_from_pb(msg: pb.LeaseShardsResponse) -> ShardLease:
    return ShardLease(
        tuple(shard_from_pb(s) for s in msg.shards), tuple(msg.accepted), msg.end_of_data
    )


def stats_to_pb(node: pb.NodeRef, stats: NodeStats) -> pb.StatsRequest:
    return pb.StatsRequest(
        node=node,
        cpu_percent=stats.cpu_percent,
        memory_bytes=stats.memory_bytes,
        step=stats.step,
        samples_per_second=stats.samples_per_second,
        world_size=stats.world_size,
        timestamp=stats.timestamp,
        requests_per_second=stats.requests_per_second,
        partition_bytes=stats.partition_bytes,
        step_seconds=stats.step_seconds,
    )


def stats_from_pb(msg: pb.StatsRequest) -> NodeStats:
    return NodeStats(
        cpu_percent=msg.cpu_percent,
        memory_bytes=msg.memory_bytes,
        step=msg.step,
        samples_per_second=msg.samples_per_second,
        world_size=msg.world_size,
        timestamp=msg.timestamp,
        requests_per_second=msg.requests_per_second,
        partition_bytes=msg.partition_bytes,
        step_seconds=msg.step_seconds,
    )


def heartbeat_to_pb(reply: HeartbeatReply) -> pb.HeartbeatResponse:
    return pb.HeartbeatResponse(
        round=reply.round,
        num_nodes_waiting=reply.num_nodes_waiting,
        job_finished=reply.job_finished,
        excluded=reply.excluded,
    )


def heartbeat_from_pb(msg: pb.HeartbeatResponse) -> HeartbeatReply:
    return HeartbeatReply(msg.round, msg.num_nodes_waiting, msg.job_finished, msg.excluded)


def batch_to_pb(plan: RankBatch) -> pb.BatchPlanResponse:
    return pb.BatchPlanResponse(
        micro_batches=plan.micro_batches,
        micro_batch_size=plan.micro_batch_size,
        global_batch_size=plan.global_batch_size,
    )


def batch_from_pb(msg: pb.BatchPlanResponse) -> RankBatch:
    return RankBatch(msg.micro_batches, msg.micro_batch_size, msg.global_batch_size)


def progress_to_pb(p: Progress) -> pb.ProgressResponse:
    return pb.ProgressResponse(
        epoch=p.epoch,
        epochs=p.epochs,
        shards_done=p.shards_done,
        shards_total=p.shards_total,
        samples_done=p.samples_done,
        samples_total=p.samples_total,
        finished=p.finished,
        round=p.round,
        world_size=p.world_size,
    )


def progress_from_pb(msg: pb.ProgressResponse) -> Progress:
    return Progress(
        epoch=msg.epoch,
        epochs=msg.epochs,
        shards_done=msg.shards_done,
        shards_total=msg.shards_total,
        samples_done=msg.samples_done,
        samples_total=msg.samples_total,
        finished=msg.finished,
        round=msg.round,
        world_size=msg.world_size,
    )
