"""``spec.masterSettings``: the settings of the master the operator starts for a job.

Its groups and fields are ``core.training.master_config.MasterConfig``'s, in camelCase (a group
``node_health`` is ``nodeHealth``, its ``heartbeat_timeout`` ``heartbeatTimeout``), so
``MasterConfig.from_job`` applies them without a table; times are seconds. Every field is
optional and has no default here: the defaults are ``MasterConfig``'s, written there once.
What the rest of the spec decides is not repeated here: the node bounds (the replicas'
``minReplicas`` / ``maxReplicas``), ``optimizeMode`` and ``brainService``, the PS count, and
the slow-node settings (``spec.stragglers``). Pure data; the bounds are checked by pydantic,
so a bad value is refused at validation with its path (``spec.masterSettings.rpc.server``)
and what is allowed.
"""

from typing import Annotated

from pydantic import Field

from flexjob.api.base import ApiModel
from flexjob.api.enums import RpcServer
from flexjob.api.limits import MAX_COUNT

#: Seconds: above zero, at most a day.
Seconds = Annotated[float, Field(gt=0.0, le=86400.0)]
#: Seconds where 0 means "off": at most a day.
SecondsOrOff = Annotated[float, Field(ge=0.0, le=86400.0)]
Count = Annotated[int, Field(ge=1, le=MAX_COUNT, strict=True)]
CountOrOff = Annotated[int, Field(ge=0, le=MAX_COUNT, strict=True)]


class RendezvousSettings(ApiModel):
    """How a round forms: nodes per unit, seconds a round waits for more than min nodes."""

    node_unit: Count | None = None
    last_call_timeout: SecondsOrOff | None = None


class NodeHealthSettings(ApiModel):
    """``heartbeatTimeout``: seconds of silence before a node is dead (the node-death
    timeout); ``replicaPendingTimeout``: seconds a replica may stay Pending before the master
    reports it."""

    heartbeat_timeout: Seconds | None = None
    replica_pending_timeout: Seconds | None = None


class ShardSettings(ApiModel):
    """``slowShardTimeout``: seconds a shard may stay in progress before it is handed out
    again."""

    slow_shard_timeout: Seconds | None = None


class PersistenceSettings(ApiModel):
    """The master's state file: ``fsync`` every acknowledged change, journal entries between
    two snapshots (``snapshotEvery``)."""

    fsync: bool | None = None
    snapshot_every: Count | None = None


class RpcSettings(ApiModel):
    """The master's gRPC server: ``server`` (threads | aio), ``workers`` (its threads),
    ``shardStreams`` (processes that may hold a shard stream; 0: none)."""

    server: RpcServer | None = None
    workers: Count | None = None
    shard_streams: CountOrOff | None = None


class StoreSettings(ApiModel):
    """The job's TCPStore server: ``firstRequestTimeout``, seconds a new connection may take
    to send its first whole request before it is closed."""

    first_request_timeout: Seconds | None = None


class OptimizerSettings(ApiModel):
    """``interval``: seconds between two resource plans."""

    interval: Seconds | None = None


class PsSettings(ApiModel):
    """``checkpointInterval``: seconds between the checkpoints the master asks of every PS
    (0: only each PS's own)."""

    checkpoint_interval: SecondsOrOff | None = None


class MasterSettingsSpec(ApiModel):
    """``spec.masterSettings``: one optional block per group of the master's settings."""

    rendezvous: RendezvousSettings | None = None
    node_health: NodeHealthSettings | None = None
    shards: ShardSettings | None = None
    persistence: PersistenceSettings | None = None
    rpc: RpcSettings | None = None
    store: StoreSettings | None = None
    optimizer: OptimizerSettings | None = None
    ps: PsSettings | None = None
