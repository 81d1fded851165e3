"""The job model: ElasticJob, ReplicaSpec, ScalePlan, ResourcePlan, enums, defaults, validation,
readers of other job formats and CRD generation.

No I/O: nothing here touches processes, Kubernetes or the network; the one exception is
``api.load.read_source``, which reads a spec file a caller names. Entry points:
``api.load.load_job`` (any supported format → ``ElasticJob``), ``api.validate.validate``,
``api.defaults.apply_defaults`` / ``defaults_patch`` and ``api.crd.crds``.
"""

from flexjob.api.bounds import ReplicaBounds, replica_bounds
from flexjob.api.enums import (
    CleanPodPolicy,
    DistributionStrategy,
    JobPhase,
    JobPriority,
    OptimizeMode,
    ReplicaPhase,
    ReplicaType,
    RestartPolicy,
    ScalePlanPhase,
)
from flexjob.api.job import (
    BatchSpec,
    DatasetSpec,
    ElasticJob,
    ElasticJobSpec,
    ElasticJobStatus,
    ElasticPolicy,
    JobCondition,
    RendezvousConf,
    ReplicaSpec,
    ReplicaStatus,
    ResourceSpec,
)
from flexjob.api.meta import ObjectMeta
from flexjob.api.pod import Container, EnvVar, PodSpec, PodTemplateSpec, ResourceRequirements
from flexjob.api.problems import Problem, SpecError
from flexjob.api.roles import ROLE_TRAITS, TRAINING_TYPES, RoleTraits
from flexjob.api.scaleplan import (
    PodRef,
    ReplicaResourceSpec,
    ResourcePlan,
    ScalePlan,
    ScalePlanSpec,
    ScalePlanStatus,
)

__all__ = [
    "ROLE_TRAITS",
    "TRAINING_TYPES",
    "BatchSpec",
    "CleanPodPolicy",
    "Container",
    "DatasetSpec",
    "DistributionStrategy",
    "ElasticJob",
    "ElasticJobSpec",
    "ElasticJobStatus",
    "ElasticPolicy",
    "EnvVar",
    "JobCondition",
    "JobPhase",
    "JobPriority",
    "ObjectMeta",
    "OptimizeMode",
    "PodRef",
    "PodSpec",
    "PodTemplateSpec",
    "Problem",
    "RendezvousConf",
    "ReplicaBounds",
    "ReplicaPhase",
    "ReplicaResourceSpec",
    "ReplicaSpec",
    "ReplicaStatus",
    "ReplicaType",
    "ResourcePlan",
    "ResourceRequirements",
    "ResourceSpec",
    "RestartPolicy",
    "RoleTraits",
    "ScalePlan",
    "ScalePlanPhase",
    "ScalePlanSpec",
    "ScalePlanStatus",
    "SpecError",
    "replica_bounds",
]
