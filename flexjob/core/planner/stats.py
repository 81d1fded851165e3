"""The statistics a planner reads: resource samples, speed samples, node events, finished jobs.

Frozen, slotted dataclasses with no I/O. The brain builds them from its database, the master from
its memory; both hand them to the same algorithms. Not for wire formats (see ``flexjob.brain``).
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from flexjob.api import ReplicaType
from flexjob.api.bounds import clamp
from flexjob.api.roles import job_training_type


class NodeEventKind(StrEnum):
    """What happened to one replica, as reported by the master."""

    OOM = "oom"
    FAILED = "failed"
    SUCCEEDED = "succeeded"


@dataclass(frozen=True, slots=True)
class NodeSample:
    """One resource sample of one replica. ``cpu_percent`` is psutil's: 100 means one core."""

    node: str
    replica_type: ReplicaType
    timestamp: float
    cpu_percent: float
    memory_mb: float
    #: CPU cores and memory the replica was given; ``None`` when unknown.
    cpu_limit: float | None = None
    memory_limit_mb: float | None = None
    #: A PS replica's load: data calls per second and the bytes its partition holds.
    requests_per_second: float = 0.0
    partition_bytes: int = 0
    #: GPU memory the replica's processes held and its GPUs' mean utilisation (0: no GPU).
    gpu_memory_mb: float = 0.0
    gpu_percent: float = 0.0

    @property
    def cpu_utilization(self) -> float:
        """Used CPU as a fraction of the replica's CPU (of one core when the limit is unknown)."""
        cores = self.cpu_limit if self.cpu_limit else 1.0
        return self.cpu_percent / 100.0 / cores


@dataclass(frozen=True, slots=True)
class SpeedSample:
    """Training speed at one moment: global step, samples per second, world size."""

    timestamp: float
    step: int
    samples_per_second: float
    world_size: int


@dataclass(frozen=True, slots=True)
class NodeEvent:
    node: str
    replica_type: ReplicaType
    kind: NodeEventKind
    timestamp: float
    #: Memory (MiB) the replica had when the event happened, if known.
    memory_mb: float | None = None


@dataclass(frozen=True, slots=True)
class ReplicaResources:
    """Replica count and per-replica resources of one type (cores, MiB)."""

    replicas: int
    cpu: float | None = None
    memory_mb: float | None = None


@dataclass(frozen=True, slots=True)
class JobLimits:
    """Bounds a plan must respect; ``None`` means unbounded. ``min_replicas``/``max_replicas``:
    of the job's training type, as its ``minReplicas``/``maxReplicas`` (``api.bounds``)."""

    min_replicas: int = 1
    max_replicas: int | None = None
    max_ps: int | None = None
    max_cpu: float | None = None
    max_memory_mb: float | None = None

    def clamp_replicas(self, n: int) -> int:
        """``n`` training replicas kept within ``[min_replicas, max_replicas]``
        (``api.bounds.clamp``)."""
        return clamp(n, self.min_replicas, self.max_replicas)


@dataclass(frozen=True, slots=True)
class JobProfile:
    """Who runs what: the keys used to find similar jobs."""

    name: str
    user: str = ""
    model: str = ""
    dataset: str = ""


@dataclass(frozen=True, slots=True)
class PlannedJob:
    """A job as a planner knows it before any stats: who runs what, its limits, and the
    resources it asked for per replica type."""

    profile: JobProfile
    limits: JobLimits = field(default_factory=JobLimits)
    resources: Mapping[ReplicaType, ReplicaResources] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FinishedJob:
    """A finished job's outcome, for initial plans of similar new jobs."""

    profile: JobProfile
    succeeded: bool
    finished_at: float
    resources: Mapping[ReplicaType, ReplicaResources]
    #: Peak memory seen per replica type (MiB), if sampled.
    peak_memory_mb: Mapping[ReplicaType, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class JobStats:
    """Everything known about one running job."""

    profile: JobProfile
    limits: JobLimits
    #: The resources the job runs with now (last accepted plan, else its spec).
    current: Mapping[ReplicaType, ReplicaResources]
    node_samples: Sequence[NodeSample] = ()
    speed_samples: Sequence[SpeedSample] = ()
    node_events: Sequence[NodeEvent] = ()

    def training_type(self) -> ReplicaType:
        """The type sized as the job's workers (``api.roles.job_training_type``)."""
        return job_training_type(self.current)

    def workers(self) -> int:
        spec = self.current.get(self.training_type())
        return spec.replicas if spec else 0
