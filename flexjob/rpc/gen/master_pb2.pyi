from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class NodeRef(_message.Message):
    __slots__ = ("node_id", "replica_type", "replica_index", "incarnation")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    REPLICA_TYPE_FIELD_NUMBER: _ClassVar[int]
    REPLICA_INDEX_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    replica_type: str
    replica_index: int
    incarnation: int
    def __init__(self, node_id: _Optional[str] = ..., replica_type: _Optional[str] = ..., replica_index: _Optional[int] = ..., incarnation: _Optional[int] = ...) -> None: ...

class JoinRequest(_message.Message):
    __slots__ = ("node", "address", "local_world_size")
    NODE_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    LOCAL_WORLD_SIZE_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    address: str
    local_world_size: int
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ..., address: _Optional[str] = ..., local_world_size: _Optional[int] = ...) -> None: ...

class JoinResponse(_message.Message):
    __slots__ = ("round",)
    ROUND_FIELD_NUMBER: _ClassVar[int]
    round: int
    def __init__(self, round: _Optional[int] = ...) -> None: ...

class GetWorldRequest(_message.Message):
    __slots__ = ("node", "round")
    NODE_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    round: int
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ..., round: _Optional[int] = ...) -> None: ...

class WorldInfo(_message.Message):
    __slots__ = ("complete", "round", "rank", "world_size", "store_address", "store_prefix", "members")
    COMPLETE_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    WORLD_SIZE_FIELD_NUMBER: _ClassVar[int]
    STORE_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    STORE_PREFIX_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    complete: bool
    round: int
    rank: int
    world_size: int
    store_address: str
    store_prefix: str
    members: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, complete: _Optional[bool] = ..., round: _Optional[int] = ..., rank: _Optional[int] = ..., world_size: _Optional[int] = ..., store_address: _Optional[str] = ..., store_prefix: _Optional[str] = ..., members: _Optional[_Iterable[str]] = ...) -> None: ...

class NodesWaitingRequest(_message.Message):
    __slots__ = ("node",)
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ...) -> None: ...

class NodesWaitingResponse(_message.Message):
    __slots__ = ("num_nodes_waiting", "round")
    NUM_NODES_WAITING_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    num_nodes_waiting: int
    round: int
    def __init__(self, num_nodes_waiting: _Optional[int] = ..., round: _Optional[int] = ...) -> None: ...

class GetShardRequest(_message.Message):
    __slots__ = ("node", "dataset")
    NODE_FIELD_NUMBER: _ClassVar[int]
    DATASET_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    dataset: str
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ..., dataset: _Optional[str] = ...) -> None: ...

class Shard(_message.Message):
    __slots__ = ("has_shard", "end_of_data", "shard_id", "epoch", "start", "end", "indices", "name")
    HAS_SHARD_FIELD_NUMBER: _ClassVar[int]
    END_OF_DATA_FIELD_NUMBER: _ClassVar[int]
    SHARD_ID_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    INDICES_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    has_shard: bool
    end_of_data: bool
    shard_id: int
    epoch: int
    start: int
    end: int
    indices: _containers.RepeatedScalarFieldContainer[int]
    name: str
    def __init__(self, has_shard: _Optional[bool] = ..., end_of_data: _Optional[bool] = ..., shard_id: _Optional[int] = ..., epoch: _Optional[int] = ..., start: _Optional[int] = ..., end: _Optional[int] = ..., indices: _Optional[_Iterable[int]] = ..., name: _Optional[str] = ...) -> None: ...

class RegisterDatasetRequest(_message.Message):
    __slots__ = ("node", "name", "size", "files", "shard_size", "epochs", "shuffle", "seed")
    NODE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    SHARD_SIZE_FIELD_NUMBER: _ClassVar[int]
    EPOCHS_FIELD_NUMBER: _ClassVar[int]
    SHUFFLE_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    name: str
    size: int
    files: _containers.RepeatedScalarFieldContainer[str]
    shard_size: int
    epochs: int
    shuffle: bool
    seed: int
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ..., name: _Optional[str] = ..., size: _Optional[int] = ..., files: _Optional[_Iterable[str]] = ..., shard_size: _Optional[int] = ..., epochs: _Optional[int] = ..., shuffle: _Optional[bool] = ..., seed: _Optional[int] = ...) -> None: ...

