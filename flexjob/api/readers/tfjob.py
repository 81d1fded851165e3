"""Reader of Kubeflow's ``TFJob``: ``tfReplicaSpecs`` keyed by Chief / Worker / PS / Evaluator,
and ``runPolicy``.

Each Kubeflow replica type becomes flexjob's of the same role (``TO_REPLICA``); ``runPolicy``
fields land in the job spec as for a PyTorchJob. A TFJob's PS replicas run TensorFlow's own
servers (their command), so the job is a TensorFlow cluster: every replica gets ``TF_CONFIG``
and a service (``core.operator.tf_cluster``), and the job succeeds when its chief (else worker 0)
succeeds, Kubeflow's default success policy. The type Kubeflow calls ``Master`` (the old name of
the chief) and ``successPolicy``/``enableDynamicWorker`` are not read (refused by name).
"""

from enum import StrEnum
from typing import Any

from pydantic import Field

from flexjob.api.base import ApiModel
from flexjob.api.enums import DistributionStrategy, ReplicaType
from flexjob.api.job import ElasticJobSpec, ReplicaSpec
from flexjob.api.readers.common import Converted, ForeignObject, Reader, native_job, parse
from flexjob.api.readers.pytorchjob import VERSIONS, KubeflowReplicaSpec, RunPolicy


class TFReplicaType(StrEnum):
    CHIEF = "Chief"
    WORKER = "Worker"
    PS = "PS"
    EVALUATOR = "Evaluator"


TO_REPLICA = {
    TFReplicaType.CHIEF: ReplicaType.CHIEF,
    TFReplicaType.WORKER: ReplicaType.WORKER,
    TFReplicaType.PS: ReplicaType.PS,
    TFReplicaType.EVALUATOR: ReplicaType.EVALUATOR,
}


class TFJobSpec(ApiModel):
    tf_replica_specs: dict[TFReplicaType, KubeflowReplicaSpec]
    run_policy: RunPolicy = Field(default_factory=RunPolicy)


def convert(raw: dict[str, Any], companions: list[dict[str, Any]]) -> Converted:
    job = parse(ForeignObject[TFJobSpec], raw)
    replica_specs = {
        TO_REPLICA[t]: ReplicaSpec(
            replicas=r.replicas, restart_policy=r.restart_policy, template=r.template
        )
        for t, r in job.spec.tf_replica_specs.items()
    }
    has_ps = ReplicaType.PS in replica_specs
    strategy = DistributionStrategy.PARAMETER_SERVER if has_ps else None
    run = dict(job.spec.run_policy)
    spec = ElasticJobSpec(replica_specs=replica_specs, distribution_strategy=strategy, **run)
    return native_job(job.metadata, spec, _paths())


def _paths() -> dict[str, str]:
    paths = {f"spec.replicaSpecs.{TO_REPLICA[t]}": f"spec.tfReplicaSpecs.{t}" for t in TO_REPLICA}
    run_fields = [f.alias or n for n, f in RunPolicy.model_fields.items()]
    paths.update({f"spec.{name}": f"spec.runPolicy.{name}" for name in run_fields})
    return paths


READERS = (Reader("Kubeflow TFJob", "TFJob", VERSIONS, convert),)
