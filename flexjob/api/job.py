"""The ``ElasticJob`` custom resource: spec (what the user asks for) and status (what runs).

Pure data. Defaults that depend on other fields live in ``api.defaults``; cross-field checks
live in ``api.validate``. Field names follow Kubernetes: camelCase on the wire.
"""

from typing import Annotated, Any, Literal

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
    StragglerPolicy,
)
from flexjob.api.limits import (
    MAX_BATCH,
    MAX_COUNT,
    MAX_DATASET_SAMPLES,
    MAX_EPOCHS,
    MAX_PROCS_PER_NODE,
    MAX_REPLICAS,
)
from flexjob.api.master_settings import MasterSettingsSpec
from flexjob.api.meta import ObjectMeta
from flexjob.api.pod import PodTemplateSpec, Quantity

#: A count that cannot be negative (limits, retries, seconds). Strict: ``true`` is not 1.
NonNegative = Annotated[int, Field(ge=0, le=MAX_COUNT, strict=True)]
#: A number of replicas of one type (``platform_problems`` applies each platform's bound).
ReplicaCount = Annotated[int, Field(ge=0, le=MAX_REPLICAS, strict=True)]

#: Counts from 1 (zero makes no sense for them) to their bound; strict as above.
ProcsPerNode = Annotated[int, Field(ge=1, le=MAX_PROCS_PER_NODE, strict=True)]
Samples = Annotated[int, Field(ge=1, le=MAX_DATASET_SAMPLES, strict=True)]
Epochs = Annotated[int, Field(ge=1, le=MAX_EPOCHS, strict=True)]
BatchSamples = Annotated[int, Field(ge=1, le=MAX_BATCH, strict=True)]
Workers = Annotated[int, Field(ge=1, le=MAX_REPLICAS, strict=True)]


class TaskSlice(ApiModel):
    """One of several DI Orchestrator v2 tasks that share a replica type (``ReplicaSpec.tasks``):
    its name, how many of the type's replicas are its own, and what each runs."""

    name: str
    replicas: ReplicaCount
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)


class ReplicaSpec(ApiModel):
    """How many replicas of one type, how elastic, how they restart, and what each runs."""

    replicas: ReplicaCount | None = None
    min_replicas: ReplicaCount | None = None
    max_replicas: ReplicaCount | None = None
    restart_policy: RestartPolicy | None = None
    #: With restartPolicy ExitCode: the exit codes that are retried (others are permanent).
    restart_exit_codes: list[int] | None = None
    priority: JobPriority | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)
    #: The DI Orchestrator v2 task name, kept when converting a v2 DIJob.
    name: str | None = None
    #: Several DI v2 tasks of this type, in spec order (``api.di_tasks``): the type's replicas
    #: are theirs one after another, each run from its task's template, named by its task.
    tasks: list[TaskSlice] | None = None
    #: How often one replica is relaunched before the job fails (DLRover ``restartCount``).
    restart_count: NonNegative | None = None
    #: Seconds to wait for a relaunched replica (DLRover ``restartTimeout``).
    restart_timeout: NonNegative | None = None
    #: Whether the planner may change this type's replica count and resources.
    auto_scale: bool | None = None


class RendezvousConf(ApiModel):
    key: str
    value: str


class ElasticPolicy(ApiModel):
    """torchrun-style elasticity settings (Kubeflow ``elasticPolicy`` without min/max replicas,
    which live in the worker ``ReplicaSpec``)."""

    rdzv_backend: str | None = None
    rdzv_host: str | None = None
    rdzv_port: int | None = Field(default=None, ge=1, le=65535)
    rdzv_id: str | None = None
    rdzv_conf: list[RendezvousConf] | None = None
    standalone: bool | None = None
    n_proc_per_node: ProcsPerNode | None = None
    max_restarts: NonNegative | None = None
    metrics: list[dict[str, Any]] | None = None


class DatasetSpec(ApiModel):
    """The dataset the master shards: a number of samples, or a list of files / row ranges."""

    name: str | None = None
    size: Samples | None = None
    shard_size: Samples | None = None
    epochs: Epochs | None = None
    shuffle: bool | None = None
    shuffle_seed: int | None = None
    files: list[str] | None = None


class BatchSpec(ApiModel):
    """A fixed global batch: the master re-plans each worker's accumulation steps.

    ``adaptive: true`` (opt-in) lets the trainer change the global batch within
    ``[globalBatchSize, maxGlobalBatchSize]`` to maximise goodput for the current allocation,
    scaling the learning rate (AdaScale; ``trainer.adaptive``). Off, the global batch stays
    ``globalBatchSize`` exactly.
    """

    global_batch_size: BatchSamples | None = None
    micro_batch_size: BatchSamples | None = None
    max_workers: Workers | None = None
    adaptive: bool | None = None
    max_global_batch_size: BatchSamples | None = None