class ReportShardRequest(_message.Message):
    __slots__ = ("node", "dataset", "shard_id")
    NODE_FIELD_NUMBER: _ClassVar[int]
    DATASET_FIELD_NUMBER: _ClassVar[int]
    SHARD_ID_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    dataset: str
    shard_id: int
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ..., dataset: _Optional[str] = ..., shard_id: _Optional[int] = ...) -> None: ...

class ReportShardResponse(_message.Message):
    __slots__ = ("accepted",)
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    accepted: bool
    def __init__(self, accepted: _Optional[bool] = ...) -> None: ...

class LeaseShardsRequest(_message.Message):
    __slots__ = ("node", "dataset", "count", "done", "release")
    NODE_FIELD_NUMBER: _ClassVar[int]
    DATASET_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    dataset: str
    count: int
    done: _containers.RepeatedScalarFieldContainer[int]
    release: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ..., dataset: _Optional[str] = ..., count: _Optional[int] = ..., done: _Optional[_Iterable[int]] = ..., release: _Optional[_Iterable[int]] = ...) -> None: ...

class LeaseShardsResponse(_message.Message):
    __slots__ = ("shards", "accepted", "end_of_data")
    SHARDS_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    END_OF_DATA_FIELD_NUMBER: _ClassVar[int]
    shards: _containers.RepeatedCompositeFieldContainer[Shard]
    accepted: _containers.RepeatedScalarFieldContainer[bool]
    end_of_data: bool
    def __init__(self, shards: _Optional[_Iterable[_Union[Shard, _Mapping]]] = ..., accepted: _Optional[_Iterable[bool]] = ..., end_of_data: _Optional[bool] = ...) -> None: ...

class StatsRequest(_message.Message):
    __slots__ = ("node", "cpu_percent", "memory_bytes", "step", "samples_per_second", "world_size", "timestamp", "requests_per_second", "partition_bytes", "step_seconds", "gpu_memory_bytes", "gpu_percent")
    NODE_FIELD_NUMBER: _ClassVar[int]
    CPU_PERCENT_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    SAMPLES_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    WORLD_SIZE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    PARTITION_BYTES_FIELD_NUMBER: _ClassVar[int]
    STEP_SECONDS_FIELD_NUMBER: _ClassVar[int]
    GPU_MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    GPU_PERCENT_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    cpu_percent: float
    memory_bytes: int
    step: int
    samples_per_second: float
    world_size: int
    timestamp: float
    requests_per_second: float
    partition_bytes: int
    step_seconds: float
    gpu_memory_bytes: int
    gpu_percent: float
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ..., cpu_percent: _Optional[float] = ..., memory_bytes: _Optional[int] = ..., step: _Optional[int] = ..., samples_per_second: _Optional[float] = ..., world_size: _Optional[int] = ..., timestamp: _Optional[float] = ..., requests_per_second: _Optional[float] = ..., partition_bytes: _Optional[int] = ..., step_seconds: _Optional[float] = ..., gpu_memory_bytes: _Optional[int] = ..., gpu_percent: _Optional[float] = ...) -> None: ...

class HeartbeatRequest(_message.Message):
    __slots__ = ("node", "timestamp")
    NODE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    timestamp: float
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ..., timestamp: _Optional[float] = ...) -> None: ...

class HeartbeatResponse(_message.Message):
    __slots__ = ("round", "num_nodes_waiting", "job_finished", "excluded", "incarnation", "fenced")
    ROUND_FIELD_NUMBER: _ClassVar[int]
    NUM_NODES_WAITING_FIELD_NUMBER: _ClassVar[int]
    JOB_FINISHED_FIELD_NUMBER: _ClassVar[int]
    EXCLUDED_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    FENCED_FIELD_NUMBER: _ClassVar[int]
    round: int
    num_nodes_waiting: int
    job_finished: bool
    excluded: bool
    incarnation: int
    fenced: bool
    def __init__(self, round: _Optional[int] = ..., num_nodes_waiting: _Optional[int] = ..., job_finished: _Optional[bool] = ..., excluded: _Optional[bool] = ..., incarnation: _Optional[int] = ..., fenced: _Optional[bool] = ...) -> None: ...

