"""Reader of Kubeflow's ``PyTorchJob``: Master/Worker replica specs, ``elasticPolicy`` and
``runPolicy``.

A PyTorchJob Master is the rank-0 training pod, so it becomes a ``chief`` replica (the job
``master`` in flexjob is the training master, not a trainer). ``elasticPolicy.minReplicas`` and
``maxReplicas`` become the worker's ``minReplicas``/``maxReplicas``; the rest of the policy is
kept in ``spec.elasticPolicy``; ``runPolicy`` fields land in the job spec.
"""

from enum import StrEnum
from typing import Any

from pydantic import Field

from flexjob.api.base import ApiModel
from flexjob.api.enums import CleanPodPolicy, ReplicaType, RestartPolicy
from flexjob.api.job import ElasticJobSpec, ElasticPolicy, NonNegative, ReplicaCount, ReplicaSpec
from flexjob.api.pod import PodTemplateSpec
from flexjob.api.problems import Problem, SpecError
from flexjob.api.readers.common import Converted, ForeignObject, Reader, native_job, parse

VERSIONS = ("kubeflow.org/v1",)


class PyTorchReplicaType(StrEnum):
    MASTER = "Master"
    WORKER = "Worker"


TO_REPLICA = {
    PyTorchReplicaType.MASTER: ReplicaType.CHIEF,
    PyTorchReplicaType.WORKER: ReplicaType.WORKER,
}


class KubeflowReplicaSpec(ApiModel):
    replicas: ReplicaCount | None = None
    restart_policy: RestartPolicy | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)


class KubeflowElasticPolicy(ElasticPolicy):
    min_replicas: ReplicaCount | None = None
    max_replicas: ReplicaCount | None = None


class RunPolicy(ApiModel):
    clean_pod_policy: CleanPodPolicy | None = None
    ttl_seconds_after_finished: NonNegative | None = None
    active_deadline_seconds: NonNegative | None = None
    backoff_limit: NonNegative | None = None
    scheduling_policy: dict[str, Any] | None = None
    suspend: bool | None = None


class PyTorchJobSpec(ApiModel):
    pytorch_replica_specs: dict[PyTorchReplicaType, KubeflowReplicaSpec]
    elastic_policy: KubeflowElasticPolicy | None = None
    run_policy: RunPolicy = Field(default_factory=RunPolicy)


def convert(raw: dict[str, Any], companions: list[dict[str, Any]]) -> Converted:
    job = parse(ForeignObject[PyTorchJobSpec], raw)
    replica_specs = {
        TO_REPLICA[t]: ReplicaSpec(
            replicas=r.replicas, restart_policy=r.restart_policy, template=r.template
        )
        for t, r in job.spec.pytorch_replica_specs.items()
    }
    policy = job.spec.elastic_policy
    elastic = None
    if policy is not None:
        bounds = {"min_replicas": policy.min_replicas, "max_replicas": policy.max_replicas}
        worker = replica_specs.get(ReplicaType.WORKER)
        if worker is None and any(v is not None for v in bounds.values()):
            raise SpecError(
                [
                    Problem(
                        "spec.elasticPolicy",
                        policy.to_wire(),
                        "minReplicas/maxReplicas need a Worker in spec.pytorchReplicaSpecs",
                    )
                ]
            )
        if worker is not None:
            replica_specs[ReplicaType.WORKER] = worker.model_copy(update=bounds)
        elastic = ElasticPolicy.model_validate(
            policy.model_dump(exclude={"min_replicas", "max_replicas"})
        )
    # Kubeflow's runPolicy fields are fields of our spec, with the same meaning.
    run = dict(job.spec.run_policy)
    spec = ElasticJobSpec(replica_specs=replica_specs, elastic_policy=elastic, **run)
    return native_job(job.metadata, spec, _paths())


def _paths() -> dict[str, str]:
    paths = {
        f"spec.replicaSpecs.{TO_REPLICA[t]}": f"spec.pytorchReplicaSpecs.{t}" for t in TO_REPLICA
    }
    for bound in ("minReplicas", "maxReplicas"):
        paths[f"spec.replicaSpecs.worker.{bound}"] = f"spec.elasticPolicy.{bound}"
    run_fields = [f.alias or n for n, f in RunPolicy.model_fields.items()]
    paths.update({f"spec.{name}": f"spec.runPolicy.{name}" for name in run_fields})
    return paths


READERS = (Reader("Kubeflow PyTorchJob", "PyTorchJob", VERSIONS, convert),)
