"""Conversions between the generated protobuf messages and the ``rpc.messages`` data classes.

The only place that knows both shapes; the client and the servicer call these. Not for
validation (the backend validates) nor for transport.
"""

from typing import Protocol

from flexjob.api.roles import DEFAULT_TYPE, type_named
from flexjob.core.fields import build, codec
from flexjob.core.training.batch import RankBatch
from flexjob.core.training.dataset import Dataset
from flexjob.rpc import messages as m
from flexjob.rpc.gen import master_pb2 as pb


class NodeLike(Protocol):
    @property
    def node_id(self) -> str: ...


def node_to_pb(node: NodeLike | str) -> pb.NodeRef:
    if isinstance(node, str):
        return pb.NodeRef(node_id=node)
    return pb.NodeRef(
        node_id=node.node_id,
        replica_type=str(getattr(node, "replica_type", DEFAULT_TYPE)),
        replica_index=int(getattr(node, "replica_index", 0)),
        incarnation=int(getattr(node, "incarnation", 0)),
    )


def node_from_pb(msg: pb.NodeRef) -> m.NodeRef:
    return m.NodeRef(msg.node_id, type_named(msg.replica_type), msg.replica_index, msg.incarnation)


# Messages whose fields all cross the wire as they are.
world_to_pb, world_from_pb = codec(m.NodeWorld, pb.WorldInfo)
waiting_to_pb, waiting_from_pb = codec(m.NodesWaiting, pb.NodesWaitingResponse)
shard_to_pb, shard_from_pb = codec(m.ShardInfo, pb.Shard)
heartbeat_to_pb, heartbeat_from_pb = codec(m.HeartbeatReply, pb.HeartbeatResponse)
batch_to_pb, batch_from_pb = codec(RankBatch, pb.BatchPlanResponse)
progress_to_pb, progress_from_pb = codec(m.Progress, pb.ProgressResponse)


def dataset_to_pb(node: pb.NodeRef, dataset: Dataset) -> pb.RegisterDatasetRequest:
    return build(pb.RegisterDatasetRequest, dataset, node=node, size=dataset.size or 0)


def dataset_from_pb(msg: pb.RegisterDatasetRequest) -> Dataset:
    """The registered dataset; ``InvalidSpecError`` names a bad field."""
    return build(Dataset, msg, size=None if msg.files else msg.size)


def lease_request_to_pb(node: pb.NodeRef, request: m.LeaseRequest) -> pb.LeaseShardsRequest:
    return build(pb.LeaseShardsRequest, request, node=node)


def lease_request_from_pb(msg: pb.LeaseShardsRequest) -> m.LeaseRequest:
    return build(m.LeaseRequest, msg)


def lease_to_pb(lease: m.ShardLease) -> pb.LeaseShardsResponse:
    return build(pb.LeaseShardsResponse, lease, shards=[shard_to_pb(s) for s in lease.shards])


def lease_from_pb(msg: pb.LeaseShardsResponse) -> m.ShardLease:
    return build(m.ShardLease, msg, shards=tuple(shard_from_pb(s) for s in msg.shards))


def stats_to_pb(node: pb.NodeRef, stats: m.NodeStats) -> pb.StatsRequest:
    return build(pb.StatsRequest, stats, node=node)


def stats_from_pb(msg: pb.StatsRequest) -> m.NodeStats:
    return build(m.NodeStats, msg)