class FailureRequest(_message.Message):
    __slots__ = ("node", "reason", "exit_code", "restarting")
    NODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    RESTARTING_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    reason: str
    exit_code: int
    restarting: bool
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ..., reason: _Optional[str] = ..., exit_code: _Optional[int] = ..., restarting: _Optional[bool] = ...) -> None: ...

class NodeSucceededRequest(_message.Message):
    __slots__ = ("node",)
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ...) -> None: ...

class RunningNodesRequest(_message.Message):
    __slots__ = ("node",)
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ...) -> None: ...

class RunningNodesResponse(_message.Message):
    __slots__ = ("node_ids",)
    NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    node_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, node_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class BatchPlanRequest(_message.Message):
    __slots__ = ("node", "rank", "world_size")
    NODE_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    WORLD_SIZE_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    rank: int
    world_size: int
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ..., rank: _Optional[int] = ..., world_size: _Optional[int] = ...) -> None: ...

class BatchPlanResponse(_message.Message):
    __slots__ = ("micro_batches", "micro_batch_size", "global_batch_size", "max_global_batch_size")
    MICRO_BATCHES_FIELD_NUMBER: _ClassVar[int]
    MICRO_BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    MAX_GLOBAL_BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    micro_batches: int
    micro_batch_size: int
    global_batch_size: int
    max_global_batch_size: int
    def __init__(self, micro_batches: _Optional[int] = ..., micro_batch_size: _Optional[int] = ..., global_batch_size: _Optional[int] = ..., max_global_batch_size: _Optional[int] = ...) -> None: ...

class KVSetRequest(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: bytes
    def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...

class KVGetRequest(_message.Message):
    __slots__ = ("key",)
    KEY_FIELD_NUMBER: _ClassVar[int]
    key: str
    def __init__(self, key: _Optional[str] = ...) -> None: ...

class KVGetResponse(_message.Message):
    __slots__ = ("found", "value")
    FOUND_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    found: bool
    value: bytes
    def __init__(self, found: _Optional[bool] = ..., value: _Optional[bytes] = ...) -> None: ...

class KVAddRequest(_message.Message):
    __slots__ = ("key", "amount")
    KEY_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    key: str
    amount: int
    def __init__(self, key: _Optional[str] = ..., amount: _Optional[int] = ...) -> None: ...

class KVAddResponse(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: int
    def __init__(self, value: _Optional[int] = ...) -> None: ...

class ProgressRequest(_message.Message):
    __slots__ = ("node", "dataset")
    NODE_FIELD_NUMBER: _ClassVar[int]
    DATASET_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    dataset: str
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ..., dataset: _Optional[str] = ...) -> None: ...

class ProgressResponse(_message.Message):
    __slots__ = ("epoch", "epochs", "shards_done", "shards_total", "samples_done", "samples_total", "finished", "round", "world_size")
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    EPOCHS_FIELD_NUMBER: _ClassVar[int]
    SHARDS_DONE_FIELD_NUMBER: _ClassVar[int]
    SHARDS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    SAMPLES_DONE_FIELD_NUMBER: _ClassVar[int]
    SAMPLES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    WORLD_SIZE_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    epochs: int
    shards_done: int
    shards_total: int
    samples_done: int
    samples_total: int
    finished: bool
    round: int
    world_size: int
    def __init__(self, epoch: _Optional[int] = ..., epochs: _Optional[int] = ..., shards_done: _Optional[int] = ..., shards_total: _Optional[int] = ..., samples_done: _Optional[int] = ..., samples_total: _Optional[int] = ..., finished: _Optional[bool] = ..., round: _Optional[int] = ..., world_size: _Optional[int] = ...) -> None: ...

class ExcludeRequest(_message.Message):
    __slots__ = ("node", "round", "nodes", "reasons")
    NODE_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    round: int
    nodes: _containers.RepeatedScalarFieldContainer[str]
    reasons: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ..., round: _Optional[int] = ..., nodes: _Optional[_Iterable[str]] = ..., reasons: _Optional[_Iterable[str]] = ...) -> None: ...

class ExcludeResponse(_message.Message):
    __slots__ = ("excluded",)
    EXCLUDED_FIELD_NUMBER: _ClassVar[int]
    excluded: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, excluded: _Optional[_Iterable[str]] = ...) -> None: ...

class AttachRequest(_message.Message):
    __slots__ = ("node",)
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ...) -> None: ...

class AttachEvent(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Empty(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
