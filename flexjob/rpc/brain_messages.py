"""The Brain's wire messages (pydantic, camelCase JSON) and their conversion to planner stats.

What masters and the cluster monitor send, and what the brain answers. Validation happens here:
a bad field is rejected with its name. A message that carries a domain type is named for it
with a ``Message`` suffix (``NodeSampleMessage`` ↔ ``core.planner.NodeSample``) and converts
with ``to_core``; database rows are ``brain.db.models.*Row``. Not for storage or decisions
(``flexjob.core.planner``).
"""

from dataclasses import asdict
from enum import StrEnum

from pydantic import AliasChoices, Field

from flexjob.api import OptimizeMode, ReplicaType, ResourcePlan
from flexjob.api.base import ApiModel
from flexjob.core import planner


class JobStatus(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class JobLimitsMessage(ApiModel):
    """``core.planner.JobLimits`` on the wire. A master of before the rename sends
    ``minWorkers``/``maxWorkers``: read as ``minReplicas``/``maxReplicas``."""

    min_replicas: int = Field(
        1, ge=0, validation_alias=AliasChoices("minReplicas", "min_replicas", "minWorkers")
    )
    max_replicas: int | None = Field(
        None, ge=0, validation_alias=AliasChoices("maxReplicas", "max_replicas", "maxWorkers")
    )
    max_ps: int | None = Field(None, ge=0)
    max_cpu: float | None = Field(None, gt=0)
    max_memory_mb: float | None = Field(None, gt=0)

    def to_core(self) -> planner.JobLimits:
        return planner.JobLimits(**self.model_dump())


class ReplicaResourcesMessage(ApiModel):
    replicas: int = Field(ge=0)
    cpu: float | None = Field(None, gt=0)
    memory_mb: float | None = Field(None, gt=0)

    def to_core(self) -> planner.ReplicaResources:
        return planner.ReplicaResources(**self.model_dump())


class JobInfoMessage(ApiModel):
    """A job as the brain knows it: who runs what, its bounds and the resources it asked for."""

    name: str = Field(min_length=1, max_length=255)
    user: str = ""
    model: str = ""
    dataset: str = ""
    optimize_mode: OptimizeMode = OptimizeMode.CLUSTER
    limits: JobLimitsMessage = Field(default_factory=JobLimitsMessage)
    resources: dict[ReplicaType, ReplicaResourcesMessage] = Field(default_factory=dict)

    def profile(self) -> planner.JobProfile:
        return planner.JobProfile(self.name, self.user, self.model, self.dataset)

    @classmethod
    def from_core(cls, job: planner.PlannedJob, mode: OptimizeMode) -> "JobInfoMessage":
        p = job.profile
        return cls(
            name=p.name,
            user=p.user,
            model=p.model,
            dataset=p.dataset,
            optimize_mode=mode,
            limits=JobLimitsMessage.model_validate(asdict(job.limits)),
            resources={
                t: ReplicaResourcesMessage.model_validate(asdict(r))
                for t, r in job.resources.items()
            },
        )


class NodeSampleMessage(ApiModel):
    node: str = Field(min_length=1)
    replica_type: ReplicaType
    timestamp: float
    cpu_percent: float = Field(ge=0)
    memory_mb: float = Field(ge=0)
    cpu_limit: float | None = Field(None, gt=0)
    memory_limit_mb: float | None = Field(None, gt=0)
    requests_per_second: float = Field(0.0, ge=0)
    partition_bytes: int = Field(0, ge=0)
    gpu_memory_mb: float = Field(0.0, ge=0)
    gpu_percent: float = Field(0.0, ge=0, le=100)

    def to_core(self) -> planner.NodeSample:
        return planner.NodeSample(**dict(self))


class SpeedSampleMessage(ApiModel):
    timestamp: float
    step: int = Field(ge=0)
    samples_per_second: float = Field(ge=0)
    world_size: int = Field(ge=0)

    def to_core(self) -> planner.SpeedSample:
        return planner.SpeedSample(**dict(self))


class NodeEventMessage(ApiModel):
    node: str = Field(min_length=1)
    replica_type: ReplicaType
    kind: planner.NodeEventKind
    timestamp: float
    memory_mb: float | None = None

    def to_core(self) -> planner.NodeEvent:
        return planner.NodeEvent(**dict(self))


class MetricsReport(ApiModel):
    """What a master sends: the job (registers or updates it), new samples and events."""

    job: JobInfoMessage | None = None
    status: JobStatus | None = None
    node_samples: list[NodeSampleMessage] = Field(default_factory=list)
    speed_samples: list[SpeedSampleMessage] = Field(default_factory=list)
    node_events: list[NodeEventMessage] = Field(default_factory=list)


class OptimizeRequest(ApiModel):
    stage: planner.OptimizeStage


class EventRecord(ApiModel):
    id: int
    created_at: float
    kind: planner.EventKind
    node: str = ""
    detail: str = ""
    algorithm: str = ""
    plan_id: int | None = None


class PlanRecord(ApiModel):
    id: int
    created_at: float
    stage: planner.OptimizeStage
    plan: ResourcePlan


class OptimizeResponse(ApiModel):
    """The merged plan (empty when nothing should change), its id and the events behind it."""

    plan: ResourcePlan
    plan_id: int | None = None
    events: list[EventRecord] = Field(default_factory=list)


class JobMetrics(ApiModel):
    """Everything stored about one job, oldest first: what a restarted master reloads."""

    job: JobInfoMessage
    status: JobStatus
    node_samples: list[NodeSampleMessage] = Field(default_factory=list)
    speed_samples: list[SpeedSampleMessage] = Field(default_factory=list)
    node_events: list[NodeEventMessage] = Field(default_factory=list)
    plans: list[PlanRecord] = Field(default_factory=list)
    events: list[EventRecord] = Field(default_factory=list)


class ClusterNodeReport(ApiModel):
    """One machine's capacity and usage, as the cluster monitor sees it."""

    name: str = Field(min_length=1)
    platform: str = "local"
    timestamp: float
    cpu_capacity: float = Field(gt=0)
    memory_capacity_mb: float = Field(gt=0)
    cpu_used: float = Field(ge=0)
    memory_used_mb: float = Field(ge=0)
    pods: int = Field(0, ge=0)


class ClusterJobReport(ApiModel):
    """One job as the cluster monitor sees it on its platform: phase and active replicas."""

    name: str = Field(min_length=1)  # namespace/name
    platform: str = "local"
    timestamp: float
    phase: str = Field(min_length=1)
    #: Active (pending or running) replicas per replica type.
    replicas: dict[str, int] = Field(default_factory=dict)


class ClusterReport(ApiModel):
    nodes: list[ClusterNodeReport]
    #: The jobs on the platform (empty when the monitor runs with ``--no-jobs``).
    jobs: list[ClusterJobReport] = Field(default_factory=list)
