"""The ``ElasticJob`` custom resource: spec (what the user asks for) and status (what runs).

Pure data. Defaults that depend on other fields live in ``api.defaults``; cross-field checks
live in ``api.validate``. Field names follow Kubernetes: camelCase on the wire.
"""

from typing import Any, Literal

from pydantic import Field

from flexjob.api.base import ApiModel, OpenModel
from flexjob.api.enums import (
    CleanPodPolicy,
    DistributionStrategy,
    JobPhase,
    JobPriority,
    OptimizeMode,
    ReplicaType,
    RestartPolicy,
)
from flexjob.api.meta import ObjectMeta
from flexjob.api.pod import PodTemplateSpec


class ReplicaSpec(ApiModel):
    """How many replicas of one type, how elastic, how they restart, and what each runs."""

    replicas: int | None = None
    min_replicas: int | None = None
    max_replicas: int | None = None
    restart_policy: RestartPolicy | None = None
    #: With restartPolicy ExitCode: the exit codes that are retried (others are permanent).
    restart_exit_codes: list[int] | None = None
    priority: JobPriority | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)


class DatasetSpec(ApiModel):
    """The dataset the master shards: a number of samples, or a list of files / row ranges."""

    name: str | None = None
    size: int | None = None
    shard_size: int | None = None
    epochs: int | None = None
    shuffle: bool | None = None
    shuffle_seed: int | None = None
    files: list[str] | None = None


class BatchSpec(ApiModel):
    """A fixed global batch: the master re-plans each worker's accumulation steps."""

    global_batch_size: int | None = None
    micro_batch_size: int | None = None
    max_workers: int | None = None


class ElasticJobSpec(ApiModel):
    replica_specs: dict[ReplicaType, ReplicaSpec] = Field(default_factory=dict)
    distribution_strategy: DistributionStrategy | None = None
    clean_pod_policy: CleanPodPolicy | None = None
    backoff_limit: int | None = None
    priority: JobPriority | None = None
    preemptible: bool | None = None
    volumes: list[dict[str, Any]] = Field(default_factory=list)
    optimize_mode: OptimizeMode | None = None
    brain_service: str | None = None
    envs: dict[str, str] = Field(default_factory=dict)
    suspend: bool | None = None
    active_deadline_seconds: int | None = None
    ttl_seconds_after_finished: int | None = None
    dataset: DatasetSpec | None = None
    batch: BatchSpec | None = None
    #: Free-form job arguments kept from readers (ElasticDL jobArgs, DLRover extras).
    job_args: dict[str, str] = Field(default_factory=dict)
    #: DI Orchestrator v1 aggregator settings, kept when converting a v1 DIJob.
    aggregator_config: dict[str, Any] | None = None


class JobCondition(ApiModel):
    type: JobPhase
    status: Literal["True", "False", "Unknown"] = "True"
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None
    last_update_time: str | None = None


class ReplicaStatus(ApiModel):
    """Counts of one replica type's replicas by observed phase."""

    active: int = 0
    pending: int = 0
    succeeded: int = 0
    failed: int = 0


class ElasticJobStatus(ApiModel):
    phase: JobPhase = JobPhase.PENDING
    conditions: list[JobCondition] = Field(default_factory=list)
    replica_statuses: dict[ReplicaType, ReplicaStatus] = Field(default_factory=dict)
    #: Desired replica counts set at run time (server, scaler); overrides the spec when set.
    replicas: dict[ReplicaType, int] = Field(default_factory=dict)
    #: Node names per replica type, as the Allocator placed them.
    allocation: dict[ReplicaType, list[str]] = Field(default_factory=dict)
    profilings: dict[str, Any] = Field(default_factory=dict)
    start_time: str | None = None
    completion_time: str | None = None
    restart_count: int = 0
    #: Uids of failed replicas already counted in ``restartCount`` (at most backoffLimit + 1),
    #: so that seeing the same failure again does not count it twice.
    restarted_replicas: list[str] = Field(default_factory=list)
    message: str = ""


class ElasticJob(ApiModel):
    api_version: Literal["flexjob.dev/v1alpha1"] = "flexjob.dev/v1alpha1"
    kind: Literal["ElasticJob"] = "ElasticJob"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ElasticJobSpec = Field(default_factory=ElasticJobSpec)
    status: ElasticJobStatus | None = None

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace


class ResourceSpec(OpenModel):
    """Resources of one replica: CPU cores, memory in MiB, GPUs. Open for extended resources."""

    cpu: float | None = None
    memory: int | None = None
    gpu: int | None = None
