"""The job model: ElasticJob, ReplicaSpec, ScalePlan, ResourcePlan, enums, defaults, validation,
readers of other job formats and CRD generation.

No I/O: nothing here touches processes, Kubernetes or the network; the one exception is
``api.load.read_source``, which reads a spec file a caller names. Entry points:
``api.load.load_job`` (any supported format → ``ElasticJob``), ``api.validate.validate``,
``api.defaults.apply_defaults`` / ``defaults_patch`` and ``api.crd.crds``.

The names below load lazily (PEP 562): ``import flexjob.api.names`` or one enum does not pull
in the pydantic models, so processes that only need a constant (agents, trainers, the run
command) start faster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flexjob.lazy import lazy_exports

if TYPE_CHECKING:
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

#: Each exported name and the submodule of ``flexjob.api`` that defines it.
_EXPORTS: dict[str, str] = {
    "ReplicaBounds": "bounds",
    "replica_bounds": "bounds",
    "CleanPodPolicy": "enums",
    "DistributionStrategy": "enums",
    "JobPhase": "enums",
    "JobPriority": "enums",
    "OptimizeMode": "enums",
    "ReplicaPhase": "enums",
    "ReplicaType": "enums",
    "RestartPolicy": "enums",
    "ScalePlanPhase": "enums",
    "BatchSpec": "job",
    "DatasetSpec": "job",
    "ElasticJob": "job",
    "ElasticJobSpec": "job",
    "ElasticJobStatus": "job",
    "ElasticPolicy": "job",
    "JobCondition": "job",
    "RendezvousConf": "job",
    "ReplicaSpec": "job",
    "ReplicaStatus": "job",
    "ResourceSpec": "job",
    "ObjectMeta": "meta",
    "Container": "pod",
    "EnvVar": "pod",
    "PodSpec": "pod",
    "PodTemplateSpec": "pod",
    "ResourceRequirements": "pod",
    "Problem": "problems",
    "SpecError": "problems",
    "ROLE_TRAITS": "roles",
    "TRAINING_TYPES": "roles",
    "RoleTraits": "roles",
    "PodRef": "scaleplan",
    "ReplicaResourceSpec": "scaleplan",
    "ResourcePlan": "scaleplan",
    "ScalePlan": "scaleplan",
    "ScalePlanSpec": "scaleplan",
    "ScalePlanStatus": "scaleplan",
}


if not TYPE_CHECKING:  # hidden from mypy, so a misspelt import is an error, not Any
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

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