class StragglerSpec(ApiModel):
    """Straggler nodes (docs/elastic-run.md): ``policy`` report (the default) | exclude |
    off; a node is one when its own step time is over ``ratio`` (default 2) times the other
    nodes' median for ``windowSeconds`` (default 30)."""

    policy: StragglerPolicy | None = None
    ratio: Annotated[float, Field(gt=1.0, le=1000.0)] | None = None
    window_seconds: Annotated[float, Field(gt=0.0, le=86400.0)] | None = None


class ElasticJobSpec(ApiModel):
    replica_specs: dict[ReplicaType, ReplicaSpec] = Field(default_factory=dict)
    distribution_strategy: DistributionStrategy | None = None
    clean_pod_policy: CleanPodPolicy | None = None
    backoff_limit: NonNegative | None = None
    priority: JobPriority | None = None
    preemptible: bool | None = None
    volumes: list[dict[str, Any]] = Field(default_factory=list)
    optimize_mode: OptimizeMode | None = None
    brain_service: str | None = None
    envs: dict[str, str] = Field(default_factory=dict)
    suspend: bool | None = None
    active_deadline_seconds: NonNegative | None = None
    ttl_seconds_after_finished: NonNegative | None = None
    dataset: DatasetSpec | None = None
    batch: BatchSpec | None = None
    stragglers: StragglerSpec | None = None
    #: The settings of the master the operator starts (``api.master_settings``).
    master_settings: MasterSettingsSpec | None = None
    #: Free-form job arguments kept from readers (ElasticDL jobArgs, DLRover extras).
    job_args: dict[str, str] = Field(default_factory=dict)
    #: DI Orchestrator v1 aggregator settings, kept when converting a v1 DIJob.
    aggregator_config: dict[str, Any] | None = None
    #: DI Orchestrator v1 job group and priority class name.
    group: str | None = None
    priority_class_name: str | None = None
    #: Upper bound of the whole job's resources (DLRover ``resourceLimits``).
    resource_limits: dict[str, Quantity] | None = None
    enable_elastic_scheduling: bool | None = None
    enable_dynamic_sharding: bool | None = None
    elastic_policy: ElasticPolicy | None = None
    #: Gang-scheduling settings passed to the scheduler (Kubeflow ``runPolicy.schedulingPolicy``).
    scheduling_policy: dict[str, Any] | None = None


class JobCondition(ApiModel):
    type: JobPhase
    status: Literal["True", "False", "Unknown"] = "True"
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None
    last_update_time: str | None = None


class ReplicaStatus(ApiModel):
    """Counts of one replica type's replicas by observed phase, and the label selector of its
    pods (``selector``: the scale subresource's ``labelSelectorPath``, which an HPA reads)."""

    active: int = 0
    pending: int = 0
    succeeded: int = 0
    failed: int = 0
    selector: str | None = None


class ResourceSpec(OpenModel):
    """Resources of one replica: CPU cores, memory in MiB, GPUs. Open for extended resources."""

    cpu: float | None = None
    memory: int | None = None
    gpu: int | None = None


class ElasticJobStatus(ApiModel):
    phase: JobPhase = JobPhase.PENDING
    conditions: list[JobCondition] = Field(default_factory=list)
    replica_statuses: dict[ReplicaType, ReplicaStatus] = Field(default_factory=dict)
    #: Desired replica counts set at run time (server, scaler); overrides the spec when set.
    replicas: dict[ReplicaType, int] = Field(default_factory=dict)
    #: The spec's count of each scalable type when the operator last acted on the job: a spec
    #: count that differs from it (``kubectl scale`` after a ScalePlan) is the newer intent and
    #: replaces that type's ``replicas`` (``core.operator.replica_plan.follow_spec``). The
    # operator's.
    spec_replicas: dict[ReplicaType, int] = Field(default_factory=dict)
    #: Node names per replica type, as the Allocator placed them.
    allocation: dict[ReplicaType, list[str]] = Field(default_factory=dict)
    profilings: dict[str, Any] = Field(default_factory=dict)
    start_time: str | None = None
    completion_time: str | None = None
    restart_count: int = 0
    #: Uids of failed replicas already counted in ``restartCount`` (at most backoffLimit + 1),
    #: so that seeing the same failure again does not count it twice.
    restarted_replicas: list[str] = Field(default_factory=list)
    #: The last ScalePlan folded into ``replicas`` (plans are applied oldest first, once each).
    last_scale_plan: str | None = None
    #: Resources per replica type set by ScalePlans (``replicaResourceSpecs[type].resource``):
    #: replicas of that type created from then on get them. Written by the operator.
    replica_resources: dict[ReplicaType, ResourceSpec] = Field(default_factory=dict)
    #: Resources of single replicas (by short name, e.g. ``worker-1``), on top of their type's:
    #: those a ScalePlan's ``migratePods`` or an OOM relaunched (written by the operator), and
    #: those a DI coordinator created with ``cpus``/``memory``/``gpus`` (by the server).
    migrated_replicas: dict[str, ResourceSpec] = Field(default_factory=dict)
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
